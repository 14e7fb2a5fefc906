//! The single-thread allocator workloads: `pair-N`, `lifo-100`, `batch-100`, `random-churn` and
//! `large-churn` (described in `workloads.rs`). Each measures its own timed region and returns ns per op.

use std::hint::black_box;
use std::time::Instant;

use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::alloc::blocks::Blocks;
use crate::alloc::touch::Touch;

/// The live slots of `random-churn`.
pub const CHURN_LIVE: usize = 10_000;

/// The fixed random sequence of `random-churn`: (slot, size) pairs, a power of two of them.
pub struct ChurnPlan {
    steps: Vec<(u32, u32)>,
}

impl ChurnPlan {
    pub fn new() -> Self {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        let steps = (0..1 << 16)
            .map(|_| (rng.gen_range(0..CHURN_LIVE as u32), rng.gen_range(8..=4096u32)))
            .collect();
        ChurnPlan { steps }
    }
}

impl Default for ChurnPlan {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(never)]
pub fn pair<B: Blocks, T: Touch>(b: &B, bytes: usize, n: usize) -> f64 {
    let (request, size) = (B::request(bytes), B::size(bytes));
    let t = Instant::now();
    for i in 0..n {
        // SAFETY: at most 4096 bytes, at least 16; freed at once with its size.
        unsafe {
            let p = b.alloc(black_box(request));
            T::fresh(p, i);
            b.free(black_box(p), size);
        }
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
pub fn lifo<B: Blocks, T: Touch>(b: &B, iters: usize) -> f64 {
    let bytes: [usize; 100] = std::array::from_fn(|i| 16 * (1 + i % 16));
    let requests: [B::Request; 100] = bytes.map(B::request);
    let sizes: [B::Size; 100] = bytes.map(B::size);
    let mut live = [std::ptr::null_mut::<u8>(); 100];
    let t = Instant::now();
    for _ in 0..iters {
        for (i, (slot, &request)) in live.iter_mut().zip(&requests).enumerate() {
            // SAFETY: 16..=256 bytes.
            unsafe {
                let p = b.alloc(black_box(request));
                T::fresh(p, i);
                *slot = p;
            }
        }
        for (&p, &size) in live.iter().zip(&sizes).rev() {
            // SAFETY: allocated just above with this size, freed once.
            unsafe { b.free(T::unused(p), size) };
        }
    }
    t.elapsed().as_nanos() as f64 / (iters * 100) as f64
}

#[inline(never)]
pub fn batch<B: Blocks, T: Touch>(b: &B, iters: usize) -> f64 {
    let (request, size) = (B::request(64), B::size(64));
    let mut live = [std::ptr::null_mut::<u8>(); 100];
    let t = Instant::now();
    for _ in 0..iters {
        for (i, slot) in live.iter_mut().enumerate() {
            // SAFETY: 64 bytes.
            unsafe {
                let p = b.alloc(black_box(request));
                T::fresh(p, i);
                *slot = p;
            }
        }
        for &p in live.iter() {
            // SAFETY: allocated just above with this size, freed once.
            unsafe { b.free(p, size) };
        }
    }
    t.elapsed().as_nanos() as f64 / (iters * 100) as f64
}

#[inline(never)]
pub fn churn<B: Blocks, T: Touch>(b: &B, plan: &ChurnPlan, n: usize) -> f64 {
    let mut live: Vec<(*mut u8, B::Size)> = (0..CHURN_LIVE)
        .map(|i| {
            let bytes = 8 + (i * 97) % 4089;
            // SAFETY: 8..=4096 bytes.
            unsafe {
                let p = b.alloc(B::request(bytes));
                T::fresh(p, i);
                (p, B::size(bytes))
            }
        })
        .collect();
    let steps = &plan.steps[..];
    let t = Instant::now();
    for i in 0..n {
        let (slot, bytes) = steps[i & (steps.len() - 1)];
        let e = &mut live[slot as usize];
        let (request, size) = (B::request(bytes as usize), B::size(bytes as usize));
        // SAFETY: the slot's block is live, with its size, and replaced at once; the new one has
        // 8..=4096 bytes.
        unsafe {
            b.free(e.0, e.1);
            let p = b.alloc(request);
            T::churned(p, i);
            *e = (p, size);
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    for (p, size) in live {
        // SAFETY: live, with its size, freed once.
        unsafe { b.free(p, size) };
    }
    ns
}

/// Live blocks of `large-churn`.
const LARGE_LIVE: usize = 32;

/// Writes one byte in every page of a block, as a program filling it would.
///
/// # Safety
///
/// `p` is a live block of `bytes` bytes.
#[inline(always)]
unsafe fn touch_pages(p: *mut u8, bytes: usize, tag: u8) {
    for off in (0..bytes).step_by(4096) {
        // SAFETY: inside the block.
        unsafe { p.add(off).write_volatile(tag) };
    }
}

#[inline(never)]
pub fn large_churn<B: Blocks, T: Touch>(b: &B, n: usize) -> f64 {
    let mut rng = SmallRng::seed_from_u64(0x1a26e);
    let sizes = 256 << 10..8 << 20;
    let steps: Vec<(usize, usize)> = (0..n)
        .map(|_| (rng.gen_range(0..LARGE_LIVE), rng.gen_range(sizes.clone())))
        .collect();
    let mut live: Vec<(*mut u8, B::Size)> = (0..LARGE_LIVE)
        .map(|i| {
            let bytes = rng.gen_range(sizes.clone());
            // SAFETY: under 8 MiB; then a live block of `bytes` bytes.
            unsafe {
                let p = b.alloc(B::request(bytes));
                T::fresh(p, i);
                touch_pages(p, bytes, 1);
                (p, B::size(bytes))
            }
        })
        .collect();
    let t = Instant::now();
    for (i, &(slot, bytes)) in steps.iter().enumerate() {
        let (old, size) = live[slot];
        // SAFETY: the slot's block is live, with its size, and replaced at once; the new one is under
        // 8 MiB and then live with `bytes` bytes.
        unsafe {
            b.free(old, size);
            let p = b.alloc(B::request(bytes));
            T::fresh(p, i);
            touch_pages(p, bytes, i as u8);
            live[slot] = (p, B::size(bytes));
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    for (p, size) in live {
        // SAFETY: live, with its size, freed once.
        unsafe { b.free(p, size) };
    }
    ns
}
