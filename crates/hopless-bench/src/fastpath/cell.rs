//! One cell of `hopless bench fastpath`: one allocator model (`hopless_lab`: hopless's
//! array over its heap, or SLUB's intrusive lists in three variants over a SLUB central layer) running one
//! scenario at one block size on one thread.
//!
//! Every timed loop does what a caller does: it allocates and then writes the block (its first 64 bytes,
//! or all of it in `work`), and frees a block it used. Nothing in a timed region page-faults: both heaps
//! keep every slab resident (`Heap::set_purging(false)`; the SLUB model never gives memory back), each
//! cell runs its scenario once untimed first, and the minor faults of the timed regions are counted
//! (`getrusage(RUSAGE_THREAD)`) and reported per op.
//!
//! Scenarios:
//! - `hot`: allocate, write, free the same block; an op is the pair;
//! - `cold`: allocate [`COLD_OBJECTS`] blocks, write them, free them in random order, then evict the caches
//!   (write one byte per line of a buffer three times the last-level cache), then time allocating and
//!   writing them all again ("freed, then allocated while cold"); an op is one allocation;
//! - `work`: the allocator as a small part of each op: free a random one of [`WORK_RING`] live blocks,
//!   allocate, fill the block, then two dependent random reads from the same large buffer mixed into it
//!   (a few hundred ns of other work, so that the allocator is the 5-10% of an op claimed for real
//!   programs); an op is all of that.
//!
//! The measured loops are called through [`timed`], never inlined, and set-up and warm-up through
//! [`untimed`], so that callgrind can count the measured ones alone (`--toggle-collect`).

use std::hint::black_box;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use hopless::experiment::size_class::{class_for, class_size};
use hopless::experiment::Heap;
use hopless::OsPages;
use hopless_lab::{Array, Slub, SlubHeap, Strategy, CACHED_NEXT, PLAIN, PREFETCH};
use rand::{rngs::SmallRng, seq::SliceRandom, Rng, SeedableRng};

pub const STRATEGIES: [&str; 4] = ["array", "intrusive", "intrusive-prefetch", "cached-next"];
pub const SCENARIOS: [&str; 3] = ["hot", "cold", "work"];
pub const SIZES: [u32; 4] = [32, 64, 256, 512];

/// Blocks the `cold` scenario frees and allocates again per round.
pub const COLD_OBJECTS: usize = 4096;
/// Live blocks in the `work` scenario.
pub const WORK_RING: usize = 4096;
/// Bytes every timed loop writes into a block it allocated (one cache line, or the block if smaller).
const LINE: usize = 64;

static H_ARRAY: Heap<OsPages> = Heap::new(OsPages);
/// 256 MiB of address space each, reserved on first use; the experiment uses a few MiB.
static H_SLUB: SlubHeap<OsPages> = SlubHeap::new(OsPages, 4096);
static H_PREFETCH: SlubHeap<OsPages> = SlubHeap::new(OsPages, 4096);
static H_NEXT: SlubHeap<OsPages> = SlubHeap::new(OsPages, 4096);

/// Size of the last-level cache in bytes (sysfs, the highest level listed), 32 MiB if unknown.
pub fn llc_bytes() -> usize {
    let mut best = 0;
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Ok(s) = std::fs::read_to_string(format!("{dir}/size")) else {
            continue;
        };
        let s = s.trim();
        let (num, mul) = match (s.strip_suffix('K'), s.strip_suffix('M')) {
            (Some(n), _) => (n, 1024),
            (_, Some(n)) => (n, 1 << 20),
            _ => (s, 1),
        };
        best = best.max(num.parse::<usize>().map_or(0, |n| n * mul));
    }
    if best == 0 {
        32 << 20
    } else {
        best
    }
}

/// A buffer of three times the last-level cache, faulted in once: `cold` writes through it to evict the
/// caches, `work` reads from it at random.
fn big_buffer() -> &'static [AtomicU8] {
    static BUF: OnceLock<Box<[AtomicU8]>> = OnceLock::new();
    let b = BUF.get_or_init(|| {
        let zeroed: Box<[u8]> = vec![0u8; 3 * llc_bytes()].into_boxed_slice();
        // SAFETY: `AtomicU8` has the size, alignment and bit validity of `u8`, so the allocation is a valid
        // `[AtomicU8]` of the same length, freed with the same layout.
        let b: Box<[AtomicU8]> = unsafe { Box::from_raw(Box::into_raw(zeroed) as *mut [AtomicU8]) };
        // Written once, so that every page is faulted in and none reads as the shared zero page.
        for x in b.iter().step_by(4096) {
            x.store(1, Ordering::Relaxed);
        }
        b
    });
    b
}

/// Writes one byte in every cache line of [`big_buffer`]: afterwards, no block is in any cache.
fn evict() {
    for b in big_buffer().iter().step_by(64) {
        b.store(2, Ordering::Relaxed);
    }
}

/// Minor page faults of the calling thread so far.
fn minor_faults() -> u64 {
    // SAFETY: `getrusage` fills the struct we pass; all-zero is a valid `rusage`.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u.ru_minflt as u64
    }
}

