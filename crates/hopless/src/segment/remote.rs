//! Frees from a thread that does not own a block's slab: the remote-free bitmap of thread-owned slabs
//! (the design is in `docs/central-heap.md`, "Thread-owned slabs"). The protocol alone, with
//! unit tests and loom models (`crates/hopless-loom` compiles this file against loom's atomics); each
//! slab header holds one (`Slab::remote`), and `heap/owned.rs` drives it.
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

/// A slab's remote frees: `WORDS` 64-bit words of one bit per block (the slab bitmap's size). The
/// owner's token is the slab's (`owner` below: 0 when the slab is its class's, whose lock then covers
/// its bitmap), kept with the fields a flush reads first, so the methods take it.
pub struct RemoteFrees<const WORDS: usize> {
    /// Whether a remote free happened since the last fold began (0 or 1): the free that raises it
    /// from 0 hints the owner.
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
            pending: AtomicU32::new(0),
            bits: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Another thread's free of block `index` (checked to be a handed-out block start of this slab).
    pub fn free(&self, owner: &AtomicU32, index: u32) -> RemoteFree {
        if index as usize / 64 >= WORDS {
            return RemoteFree::OutOfRange;
        }
        match self.free_bits(owner, index / 64, 1u64 << (index % 64)) {
            Ok(r) => r,
            Err(_) => RemoteFree::AlreadyFree,
        }
    }

    /// Another thread's free of the blocks whose bits are `bits` in word `word` (a flush's run: each
    /// checked to be a handed-out block start of this slab; `bits` not zero). `Err(index)`: the block at
    /// `index` was freed remotely already (a double free; the other bits are set, and the caller stops
    /// the process). A word beyond the bitmap records nothing (`Recorded` with nothing to do: callers
    /// only pass indices their slab's capacity allows).
    pub fn free_bits(&self, owner: &AtomicU32, word: u32, bits: u64) -> Result<RemoteFree, u32> {
        let Some(w) = self.bits.get(word as usize) else {
            return Ok(RemoteFree::Recorded {
                notify_owner: None,
                fold_now: false,
            });
        };
        let old = w.fetch_or(bits, Ordering::SeqCst);
        if old & bits != 0 {
            return Err(word * 64 + (old & bits).trailing_zeros());
        }
        // Only the free that finds no free pending writes `pending` (most remote frees find one, and
        // leave its line to the others): one that reads it set came before the fold that will reset
        // it, so that fold sees this bit; one that reads 0 raises it and hints the owner.
        let first = self.pending.load(Ordering::SeqCst) == 0 && self.pending.swap(1, Ordering::SeqCst) == 0;
        let owner = owner.load(Ordering::SeqCst);
        Ok(RemoteFree::Recorded {
            notify_owner: (first && owner != 0).then_some(owner),
            fold_now: owner == 0,
        })
    }

