//! Medians, tables and JSON output.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::kv::{KvResult, RunResult};
use crate::peers::Peer;

/// The median of a set of samples (the mean of the middle two for an even count).
pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One row of `hopless bench alloc --json`: the median over the rounds, their min and max, and every
/// round's figure in the order they ran.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct AllocResult {
    pub workload: String,
    pub allocator: String,
    pub ns_per_op: f64,
    pub min_ns_per_op: f64,
    pub max_ns_per_op: f64,
    pub rounds: Vec<f64>,
}

#[derive(Serialize)]
struct Results<'a, T> {
    results: &'a [T],
}

/// Writes `{"results": [...]}` to `path`.
pub fn write_json<T: Serialize>(path: &std::path::Path, results: &[T]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let text = serde_json::to_string_pretty(&Results { results }).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}

/// A table of ns/op per workload and allocator, each cell with its ratio to mimalloc.
pub fn alloc_table(results: &[AllocResult], workloads: &[&str]) -> String {
    let peers: Vec<Peer> = [
        Peer::System,
        Peer::Jemalloc,
        Peer::Mimalloc,
        Peer::Hopless,
        Peer::HoplessCall,
    ]
    .into_iter()
    .filter(|p| results.iter().any(|r| r.allocator == p.name()))
    .collect();
    let mut by: BTreeMap<(&str, &str), &AllocResult> = BTreeMap::new();
    for r in results {
        by.insert((r.workload.as_str(), r.allocator.as_str()), r);
    }
    let mut out = String::new();
    let _ = write!(out, "{:<18}", "workload (ns/op)");
    for &p in &peers {
        let _ = write!(out, " {:>27}", p.name());
    }
    out.push('\n');
    for w in workloads {
        let _ = write!(out, "{w:<18}");
        let base = by.get(&(w, "mimalloc")).map(|r| r.ns_per_op);
        for &p in &peers {
            let Some(r) = by.get(&(w, p.name())) else {
                let _ = write!(out, " {:>27}", "-");
                continue;
            };
            let cell = format!(
                "{:.2} [{:.1}-{:.1}]",
                r.ns_per_op, r.min_ns_per_op, r.max_ns_per_op
            );
            match base {
                Some(b) => {
                    let _ = write!(out, " {cell:>20} {:>5.2}x", r.ns_per_op / b);
                }
                None => {
                    let _ = write!(out, " {cell:>27}");
                }
            }
        }
        out.push('\n');
    }
    out.push_str(
        "(median [min-max] over the rounds; x: the median relative to mimalloc's in the same run; lower is \
         better)\n",
    );
    out
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

/// How the store and the alloc bench reach hopless: inlined, as the store's calls are.
pub const HOPLESS_INLINED_NOTE: &str =
    "the store's calls into hopless are inlined (hopless's Allocator impl \
     is #[inline], built with fat LTO), while its calls into glibc, jemalloc and mimalloc are calls into C; \
     `bench alloc`'s hopless-call peer is hopless behind never-inlined calls, for comparison";

/// One allocator's row of the headline (and of `target/hopless-report/headline.json`).
#[derive(Serialize, Clone, Debug)]
pub struct HeadlineRow {
    pub allocator: &'static str,
    /// "inlined" (hopless) or "call" (the C allocators, and hopless-call).
    pub calls: &'static str,
    /// The store's medians on this allocator (`None` for hopless-call: the store runs on hopless inlined).
    pub kv_ops_per_sec: Option<f64>,
    pub kv_p99_ns: Option<f64>,
    pub kv_peak_rss_bytes: Option<u64>,
    pub kv_bytes_per_key: Option<f64>,
    pub kv_bytes_per_key_purged: Option<f64>,
    pub kv_ops_vs_glibc: Option<f64>,
    pub kv_ops_vs_mimalloc: Option<f64>,
    /// Geometric mean over the `bench alloc` workloads of ns/op relative to mimalloc.
    pub alloc_geomean_vs_mimalloc: Option<f64>,
    /// `bench alloc` ns/op per workload.
    pub alloc_ns_per_op: BTreeMap<String, f64>,
}

/// The headline rows: every allocator, then hopless-call, with the store's medians and the alloc bench.
pub fn headline_rows(kv: &[KvResult], alloc: &[AllocResult]) -> Vec<HeadlineRow> {
    let find = |a: &str| {
        kv.iter()
            .find(|r| r.target.store == "hopless-kv" && r.target.allocator == a)
            .map(|r| &r.run)
    };
    let (glibc, mi) = (find("system"), find("mimalloc"));
    Peer::ALL
        .into_iter()
        .chain([Peer::HoplessCall])
        .filter_map(|p| {
            let r = find(p.name());
            let alloc_ns_per_op: BTreeMap<String, f64> = alloc
                .iter()
                .filter(|a| a.allocator == p.name())
                .map(|a| (a.workload.clone(), a.ns_per_op))
                .collect();
            if r.is_none() && alloc_ns_per_op.is_empty() {
                return None;
            }
            let ratios: Vec<f64> = alloc
                .iter()
                .filter(|a| a.allocator == p.name())
                .filter_map(|a| {
                    alloc
                        .iter()
                        .find(|m| m.workload == a.workload && m.allocator == "mimalloc")
                        .map(|m| a.ns_per_op / m.ns_per_op)
                })
                .collect();
            let geo = (!ratios.is_empty())
                .then(|| (ratios.iter().map(|x| x.ln()).sum::<f64>() / ratios.len() as f64).exp());
            Some(HeadlineRow {
                allocator: p.name(),
                calls: if p == Peer::Hopless { "inlined" } else { "call" },
                kv_ops_per_sec: r.map(|r| r.ops_per_sec),
                kv_p99_ns: r.map(|r| r.p99_ns),
                kv_peak_rss_bytes: r.map(|r| r.peak_rss_bytes),
                kv_bytes_per_key: r.map(|r| r.bytes_per_key),
                kv_bytes_per_key_purged: r.map(|r| r.bytes_per_key_purged),
                kv_ops_vs_glibc: r.zip(glibc).map(|(r, g)| r.ops_per_sec / g.ops_per_sec),
                kv_ops_vs_mimalloc: r.zip(mi).map(|(r, m)| r.ops_per_sec / m.ops_per_sec),
                alloc_geomean_vs_mimalloc: geo,
                alloc_ns_per_op,
            })
        })
        .collect()
}

/// The headline: the seed's staged table redone here, allocator → OPS, p99, memory, with ratios; hopless
/// inlined and hopless-call side by side.
pub fn headline(rows: &[HeadlineRow], kv_runs: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== headline: hopless-kv under the seed's workload, by allocator (medians of {kv_runs} runs) =="
    );
    let _ = writeln!(
        out,
        "{:<13} {:>8} {:>11} {:>8} {:>9} {:>7} {:>8} {:>9} {:>8} {:>16}",
        "allocator",
        "calls",
        "ops/s",
        "p99 ns",
        "peak MiB",
        "B/key",
        "purged",
        "ops/glibc",
        "ops/mi",
        "alloc geo vs mi"
    );
    let f = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
    let x = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}x"));
    for r in rows {
        let _ = writeln!(
            out,
            "{:<13} {:>8} {:>11} {:>8} {:>9} {:>7} {:>8} {:>9} {:>8} {:>16}",
            r.allocator,
            r.calls,
            f(r.kv_ops_per_sec, 0),
            f(r.kv_p99_ns, 0),
            f(r.kv_peak_rss_bytes.map(|b| b as f64 / (1 << 20) as f64), 1),
            f(r.kv_bytes_per_key, 1),
            f(r.kv_bytes_per_key_purged, 1),
            x(r.kv_ops_vs_glibc),
            x(r.kv_ops_vs_mimalloc),
            x(r.alloc_geomean_vs_mimalloc),
        );
    }
    let _ = writeln!(
        out,
        "(alloc geo vs mi: geometric mean of `bench alloc` times relative to mimalloc; lower is better. \
         B/key at once after the fill, purged after asking the allocator to give memory back. calls: \
         {HOPLESS_INLINED_NOTE}; the store was not run behind calls, so hopless-call has no kv figures)"
    );
    out
}

