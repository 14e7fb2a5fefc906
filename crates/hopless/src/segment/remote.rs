//! Frees from a thread that does not own a block's slab: the remote-free bitmap of thread-owned slabs
//! (issue 26; the design is in `docs/central-heap.md`, "Next: thread-owned slabs"). This is its first
//! step, the protocol alone, with unit tests and loom models (`crates/hopless-loom` compiles this file
//! against loom's atomics); the heap does not use it yet.
//!
//! A slab owned by a thread cache is written only by that cache's thread. Any other thread that frees a
//! block of it sets the block's bit here ([`RemoteFrees::free`]), never in the slab's bitmap and never
//! in the block; the owner moves those bits into the bitmap in bulk ([`RemoteFrees::fold`]). The free
//! that finds no remote free pending tells the caller to hint the owner, so the owner looks only when
//! there is something to fold. Handing the slab to its class ([`RemoteFrees::hand_over`], under the
//! class lock) races remote frees that still saw the owner; a store then a load on each side (SeqCst)
//! orders them: either the hand-over's fold sees the freer's bit, or the freer sees the owner gone and
//! folds under the class lock itself.
//!
//! Invariants (relied on by the double-free reports and by the owner's `free` count):
//! - between two folds a block's bit is set here at most once: a free that finds it set is a double
//!   free ([`RemoteFree::AlreadyFree`]);
//! - a block is free in at most one of this bitmap and the slab's: a fold that finds a bit in both
//!   reports a double free (the block was free in the slab, so it was never out twice);
//! - a bit set here is seen by a later fold: the free that set it either saw `pending` at 0 (and
//!   returned `notify_owner`), or saw it raised by a free whose hint is not consumed yet, or the fold
//!   that reset `pending` comes after the bit in the SeqCst order and sees it.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// A slab's remote frees: `WORDS` 64-bit words of one bit per block (the slab bitmap's size).
pub struct RemoteFrees<const WORDS: usize> {
    /// The owner's token; 0 when the slab is its class's (whose lock then covers its bitmap).
    pub owner: AtomicU32,
    /// Remote frees since the last fold began: the free that raises it from 0 hints the owner.
    pending: AtomicU32,
    /// Bit `i`: block `i` was freed by another thread and is not folded yet.
    bits: [AtomicU64; WORDS],
}

/// What a remote free asks of the caller.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RemoteFree {
    /// The bit is set. `notify_owner`: the owner's token, when this free is the first since the last
    /// fold began (set that cache's hint); `fold_now`: the slab is its class's now (fold it under the
    /// class lock).
    Recorded {
        notify_owner: Option<u32>,
        fold_now: bool,
    },
    /// The block's bit was set already: a double free.
    AlreadyFree,
    /// The index is beyond the bitmap: not a block of this slab.
    OutOfRange,
}

impl<const WORDS: usize> Default for RemoteFrees<WORDS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const WORDS: usize> RemoteFrees<WORDS> {
    /// Nothing freed remotely, owned by the class. (Not `const`: loom's atomics cannot be made there;
    /// in a slab header all-zero is this state.)
    pub fn new() -> Self {
        RemoteFrees {
            owner: AtomicU32::new(0),
            pending: AtomicU32::new(0),
            bits: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Another thread's free of block `index` (checked to be a handed-out block start of this slab).
    pub fn free(&self, index: u32) -> RemoteFree {
        let bit = 1u64 << (index % 64);
        let Some(word) = self.bits.get(index as usize / 64) else {
            return RemoteFree::OutOfRange;
        };
        if word.fetch_or(bit, Ordering::SeqCst) & bit != 0 {
            return RemoteFree::AlreadyFree;
        }
        let first = self.pending.fetch_add(1, Ordering::SeqCst) == 0;
        let owner = self.owner.load(Ordering::SeqCst);
        RemoteFree::Recorded {
            notify_owner: (first && owner != 0).then_some(owner),
            fold_now: owner == 0,
        }
    }

    /// Whether any remote free is waiting (the owner's look before a fold).
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst) != 0
    }

