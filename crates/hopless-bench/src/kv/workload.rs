//! The KV workload on the store, run in this process (the child side of `hopless bench kv`).
//!
//! Workload: T threads over a keyspace of K keys ("key:" and 11 digits, 16 bytes), keys drawn from a Zipf
//! distribution with s = 0.99 (ranks scattered over the keyspace by a fixed permutation), 60% SET / 40% GET,
//! value lengths uniform in 32..=512. The store is first filled with every key once (then RSS growth minus
//! the raw key and value bytes, per key, is the store's overhead per key: read at once, and again after
//! asking the allocator to give back what it can, `purge`), then warmed up, then measured. The store's
//! hash seed is fixed (`Params::hash_seed`), so the hot keys land on the same shards in every run.
//! All random choices are drawn before the clock starts. Each op's latency is the difference of two
//! `Instant::now()` reads (clock_gettime(CLOCK_MONOTONIC) through the vDSO, included in every
//! configuration alike) recorded into an HDR histogram (3 significant digits) per thread.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

use hdrhistogram::Histogram;
use hopless_kv::{Config, KvAlloc, Store};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::purge;
use crate::via::Via;

/// One configuration: a store design on an allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub store: &'static str,
    pub allocator: &'static str,
}

/// The configurations, in table order.
pub const TARGETS: [Target; 5] = [
    Target {
        store: "hopless-kv",
        allocator: "system",
    },
    Target {
        store: "hopless-kv",
        allocator: "jemalloc",
    },
    Target {
        store: "hopless-kv",
        allocator: "mimalloc",
    },
    Target {
        store: "hopless-kv",
        allocator: "hopless",
    },
    Target {
        store: "dashmap",
        allocator: "hopless",
    },
];

impl Target {
    pub fn spec(&self) -> String {
        format!("{}:{}", self.store, self.allocator)
    }

