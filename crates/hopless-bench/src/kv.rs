//! `hopless bench kv`: the seed's workload on the store (`workload`), one configuration at a time, each
//! in a fresh child process (so RSS and its growth belong to that configuration alone), `--runs` times,
//! the configurations alternating; then each configuration's median with its [min–max] as a table, a
//! chart, the eviction comparison (`eviction`) and the JSON (the medians and every run).
//!
//! The child is this same executable, run as `hopless bench kv --child STORE:ALLOCATOR --threads T --keys K
//! --ops N --hash-seed S`: it runs [`child`] and prints its [`RunResult`] as one line of JSON.

mod eviction;
mod purge;
mod workload;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

pub use eviction::eviction_hit_ratios;
pub use workload::{run_target, Params, RunResult, Target, DEFAULT_HASH_SEED, TARGETS};

use crate::common::{progress, Common};
use crate::report;

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
}

/// The store's hash seed for a benchmark: fixed (the default, so that the hot Zipf keys land on the same
/// shards in every run) or random per store. Parses from a number (decimal or 0x hex) or "random".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashSeed(pub Option<u64>);

impl Default for HashSeed {
    fn default() -> Self {
        HashSeed(Some(DEFAULT_HASH_SEED))
    }
}

impl std::str::FromStr for HashSeed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "random" {
            return Ok(HashSeed(None));
        }
        let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        };
        n.map(|n| HashSeed(Some(n)))
            .map_err(|_| format!("hash seed {s:?}: a number (decimal or 0x hex) or \"random\""))
    }
}

impl std::fmt::Display for HashSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n:#x}"),
            None => f.write_str("random"),
        }
    }
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

/// One row of `hopless bench kv --json`: a configuration, each figure's median over its runs, and every
/// run.
#[derive(Clone, Debug, Serialize)]
pub struct KvResult {
    /// Always "kv".
    pub workload: &'static str,
    #[serde(flatten)]
    pub target: Target,
    /// The store's hash seed (`null`: random per store).
    pub hash_seed: Option<u64>,
    /// Each figure's median over `runs`.
    #[serde(flatten)]
    pub run: RunResult,
    /// Every run, in the order they ran.
    pub runs: Vec<RunResult>,
}

impl KvResult {
    /// The smallest and largest value of a figure over the runs.
    pub fn range(&self, f: fn(&RunResult) -> f64) -> (f64, f64) {
        self.runs
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            })
    }
}

/// The child side: runs the configuration `spec` (`store:allocator`) in this process and prints its result
/// as one line of JSON.
pub fn child(spec: &str, o: &Options) -> Result<(), String> {
    let t = Target::parse(spec).ok_or_else(|| format!("unknown configuration {spec}"))?;
    let r = run_target(t, &o.params());
    println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
    Ok(())
}

