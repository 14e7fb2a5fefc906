//! One cell of `hopless bench fastpath`: one thread-cache strategy (array, intrusive, intrusive with
//! prefetch, cached-next; see `hopless::experiment::strategy`; each strategy over a heap of its own) running one
//! scenario at one block size on one or more threads.
//!
//! Scenarios (an op is one allocation or one free, except in `cold`, where it is one allocation):
//! - `hot`: allocate and free the same block;
//! - `cold`: allocate a working set of four times the L2 size, free it all, then time allocating it all
//!   back (the seed's "freed, then allocated again at once": the blocks are no longer in cache);
//! - `mixed`: a random interleaving of allocations and frees over 4096 slots.

use std::hint::black_box;
use std::time::Instant;

use hopless::experiment::size_class::{class_for, class_size};
use hopless::experiment::strategy::{CachedNext, FreeList, Intrusive, StrategyCache};
use hopless::experiment::thread_cache::Magazine;
use hopless::Heap;
use hopless::OsPages;
use rand::{rngs::SmallRng, Rng, SeedableRng};

pub const STRATEGIES: [&str; 4] = ["array", "intrusive", "intrusive-prefetch", "cached-next"];
pub const SCENARIOS: [&str; 3] = ["hot", "cold", "mixed"];
pub const SIZES: [u32; 4] = [32, 64, 256, 512];

static H_ARRAY: Heap<OsPages> = Heap::new(OsPages);
static H_INTRUSIVE: Heap<OsPages> = Heap::new(OsPages);
static H_PREFETCH: Heap<OsPages> = Heap::new(OsPages);
static H_NEXT: Heap<OsPages> = Heap::new(OsPages);

/// L2 size in bytes (sysfs), 1 MiB if unknown.
pub fn l2_bytes() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index2/size")
        .ok()
        .and_then(|s| {
            let s = s.trim();
            let (num, mul) = match s.strip_suffix('K') {
                Some(n) => (n, 1024),
                None => match s.strip_suffix('M') {
                    Some(n) => (n, 1 << 20),
                    None => (s, 1),
                },
            };
            num.parse::<usize>().ok().map(|n| n * mul)
        })
        .unwrap_or(1 << 20)
}

/// One thread's run of a scenario: (ns per op, ops, fast-path hit rate).
fn scenario<F: FreeList>(heap: &Heap<OsPages>, name: &str, size: u32, scale: f64) -> (f64, u64, f64) {
    let class = class_for(size as usize, 8).expect("small size");
    let mut c: Box<StrategyCache<F>> = Box::default();
    let (ns, ops);
    // SAFETY: every block comes from `heap` through `c`, is touched within its size and freed once.
    unsafe {
        match name {
            "hot" => {
                let n = (2_000_000.0 * scale) as usize;
                let t = Instant::now();
                for _ in 0..n {
                    let p = c.alloc(heap, class);
                    c.free(heap, class, black_box(p));
                }
                ops = 2 * n as u64;
                ns = t.elapsed().as_nanos() as f64 / ops as f64;
            }
            "cold" => {
                let w = ((4 * l2_bytes()) / class_size(class)).max(1024);
                let rounds = (scale * 2.0).ceil().max(1.0) as usize;
                let mut v = vec![std::ptr::null_mut::<u8>(); w];
                let mut total = 0.0;
                for _ in 0..rounds {
                    for slot in v.iter_mut() {
                        *slot = c.alloc(heap, class);
                        slot.write(1);
                    }
                    for &p in &v {
                        c.free(heap, class, p);
                    }
                    let t = Instant::now();
                    for slot in v.iter_mut() {
                        *slot = c.alloc(heap, class);
                    }
                    total += t.elapsed().as_nanos() as f64;
                    black_box(&v);
                    for &p in &v {
                        c.free(heap, class, p);
                    }
                }
                ops = (rounds * w) as u64;
                ns = total / ops as f64;
            }
            _ => {
                let n = (2_000_000.0 * scale) as usize;
                let mut rng = SmallRng::seed_from_u64(9);
                let plan: Vec<u16> = (0..n).map(|_| rng.gen_range(0..4096)).collect();
                let mut slots = vec![std::ptr::null_mut::<u8>(); 4096];
                let t = Instant::now();
                for &i in &plan {
                    let s = &mut slots[i as usize];
                    if s.is_null() {
                        *s = c.alloc(heap, class);
                        s.write(1);
                    } else {
                        c.free(heap, class, *s);
                        *s = std::ptr::null_mut();
                    }
                }
                ns = t.elapsed().as_nanos() as f64 / n as f64;
                ops = n as u64;
                for &p in slots.iter().filter(|p| !p.is_null()) {
                    c.free(heap, class, p);
                }
            }
        }
        c.flush_all(heap);
    }
    (ns, ops, c.fast_alloc_rate())
}

/// Runs one cell on `threads` threads: (mean ns/op over threads, total ops, mean hit rate).
pub fn cell(strategy: &str, name: &str, size: u32, threads: u32, scale: f64) -> (f64, u64, f64) {
    fn go<F: FreeList>(
        heap: &'static Heap<OsPages>,
        name: &str,
        size: u32,
        threads: u32,
        scale: f64,
    ) -> (f64, u64, f64) {
        let rs: Vec<(f64, u64, f64)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| s.spawn(|| scenario::<F>(heap, name, size, scale)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("scenario thread"))
                .collect()
        });
        let k = rs.len() as f64;
        (
            rs.iter().map(|r| r.0).sum::<f64>() / k,
            rs.iter().map(|r| r.1).sum(),
            rs.iter().map(|r| r.2).sum::<f64>() / k,
        )
    }
    match strategy {
        "array" => go::<Magazine>(&H_ARRAY, name, size, threads, scale),
        "intrusive" => go::<Intrusive<false>>(&H_INTRUSIVE, name, size, threads, scale),
        "intrusive-prefetch" => go::<Intrusive<true>>(&H_PREFETCH, name, size, threads, scale),
        "cached-next" => go::<CachedNext>(&H_NEXT, name, size, threads, scale),
        other => panic!("unknown strategy {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_runs() {
        for s in STRATEGIES {
            for sc in SCENARIOS {
                let (ns, ops, hit) = cell(s, sc, 64, 2, 0.001);
                assert!(
                    ns > 0.0 && ops > 0 && (0.0..=1.0).contains(&hit),
                    "{s} {sc}: {ns} {ops} {hit}"
                );
            }
        }
        assert!(l2_bytes() >= 64 << 10);
    }
}
