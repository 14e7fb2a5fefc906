//! `hopless bench kv`, the command: the KV workload (Zipf 0.99, 60% SET / 40% GET, 32-512 B values) on
//! the store (`workload`), one configuration at a time, each in a fresh child process (so RSS and its
//! growth belong to that configuration alone), `--runs` times, the configurations alternating; then each
//! configuration's median with its [min–max] as a table and a chart (`report`), the eviction comparison
//! (`eviction`) and the JSON (the medians and every run).
//!
//! The child is this same executable, run as `hopless bench kv --child STORE:ALLOCATOR --threads T --keys K
//! --ops N --hash-seed S` (`crate::child`): it runs [`child`] and prints its [`RunResult`] as one line of
//! JSON.

mod eviction;
mod hash_seed;
mod huge_pages;
mod purge;
mod report;
mod workload;

use std::path::Path;
use std::time::Instant;

pub use eviction::eviction_hit_ratios;
pub use hash_seed::HashSeed;
pub use report::KvResult;
pub use workload::{run_target, Params, RunResult, Target, DEFAULT_HASH_SEED, TARGETS};

use crate::child::{self, Child};
use crate::common::Common;
use crate::progress::progress;
use report::{chart, kv_table, median};

/// What `hopless bench kv` was asked for. `common.rounds` is the number of runs (`--runs`).
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub common: Common,
    /// Worker threads (default: all cores).
    pub threads: Option<usize>,
    /// Keyspace size.
    pub keys: Option<usize>,
    /// Measured operations, all threads together.
    pub ops: Option<usize>,
    /// Skip the eviction hit-ratio comparison.
    pub no_eviction: bool,
    /// The store's hash seed (default: fixed, [`DEFAULT_HASH_SEED`]).
    pub hash_seed: HashSeed,
    /// Each allocator with its own transparent-huge-page option on (`kv::huge_pages`).
    pub huge_pages: bool,
}

impl Options {
    /// The workload's parameters: quick or full, with `threads`, `keys` and `ops` applied.
    pub fn params(&self) -> Params {
        let threads = self
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        let mut p = if self.common.quick {
            Params::quick(threads)
        } else {
            Params::full(threads)
        };
        if let Some(k) = self.keys {
            p.keys = k.max(1);
        }
        if let Some(o) = self.ops {
            p.ops = o.max(threads);
            p.warmup_ops = (p.ops / 5).max(threads);
        }
        p.hash_seed = self.hash_seed.0;
        p
    }
}

/// The child side: runs the configuration `spec` (`store:allocator`) in this process and prints its result
/// as one line of JSON.
pub fn child(spec: &str, o: &Options) -> Result<(), String> {
    let t = Target::parse(spec).ok_or_else(|| format!("unknown configuration {spec}"))?;
    child::reply(&run_target(t, &o.params()))
}

/// Runs the bench: every configuration `--runs` times, each run in a child process, the configurations
/// alternating (the order rotating each pass); prints the table, draws the chart, runs the eviction
/// comparison (unless `no_eviction`), writes `--json`. Returns one result per configuration, in table
/// order.
pub fn run(o: &Options) -> Result<Vec<KvResult>, String> {
    let p = o.params();
    let runs = o.common.rounds_or(if o.common.quick { 3 } else { 5 });
    let exe = child::this_exe()?;
    let bar = progress(runs * TARGETS.len(), "bench kv");
    let t0 = Instant::now();
    let mut samples: Vec<Vec<RunResult>> = vec![Vec::new(); TARGETS.len()];
    for pass in 0..runs {
        for k in 0..TARGETS.len() {
            let i = (k + pass) % TARGETS.len();
            bar.set_message(TARGETS[i].spec());
            samples[i].push(run_child(&exe, TARGETS[i], &p, o.huge_pages)?);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let results: Vec<KvResult> = TARGETS
        .iter()
        .zip(&samples)
        .map(|(&target, rs)| KvResult {
            workload: "kv",
            target,
            hash_seed: p.hash_seed,
            huge_pages: o.huge_pages,
            run: median(rs),
            runs: rs.clone(),
        })
        .collect();
    println!(
        "hopless bench kv: {} threads, {} keys, Zipf s=0.99, 60% SET / 40% GET, values 32..=512 B, {} measured ops, \
         hash seed {}; median [min–max] of {runs} runs per configuration (one fresh process per run, \
         configurations alternating){}, {:.0} s\n",
        p.threads,
        p.keys,
        p.ops,
        HashSeed(p.hash_seed),
        if o.huge_pages {
            "; transparent huge pages on, each allocator's own option (glibc.malloc.hugetlb=1, \
             jemalloc thp:always, MIMALLOC_ALLOW_THP=1 (mimalloc 3's default), HOPLESS_HUGE_PAGES=1)"
        } else {
            ""
        },
        t0.elapsed().as_secs_f64()
    );
    print!("{}", kv_table(&results));
    chart(&results);
    if !o.no_eviction {
        let (sampled, exact, cap) = eviction_hit_ratios(
            200_000,
            if o.common.quick { 1_000_000 } else { 3_000_000 },
            8 << 20,
        );
        println!(
            "eviction (Zipf s=0.99 over 200k keys, GET then SET on miss, 8 MiB maxmemory = {cap} keys): \
             sampled LRU hit ratio {:.4}, exact LRU {:.4} ({:+.2} points)",
            sampled,
            exact,
            (sampled - exact) * 100.0
        );
    }
    o.common.write_json(&results)?;
    Ok(results)
}

/// Runs one configuration in a fresh child process and reads back its result.
/// With `huge_pages`, its allocator's own huge-page option is on in the child.
fn run_child(exe: &Path, t: Target, p: &Params, huge_pages: bool) -> Result<RunResult, String> {
    let mut c = Child::new(exe, "kv", &t.spec())
        .args(["--threads", &p.threads.to_string(), "--keys", &p.keys.to_string()])
        .args(["--ops", &p.ops.to_string()])
        .args(["--hash-seed", &HashSeed(p.hash_seed).to_string()]);
    if let Some((key, value)) = huge_pages::option(t.allocator) {
        c = if huge_pages {
            c.env(key, value)
        } else {
            c.env_remove(key)
        };
    }
    c.run()
}