/// What one cell measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct CellResult {
    pub ns_per_op: f64,
    /// Ops in the timed regions.
    pub ops: u64,
    /// Minor page faults per op in the timed regions.
    pub faults_per_op: f64,
    /// Allocations served without the central layer.
    pub fast_rate: f64,
}

/// The scenarios' loops. [`timed`] and [`untimed`] call them, out of line, so that callgrind can collect
/// inside the timed calls only.
mod loops {
    // `super` spelled out: it is this file's module, which scripts/check/layers.py (reading files, not
    // inline modules) would take for `fastpath`.
    use crate::fastpath::cell::*;

    /// `n` times: allocate, write a line, free. Returns a value the caller must use.
    ///
    /// # Safety
    ///
    /// `c` serves blocks of at least `line` bytes.
    #[inline(always)]
    pub unsafe fn hot<S: Strategy>(c: &mut S, n: usize, line: usize) -> usize {
        let mut acc = 0usize;
        for i in 0..n {
            // SAFETY: per the caller; the block is ours until freed.
            unsafe {
                let p = c.alloc();
                std::ptr::write_bytes(p, i as u8, line);
                acc = acc.wrapping_add(black_box(p) as usize);
                c.free(p);
            }
        }
        acc
    }

    /// Allocates a block into every slot of `v` and writes its first `line` bytes.
    ///
    /// # Safety
    ///
    /// As for [`hot`].
    #[inline(always)]
    pub unsafe fn cold<S: Strategy>(c: &mut S, v: &mut [*mut u8], line: usize) {
        for (i, slot) in v.iter_mut().enumerate() {
            // SAFETY: per the caller.
            unsafe {
                let p = c.alloc();
                std::ptr::write_bytes(p, i as u8, line);
                *slot = p;
            }
        }
    }

    /// `plan.len()` ops of the `work` scenario over the live blocks in `ring` (each `size` bytes).
    ///
    /// # Safety
    ///
    /// `ring` holds live blocks of `c`, each `size` bytes (at least 8), and every `plan` entry indexes it.
    #[inline(always)]
    pub unsafe fn work<S: Strategy>(c: &mut S, ring: &mut [*mut u8], plan: &[u32], size: usize) -> u64 {
        let table = big_buffer();
        let lines = table.len() / 64;
        let mut h = 0x9e37_79b9_7f4a_7c15u64;
        for &slot in plan {
            let slot = &mut ring[slot as usize];
            // SAFETY: per the caller: the old block is live and ours; the new one is ours to fill.
            unsafe {
                c.free(*slot);
                let p = c.alloc();
                std::ptr::write_bytes(p, h as u8, size);
                for _ in 0..2 {
                    h = (h ^ u64::from(table[(h as usize >> 7) % lines * 64].load(Ordering::Relaxed)))
                        .wrapping_mul(0x2545_f491_4f6c_dd1d)
                        .rotate_left(29);
                }
                p.cast::<u64>().write_unaligned(h);
                *slot = p;
            }
        }
        h
    }
}

/// The measured calls of the loops (callgrind collects inside these only).
pub mod timed {
    use crate::fastpath::cell::*;

    /// # Safety
    ///
    /// As for the loop.
    #[inline(never)]
    pub unsafe fn hot<S: Strategy>(c: &mut S, n: usize, line: usize) -> usize {
        // SAFETY: per the caller.
        unsafe { loops::hot(c, n, line) }
    }

    /// # Safety
    ///
    /// As for the loop.
    #[inline(never)]
    pub unsafe fn cold<S: Strategy>(c: &mut S, v: &mut [*mut u8], line: usize) {
        // SAFETY: per the caller.
        unsafe { loops::cold(c, v, line) }
    }

    /// # Safety
    ///
    /// As for the loop.
    #[inline(never)]
    pub unsafe fn work<S: Strategy>(c: &mut S, ring: &mut [*mut u8], plan: &[u32], size: usize) -> u64 {
        // SAFETY: per the caller.
        unsafe { loops::work(c, ring, plan, size) }
    }
}

/// The set-up and warm-up calls of the same loops.
pub mod untimed {
    use crate::fastpath::cell::*;

    /// # Safety
    ///
    /// As for the loop.
    #[inline(never)]
    pub unsafe fn hot<S: Strategy>(c: &mut S, n: usize, line: usize) -> usize {
        // Not folded into `timed`'s identical function (LLVM merges those), which would count it too.
        black_box(());
        // SAFETY: per the caller.
        unsafe { loops::hot(c, n, line) }
    }

    /// # Safety
    ///
    /// As for the loop.
    #[inline(never)]
    pub unsafe fn cold<S: Strategy>(c: &mut S, v: &mut [*mut u8], line: usize) {
        // Not folded into `timed`'s identical function (LLVM merges those), which would count it too.
        black_box(());
        // SAFETY: per the caller.
        unsafe { loops::cold(c, v, line) }
    }