/// The fastpath report: one table per scenario, a row per (size, strategy): median ns/op with min-max,
/// the ratio to `array` at that size, faults per op, and callgrind's misses per timed op.
pub fn fastpath_markdown(
    rs: &[crate::fastpath::FastpathResult],
    rounds: usize,
    llc: usize,
    valgrind: bool,
) -> String {
    use crate::fastpath::{COLD_OBJECTS, SCENARIOS, SIZES, STRATEGIES, WORK_RING};
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# hopless bench fastpath\n\nMedian of {rounds} rounds [min-max], strategies alternating, one thread. \
         Every timed loop allocates and writes the block (64 B, or all of it in `work`). faults/op: minor page \
         faults in the timed regions (largest round). D1/LL misses: per timed op, callgrind's cache simulator, \
         timed loops only{}. Last-level cache {} MiB.\n\n\
         - hot: allocate, write, free the same block (op = the pair);\n\
         - cold: {COLD_OBJECTS} blocks freed in random order, caches evicted (3x the LLC written), then \
         allocated and written (op = one allocation);\n\
         - work: free one of {WORK_RING} live blocks at random, allocate, fill it, two dependent random reads \
         from a buffer of 3x the LLC mixed into it (op = all of that).\n",
        if valgrind { "" } else { " (valgrind not installed: apt-get install valgrind)" },
        llc >> 20
    );
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    for sc in SCENARIOS {
        let _ = writeln!(out, "## {sc}\n");
        out.push_str("| size | strategy | ns/op | vs array | faults/op | D1 rd | D1 wr | LL rd | LL wr | fast path |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        for sz in SIZES {
            let find = |s: &str| {
                rs.iter()
                    .find(|r| r.strategy == s && r.scenario == sc && r.size == sz)
            };
            let base = find("array").map(|r| r.ns_per_op);
            for s in STRATEGIES {
                let Some(r) = find(s) else { continue };
                let _ = writeln!(
                    out,
                    "| {sz} B | {s} | {:.2} [{:.2}-{:.2}] | {} | {:.4} | {} | {} | {} | {} | {:.1}% |",
                    r.ns_per_op,
                    r.min_ns_per_op,
                    r.max_ns_per_op,
                    base.map_or("-".to_string(), |b| format!("{:.2}x", r.ns_per_op / b)),
                    r.faults_per_op,
                    opt(r.d1_read_misses_per_op),
                    opt(r.d1_write_misses_per_op),
                    opt(r.ll_read_misses_per_op),
                    opt(r.ll_write_misses_per_op),
                    r.fastpath_hit_rate * 100.0
                );
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn table_shows_ratios_to_mimalloc() {
        let r = |w: &str, a: &str, v: f64| AllocResult {
            workload: w.into(),
            allocator: a.into(),
            ns_per_op: v,
            min_ns_per_op: v * 0.9,
            max_ns_per_op: v * 1.2,
            rounds: vec![v * 0.9, v, v * 1.2],
        };
        let rs = vec![
            r("pair-16", "mimalloc", 10.0),
            r("pair-16", "hopless", 5.0),
            r("pair-16", "system", 20.0),
            r("pair-64", "jemalloc", 7.0),
        ];
        let t = alloc_table(&rs, &["pair-16", "pair-64"]);
        assert!(
            t.contains("jemalloc") && !t.contains("hopless-call"),
            "only peers with results: {t}"
        );
        assert!(t.contains("5.00 [4.5-6.0]  0.50x"), "{t}");
        assert!(t.contains("20.00 [18.0-24.0]  2.00x"), "{t}");
        assert!(t.contains(" -"), "{t}");
    }

    #[test]
    fn json_has_the_documented_shape() {
        let dir = std::env::temp_dir().join(format!("hopless-json-{}", std::process::id()));
        let path = dir.join("out.json");
        let rs = vec![AllocResult {
            workload: "pair-16".into(),
            allocator: "hopless".into(),
            ns_per_op: 1.5,
            min_ns_per_op: 1.4,
            max_ns_per_op: 1.7,
            rounds: vec![1.4, 1.5, 1.7],
        }];
        write_json(&path, &rs).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["results"][0]["workload"], "pair-16");
        assert_eq!(v["results"][0]["allocator"], "hopless");
        assert_eq!(v["results"][0]["ns_per_op"], 1.5);
        assert_eq!(v["results"][0]["min_ns_per_op"], 1.4);
        assert_eq!(v["results"][0]["rounds"][2], 1.7);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
