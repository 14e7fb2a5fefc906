//! The single-thread workloads whose live blocks do not fit in a thread cache: `fifo-lifo-N` and
//! `mixed-sizes` (described in `workloads.rs`). A magazine holds one or two hundred blocks of a class;
//! these keep up to 1 600 of one size, or 2 000 of many sizes, live, so the allocator's layer below its
//! caches (refills, flushes, slabs emptied and taken again) is most of what they time.

use std::time::Instant;

use crate::alloc::blocks::Blocks;
use crate::alloc::touch::Touch;

/// `fifo-lifo-N`'s sizes: 16 B to 4 KiB, small and odd classes alike.
const FIFO_LIFO_SIZES: [usize; 16] = [
    16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
];

/// `fifo-lifo-N`: per size, `n` blocks allocated and written, then the older half freed oldest first
/// and the newer half newest first. ns per op (one allocation and its free); `total` ops at least.
#[inline(never)]
pub fn fifo_lifo<B: Blocks, T: Touch>(b: &B, n: usize, total: usize) -> f64 {
    let per_iter = n * FIFO_LIFO_SIZES.len();
    let iters = total.div_ceil(per_iter).max(1);
    let mut live = vec![std::ptr::null_mut::<u8>(); n];
    let t = Instant::now();
    for _ in 0..iters {
        for &bytes in &FIFO_LIFO_SIZES {
            let (request, size) = (B::request(bytes), B::size(bytes));
            for (i, slot) in live.iter_mut().enumerate() {
                // SAFETY: 16..=4096 bytes.
                unsafe {
                    let p = b.alloc(request);
                    T::fresh(p, i);
                    *slot = p;
                }
            }
            let (older, newer) = live.split_at(n / 2);
            for &p in older.iter().chain(newer.iter().rev()) {
                // SAFETY: allocated just above with this size, freed once.
                unsafe { b.free(p, size) };
            }
        }
    }
    t.elapsed().as_nanos() as f64 / (iters * per_iter) as f64
}

/// Live blocks of `mixed-sizes`.
const MIXED_LIVE: usize = 2_000;

/// A size from 16 B to 32 KiB, about as many in each doubling (log-uniform), from a 64-bit random `x`.
#[inline(always)]
fn mixed_size(x: u64) -> usize {
    let doubling = 4 + (x % 11) as u32; // 16 B .. 16 KiB, then up to twice that
    let base = 1usize << doubling;
    base + ((x >> 8) as usize % base)
}

/// `mixed-sizes`: 2 000 live blocks of 16 B..32 KiB; each op frees a random one and allocates a new one
/// of a random size in its place (xorshift: the same sequence for every allocator).
#[inline(never)]
pub fn mixed_sizes<B: Blocks, T: Touch>(b: &B, n: usize) -> f64 {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut live: Vec<(*mut u8, B::Size)> = (0..MIXED_LIVE)
        .map(|i| {
            let bytes = mixed_size(next());
            // SAFETY: 16 B..32 KiB.
            unsafe {
                let p = b.alloc(B::request(bytes));
                T::fresh(p, i);
                (p, B::size(bytes))
            }
        })
        .collect();
    let t = Instant::now();
    for i in 0..n {
        let r = next();
        let e = &mut live[(r >> 40) as usize % MIXED_LIVE];
        let bytes = mixed_size(r);
        // SAFETY: the slot's block is live with its size and replaced at once; the new one is 16 B..32 KiB.
        unsafe {
            b.free(e.0, e.1);
            let p = b.alloc(B::request(bytes));
            T::churned(p, i);
            *e = (p, B::size(bytes));
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    for (p, size) in live {
        // SAFETY: live, with its size, freed once.
        unsafe { b.free(p, size) };
    }
    ns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_sizes_span_16_bytes_to_32_kib_in_every_doubling() {
        let mut seen = [false; 11];
        let mut x = 1u64;
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let s = mixed_size(x);
            assert!((16..32 << 10).contains(&s), "{s}");
            seen[(s.ilog2() - 4) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
