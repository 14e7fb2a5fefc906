//! A stream's consumer groups, as Redis keeps them: each group has its last delivered id, its count of
//! entries read, its pending entries list (the PEL: an id delivered and not acknowledged, the consumer
//! holding it, when it was delivered and how often), and its consumers, each with its own PEL. Groups
//! and consumers are in name order (Redis's radix trees), PELs in id order.

use allocator_api2::vec::Vec;

use super::id::StreamId;
use crate::alloc::KvAlloc;

/// An entry delivered and not acknowledged yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nack {
    /// The consumer holding it (its [`Consumer::id`]); None for one XCLAIM FORCE made, until claimed.
    pub consumer: Option<u32>,
    /// When it was last delivered, Unix ms.
    pub delivered_ms: u64,
    pub deliveries: u64,
}

pub struct Consumer<A: KvAlloc> {
    name: Vec<u8, A>,
    id: u32,
    /// When it last read or claimed, Unix ms (XINFO CONSUMERS's idle).
    pub seen_ms: u64,
    /// The ids it holds, ascending.
    pel: Vec<StreamId, A>,
}

impl<A: KvAlloc> Consumer<A> {
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Entries it holds.
    pub fn pending(&self) -> usize {
        self.pel.len()
    }

    /// The ids it holds from `start` on, ascending.
    pub fn pel_from(&self, start: StreamId) -> &[StreamId] {
        &self.pel[self.pel.partition_point(|&id| id < start)..]
    }

    fn add(&mut self, id: StreamId) {
        if let Err(i) = self.pel.binary_search(&id) {
            self.pel.insert(i, id);
        }
    }

    fn remove(&mut self, id: StreamId) {
        if let Ok(i) = self.pel.binary_search(&id) {
            self.pel.remove(i);
        }
    }
}

pub struct Group<A: KvAlloc> {
    name: Vec<u8, A>,
    /// The last id delivered to the group.
    pub last_id: StreamId,
    /// Entries the group has read, -1 when not known (XINFO GROUPS's `entries-read`).
    pub entries_read: i64,
    /// Ascending ids.
    pel: Vec<(StreamId, Nack), A>,
    /// In name order.
    consumers: Vec<Consumer<A>, A>,
    next_consumer: u32,
}

impl<A: KvAlloc> Group<A> {
    pub(super) fn new_in(name: &[u8], last_id: StreamId, entries_read: i64, alloc: A) -> Self {
        let mut n = Vec::new_in(alloc.clone());
        n.extend_from_slice(name);
        Group {
            name: n,
            last_id,
            entries_read,
            pel: Vec::new_in(alloc.clone()),
            consumers: Vec::new_in(alloc),
            next_consumer: 0,
        }
    }

    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The pending entries, ascending.
    pub fn pel(&self) -> &[(StreamId, Nack)] {
        &self.pel
    }

    /// The pending entries from `start` on, ascending.
    pub fn pel_from(&self, start: StreamId) -> &[(StreamId, Nack)] {
        &self.pel[self.pel.partition_point(|(id, _)| *id < start)..]
    }

    pub fn consumers(&self) -> &[Consumer<A>] {
        &self.consumers
    }

    fn consumer_at(&self, name: &[u8]) -> Result<usize, usize> {
        self.consumers.binary_search_by(|c| c.name[..].cmp(name))
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer<A>> {
        self.consumer_at(name).ok().map(|i| &self.consumers[i])
    }

    /// The name of the consumer with id `id`.
    pub fn consumer_name(&self, id: u32) -> &[u8] {
        self.consumers
            .iter()
            .find(|c| c.id == id)
            .map_or(&[], |c| &c.name[..])
    }

    /// A new consumer; false when the group has one of that name.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: u64) -> bool {
        match self.consumer_at(name) {
            Ok(_) => false,
            Err(i) => {
                let alloc = self.consumers.allocator().clone();
                let mut n = Vec::new_in(alloc.clone());
                n.extend_from_slice(name);
                self.consumers.insert(
                    i,
                    Consumer {
                        name: n,
                        id: self.next_consumer,
                        seen_ms: now_ms,
                        pel: Vec::new_in(alloc),
                    },
                );
                self.next_consumer += 1;
                true
            }
        }
    }

