//! A stream's consumer groups at work over its nodes: delivering new entries to a
//! consumer (XREADGROUP `>`) or its pending ones again (a history read), acknowledging, claiming
//! (XCLAIM, XAUTOCLAIM), and the group's lag, with Redis's arithmetic for `entries-read`.

use super::group::Group;
use super::id::StreamId;
use super::node::Node;
use super::range::{entry_in, range_in, Entry};
use crate::alloc::KvAlloc;

/// XCLAIM's options.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    /// Claim only entries idle at least this long (ms).
    pub min_idle_ms: u64,
    /// The delivery time to set (Unix ms; IDLE and TIME set it, else now).
    pub delivered_ms: u64,
    pub retry: Option<u64>,
    pub force: bool,
    pub justid: bool,
    pub now_ms: u64,
}

/// What one id of a claim came to.
pub enum Claimed<'a, A: KvAlloc> {
    /// Claimed: the entry.
    Entry(Entry<'a, A>),
    /// Claimed (JUSTID).
    Id(StreamId),
}

/// The counters a delivery's `entries-read` arithmetic reads (the stream's, fixed during a read).
#[derive(Clone, Copy)]
pub(super) struct Counters {
    pub(super) len: u64,
    pub(super) first_id: StreamId,
    pub(super) last_id: StreamId,
    pub(super) max_deleted: StreamId,
    pub(super) entries_added: u64,
}

impl Counters {
    /// Whether a deleted entry may lie from `start` on (Redis's `streamRangeHasTombstones`).
    fn tombstones_from(&self, start: StreamId) -> bool {
        if self.len == 0 || self.max_deleted == StreamId::MIN || self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted
    }

    /// How many entries came before `id` and it, if that can be known (Redis's
    /// `streamEstimateDistanceFromFirstEverEntry`); None: unknown.
    pub(super) fn entries_through(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.len == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        if self.max_deleted == StreamId::MIN || self.max_deleted < self.first_id {
            if id < self.first_id {
                return Some(self.entries_added - self.len);
            }
            if id == self.first_id {
                return Some(self.entries_added - self.len + 1);
            }
        }
        None
    }
}

/// XREADGROUP `>` for group `g`: delivers to consumer `consumer` (created if missing) the entries of
/// `nodes` after the group's last id, at most `count` (0: all), recording each as pending unless `noack`;
/// `f` gets each entry.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_new<'a, A: KvAlloc>(
    nodes: &'a [Node<A>],
    g: &mut Group<A>,
    counters: Counters,
    consumer: &[u8],
    count: usize,
    noack: bool,
    now_ms: u64,
    mut f: impl FnMut(Entry<'a, A>),
) {
    let ci = g.consumer_seen(consumer, now_ms);
    let Some(start) = g.last_id.next() else {
        return;
    };
    let mut n = 0;
    range_in(nodes, start, StreamId::MAX, false, |e| {
        if e.id > g.last_id {
            if g.entries_read != -1 && !counters.tombstones_from(e.id) {
                g.entries_read += 1;
            } else if counters.entries_added != 0 {
                g.entries_read = counters.entries_through(e.id).map_or(-1, |n| n as i64);
            }
            g.last_id = e.id;
        }
        if !noack {
            g.deliver(e.id, ci, now_ms);
        }
        f(e);
        n += 1;
        count == 0 || n < count
    });
}

/// XREADGROUP with an id: consumer `consumer`'s (created if missing) pending entries from `start` on, at
/// most `count` (0: all), each delivered again (its count raised); `f` gets each id with its entry, or
/// None for one deleted since.
pub(super) fn read_history<'a, A: KvAlloc>(
    nodes: &'a [Node<A>],
    g: &mut Group<A>,
    consumer: &[u8],
    start: StreamId,
    count: usize,
    now_ms: u64,
    mut f: impl FnMut(StreamId, Option<Entry<'a, A>>),
) {
    let ci = g.consumer_seen(consumer, now_ms);
    let ids: std::vec::Vec<StreamId> = g.consumers()[ci]
        .pel_from(start)
        .iter()
        .take(if count == 0 { usize::MAX } else { count })
        .copied()
        .collect();
    for id in ids {
        let found = entry_in(nodes, id);
        if found.is_some() {
            g.redeliver(id, now_ms);
        }
        f(id, found);
    }
}

/// XCLAIM of `ids` for consumer `consumer`: `f` gets each claimed one, in the order given; an id whose
/// entry is gone leaves the PEL unclaimed.
pub(super) fn claim<'a, A: KvAlloc>(
    nodes: &'a [Node<A>],
    g: &mut Group<A>,
    consumer: &[u8],
    ids: &[StreamId],
    c: &Claim,
    mut f: impl FnMut(Claimed<'a, A>),
) {
    for &id in ids {
        let Some(entry) = entry_in(nodes, id) else {
            g.drop_nack(id);
            continue;
        };
        if g.claim(
            id,
            consumer,
            c.force,
            c.min_idle_ms,
            c.now_ms,
            c.delivered_ms,
            c.retry,
            c.justid,
        ) {
            f(if c.justid {
                Claimed::Id(id)
            } else {
                Claimed::Entry(entry)
            });
        }
    }
}

/// XAUTOCLAIM: claims for `consumer` the pending entries from `start` on idle at least `min_idle_ms`, at
/// most `count`, looking at no more than ten times `count`; `f` gets each claimed one. Returns the id to
/// go on from (0-0 at the end) and the ids whose entries were gone (dropped from the PEL, each counted
/// against `count`).
#[allow(clippy::too_many_arguments)]
pub(super) fn autoclaim<'a, A: KvAlloc>(
    nodes: &'a [Node<A>],
    g: &mut Group<A>,
    consumer: &[u8],
    start: StreamId,
    min_idle_ms: u64,
    mut count: usize,
    justid: bool,
    now_ms: u64,
    mut f: impl FnMut(Claimed<'a, A>),
) -> (StreamId, std::vec::Vec<StreamId>) {
    let mut deleted = std::vec::Vec::new();
    let mut attempts = count.saturating_mul(10);
    let mut i = g.pel().partition_point(|(id, _)| *id < start);
    while attempts > 0 && count > 0 && i < g.pel().len() {
        attempts -= 1;
        let (id, nack) = g.pel()[i];
        let Some(entry) = entry_in(nodes, id) else {
            g.drop_nack(id);
            deleted.push(id);
            count -= 1;
            continue;
        };
        i += 1;
        if min_idle_ms != 0 && now_ms.saturating_sub(nack.delivered_ms) < min_idle_ms {
            continue;
        }
        g.claim(id, consumer, false, 0, now_ms, now_ms, None, justid);
        f(if justid {
            Claimed::Id(id)
        } else {
            Claimed::Entry(entry)
        });
        count -= 1;
    }
    let next = g.pel().get(i).map_or(StreamId::MIN, |(id, _)| *id);
    (next, deleted)
}

/// XINFO GROUPS's `lag` of group `g`: the entries added after the group's last read, if known.
pub(super) fn lag<A: KvAlloc>(c: Counters, g: &Group<A>) -> Option<i64> {
    if c.entries_added == 0 {
        return Some(0);
    }
    if g.entries_read != -1 && !c.tombstones_from(g.last_id) {
        return Some(c.entries_added as i64 - g.entries_read);
    }
    c.entries_through(g.last_id)
        .map(|n| c.entries_added as i64 - n as i64)
}
