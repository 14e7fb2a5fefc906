//! The allocator micro-workloads, and the alternating rounds that measure them on every peer.
//!
//! Workloads (an "op" is one allocation and its free):
//! - `pair-N`: allocate N bytes and free it at once, N in 16, 64, 256, 1024, 4096;
//! - `lifo-100`: allocate 100 objects (16..=256 bytes), then free them newest first;
//! - `random-churn`: a live set of 10 000 slots; each op frees a random slot's block and allocates a new
//!   one of a random size in 8..=4096, writing its first byte (the sequence is fixed and the same for all);
//! - `producer-consumer`: one thread allocates 64-byte blocks and hands them over a bounded queue to a
//!   second thread that frees them (every free is a cross-thread free).

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::time::Instant;

use crossbeam_queue::ArrayQueue;
use rand::{rngs::SmallRng, Rng, SeedableRng};

use super::report::AllocResult;
use crate::peers::{Peer, WithAlloc};
use crate::stats::median;

/// Workload names, in table order.
pub const WORKLOADS: [&str; 8] = [
    "pair-16",
    "pair-64",
    "pair-256",
    "pair-1024",
    "pair-4096",
    "lifo-100",
    "random-churn",
    "producer-consumer",
];

/// How much work one measured run does, and how many rounds.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub rounds: usize,
    /// Multiplies every workload's op count.
    pub scale: f64,
}

impl Config {
    pub fn quick() -> Self {
        Config {
            rounds: 5,
            scale: 1.0,
        }
    }
    pub fn full() -> Self {
        Config {
            rounds: 11,
            scale: 3.0,
        }
    }
}

#[derive(Clone, Copy)]
enum Workload {
    Pair(usize),
    Lifo100,
    RandomChurn,
    ProducerConsumer,
}

fn workload(name: &str) -> Workload {
    match name {
        "pair-16" => Workload::Pair(16),
        "pair-64" => Workload::Pair(64),
        "pair-256" => Workload::Pair(256),
        "pair-1024" => Workload::Pair(1024),
        "pair-4096" => Workload::Pair(4096),
        "lifo-100" => Workload::Lifo100,
        "random-churn" => Workload::RandomChurn,
        "producer-consumer" => Workload::ProducerConsumer,
        other => panic!("unknown workload {other}"),
    }
}

/// One measured run: returns nanoseconds per op.
struct Run<'a> {
    w: Workload,
    scale: f64,
    churn: &'a ChurnPlan,
}

/// The fixed random sequence of `random-churn`: (slot, size) pairs.
pub struct ChurnPlan {
    pub(super) steps: Vec<(u32, u32)>,
}

pub const CHURN_LIVE: usize = 10_000;

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

fn ops(base: usize, scale: f64) -> usize {
    ((base as f64 * scale) as usize).max(1)
}

impl WithAlloc<f64> for Run<'_> {
    fn call<A: GlobalAlloc + Sync>(self, a: &A) -> f64 {
        match self.w {
            Workload::Pair(size) => pair(a, size, ops(2_000_000, self.scale)),
            Workload::Lifo100 => lifo(a, ops(20_000, self.scale)),
            Workload::RandomChurn => churn(a, self.churn, ops(1_000_000, self.scale)),
            Workload::ProducerConsumer => producer_consumer(a, ops(500_000, self.scale)),
        }
    }
}

