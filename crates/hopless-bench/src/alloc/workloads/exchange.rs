//! The cross-thread workloads of a server and of an interpreter: `exchange-N` and `queue-churn`
//! (described in `workloads.rs`). Most of their frees come from a thread that did not allocate the
//! block, at random sizes, with more live blocks than a thread cache holds. Each measures its own timed
//! region and returns ns per op.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

use crossbeam_queue::ArrayQueue;

use super::cross_thread::{backoff, push_waiting, SPINS};
use crate::alloc::blocks::Blocks;
use crate::alloc::touch::Touch;

/// Slots of each `exchange-N` array.
const EXCHANGE_SLOTS: usize = 1024;
/// Replacements a thread makes in an array before it hands the array on.
const EXCHANGE_ROUND: usize = 256;

#[inline(always)]
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// `exchange-N`: N threads, N arrays of 1 024 live blocks. A thread replaces random slots of the array
/// it holds with fresh blocks of 8..=1024 bytes (freeing the block each replaces), and after every 256
/// replacements hands the array to the next thread and takes the one the thread before it handed on:
/// N-1 frees in N are of a block another thread allocated.
#[inline(never)]
pub fn exchange<B: Blocks, T: Touch>(b: &B, threads: usize, n: usize) -> f64 {
    type Array<S> = Vec<(usize, S)>;
    let rounds = n.div_ceil(threads * EXCHANGE_ROUND).max(1);
    // inbox[i]: the arrays handed to thread i (as many as there are arrays, so a push never waits).
    let inbox: Vec<ArrayQueue<Array<B::Size>>> = (0..threads).map(|_| ArrayQueue::new(threads)).collect();
    let start = Barrier::new(threads);
    let work = |id: usize| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (id as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let mut mine: Array<B::Size> = (0..EXCHANGE_SLOTS)
            .map(|i| {
                let bytes = 8 + (xorshift(&mut x) as usize % 1017);
                // SAFETY: 8..=1024 bytes.
                unsafe {
                    let p = b.alloc(B::request(bytes));
                    T::fresh(p, i);
                    (p as usize, B::size(bytes))
                }
            })
            .collect();
        let mut sum = 0usize;
        start.wait();
        let t = Instant::now();
        for _ in 0..rounds {
            for i in 0..EXCHANGE_ROUND {
                let r = xorshift(&mut x);
                let slot = &mut mine[(r >> 32) as usize % EXCHANGE_SLOTS];
                let bytes = 8 + (r as usize % 1017);
                // SAFETY: the slot's block is live with its size (whichever thread allocated it) and
                // replaced at once; the new one has 8..=1024 bytes.
                unsafe {
                    sum = sum.wrapping_add(T::taken(slot.0 as *mut u8));
                    b.free(slot.0 as *mut u8, slot.1);
                    let p = b.alloc(B::request(bytes));
                    T::fresh(p, i);
                    *slot = (p as usize, B::size(bytes));
                }
            }
            push_waiting(&inbox[(id + 1) % threads], mine);
            let mut idle = 0;
            mine = loop {
                match inbox[id].pop() {
                    Some(a) => break a,
                    None => backoff(&mut idle, SPINS),
                }
            };
        }
        let end = Instant::now();
        black_box(sum);
        for (p, size) in mine {
            // SAFETY: live blocks with their sizes; this thread holds the array's only reference.
            unsafe { b.free(p as *mut u8, size) };
        }
        (t, end)
    };
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = (1..threads).map(|id| s.spawn(move || work(id))).collect();
        let mut spans = vec![work(0)];
        spans.extend(handles.into_iter().map(|h| h.join().unwrap()));
        spans
    });
    let t = spans.iter().map(|s| s.0).min().expect("one thread at least");
    let end = spans.iter().map(|s| s.1).max().expect("one thread at least");
    end.duration_since(t).as_nanos() as f64 / (rounds * EXCHANGE_ROUND * threads) as f64
}