    /// Whether any remote free is waiting (the owner's look before a fold).
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst) != 0
    }

    /// Whether block `index` is free here (for the double-free check of a block whose key or mark says
    /// it may be in its slab: exact for a block the caller holds, as for the slab's bitmap).
    pub fn is_free(&self, index: u32) -> bool {
        self.bits
            .get(index as usize / 64)
            .is_some_and(|w| w.load(Ordering::SeqCst) & (1u64 << (index % 64)) != 0)
    }

    /// The remote bits of word `w` (0 beyond the bitmap): the owner's flush checks its runs against
    /// them, so a block freed by another thread and then again by the owner is reported at once.
    pub fn word(&self, w: u32) -> u64 {
        self.bits.get(w as usize).map_or(0, |b| b.load(Ordering::SeqCst))
    }

    /// Moves every remote free into `bitmap` (the slab's; the caller is the only writer of it: the
    /// owner, or the class lock holder). Returns how many blocks moved, or the index of a block whose
    /// bit was set in both (a double free; the rest of that word is left unmoved).
    ///
    /// Each word's bits are set in `bitmap` before they are cleared here, so a block freed remotely is
    /// free in at least one of the two all along: a reader that loads this bitmap (SeqCst) and then the
    /// slab's ([`RemoteFrees::is_free`] first, as `Slab::is_free` does) cannot miss it in between.
    pub fn fold(&self, bitmap: &[AtomicU64]) -> Result<u32, u32> {
        self.pending.swap(0, Ordering::SeqCst);
        let mut moved = 0;
        for (w, (word, local)) in self.bits.iter().zip(bitmap).enumerate() {
            let bits = word.load(Ordering::SeqCst);
            if bits == 0 {
                continue;
            }
            let old = local.load(Ordering::Relaxed);
            let both = old & bits;
            if both != 0 {
                return Err((w * 64) as u32 + both.trailing_zeros());
            }
            local.store(old | bits, Ordering::SeqCst);
            // Only the bits moved: a free that set another bit meanwhile stays for the next fold (its
            // raise of `pending` came after the reset above, so it hinted the owner).
            word.fetch_and(!bits, Ordering::SeqCst);
            moved += bits.count_ones();
        }
        Ok(moved)
    }

    /// Forgets every remote free (a slab joining a class fresh from its pool: nothing of it was out,
    /// so only a double free can have left a bit).
    pub fn clear(&self) {
        self.pending.store(0, Ordering::Relaxed);
        for w in &self.bits {
            w.store(0, Ordering::Relaxed);
        }
    }

    /// Gives the slab to its class (under the class lock): no owner from now on, and every remote free
    /// so far folded into `bitmap`. A free that still saw the owner is either folded here or told to
    /// fold under the class lock (`fold_now`).
    pub fn hand_over(&self, owner: &AtomicU32, bitmap: &[AtomicU64]) -> Result<u32, u32> {
        owner.store(0, Ordering::SeqCst);
        self.fold(bitmap)
    }
}

/// A slab header's owner and remote frees, as the tests drive them.
#[cfg(test)]
struct Header<const WORDS: usize> {
    owner: AtomicU32,
    remote: RemoteFrees<WORDS>,
}

#[cfg(test)]
impl<const WORDS: usize> Header<WORDS> {
    fn new() -> Self {
        Header {
            owner: AtomicU32::new(0),
            remote: RemoteFrees::new(),
        }
    }
    fn free(&self, index: u32) -> RemoteFree {
        self.remote.free(&self.owner, index)
    }
    fn fold(&self, bitmap: &[AtomicU64]) -> Result<u32, u32> {
        self.remote.fold(bitmap)
    }
    fn hand_over(&self, bitmap: &[AtomicU64]) -> Result<u32, u32> {
        self.remote.hand_over(&self.owner, bitmap)
    }
    fn has_pending(&self) -> bool {
        self.remote.has_pending()
    }
    fn is_free(&self, index: u32) -> bool {
        self.remote.is_free(index)
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
        let r = Header::<2>::new();
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
        let r = Header::<2>::new();
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
        let r = Header::<2>::new();
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
                let r = Arc::new(Header::<1>::new());
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
            let r = Arc::new(Header::<1>::new());
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

    /// A block freed remotely reads as free at every point of the owner's fold, to a reader that looks
    /// at the remote bits and then at the slab's bitmap (the double-free check, `Slab::is_free`).
    #[test]
    fn a_remotely_freed_block_reads_free_throughout_a_fold() {
        loom::model(|| {
            let r = Arc::new(Header::<1>::new());
            r.owner.store(5, Ordering::SeqCst);
            assert!(matches!(r.free(3), RemoteFree::Recorded { .. }));
            let b = bitmap();
            let t = {
                let (r, b) = (r.clone(), b.clone());
                loom::thread::spawn(move || r.is_free(3) || b[0].load(Ordering::SeqCst) & (1 << 3) != 0)
            };
            assert_eq!(r.fold(&b[..]), Ok(1));
            assert!(t.join().unwrap(), "the block read as not free during the fold");
        });
    }

    /// A remote free racing the hand-over: the hand-over folds the bit, or the freer is told to fold,
    /// and then the bit is in the bitmap exactly once.
    #[test]
    fn a_remote_free_racing_the_hand_over_is_folded_by_one_side() {
        loom::model(|| {
            let r = Arc::new(Header::<1>::new());
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