    /// Whether block `index` is free here (for the double-free check of a block marked as in its slab:
    /// exact for a block the caller holds, as for the slab's bitmap).
    pub fn is_free(&self, index: u32) -> bool {
        self.bits
            .get(index as usize / 64)
            .is_some_and(|w| w.load(Ordering::SeqCst) & (1u64 << (index % 64)) != 0)
    }

    /// Moves every remote free into `bitmap` (the slab's; the caller is the only writer of it: the
    /// owner, or the class lock holder). Returns how many blocks moved, or the index of a block whose
    /// bit was set in both (a double free; the rest of that word is left unmoved).
    pub fn fold(&self, bitmap: &[AtomicU64]) -> Result<u32, u32> {
        self.pending.swap(0, Ordering::SeqCst);
        let mut moved = 0;
        for (w, (word, local)) in self.bits.iter().zip(bitmap).enumerate() {
            if word.load(Ordering::SeqCst) == 0 {
                continue;
            }
            let bits = word.swap(0, Ordering::SeqCst);
            let old = local.load(Ordering::Relaxed);
            let both = old & bits;
            if both != 0 {
                return Err((w * 64) as u32 + both.trailing_zeros());
            }
            local.store(old | bits, Ordering::Relaxed);
            moved += bits.count_ones();
        }
        Ok(moved)
    }

