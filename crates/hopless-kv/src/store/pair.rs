//! Two keys' shards write-locked at once (RENAME, COPY): the lower index first, so two such calls never
//! deadlock, and one lock when both keys live on the same shard; and the preamble RENAME and COPY share.

use parking_lot::RwLockWriteGuard;

use super::counters::Op;
use super::shard::{Loc, Shard, Store};
use crate::alloc::KvAlloc;
use crate::error::Result;

pub(super) struct ShardPair<'s, A: KvAlloc> {
    low: usize,
    a: RwLockWriteGuard<'s, Shard<A>>,
    /// The higher shard's guard; None when both keys share the lower one.
    b: Option<RwLockWriteGuard<'s, Shard<A>>>,
}

impl<'s, A: KvAlloc> ShardPair<'s, A> {
    /// Locks the shards of `x` and `y`.
    pub(super) fn lock(store: &'s Store<A>, x: Loc, y: Loc) -> Self {
        let (low, high) = (x.shard.min(y.shard), x.shard.max(y.shard));
        let a = store.inner.shards[low].lock.write();
        let b = (high != low).then(|| store.inner.shards[high].lock.write());
        ShardPair { low, a, b }
    }

    /// The guard of the shard `l` lives on (which is one of the two).
    pub(super) fn of(&mut self, l: Loc) -> &mut RwLockWriteGuard<'s, Shard<A>> {
        if l.shard == self.low {
            &mut self.a
        } else {
            self.b.as_mut().expect("the key's shard is one of the pair")
        }
    }
}

impl<A: KvAlloc> Store<A> {
    /// What RENAME and COPY do first: checks `dst` as a key, counts the operation, locks both keys'
    /// shards, and expires either key if it is due; the locks, with `src`'s and `dst`'s places.
    pub(super) fn lock_src_dst(&self, src: &[u8], dst: &[u8]) -> Result<(ShardPair<'_, A>, Loc, Loc)> {
        self.check_key(dst)?;
        let (ls, ld) = (self.loc(src), self.loc(dst));
        self.count(Op::Set);
        let mut pair = ShardPair::lock(self, ls, ld);
        self.expire_if_due(pair.of(ls), ls, src);
        self.expire_if_due(pair.of(ld), ld, dst);
        Ok((pair, ls, ld))
    }
}