    pub fn parse(spec: &str) -> Option<Target> {
        TARGETS.iter().copied().find(|t| t.spec() == spec)
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Params {
    pub threads: usize,
    pub keys: usize,
    /// Measured ops, all threads together.
    pub ops: usize,
    pub warmup_ops: usize,
    /// The store's hash seed (`None`: random per store).
    pub hash_seed: Option<u64>,
}

/// The hash seed the benchmarks use unless told otherwise.
pub const DEFAULT_HASH_SEED: u64 = 0x5eed;

impl Params {
    pub fn quick(threads: usize) -> Self {
        Params {
            threads,
            keys: 1_000_000,
            ops: 2_000_000,
            warmup_ops: 400_000,
            hash_seed: Some(DEFAULT_HASH_SEED),
        }
    }
    pub fn full(threads: usize) -> Self {
        Params {
            threads,
            keys: 1_000_000,
            ops: 8_000_000,
            warmup_ops: 1_000_000,
            hash_seed: Some(DEFAULT_HASH_SEED),
        }
    }
}

/// What one child run measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub ops_per_sec: f64,
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub peak_rss_bytes: u64,
    /// RSS growth over the fill minus the raw bytes, per key, read right after the fill.
    pub bytes_per_key: f64,
    /// The same, read after the allocator was asked to give back what it can (`purge`).
    pub bytes_per_key_purged: f64,
}

/// What a store must do for the workload.
pub trait KvTarget: Sync {
    fn set(&self, k: &[u8], v: &[u8]);
    /// Reads the value (touching its length) and says whether it was there.
    fn get(&self, k: &[u8]) -> bool;
}

impl<A: KvAlloc> KvTarget for Store<A> {
    #[inline]
    fn set(&self, k: &[u8], v: &[u8]) {
        self.set_simple(k, v).expect("set");
    }
    #[inline]
    fn get(&self, k: &[u8]) -> bool {
        self.get(k).ok().flatten().map(|v| black_box(v.len())).is_some()
    }
}

impl KvTarget for dashmap::DashMap<Box<[u8]>, Vec<u8>> {
    #[inline]
    fn set(&self, k: &[u8], v: &[u8]) {
        self.insert(k.into(), v.to_vec());
    }
    #[inline]
    fn get(&self, k: &[u8]) -> bool {
        dashmap::DashMap::get(self, k)
            .map(|v| black_box(v.len()))
            .is_some()
    }
}

/// Resident and peak-resident bytes of this process (VmRSS, VmHWM).
pub fn rss() -> (u64, u64) {
    crate::rss::rss_of(None)
}

pub(super) fn key_of(i: usize, out: &mut [u8; 16]) {
    let mut n = i;
    out[..5].copy_from_slice(b"key:0");
    for d in (4..16).rev() {
        out[d] = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// One thread's pre-drawn operations: key index, value length (0 = GET).
struct Plan {
    ops: Vec<(u32, u16)>,
}

fn plans(p: &Params, n_ops: usize, seed: u64) -> Vec<Plan> {
    (0..p.threads)
        .map(|t| Plan {
            ops: crate::kv_mix::kv_ops(p.keys, n_ops / p.threads, seed + t as u64),
        })
        .collect()
}

/// Runs the workload on one store in this process (the child side); `purge` asks the store's allocator to
/// give back what it can.
pub fn run_on<S: KvTarget>(make: impl FnOnce() -> S, purge: fn(), p: &Params) -> RunResult {
    let warm = plans(p, p.warmup_ops, 1);
    let measured = plans(p, p.ops, 1000);
    let vbuf: Vec<u8> = (0..512u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut fill_rng = SmallRng::seed_from_u64(7);
    let fill_lens: Vec<u16> = (0..p.keys).map(|_| fill_rng.gen_range(32..=512u16)).collect();
    let raw: u64 = fill_lens.iter().map(|&l| 16 + l as u64).sum();

    let (base, _) = rss();
    let store = make();
    // Fill every key once, split across the threads.
    std::thread::scope(|s| {
        for t in 0..p.threads {
            let (store, lens, vbuf) = (&store, &fill_lens, &vbuf);
            s.spawn(move || {
                let mut k = [0u8; 16];
                let per = p.keys.div_ceil(p.threads);
                for i in t * per..((t + 1) * per).min(p.keys) {
                    key_of(i, &mut k);
                    store.set(&k, &vbuf[..lens[i] as usize]);
                }
            });
        }
    });
    let (filled, _) = rss();
    if std::env::var_os("HOPLESS_KV_DEBUG").is_some() {
        eprintln!("base {base} filled {filled} raw {raw}\n{}", hopless::stats());
    }
    purge();
    let (purged, _) = rss();
    let per_key = |rss: u64| (rss as f64 - base as f64 - raw as f64) / p.keys as f64;
    let (bytes_per_key, bytes_per_key_purged) = (per_key(filled), per_key(purged));

    let run = |plans: &[Plan], record: bool| -> (f64, Histogram<u64>) {
        let barrier = Barrier::new(p.threads + 1);
        let mut hist = Histogram::<u64>::new(3).expect("histogram");
        let mut elapsed = 0.0;
        std::thread::scope(|s| {
            let handles: Vec<_> = plans
                .iter()
                .map(|plan| {
                    let (store, vbuf, barrier) = (&store, &vbuf, &barrier);
                    s.spawn(move || {
                        let mut h = Histogram::<u64>::new(3).expect("histogram");
                        let mut k = [0u8; 16];
                        barrier.wait();
                        for &(ki, len) in &plan.ops {
                            key_of(ki as usize, &mut k);
                            let t0 = Instant::now();
                            if len == 0 {
                                black_box(store.get(&k));
                            } else {
                                store.set(&k, &vbuf[..len as usize]);
                            }
                            if record {
                                let _ = h.record(t0.elapsed().as_nanos() as u64);
                            }
                        }
                        h
                    })
                })
                .collect();
            barrier.wait();
            let t = Instant::now();
            for h in handles {
                hist.add(h.join().expect("worker")).expect("merge histograms");
            }
            elapsed = t.elapsed().as_secs_f64();
        });
        (elapsed, hist)
    };
    run(&warm, false);
    let (secs, hist) = run(&measured, true);
    let total: usize = measured.iter().map(|p| p.ops.len()).sum();
    let (_, peak) = rss();
    drop(store);
    RunResult {
        ops_per_sec: total as f64 / secs,
        mean_ns: hist.mean(),
        p50_ns: hist.value_at_quantile(0.5) as f64,
        p99_ns: hist.value_at_quantile(0.99) as f64,
        p999_ns: hist.value_at_quantile(0.999) as f64,
        peak_rss_bytes: peak,
        bytes_per_key,
        bytes_per_key_purged,
    }
}

/// Runs one target in this process.
pub fn run_target(t: Target, p: &Params) -> RunResult {
    let cfg = Config {
        active_expiry: true,
        hash_seed: p.hash_seed,
        ..Config::default()
    };
    match (t.store, t.allocator) {
        ("hopless-kv", "system") => run_on(
            || Store::with_allocator(cfg, Via(std::alloc::System)),
            purge::system,
            p,
        ),
        ("hopless-kv", "jemalloc") => run_on(
            || Store::with_allocator(cfg, Via(tikv_jemallocator::Jemalloc)),
            purge::jemalloc,
            p,
        ),
        ("hopless-kv", "mimalloc") => run_on(
            || Store::with_allocator(cfg, Via(crate::via::Mimalloc)),
            purge::mimalloc,
            p,
        ),
        ("hopless-kv", "hopless") => {
            run_on(|| Store::with_allocator(cfg, hopless::Hopless), purge::hopless, p)
        }
        // dashmap allocates through the global allocator: hopless in the `hopless` binary and in tests.
        ("dashmap", "hopless") => run_on(dashmap::DashMap::<Box<[u8]>, Vec<u8>>::new, purge::hopless, p),
        _ => panic!("unknown target {t:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_runs_and_reports_sane_figures() {
        let p = Params {
            threads: 2,
            keys: 2000,
            ops: 4000,
            warmup_ops: 400,
            hash_seed: Some(DEFAULT_HASH_SEED),
        };
        for t in TARGETS {
            assert_eq!(Target::parse(&t.spec()), Some(t));
            let r = run_target(t, &p);
            assert!(
                r.ops_per_sec > 0.0 && r.p99_ns >= r.p50_ns && r.p999_ns >= r.p99_ns,
                "{t:?}: {r:?}"
            );
            assert!(r.peak_rss_bytes > 0, "{t:?}");
        }
    }
}
