//! Cross-thread batches without a lock: a few slots per small class, each holding one half-magazine.
//!
//! A thread whose magazine is full (a consumer freeing blocks another thread allocated) puts its older
//! half into an empty slot; a thread whose magazine is empty (the producer) takes a full slot's batch
//! before it goes to the central heap. Both are a compare-and-swap on the slot's state and a copy of at
//! most [`BATCH_MAX`] pointers: no lock, no slab header or bitmap touched, and no block memory read. The
//! central heap's class lock is taken only when every slot is full (a flush) or empty (a refill).
//!
//! **Off by default** (`HOPLESS_TRANSFER=1` turns it on). It is the lock-free cross-thread path measured
//! against the class lock alone (README, "Cross-thread frees"): on the 2-core machines the two could not
//! be told apart beyond the noise, and the slots keep up to 256 KiB per class out of the slabs, where
//! purging cannot reach them, so the simpler path stays the default until a many-core run decides.
//!
//! A slot's state word is `gen << 3 | frozen << 2 | phase`. The phases go `EMPTY → FILLING → FULL →
//! DRAINING → EMPTY`; only the thread that moved a slot into `FILLING` or `DRAINING` writes or reads its
//! blocks, and it leaves that phase with a release store that also bumps `gen`, so a reader that saw
//! `FULL` and sees the same word again knows the contents did not change in between (no ABA). `frozen`
//! holds a slot still across `fork` (see [`Transfer::freeze`]).
//!
//! Blocks in a slot carry the transfer mark in their first word (`cache::transfer_mark`), so a
//! double free of one is caught by [`Transfer::holds`], and, once the batch moved on, by the slab's bitmap
//! or the taking thread's refill filter, as for a block flushed to its slab.