    /// Gives the slab to its class (under the class lock): no owner from now on, and every remote free
    /// so far folded into `bitmap`. A free that still saw the owner is either folded here or told to
    /// fold under the class lock (`fold_now`).
    pub fn hand_over(&self, bitmap: &[AtomicU64]) -> Result<u32, u32> {
        self.owner.store(0, Ordering::SeqCst);
        self.fold(bitmap)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn bitmap() -> [AtomicU64; 2] {
        [AtomicU64::new(0), AtomicU64::new(0)]
    }

    #[test]
    fn the_first_remote_free_since_a_fold_hints_the_owner_and_a_fold_moves_every_bit() {
        let r = RemoteFrees::<2>::new();
        r.owner.store(7, Ordering::Relaxed);
        assert_eq!(
            r.free(3),
            RemoteFree::Recorded {
                notify_owner: Some(7),
                fold_now: false
            }
        );
        assert_eq!(
            r.free(70),
            RemoteFree::Recorded {
                notify_owner: None,
                fold_now: false
            }
        );
        assert!(r.has_pending() && r.is_free(3) && r.is_free(70) && !r.is_free(4));
        let b = bitmap();
        assert_eq!(r.fold(&b), Ok(2));
        assert_eq!(b[0].load(Ordering::Relaxed), 1 << 3);
        assert_eq!(b[1].load(Ordering::Relaxed), 1 << 6);
        assert!(!r.has_pending() && !r.is_free(3));
        // The next free after the fold hints again.
        assert!(matches!(
            r.free(5),
            RemoteFree::Recorded {
                notify_owner: Some(7),
                ..
            }
        ));
    }

    #[test]
    fn double_remote_frees_and_a_block_free_in_both_bitmaps_are_caught() {
        let r = RemoteFrees::<2>::new();
        r.owner.store(1, Ordering::Relaxed);
        assert!(matches!(r.free(9), RemoteFree::Recorded { .. }));
        assert_eq!(r.free(9), RemoteFree::AlreadyFree);
        assert_eq!(r.free(128), RemoteFree::OutOfRange);
        let b = bitmap();
        b[0].store(1 << 9, Ordering::Relaxed);
        assert_eq!(r.fold(&b), Err(9), "free in the slab and freed remotely");
    }

    #[test]
    fn after_the_hand_over_a_remote_free_folds_under_the_class_lock() {
        let r = RemoteFrees::<2>::new();
        r.owner.store(3, Ordering::Relaxed);
        assert!(matches!(r.free(1), RemoteFree::Recorded { .. }));
        let b = bitmap();
        assert_eq!(r.hand_over(&b), Ok(1));
        assert_eq!(
            r.free(2),
            RemoteFree::Recorded {
                notify_owner: None,
                fold_now: true
            }
        );
        assert_eq!(r.fold(&b), Ok(1));
        assert_eq!(b[0].load(Ordering::Relaxed), 0b110);
    }
}

/// loom models (run by `crates/hopless-loom` under `--cfg loom`, one-word bitmaps): every interleaving of
/// a remote free with the owner's fold and with the hand-over, checked for lost bits and for a double
/// free reported other than exactly once.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    fn bitmap() -> Arc<[AtomicU64; 1]> {
        Arc::new([AtomicU64::new(0)])
    }

    /// A remote free racing the owner's fold (with an earlier free pending or not): the fold moves the
    /// bit, or the free hints the owner. (With an earlier free pending, a free that does not hint came
    /// before the fold reset `pending`, so before the fold looked at the bits.)
    #[test]
    fn a_remote_free_racing_a_fold_is_folded_or_hinted() {
        for earlier in [false, true] {
            loom::model(move || {
                let r = Arc::new(RemoteFrees::<1>::new());
                r.owner.store(5, Ordering::SeqCst);
                if earlier {
                    assert!(matches!(r.free(1), RemoteFree::Recorded { .. }));
                }
                let b = bitmap();
                let t = {
                    let r = r.clone();
                    loom::thread::spawn(move || r.free(3))
                };
                r.fold(&b[..]).unwrap();
                let got = t.join().unwrap();
                let folded = b[0].load(Ordering::SeqCst) & (1 << 3) != 0;
                let hinted = matches!(
                    got,
                    RemoteFree::Recorded {
                        notify_owner: Some(5),
                        ..
                    }
                );
                assert!(folded || hinted, "bit 3 neither folded nor hinted: {got:?}");
                // Whatever was not folded is still there for the next fold.
                r.fold(&b[..]).unwrap();
                assert_ne!(b[0].load(Ordering::SeqCst) & (1 << 3), 0);
            });
        }
    }

    /// Two threads free the same block while the owner folds: exactly one of the two frees and the
    /// folds (this one and the next) reports it.
    #[test]
    fn a_block_freed_twice_across_a_fold_is_reported_once() {
        loom::model(|| {
            let r = Arc::new(RemoteFrees::<1>::new());
            r.owner.store(5, Ordering::SeqCst);
            let b = bitmap();
            let ts: Vec<_> = (0..2)
                .map(|_| {
                    let r = r.clone();
                    loom::thread::spawn(move || r.free(3))
                })
                .collect();
            let mut reports = usize::from(r.fold(&b[..]).is_err());
            for t in ts {
                reports += usize::from(t.join().unwrap() == RemoteFree::AlreadyFree);
            }
            reports += usize::from(r.fold(&b[..]).is_err());
            assert_eq!(reports, 1);
        });
    }

    /// A remote free racing the hand-over: the hand-over folds the bit, or the freer is told to fold,
    /// and then the bit is in the bitmap exactly once.
    #[test]
    fn a_remote_free_racing_the_hand_over_is_folded_by_one_side() {
        loom::model(|| {
            let r = Arc::new(RemoteFrees::<1>::new());
            r.owner.store(5, Ordering::SeqCst);
            let b = bitmap();
            let t = {
                let r = r.clone();
                loom::thread::spawn(move || r.free(3))
            };
            let by_hand_over = r.hand_over(&b[..]).unwrap();
            let got = t.join().unwrap();
            let by_freer = match got {
                RemoteFree::Recorded { fold_now: true, .. } => r.fold(&b[..]).unwrap(),
                RemoteFree::Recorded { fold_now: false, .. } => 0,
                other => panic!("{other:?}"),
            };
            assert_eq!(by_hand_over + by_freer, 1, "{got:?}");
            assert_eq!(b[0].load(Ordering::SeqCst), 1 << 3);
            assert!(!r.is_free(3));
        });
    }
}
