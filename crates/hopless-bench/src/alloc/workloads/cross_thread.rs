//! The cross-thread allocator workloads, where blocks are freed by a thread other than the one that
//! allocated them: `producer-consumer`, `producer-consumer-N`, `handoff-N` and `all-to-all-N` (described
//! in `workloads.rs`). Each measures its own timed region and returns ns per op.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use crossbeam_queue::ArrayQueue;

use crate::alloc::blocks::Blocks;
use crate::alloc::touch::Touch;

/// How long the C-ABI view's workloads spin on an empty or full queue before they start yielding (the
/// machine may have fewer cores than threads).
pub(super) const SPINS: u32 = 64;

/// Spins, then yields once the wait passes `spins` tries.
#[inline(always)]
pub(super) fn backoff(idle: &mut u32, spins: u32) {
    *idle += 1;
    if *idle > spins {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// Pushes `v`, waiting (with [`backoff`]) while the queue is full.
#[inline(always)]
pub(super) fn push_waiting<T>(q: &ArrayQueue<T>, mut v: T) {
    let mut idle = 0;
    while let Err(back) = q.push(v) {
        v = back;
        backoff(&mut idle, SPINS);
    }
}

/// A consumer's loop: pops `count` blocks of `size` from `q` (waiting with [`backoff`] while it is
/// empty), looks at each ([`Touch::taken`]) and frees it; returns the sum of what it saw.
#[inline(always)]
fn drain<B: Blocks, T: Touch>(
    b: &B,
    q: &ArrayQueue<usize>,
    count: usize,
    size: B::Size,
    spins: u32,
) -> usize {
    let mut sum = 0usize;
    let (mut got, mut idle) = (0, 0);
    while got < count {
        match q.pop() {
            Some(p) => {
                // SAFETY: the producer allocated it with this size, through `fresh`, and gave it up to
                // this thread.
                unsafe {
                    sum = sum.wrapping_add(T::taken(p as *mut u8));
                    b.free(p as *mut u8, size);
                }
                got += 1;
                idle = 0;
            }
            None => backoff(&mut idle, spins),
        }
    }
    sum
}

/// `producer-consumer`, the in-process view's: both threads spawned inside the timed region, the
/// producer only spinning on a full queue, the consumer yielding after 1000 empty pops.
#[inline(never)]
pub fn producer_consumer<B: Blocks, T: Touch>(b: &B, n: usize) -> f64 {
    let q = ArrayQueue::<usize>::new(4096);
    let (request, size) = (B::request(64), B::size(64));
    let t = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..n {
                // SAFETY: 64 bytes.
                let mut p = unsafe {
                    let p = b.alloc(request);
                    T::fresh(p, i);
                    p as usize
                };
                while let Err(back) = q.push(p) {
                    p = back;
                    std::hint::spin_loop();
                }
            }
        });
        s.spawn(|| black_box(drain::<B, T>(b, &q, n, size, 1000)));
    });
    t.elapsed().as_nanos() as f64 / n as f64
}