use crate::size_class::{class_size, MAG_MAX};
use crate::sync::{fence, AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// Slots per class (fewer for large blocks: see [`slots_for`]).
pub const TRANSFER_SLOTS: usize = 8;
/// The most blocks one slot holds: half the largest magazine.
pub const BATCH_MAX: usize = MAG_MAX / 2;
/// The bytes a class keeps in its slots at most (the slot count is cut to fit).
const CLASS_BYTES: usize = 256 << 10;

const PHASE: u64 = 3;
const EMPTY: u64 = 0;
const FILLING: u64 = 1;
const FULL: u64 = 2;
const DRAINING: u64 = 3;
const FROZEN: u64 = 4;
const GEN: u64 = 8;

/// How many slots `class` uses for batches of `batch` blocks: as many as fit in [`CLASS_BYTES`], at least
/// one, at most [`TRANSFER_SLOTS`].
pub fn slots_for(class: usize, batch: usize) -> usize {
    (CLASS_BYTES / (class_size(class) * batch.max(1))).clamp(1, TRANSFER_SLOTS)
}

#[repr(C, align(64))]
struct Slot {
    state: AtomicU64,
    len: AtomicU32,
    blocks: [AtomicPtr<u8>; BATCH_MAX],
}

/// One class's slots.
pub struct Transfer {
    slots: [Slot; TRANSFER_SLOTS],
    /// Batches put and taken (relaxed counters, for tests and statistics).
    pub puts: AtomicU64,
    pub takes: AtomicU64,
}

impl Transfer {
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Transfer {
            slots: [const {
                Slot {
                    state: AtomicU64::new(EMPTY),
                    len: AtomicU32::new(0),
                    blocks: [const { AtomicPtr::new(core::ptr::null_mut()) }; BATCH_MAX],
                }
            }; TRANSFER_SLOTS],
            puts: AtomicU64::new(0),
            takes: AtomicU64::new(0),
        }
    }

    /// loom's atomics cannot be made in a `const` context.
    #[cfg(loom)]
    pub fn new() -> Self {
        Transfer {
            slots: core::array::from_fn(|_| Slot {
                state: AtomicU64::new(EMPTY),
                len: AtomicU32::new(0),
                blocks: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
            }),
            puts: AtomicU64::new(0),
            takes: AtomicU64::new(0),
        }
    }

    /// Puts `blocks` into an empty slot among the first `slots`; false (nothing done) when none is empty,
    /// or the batch is larger than a slot.
    pub fn put(&self, blocks: &[*mut u8], slots: usize) -> bool {
        if blocks.is_empty() || blocks.len() > BATCH_MAX {
            return false;
        }
        for slot in self.slots.iter().take(slots) {
            let s = slot.state.load(Ordering::Relaxed);
            if s & (PHASE | FROZEN) != EMPTY {
                continue;
            }
            if slot
                .state
                .compare_exchange(s, s | FILLING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            // The seqlock's write side: the phase change above is ordered before the stores below, so
            // a `holds` that reads any of them sees the state changed when it reads it again. (An
            // acquire CAS orders later loads and stores after its read, not after its write: on aarch64
            // the new blocks could otherwise be seen before `FILLING`.) On x86-64 this costs nothing.
            fence(Ordering::Release);
            for (dst, &p) in slot.blocks.iter().zip(blocks) {
                dst.store(p, Ordering::Relaxed);
            }
            slot.len.store(blocks.len() as u32, Ordering::Relaxed);
            slot.state
                .store((s & !PHASE).wrapping_add(GEN) | FULL, Ordering::Release);
            self.puts.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Takes a full slot's batch into `out` (which must hold [`BATCH_MAX`] blocks); returns how many, 0
    /// when no slot is full. Every slot is looked at, so that a batch put while more slots were in use
    /// is still found.
    pub fn take(&self, out: &mut [*mut u8]) -> usize {
        if out.len() < BATCH_MAX {
            return 0;
        }
        for slot in &self.slots {
            let s = slot.state.load(Ordering::Relaxed);
            if s & (PHASE | FROZEN) != FULL {
                continue;
            }
            if slot
                .state
                .compare_exchange(s, (s & !PHASE) | DRAINING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let n = (slot.len.load(Ordering::Relaxed) as usize).min(BATCH_MAX);
            for (o, src) in out.iter_mut().zip(&slot.blocks).take(n) {
                *o = src.load(Ordering::Relaxed);
            }
            slot.state
                .store((s & !PHASE).wrapping_add(GEN) | EMPTY, Ordering::Release);
            self.takes.fetch_add(1, Ordering::Relaxed);
            return n;
        }
        0
    }

    /// Whether `p` sits in a full slot now (the double-free check of a block with the transfer mark). A
    /// slot that changes while being looked through is looked at again.
    pub fn holds(&self, p: *mut u8) -> bool {
        for slot in &self.slots {
            loop {
                let s = slot.state.load(Ordering::Acquire);
                if s & PHASE != FULL {
                    break;
                }
                let n = (slot.len.load(Ordering::Relaxed) as usize).min(BATCH_MAX);
                let found = slot.blocks.iter().take(n).any(|b| b.load(Ordering::Relaxed) == p);
                // The reads above happen before the state is read again (a seqlock's read side).
                fence(Ordering::Acquire);
                if slot.state.load(Ordering::Relaxed) == s {
                    if found {
                        return true;
                    }
                    break;
                }
            }
        }
        false
    }

    /// Holds every slot still (before `fork`): waits for each batch being put or taken to finish, then
    /// marks the slot frozen so that nobody claims it until [`Transfer::thaw`]. A put or take in flight
    /// holds no lock and allocates nothing, so the wait is short; the forking thread is never the one in
    /// flight (fork handlers run outside malloc).
    pub fn freeze(&self) {
        for slot in &self.slots {
            let mut spins = 0u32;
            loop {
                let s = slot.state.load(Ordering::Relaxed);
                let phase = s & PHASE;
                if s & FROZEN != 0 {
                    break;
                }
                if (phase == EMPTY || phase == FULL)
                    && slot
                        .state
                        .compare_exchange(s, s | FROZEN, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    break;
                }
                spins += 1;
                if spins > 64 {
                    crate::platform::yield_now();
                } else {
                    core::hint::spin_loop();
                }
            }
        }
    }

    /// Lets the slots be claimed again (after `fork`, in both processes).
    pub fn thaw(&self) {
        for slot in &self.slots {
            slot.state.fetch_and(!FROZEN, Ordering::Release);
        }
    }

    /// How many of the slots are held still (for tests).
    #[cfg(test)]
    pub fn frozen(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.state.load(Ordering::Relaxed) & FROZEN != 0)
            .count()
    }
}

impl Default for Transfer {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn fake(i: usize) -> *mut u8 {
        core::ptr::without_provenance_mut(0x1000 + 16 * i)
    }

    #[test]
    fn batches_go_in_and_come_out_whole() {
        let t = Transfer::new();
        let a: Vec<_> = (0..BATCH_MAX).map(fake).collect();
        let b: Vec<_> = (1000..1010).map(fake).collect();
        assert!(t.put(&a, 2));
        assert!(t.put(&b, 2));
        assert!(!t.put(&b, 2), "two slots allowed, both full");
        assert!(t.holds(fake(5)) && t.holds(fake(1003)) && !t.holds(fake(999)));
        let mut out = [core::ptr::null_mut(); BATCH_MAX];
        let n1 = t.take(&mut out);
        let first: Vec<_> = out[..n1].to_vec();
        let n2 = t.take(&mut out);
        let second: Vec<_> = out[..n2].to_vec();
        assert_eq!(t.take(&mut out), 0);
        let mut all = [first, second];
        all.sort_by_key(|v| v.len());
        assert_eq!(all[0], b);
        assert_eq!(all[1], a);
        assert!(!t.holds(fake(5)));
        assert!(!t.put(&[], 2) && !t.put(&vec![fake(0); BATCH_MAX + 1], 2));
    }

    #[test]
    fn frozen_slots_are_skipped_until_thawed() {
        let t = Transfer::new();
        assert!(t.put(&[fake(1)], 1));
        t.freeze();
        let mut out = [core::ptr::null_mut(); BATCH_MAX];
        assert_eq!(t.take(&mut out), 0);
        assert!(!t.put(&[fake(2)], 8));
        assert!(
            t.holds(fake(1)),
            "a frozen full slot still counts for the double-free check"
        );
        t.thaw();
        assert_eq!(t.take(&mut out), 1);
        assert_eq!(out[0], fake(1));
    }

    #[test]
    fn threads_moving_batches_lose_and_duplicate_nothing() {
        let t = Transfer::new();
        let threads = 4;
        let per = if cfg!(miri) { 20 } else { 20_000 };
        let total = std::sync::atomic::AtomicUsize::new(0);
        let seen = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for th in 0..threads {
                let (t, total, seen) = (&t, &total, &seen);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    let mut out = [core::ptr::null_mut(); BATCH_MAX];
                    for i in 0..per {
                        let base = (th * per + i) * 4;
                        let batch: Vec<_> = (base..base + 3).map(fake).collect();
                        while !t.put(&batch, 3) {
                            let n = t.take(&mut out);
                            mine.extend_from_slice(&out[..n]);
                        }
                        let n = t.take(&mut out);
                        mine.extend_from_slice(&out[..n]);
                    }
                    total.fetch_add(mine.len(), Ordering::Relaxed);
                    seen.lock().unwrap().extend(mine.iter().map(|p| p.addr()));
                });
            }
        });
        let mut out = [core::ptr::null_mut(); BATCH_MAX];
        let mut seen = seen.into_inner().unwrap();
        loop {
            let n = t.take(&mut out);
            if n == 0 {
                break;
            }
            seen.extend(out[..n].iter().map(|p| p.addr()));
        }
        seen.sort();
        let len = seen.len();
        seen.dedup();
        assert_eq!(seen.len(), len, "a block came out twice");
        assert_eq!(len, threads * per * 3, "a block was lost");
    }
}

