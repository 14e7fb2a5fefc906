//! What `hopless bench kv` reports: a configuration's row (each figure's median over its runs, and every
//! run), the table and the chart.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::workload::{RunResult, Target};
use crate::stats::{median_of, min_max};

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
    /// Whether the allocator ran with its own transparent-huge-page option on (`--huge-pages`).
    pub huge_pages: bool,
    /// Each figure's median over `runs`.
    #[serde(flatten)]
    pub run: RunResult,
    /// Every run, in the order they ran.
    pub runs: Vec<RunResult>,
}

impl KvResult {
    /// The smallest and largest value of a figure over the runs.
    pub fn range(&self, f: fn(&RunResult) -> f64) -> (f64, f64) {
        min_max(self.runs.iter().map(f))
    }
}

/// Each figure's median over the runs.
pub fn median(rs: &[RunResult]) -> RunResult {
    let by = |f: fn(&RunResult) -> f64| median_of(rs, f);
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

/// `median [min–max]` of one figure over a configuration's runs, scaled by `scale`, `prec` decimals.
fn spread(r: &KvResult, f: fn(&RunResult) -> f64, scale: f64, prec: usize) -> String {
    let (lo, hi) = r.range(f);
    format!(
        "{:.prec$} [{:.prec$}–{:.prec$}]",
        f(&r.run) / scale,
        lo / scale,
        hi / scale
    )
}

/// The kv table: every configuration's median with its [min–max] over the runs (OPS, p99, bytes per key
/// at once and after the purge), with the medians' OPS and p99 ratios to glibc and to mimalloc.
pub fn kv_table(results: &[KvResult]) -> String {
    let base = |alloc: &str| {
        results
            .iter()
            .find(|r| r.target.store == "hopless-kv" && r.target.allocator == alloc)
    };
    let (glibc, mi) = (base("system"), base("mimalloc"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<22} {:>23} {:>19} {:>8} {:>8} {:>20} {:>20} {:>9} {:>8} {:>9}",
        "store / allocator",
        "Mops/s [min–max]",
        "p99 ns [min–max]",
        "p99.9 ns",
        "peak MiB",
        "B/key [min–max]",
        "purged [min–max]",
        "ops/glibc",
        "ops/mi",
        "p99/mi"
    );
    for r in results {
        let ratio = |b: Option<&KvResult>, f: fn(&KvResult) -> f64| {
            b.map_or("-".to_string(), |b| format!("{:.2}x", f(r) / f(b)))
        };
        let _ = writeln!(
            out,
            "{:<22} {:>23} {:>19} {:>8.0} {:>8.1} {:>20} {:>20} {:>9} {:>8} {:>9}",
            format!("{} / {}", r.target.store, r.target.allocator),
            spread(r, |x| x.ops_per_sec, 1e6, 3),
            spread(r, |x| x.p99_ns, 1.0, 0),
            r.run.p999_ns,
            r.run.peak_rss_bytes as f64 / (1 << 20) as f64,
            spread(r, |x| x.bytes_per_key, 1.0, 1),
            spread(r, |x| x.bytes_per_key_purged, 1.0, 1),
            ratio(glibc, |x| x.run.ops_per_sec),
            ratio(mi, |x| x.run.ops_per_sec),
            ratio(mi, |x| x.run.p99_ns),
        );
    }
    out.push_str(
        "(median [min–max] over the runs; ratios are of the medians. B/key: RSS growth while filling every key \
         once, minus the raw key and value bytes, per key, read at once; purged: read again after asking the \
         allocator to give back what it can: glibc malloc_trim(0), jemalloc arena.<all>.purge, mimalloc \
         mi_collect(true), hopless Hopless::trim(). p99.9 and peak: medians; every run's figures are in the JSON)\n",
    );
    out
}

/// `target/hopless-report/kv.png`: ops/s, p99 and bytes per key of every configuration.
pub fn chart(results: &[KvResult]) {
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
    use super::super::workload::{DEFAULT_HASH_SEED, TARGETS};
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
            huge_pages: false,
            target: TARGETS[0],
            hash_seed: Some(DEFAULT_HASH_SEED),
            run: one(1.0),
            runs: vec![one(1.0)],
        };
        let fig = r#""mean_ns":2.0,"p50_ns":3.0,"p99_ns":4.0,"p999_ns":5.0,"peak_rss_bytes":6,"bytes_per_key":7.0,"bytes_per_key_purged":8.0"#;
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            format!(
                r#"{{"workload":"kv","store":"hopless-kv","allocator":"system","hash_seed":24301,"huge_pages":false,"ops_per_sec":1.0,{fig},"runs":[{{"ops_per_sec":1.0,{fig}}}]}}"#
            )
        );
    }

    #[test]
    fn range_spans_the_runs() {
        let r = KvResult {
            workload: "kv",
            huge_pages: false,
            target: TARGETS[0],
            hash_seed: None,
            run: one(2.0),
            runs: vec![one(2.0), one(1.0), one(3.0)],
        };
        assert_eq!(r.range(|x| x.ops_per_sec), (1.0, 3.0));
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

    #[test]
    fn table_gives_ratios_to_glibc_and_mimalloc() {
        let row = |i: usize, x: f64| KvResult {
            workload: "kv",
            huge_pages: false,
            target: TARGETS[i],
            hash_seed: None,
            run: one(x),
            runs: vec![one(x)],
        };
        let t = kv_table(&[row(0, 1e6), row(2, 2e6), row(4, 4e6)]);
        let dashmap = t.lines().find(|l| l.starts_with("dashmap")).unwrap();
        assert!(dashmap.contains("4.00x") && dashmap.contains("2.00x"), "{t}");
    }
}
