//! A stream's consumer groups at work: creating and finding them, delivering new entries to a
//! consumer (XREADGROUP `>`) or its pending ones again (a history read), acknowledging, claiming
//! (XCLAIM, XAUTOCLAIM), and the group's lag, with Redis's arithmetic for `entries-read`.

use super::group::Group;
use super::id::StreamId;
use super::{entry_in, range_in, Entry, Stream};
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
struct Counters {
    len: u64,
    first_id: StreamId,
    last_id: StreamId,
    max_deleted: StreamId,
    entries_added: u64,
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
    fn entries_through(&self, id: StreamId) -> Option<u64> {
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

impl<A: KvAlloc> Stream<A> {
    fn counters(&self) -> Counters {
        Counters {
            len: self.len,
            first_id: self.first_id,
            last_id: self.last_id,
            max_deleted: self.max_deleted,
            entries_added: self.entries_added,
        }
    }

    fn group_at(&self, name: &[u8]) -> Result<usize, usize> {
        self.groups.binary_search_by(|g| g.name().cmp(name))
    }

    /// The groups, in name order.
    pub fn groups(&self) -> &[Group<A>] {
        &self.groups
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group<A>> {
        self.group_at(name).ok().map(|i| &self.groups[i])
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group<A>> {
        self.group_at(name).ok().map(|i| &mut self.groups[i])
    }

    /// XGROUP CREATE: false when a group has the name.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        match self.group_at(name) {
            Ok(_) => false,
            Err(i) => {
                let alloc = self.groups.allocator().clone();
                self.groups
                    .insert(i, Group::new_in(name, last_id, entries_read, alloc));
                true
            }
        }
    }

    /// XGROUP DESTROY.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        match self.group_at(name) {
            Ok(i) => {
                self.groups.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// XREADGROUP `>`: delivers to consumer `consumer` of group `group` (which exists) the entries after
    /// the group's last id, at most `count` (0: all), recording each as pending unless `noack`; `f` gets
    /// each entry. The consumer is created if missing.
    pub fn read_new<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        count: usize,
        noack: bool,
        now_ms: u64,
        mut f: impl FnMut(Entry<'a, A>),
    ) {
        let counters = self.counters();
        let Ok(gi) = self.group_at(group) else {
            return;
        };
        let Stream { nodes, groups, .. } = self;
        let g = &mut groups[gi];
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

    /// XREADGROUP with an id: consumer `consumer`'s pending entries from `start` on, at most `count` (0:
    /// all), each delivered again (its count raised); `f` gets each id with its entry, or None for one
    /// deleted since. The consumer is created if missing.
    pub fn read_history<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        count: usize,
        now_ms: u64,
        mut f: impl FnMut(StreamId, Option<Entry<'a, A>>),
    ) {
        let Ok(gi) = self.group_at(group) else {
            return;
        };
        let Stream { nodes, groups, .. } = self;
        let g = &mut groups[gi];
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

    /// XCLAIM of `ids` for consumer `consumer`: `f` gets each claimed one, in the order given; an id
    /// whose entry is gone leaves the PEL unclaimed.
    pub fn claim<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        c: &Claim,
        mut f: impl FnMut(Claimed<'a, A>),
    ) {
        let Ok(gi) = self.group_at(group) else {
            return;
        };
        let Stream { nodes, groups, .. } = self;
        let g = &mut groups[gi];
        for &id in ids {
            let found = entry_in(nodes, id);
            let Some(entry) = found else {
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

    /// XAUTOCLAIM: claims for `consumer` the pending entries from `start` on idle at least
    /// `min_idle_ms`, at most `count`, looking at no more than ten times `count`; `f` gets each claimed
    /// one. Returns the id to go on from (0-0 at the end) and the ids whose entries were gone (dropped
    /// from the PEL, each counted against `count`).
    #[allow(clippy::too_many_arguments)]
    pub fn autoclaim<'a>(
        &'a mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        min_idle_ms: u64,
        mut count: usize,
        justid: bool,
        now_ms: u64,
        mut f: impl FnMut(Claimed<'a, A>),
    ) -> (StreamId, std::vec::Vec<StreamId>) {
        let mut deleted = std::vec::Vec::new();
        let Ok(gi) = self.group_at(group) else {
            return (StreamId::MIN, deleted);
        };
        let Stream { nodes, groups, .. } = self;
        let g = &mut groups[gi];
        let mut attempts = count.saturating_mul(10);
        let mut i = g.pel().partition_point(|(id, _)| *id < start);
        while attempts > 0 && count > 0 && i < g.pel().len() {
            attempts -= 1;
            let (id, nack) = g.pel()[i];
            let found = entry_in(nodes, id);
            let Some(entry) = found else {
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
    pub fn lag(&self, g: &Group<A>) -> Option<i64> {
        let c = self.counters();
        if c.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != -1 && !c.tombstones_from(g.last_id) {
            return Some(c.entries_added as i64 - g.entries_read);
        }
        c.entries_through(g.last_id)
            .map(|n| c.entries_added as i64 - n as i64)
    }
}