/// loom models (run by `crates/hopless-loom` under `--cfg loom`, with batches of 2): every interleaving of
/// the slot protocol's atomics, checked for lost and duplicated blocks.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    fn fake(i: usize) -> *mut u8 {
        core::ptr::without_provenance_mut(0x1000 + 16 * i)
    }

    fn drain(t: &Transfer, into: &mut Vec<usize>) {
        let mut out = [core::ptr::null_mut(); BATCH_MAX];
        loop {
            let n = t.take(&mut out);
            if n == 0 {
                break;
            }
            into.extend(out[..n].iter().map(|p| p.addr()));
        }
    }

    /// Two threads put a batch each into one slot's worth of room while a third takes: every block
    /// comes out exactly once, from the taker or from what is left.
    #[test]
    fn concurrent_puts_and_a_take_lose_and_duplicate_nothing() {
        loom::model(|| {
            let t = Arc::new(Transfer::new());
            let putters: Vec<_> = (0..2)
                .map(|k| {
                    let t = t.clone();
                    loom::thread::spawn(move || t.put(&[fake(2 * k), fake(2 * k + 1)], 1))
                })
                .collect();
            let taker = {
                let t = t.clone();
                loom::thread::spawn(move || {
                    let mut got = Vec::new();
                    let mut out = [core::ptr::null_mut(); BATCH_MAX];
                    let n = t.take(&mut out);
                    got.extend(out[..n].iter().map(|p| p.addr()));
                    got
                })
            };
            let put: Vec<bool> = putters.into_iter().map(|h| h.join().unwrap()).collect();
            let mut seen = taker.join().unwrap();
            drain(&t, &mut seen);
            let mut expected: Vec<usize> = (0..2)
                .filter(|&k| put[k])
                .flat_map(|k| [fake(2 * k).addr(), fake(2 * k + 1).addr()])
                .collect();
            expected.sort();
            seen.sort();
            assert_eq!(seen, expected);
        });
    }

    /// A slot frozen for `fork` is neither filled nor emptied until thawed, and a put or take in flight
    /// finishes before the freeze returns.
    #[test]
    fn freeze_waits_for_a_put_in_flight_and_holds_the_slot() {
        loom::model(|| {
            let t = Arc::new(Transfer::new());
            let putter = {
                let t = t.clone();
                loom::thread::spawn(move || t.put(&[fake(1), fake(2)], 1))
            };
            t.freeze();
            let mut out = [core::ptr::null_mut(); BATCH_MAX];
            assert_eq!(t.take(&mut out), 0, "a frozen slot is not taken");
            let put = putter.join().unwrap();
            assert_eq!(
                t.holds(fake(1)),
                put,
                "the double-free check sees a frozen full slot"
            );
            t.thaw();
            assert_eq!(t.take(&mut out), if put { 2 } else { 0 });
        });
    }

    /// `holds` never reports a block that is not in a slot at some moment of the call.
    #[test]
    fn holds_agrees_with_a_racing_take() {
        loom::model(|| {
            let t = Arc::new(Transfer::new());
            assert!(t.put(&[fake(7)], 1));
            let taker = {
                let t = t.clone();
                loom::thread::spawn(move || {
                    let mut out = [core::ptr::null_mut(); BATCH_MAX];
                    t.take(&mut out)
                })
            };
            let _ = t.holds(fake(7));
            assert!(!t.holds(fake(8)));
            assert_eq!(taker.join().unwrap(), 1);
            assert!(!t.holds(fake(7)));
        });
    }
}