    /// The index of consumer `name`, created if missing, its seen time set to `now_ms`.
    pub(super) fn consumer_seen(&mut self, name: &[u8], now_ms: u64) -> usize {
        self.create_consumer(name, now_ms);
        let i = self.consumer_at(name).unwrap_or_default();
        self.consumers[i].seen_ms = now_ms;
        i
    }

    /// Removes consumer `name` and its pending entries: how many it held, None when there is none.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let i = self.consumer_at(name).ok()?;
        let c = self.consumers.remove(i);
        for id in c.pel.iter() {
            if let Ok(j) = self.pel.binary_search_by(|(x, _)| x.cmp(id)) {
                self.pel.remove(j);
            }
        }
        Some(c.pel.len())
    }

    fn nack_at(&self, id: StreamId) -> Result<usize, usize> {
        self.pel.binary_search_by(|(x, _)| x.cmp(&id))
    }

    /// Takes `id` out of the PEL (and its consumer's): whether it was there.
    pub(super) fn drop_nack(&mut self, id: StreamId) -> bool {
        let Ok(i) = self.nack_at(id) else {
            return false;
        };
        let (_, nack) = self.pel.remove(i);
        if let Some(cid) = nack.consumer {
            if let Some(c) = self.consumers.iter_mut().find(|c| c.id == cid) {
                c.remove(id);
            }
        }
        true
    }

    /// A pending entry read from a snapshot, above every one loaded before it, with no consumer until
    /// [`Group::load_consumer`] gives it one; false when it is not above the last.
    pub fn load_nack(&mut self, id: StreamId, delivered_ms: u64, deliveries: u64) -> bool {
        if self.pel.last().is_some_and(|(last, _)| *last >= id) {
            return false;
        }
        let nack = Nack {
            consumer: None,
            delivered_ms,
            deliveries,
        };
        self.pel.push((id, nack));
        true
    }

    /// A consumer read from a snapshot, holding `ids` (ascending, each a pending entry of the group that
    /// no other consumer holds); false, with nothing changed, when one is not, or the name is taken.
    pub fn load_consumer(&mut self, name: &[u8], seen_ms: u64, ids: &[StreamId]) -> bool {
        let free = ids.windows(2).all(|w| w[0] < w[1])
            && ids
                .iter()
                .all(|id| self.nack_at(*id).is_ok_and(|i| self.pel[i].1.consumer.is_none()));
        if !free || !self.create_consumer(name, seen_ms) {
            return false;
        }
        let Ok(ci) = self.consumer_at(name) else {
            return false;
        };
        let cid = self.consumers[ci].id;
        for id in ids {
            if let Ok(i) = self.nack_at(*id) {
                self.pel[i].1.consumer = Some(cid);
            }
            self.consumers[ci].pel.push(*id);
        }
        true
    }

    /// XACK of one id.
    pub fn ack(&mut self, id: StreamId) -> bool {
        self.drop_nack(id)
    }

    /// Records `id` delivered to consumer `ci` now, as a new delivery (count 1): a pending entry of
    /// another consumer moves to this one.
    pub(super) fn deliver(&mut self, id: StreamId, ci: usize, now_ms: u64) {
        let cid = self.consumers[ci].id;
        let nack = Nack {
            consumer: Some(cid),
            delivered_ms: now_ms,
            deliveries: 1,
        };
        match self.nack_at(id) {
            Err(i) => self.pel.insert(i, (id, nack)),
            Ok(i) => {
                if let Some(old) = self.pel[i].1.consumer {
                    if let Some(c) = self.consumers.iter_mut().find(|c| c.id == old) {
                        c.remove(id);
                    }
                }
                self.pel[i].1 = nack;
            }
        }
        self.consumers[ci].add(id);
    }

    /// A history read's redelivery of `id`: delivered now, one more time.
    pub(super) fn redeliver(&mut self, id: StreamId, now_ms: u64) {
        if let Ok(i) = self.nack_at(id) {
            let n = &mut self.pel[i].1;
            n.delivered_ms = now_ms;
            n.deliveries += 1;
        }
    }

    /// XCLAIM's and XAUTOCLAIM's change of one pending entry (made by FORCE when `force` and missing):
    /// to consumer `name` (created on the first claim), delivered at `delivered_ms`, its count set to
    /// `retry` or raised by one unless `justid`. None when there is no such entry, or it has been idle
    /// less than `min_idle_ms`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn claim(
        &mut self,
        id: StreamId,
        name: &[u8],
        force: bool,
        min_idle_ms: u64,
        now_ms: u64,
        delivered_ms: u64,
        retry: Option<u64>,
        justid: bool,
    ) -> bool {
        let i = match self.nack_at(id) {
            Ok(i) => i,
            Err(i) if force => {
                let nack = Nack {
                    consumer: None,
                    delivered_ms: now_ms,
                    deliveries: 1,
                };
                self.pel.insert(i, (id, nack));
                i
            }
            Err(_) => return false,
        };
        let nack = self.pel[i].1;
        if nack.consumer.is_some()
            && min_idle_ms != 0
            && now_ms.saturating_sub(nack.delivered_ms) < min_idle_ms
        {
            return false;
        }
        let ci = self.consumer_seen(name, now_ms);
        let cid = self.consumers[ci].id;
        if nack.consumer != Some(cid) {
            if let Some(old) = nack.consumer {
                if let Some(c) = self.consumers.iter_mut().find(|c| c.id == old) {
                    c.remove(id);
                }
            }
        }
        let ci = self.consumer_at(name).unwrap_or_default();
        let n = &mut self.pel[i].1;
        n.delivered_ms = delivered_ms;
        match retry {
            Some(r) => n.deliveries = r,
            None if !justid => n.deliveries += 1,
            None => {}
        }
        if n.consumer != Some(cid) {
            n.consumer = Some(cid);
            self.consumers[ci].add(id);
        }
        true
    }

    /// A copy, or None without memory for it.
    pub(super) fn try_clone(&self) -> Option<Self> {
        let alloc = self.consumers.allocator().clone();
        let copy = |b: &[u8]| {
            let mut v = Vec::new_in(alloc.clone());
            v.try_reserve_exact(b.len()).ok()?;
            v.extend_from_slice(b);
            Some(v)
        };
        let mut pel = Vec::new_in(alloc.clone());
        pel.try_reserve_exact(self.pel.len()).ok()?;
        pel.extend_from_slice(&self.pel);
        let mut consumers = Vec::new_in(alloc.clone());
        consumers.try_reserve_exact(self.consumers.len()).ok()?;
        for c in self.consumers.iter() {
            let mut p = Vec::new_in(alloc.clone());
            p.try_reserve_exact(c.pel.len()).ok()?;
            p.extend_from_slice(&c.pel);
            consumers.push(Consumer {
                name: copy(&c.name)?,
                id: c.id,
                seen_ms: c.seen_ms,
                pel: p,
            });
        }
        Some(Group {
            name: copy(&self.name)?,
            last_id: self.last_id,
            entries_read: self.entries_read,
            pel,
            consumers,
            next_consumer: self.next_consumer,
        })
    }

    /// Bytes of its blocks.
    pub(super) fn bytes(&self) -> usize {
        self.name.capacity()
            + self.pel.capacity() * core::mem::size_of::<(StreamId, Nack)>()
            + self.consumers.capacity() * core::mem::size_of::<Consumer<A>>()
            + self
                .consumers
                .iter()
                .map(|c| c.name.capacity() + c.pel.capacity() * core::mem::size_of::<StreamId>())
                .sum::<usize>()
    }
}