/// Producer threads of `queue-churn`, and churning threads.
const QUEUE_PRODUCERS: usize = 2;
const QUEUE_CHURNERS: usize = 3;
/// Live blocks each churning thread keeps.
const CHURN_KEEP: usize = 64;

/// `queue-churn`, an interpreter's pattern (the CPython case, `scripts/repro/cpython_queue_churn.py`):
/// two producers allocate blocks of 512 B..20 KiB into one queue, which the calling thread drains and
/// frees; beside them three threads each keep 64 blocks of 600 B..70 KiB and replace random ones. `n`
/// blocks go through the queue and each churner makes `n / 4` replacements; ns per op over all of them.
#[inline(never)]
pub fn queue_churn<B: Blocks, T: Touch>(b: &B, n: usize) -> f64 {
    let q = ArrayQueue::<(usize, B::Size)>::new(256);
    let per_producer = n.div_ceil(QUEUE_PRODUCERS);
    let per_churner = (n / 4).max(1);
    let start = Barrier::new(QUEUE_PRODUCERS + QUEUE_CHURNERS + 1);
    let (t, end) = std::thread::scope(|s| {
        for id in 0..QUEUE_PRODUCERS {
            let (q, start) = (&q, &start);
            s.spawn(move || {
                let mut x = 0x5851_f42d_4c95_7f2du64 ^ (id as u64 + 7).wrapping_mul(0x1405_7b7e_f767_814f);
                start.wait();
                for i in 0..per_producer {
                    let bytes = 512 + xorshift(&mut x) as usize % (20 * 1024 - 511);
                    // SAFETY: 512 B..20 KiB.
                    let p = unsafe {
                        let p = b.alloc(B::request(bytes));
                        T::fresh(p, i);
                        p as usize
                    };
                    push_waiting(q, (p, B::size(bytes)));
                }
            });
        }
        for id in 0..QUEUE_CHURNERS {
            let start = &start;
            s.spawn(move || {
                let mut x = 0x2127_599b_f432_5c37u64 ^ (id as u64 + 3).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let size_of = |r: u64| 600 + r as usize % (70 * 1024 - 599);
                let mut keep: Vec<(usize, B::Size)> = (0..CHURN_KEEP)
                    .map(|i| {
                        let bytes = size_of(xorshift(&mut x));
                        // SAFETY: 600 B..70 KiB.
                        unsafe {
                            let p = b.alloc(B::request(bytes));
                            T::fresh(p, i);
                            (p as usize, B::size(bytes))
                        }
                    })
                    .collect();
                start.wait();
                for i in 0..per_churner {
                    let r = xorshift(&mut x);
                    let e = &mut keep[(r >> 40) as usize % CHURN_KEEP];
                    let bytes = size_of(r);
                    // SAFETY: the slot's block is live with its size and replaced at once.
                    unsafe {
                        b.free(e.0 as *mut u8, e.1);
                        let p = b.alloc(B::request(bytes));
                        T::churned(p, i);
                        *e = (p as usize, B::size(bytes));
                    }
                }
                for (p, size) in keep {
                    // SAFETY: live, with its size, freed once.
                    unsafe { b.free(p as *mut u8, size) };
                }
            });
        }
        start.wait();
        let t = Instant::now();
        let (mut got, mut idle, mut sum) = (0, 0, 0usize);
        while got < per_producer * QUEUE_PRODUCERS {
            match q.pop() {
                Some((p, size)) => {
                    // SAFETY: a producer allocated it with this size, through `fresh`, and gave it up.
                    unsafe {
                        sum = sum.wrapping_add(T::taken(p as *mut u8));
                        b.free(p as *mut u8, size);
                    }
                    got += 1;
                    idle = 0;
                }
                None => backoff(&mut idle, SPINS),
            }
        }
        black_box(sum);
        (t, Instant::now())
    });
    // The scope joined the churners too: their last replacements may end after the queue drains.
    let end = end.max(Instant::now());
    let ops = per_producer * QUEUE_PRODUCERS + per_churner * QUEUE_CHURNERS;
    end.duration_since(t).as_nanos() as f64 / ops as f64
}