/// Runs the bench: every configuration `--runs` times, each run in a child process, the configurations
/// alternating (the order rotating each pass); prints the table, draws the chart, runs the eviction
/// comparison (unless `no_eviction`), writes `--json`. Returns one result per configuration, in table
/// order.
pub fn run(o: &Options) -> Result<Vec<KvResult>, String> {
    let p = o.params();
    let runs = o.common.rounds_or(if o.common.quick { 3 } else { 5 });
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bar = progress(runs * TARGETS.len(), "bench kv");
    let t0 = Instant::now();
    let mut samples: Vec<Vec<RunResult>> = vec![Vec::new(); TARGETS.len()];
    for pass in 0..runs {
        for k in 0..TARGETS.len() {
            let i = (k + pass) % TARGETS.len();
            bar.set_message(TARGETS[i].spec());
            samples[i].push(run_child(&exe, TARGETS[i], &p)?);
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
            run: median(rs),
            runs: rs.clone(),
        })
        .collect();
    println!(
        "hopless bench kv: {} threads, {} keys, Zipf s=0.99, 60% SET / 40% GET, values 32..=512 B, {} measured ops, \
         hash seed {}; median [min–max] of {runs} runs per configuration (one fresh process per run, \
         configurations alternating), {:.0} s\n",
        p.threads,
        p.keys,
        p.ops,
        HashSeed(p.hash_seed),
        t0.elapsed().as_secs_f64()
    );
    print!("{}", report::kv_table(&results));
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
fn run_child(exe: &Path, t: Target, p: &Params) -> Result<RunResult, String> {
    let out = std::process::Command::new(exe)
        .args(["bench", "kv", "--child", &t.spec()])
        .args(["--threads", &p.threads.to_string(), "--keys", &p.keys.to_string()])
        .args(["--ops", &p.ops.to_string()])
        .args(["--hash-seed", &HashSeed(p.hash_seed).to_string()])
        .output()
        .map_err(|e| format!("running {}: {e}", t.spec()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            t.spec(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let line = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(line.trim()).map_err(|e| format!("{}: {e}: {line}", t.spec()))
}

/// Each figure's median over the runs.
fn median(rs: &[RunResult]) -> RunResult {
    let by = |f: fn(&RunResult) -> f64| report::median(&rs.iter().map(f).collect::<Vec<_>>());
    RunResult {
        ops_per_sec: by(|r| r.ops_per_sec),
        mean_ns: by(|r| r.mean_ns),
        p50_ns: by(|r| r.p50_ns),
        p99_ns: by(|r| r.p99_ns),
        p999_ns: by(|r| r.p999_ns),
        peak_rss_bytes: by(|r| r.peak_rss_bytes as f64) as u64,
        bytes_per_key: by(|r| r.bytes_per_key),
        bytes_per_key_purged: by(|r| r.bytes_per_key_purged),
    }
}

/// `target/hopless-report/kv.png`: ops/s, p99 and bytes per key of every configuration.
fn chart(results: &[KvResult]) {
    let png = PathBuf::from("target/hopless-report/kv.png");
    let bars: Vec<(String, Vec<f64>)> = results
        .iter()
        .map(|r| {
            let label = if r.target.store == "hopless-kv" {
                r.target.allocator
            } else {
                // dashmap runs on hopless; the other bars are hopless-kv on each allocator.
                r.target.store
            };
            (
                label.to_string(),
                vec![
                    r.run.ops_per_sec,
                    r.run.p99_ns,
                    r.run.bytes_per_key.max(0.0),
                    r.run.bytes_per_key_purged.max(0.0),
                ],
            )
        })
        .collect();
    match crate::chart::bars(
        &png,
        "hopless bench kv: hopless-kv on each allocator, and dashmap on hopless",
        &[
            "ops/s",
            "p99 latency (ns)",
            "bytes per key",
            "bytes per key after purge",
        ],
        &bars,
    ) {
        Ok(()) => println!("chart: {}", png.display()),
        Err(e) => println!("chart skipped: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(x: f64) -> RunResult {
        RunResult {
            ops_per_sec: x,
            mean_ns: 2.0,
            p50_ns: 3.0,
            p99_ns: 4.0,
            p999_ns: 5.0,
            peak_rss_bytes: 6,
            bytes_per_key: 7.0,
            bytes_per_key_purged: 8.0,
        }
    }

    #[test]
    fn json_row_keeps_its_flat_shape_and_every_run() {
        let r = KvResult {
            workload: "kv",
            target: TARGETS[0],
            hash_seed: Some(DEFAULT_HASH_SEED),
            run: one(1.0),
            runs: vec![one(1.0)],
        };
        let fig = r#""mean_ns":2.0,"p50_ns":3.0,"p99_ns":4.0,"p999_ns":5.0,"peak_rss_bytes":6,"bytes_per_key":7.0,"bytes_per_key_purged":8.0"#;
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            format!(
                r#"{{"workload":"kv","store":"hopless-kv","allocator":"system","hash_seed":24301,"ops_per_sec":1.0,{fig},"runs":[{{"ops_per_sec":1.0,{fig}}}]}}"#
            )
        );
    }

    #[test]
    fn range_spans_the_runs() {
        let r = KvResult {
            workload: "kv",
            target: TARGETS[0],
            hash_seed: None,
            run: one(2.0),
            runs: vec![one(2.0), one(1.0), one(3.0)],
        };
        assert_eq!(r.range(|x| x.ops_per_sec), (1.0, 3.0));
    }

    #[test]
    fn hash_seed_parses_and_prints_back() {
        for s in ["0x5eed", "24301", "random"] {
            let h: HashSeed = s.parse().unwrap();
            assert_eq!(h.to_string().parse::<HashSeed>().unwrap(), h);
        }
        assert_eq!("24301".parse::<HashSeed>().unwrap(), HashSeed::default());
        assert_eq!("random".parse::<HashSeed>().unwrap(), HashSeed(None));
        assert!("x".parse::<HashSeed>().is_err());
    }

    #[test]
    fn median_is_taken_figure_by_figure() {
        let r = |x: f64| RunResult {
            ops_per_sec: x,
            mean_ns: 10.0 - x,
            p50_ns: x,
            p99_ns: x,
            p999_ns: x,
            peak_rss_bytes: x as u64,
            bytes_per_key: x,
            bytes_per_key_purged: x,
        };
        let m = median(&[r(1.0), r(3.0), r(2.0)]);
        assert_eq!((m.ops_per_sec, m.mean_ns, m.peak_rss_bytes), (2.0, 8.0, 2));
    }
}