    /// # Safety
    ///
    /// As for the loop.
    #[inline(never)]
    pub unsafe fn work<S: Strategy>(c: &mut S, ring: &mut [*mut u8], plan: &[u32], size: usize) -> u64 {
        // Not folded into `timed`'s identical function (LLVM merges those), which would count it too.
        black_box(());
        // SAFETY: per the caller.
        unsafe { loops::work(c, ring, plan, size) }
    }
}

/// One scenario on the calling thread with strategy `c` (a fresh thread cache over a long-lived heap).
fn scenario<S: Strategy>(mut c: S, name: &str, size: usize, scale: f64) -> CellResult {
    let line = LINE.min(size);
    let mut timed_ns = 0.0;
    let mut ops = 0u64;
    let mut faults = 0u64;
    let mut rng = SmallRng::seed_from_u64(size as u64);
    // SAFETY: every block comes from `c` and is written within its size and freed once.
    unsafe {
        match name {
            "hot" => {
                let n = ((4_000_000.0 * scale) as usize).max(1000);
                black_box(untimed::hot(&mut c, n / 10, line));
                let (f0, t) = (minor_faults(), Instant::now());
                black_box(timed::hot(&mut c, n, line));
                timed_ns += t.elapsed().as_nanos() as f64;
                faults += minor_faults() - f0;
                ops += n as u64;
            }
            "cold" => {
                let rounds = ((16.0 * scale).ceil() as usize).max(1);
                let mut v = vec![std::ptr::null_mut::<u8>(); COLD_OBJECTS];
                let mut order: Vec<usize> = (0..COLD_OBJECTS).collect();
                // Round 0 faults the working set in, untimed.
                for r in 0..=rounds {
                    untimed::cold(&mut c, &mut v, line);
                    order.shuffle(&mut rng);
                    for &i in &order {
                        c.free(v[i]);
                    }
                    evict();
                    let (f0, t) = (minor_faults(), Instant::now());
                    if r == 0 {
                        untimed::cold(&mut c, &mut v, line);
                    } else {
                        timed::cold(&mut c, &mut v, line);
                    }
                    let ns = t.elapsed().as_nanos() as f64;
                    let f = minor_faults() - f0;
                    black_box(&v);
                    for &p in &v {
                        c.free(p);
                    }
                    if r > 0 {
                        timed_ns += ns;
                        faults += f;
                        ops += COLD_OBJECTS as u64;
                    }
                }
            }
            "work" => {
                let n = ((400_000.0 * scale) as usize).max(1000);
                let mut ring: Vec<*mut u8> = (0..WORK_RING).map(|_| c.alloc()).collect();
                let plan: Vec<u32> = (0..n).map(|_| rng.gen_range(0..WORK_RING as u32)).collect();
                black_box(untimed::work(&mut c, &mut ring, &plan[..n / 10], size));
                let (f0, t) = (minor_faults(), Instant::now());
                black_box(timed::work(&mut c, &mut ring, &plan, size));
                timed_ns += t.elapsed().as_nanos() as f64;
                faults += minor_faults() - f0;
                ops += n as u64;
                for p in ring {
                    c.free(p);
                }
            }
            other => panic!("unknown scenario {other}"),
        }
        c.finish();
    }
    let (fast, slow) = c.counts();
    CellResult {
        ns_per_op: timed_ns / ops.max(1) as f64,
        ops,
        faults_per_op: faults as f64 / ops.max(1) as f64,
        fast_rate: fast as f64 / (fast + slow).max(1) as f64,
    }
}

/// Runs one cell on the calling thread.
pub fn cell(strategy: &str, name: &str, size: u32, scale: f64) -> CellResult {
    H_ARRAY.set_purging(false);
    let class = class_for(size as usize, 8).expect("small size");
    let bytes = class_size(class);
    match strategy {
        "array" => scenario(Array::new(&H_ARRAY, class), name, bytes, scale),
        "intrusive" => scenario(Slub::<_, PLAIN>::new(&H_SLUB, class), name, bytes, scale),
        "intrusive-prefetch" => scenario(Slub::<_, PREFETCH>::new(&H_PREFETCH, class), name, bytes, scale),
        "cached-next" => scenario(Slub::<_, CACHED_NEXT>::new(&H_NEXT, class), name, bytes, scale),
        other => panic!("unknown strategy {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_runs_without_faults_once_warm() {
        for s in STRATEGIES {
            for sc in SCENARIOS {
                let r = cell(s, sc, 64, 0.01);
                assert!(r.ns_per_op > 0.0 && r.ops > 0, "{s} {sc}: {r:?}");
                assert!((0.0..=1.0).contains(&r.fast_rate), "{s} {sc}: {r:?}");
                // A run after the first finds its memory faulted in. The other tests of this binary run
                // beside it and free memory into the same heap, whose delayed purge may give a page of
                // this cell's back between two runs: of three warm runs, one is fault-free.
                let warm = (0..3)
                    .map(|_| cell(s, sc, 64, 0.01))
                    .min_by(|a, b| a.faults_per_op.total_cmp(&b.faults_per_op))
                    .expect("three runs");
                assert!(warm.faults_per_op < 0.01, "{s} {sc}: {warm:?}");
            }
        }
        assert!(llc_bytes() >= 1 << 20);
    }
}