#[inline(never)]
fn pair<A: GlobalAlloc>(a: &A, size: usize, n: usize) -> f64 {
    let layout = Layout::from_size_align(size, 8).unwrap();
    let t = Instant::now();
    for _ in 0..n {
        // SAFETY: non-zero size; freed at once with the same layout.
        unsafe {
            let p = a.alloc(black_box(layout));
            a.dealloc(black_box(p), layout);
        }
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn lifo<A: GlobalAlloc>(a: &A, iters: usize) -> f64 {
    let layouts: Vec<Layout> = (0..100)
        .map(|i| Layout::from_size_align(16 * (1 + i % 16), 8).unwrap())
        .collect();
    let mut live = [std::ptr::null_mut::<u8>(); 100];
    let t = Instant::now();
    for _ in 0..iters {
        for (slot, &l) in live.iter_mut().zip(&layouts) {
            // SAFETY: non-zero size.
            *slot = unsafe { a.alloc(black_box(l)) };
        }
        for (slot, &l) in live.iter().zip(&layouts).rev() {
            // SAFETY: allocated just above with this layout.
            unsafe { a.dealloc(black_box(*slot), l) };
        }
    }
    t.elapsed().as_nanos() as f64 / (iters * 100) as f64
}

#[inline(never)]
fn churn<A: GlobalAlloc>(a: &A, plan: &ChurnPlan, n: usize) -> f64 {
    let mut live: Vec<(*mut u8, Layout)> = Vec::with_capacity(CHURN_LIVE);
    for i in 0..CHURN_LIVE {
        let l = Layout::from_size_align(8 + (i * 97) % 4089, 8).unwrap();
        // SAFETY: non-zero size.
        live.push((unsafe { a.alloc(l) }, l));
    }
    let t = Instant::now();
    for i in 0..n {
        let (slot, size) = plan.steps[i & (plan.steps.len() - 1)];
        let e = &mut live[slot as usize];
        let l = Layout::from_size_align(size as usize, 8).unwrap();
        // SAFETY: the slot's block was allocated with its layout; the new block has >= 8 bytes.
        unsafe {
            a.dealloc(e.0, e.1);
            let p = a.alloc(l);
            p.write(i as u8);
            *e = (p, l);
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    for (p, l) in live {
        // SAFETY: allocated with this layout.
        unsafe { a.dealloc(p, l) };
    }
    ns
}

#[inline(never)]
fn producer_consumer<A: GlobalAlloc + Sync>(a: &A, n: usize) -> f64 {
    let q = ArrayQueue::<usize>::new(4096);
    let layout = Layout::from_size_align(64, 8).unwrap();
    let t = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..n {
                // SAFETY: non-zero size.
                let mut p = unsafe { a.alloc(layout) } as usize;
                while let Err(back) = q.push(p) {
                    p = back;
                    std::hint::spin_loop();
                }
            }
        });
        s.spawn(|| {
            let mut got = 0;
            let mut idle = 0u32;
            while got < n {
                match q.pop() {
                    Some(p) => {
                        // SAFETY: the producer allocated it with `layout` and gave it up.
                        unsafe { a.dealloc(p as *mut u8, layout) };
                        got += 1;
                        idle = 0;
                    }
                    None => {
                        idle += 1;
                        if idle > 1000 {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                }
            }
        });
    });
    t.elapsed().as_nanos() as f64 / n as f64
}

/// Runs every workload on every peer: one warm-up round, then `rounds` measured rounds, the peer order
/// rotating each round. `tick` is called after each measured run (for a progress bar).
pub fn measure(cfg: Config, workloads: &[&str], peers: &[Peer], mut tick: impl FnMut()) -> Vec<AllocResult> {
    let churn = ChurnPlan::new();
    let mut samples: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); peers.len()]; workloads.len()];
    for round in 0..=cfg.rounds {
        for (wi, name) in workloads.iter().enumerate() {
            let w = workload(name);
            for k in 0..peers.len() {
                let pi = (k + round) % peers.len();
                let scale = if round == 0 { cfg.scale / 4.0 } else { cfg.scale };
                let ns = peers[pi].with(Run {
                    w,
                    scale,
                    churn: &churn,
                });
                if round > 0 {
                    samples[wi][pi].push(ns);
                    tick();
                }
            }
        }
    }
    let mut out = Vec::new();
    for (wi, name) in workloads.iter().enumerate() {
        for (pi, p) in peers.iter().enumerate() {
            let s = &samples[wi][pi];
            out.push(AllocResult {
                workload: name.to_string(),
                allocator: p.name().to_string(),
                ns_per_op: median(s),
                min_ns_per_op: s.iter().copied().fold(f64::INFINITY, f64::min),
                max_ns_per_op: s.iter().copied().fold(0.0, f64::max),
                rounds: s.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_runs_on_every_peer() {
        let cfg = Config {
            rounds: 1,
            scale: 0.001,
        };
        let mut ticks = 0;
        let rs = measure(cfg, &WORKLOADS, &Peer::ALL, || ticks += 1);
        assert_eq!(rs.len(), WORKLOADS.len() * 4);
        assert_eq!(ticks, WORKLOADS.len() * 4);
        assert!(
            rs.iter().all(|r| r.ns_per_op.is_finite() && r.ns_per_op > 0.0),
            "{rs:?}"
        );
    }
}