/// `producer-consumer-N`, the C-ABI view's: the calling thread produces once every consumer has started.
#[inline(never)]
pub fn producer_consumers<B: Blocks, T: Touch>(b: &B, consumers: usize, n: usize) -> f64 {
    let queues: Vec<ArrayQueue<usize>> = (0..consumers).map(|_| ArrayQueue::new(1024)).collect();
    let (request, size) = (B::request(64), B::size(64));
    let start = Barrier::new(consumers + 1);
    let (t, ends) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..consumers)
            .map(|c| {
                let (q, start) = (&queues[c], &start);
                s.spawn(move || {
                    // Blocks c, c + consumers, ... come to this consumer.
                    let mine = n.saturating_sub(c).div_ceil(consumers);
                    start.wait();
                    black_box(drain::<B, T>(b, q, mine, size, SPINS));
                    Instant::now()
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for i in 0..n {
            // SAFETY: 64 bytes.
            let p = unsafe {
                let p = b.alloc(request);
                T::fresh(p, i);
                p
            };
            push_waiting(&queues[i % consumers], p as usize);
        }
        let ends: Vec<Instant> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (t, ends)
    });
    let end = ends.into_iter().max().unwrap_or(t);
    end.duration_since(t).as_nanos() as f64 / n as f64
}

#[inline(never)]
pub fn handoff<B: Blocks, T: Touch>(b: &B, consumers: usize, n: usize) -> f64 {
    const BUF: usize = 1024;
    type Buf = Box<[usize; BUF]>;
    let (request, size) = (B::request(64), B::size(64));
    let rounds = n.div_ceil(BUF).max(consumers);
    let nbufs = 2 * consumers + 2;
    let full: Vec<ArrayQueue<Buf>> = (0..consumers).map(|_| ArrayQueue::new(nbufs)).collect();
    let empty: ArrayQueue<Buf> = ArrayQueue::new(nbufs);
    for _ in 0..nbufs {
        let _ = empty.push(Box::new([0; BUF]));
    }
    let start = Barrier::new(consumers + 1);
    let (t, ends) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..consumers)
            .map(|c| {
                let (q, empty, start) = (&full[c], &empty, &start);
                s.spawn(move || {
                    // Rounds c, c + consumers, ... come to this consumer.
                    let mine = rounds.saturating_sub(c).div_ceil(consumers);
                    let mut sum = 0usize;
                    start.wait();
                    let (mut got, mut idle) = (0, 0);
                    while got < mine {
                        let Some(buf) = q.pop() else {
                            backoff(&mut idle, SPINS);
                            continue;
                        };
                        for &p in buf.iter() {
                            // SAFETY: the producer allocated it with this size, through `fresh`, and
                            // gave it up to this thread.
                            unsafe {
                                sum = sum.wrapping_add(T::taken(p as *mut u8));
                                b.free(p as *mut u8, size);
                            }
                        }
                        let _ = empty.push(buf);
                        got += 1;
                        idle = 0;
                    }
                    black_box(sum);
                    Instant::now()
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for r in 0..rounds {
            let mut idle = 0;
            let mut buf = loop {
                match empty.pop() {
                    Some(buf) => break buf,
                    None => backoff(&mut idle, SPINS),
                }
            };
            for (i, slot) in buf.iter_mut().enumerate() {
                // SAFETY: 64 bytes.
                *slot = unsafe {
                    let p = b.alloc(request);
                    T::fresh(p, i);
                    p as usize
                };
            }
            push_waiting(&full[r % consumers], buf);
        }
        let ends: Vec<Instant> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (t, ends)
    });
    let end = ends.into_iter().max().unwrap_or(t);
    end.duration_since(t).as_nanos() as f64 / (rounds * BUF) as f64
}

/// `all-to-all-N`. A thread frees whatever block it swaps out, of a size it cannot know: hence an
/// allocator whose free needs none.
#[inline(never)]
pub fn all_to_all<B: Blocks<Size = ()>, T: Touch>(b: &B, threads: usize, n: usize) -> f64 {
    const SLOTS: usize = 4096;
    let slots: Vec<AtomicUsize> = (0..SLOTS)
        .map(|i| {
            // SAFETY: 16..=256 bytes.
            let p = unsafe {
                let p = b.alloc(B::request(16 * (1 + i % 16)));
                T::fresh(p, i);
                p
            };
            AtomicUsize::new(p as usize)
        })
        .collect();
    let start = Barrier::new(threads);
    let per = n.div_ceil(threads);
    let work = |id: usize| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (id as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let mut sum = 0usize;
        start.wait();
        let t = Instant::now();
        for i in 0..per {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let slot = (x as usize) % SLOTS;
            let bytes = 16 * (1 + (x >> 32) as usize % 16);
            // SAFETY: 16..=256 bytes.
            let p = unsafe {
                let p = b.alloc(B::request(bytes));
                T::fresh(p, i);
                p
            };
            let old = slots[slot].swap(p as usize, Ordering::AcqRel) as *mut u8;
            // SAFETY: the swap gave this thread the only reference to a live block, written by `fresh`.
            unsafe {
                sum = sum.wrapping_add(T::taken(old));
                b.free(old, ());
            }
        }
        black_box(sum);
        (t, Instant::now())
    };
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|id| s.spawn(move || work(id))).collect();
        let mut spans = vec![work(0)];
        spans.extend(handles.into_iter().map(|h| h.join().unwrap()));
        spans
    });
    let t = spans.iter().map(|s| s.0).min().expect("one thread at least");
    let end = spans.iter().map(|s| s.1).max().expect("one thread at least");
    for s in &slots {
        // SAFETY: every slot holds a live block; the threads are done.
        unsafe { b.free(s.load(Ordering::Relaxed) as *mut u8, ()) };
    }
    end.duration_since(t).as_nanos() as f64 / (per * threads) as f64
}
