//! Medians, tables and JSON output.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::kv::KvResult;
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

/// One row of `hopless bench alloc --json`.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct AllocResult {
    pub workload: String,
    pub allocator: String,
    pub ns_per_op: f64,
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
    let mut by: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for r in results {
        by.insert((r.workload.as_str(), r.allocator.as_str()), r.ns_per_op);
    }
    let mut out = String::new();
    let _ = write!(out, "{:<18}", "workload (ns/op)");
    for &p in &peers {
        let _ = write!(out, " {:>18}", p.name());
    }
    out.push('\n');
    for w in workloads {
        let _ = write!(out, "{w:<18}");
        let base = by.get(&(w, "mimalloc")).copied();
        for &p in &peers {
            match (by.get(&(w, p.name())), base) {
                (Some(v), Some(b)) => {
                    let _ = write!(out, " {:>9.2} ({:>5.2}x)", v, v / b);
                }
                (Some(v), None) => {
                    let _ = write!(out, " {v:>18.2}");
                }
                _ => {
                    let _ = write!(out, " {:>18}", "-");
                }
            }
        }
        out.push('\n');
    }
    out.push_str("(ratio in parentheses: time relative to mimalloc in the same run; lower is better)\n");
    out
}

/// The kv table: every configuration's figures, with OPS and p99 ratios to glibc and to mimalloc.
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
        "{:<22} {:>11} {:>8} {:>8} {:>8} {:>9} {:>9} {:>10} {:>9} {:>12} {:>10}",
        "store / allocator",
        "ops/s",
        "mean ns",
        "p50 ns",
        "p99 ns",
        "p99.9 ns",
        "peak MiB",
        "B/key",
        "ops/glibc",
        "ops/mimalloc",
        "p99/mimal."
    );
    for r in results {
        let ratio = |b: Option<&KvResult>, f: fn(&KvResult) -> f64| {
            b.map_or("-".to_string(), |b| format!("{:.2}x", f(r) / f(b)))
        };
        let _ = writeln!(
            out,
            "{:<22} {:>11.0} {:>8.0} {:>8.0} {:>8.0} {:>9.0} {:>9.1} {:>10.1} {:>9} {:>12} {:>10}",
            format!("{} / {}", r.target.store, r.target.allocator),
            r.run.ops_per_sec,
            r.run.mean_ns,
            r.run.p50_ns,
            r.run.p99_ns,
            r.run.p999_ns,
            r.run.peak_rss_bytes as f64 / (1 << 20) as f64,
            r.run.bytes_per_key,
            ratio(glibc, |x| x.run.ops_per_sec),
            ratio(mi, |x| x.run.ops_per_sec),
            ratio(mi, |x| x.run.p99_ns),
        );
    }
    out.push_str(
        "(B/key: RSS growth while filling every key once, minus the raw key and value bytes, per key)\n",
    );
    out
}

/// The headline: the seed's staged table redone here, allocator → OPS, p99, memory, with ratios.
pub fn headline(kv: &[KvResult], alloc: &[AllocResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== headline: hopless-kv under the seed's workload, by allocator =="
    );
    let find = |a: &str| {
        kv.iter()
            .find(|r| r.target.store == "hopless-kv" && r.target.allocator == a)
            .map(|r| &r.run)
    };
    let (glibc, mi) = (find("system"), find("mimalloc"));
    let _ = writeln!(
        out,
        "{:<10} {:>12} {:>10} {:>10} {:>10} {:>12} {:>14} {:>16}",
        "allocator",
        "ops/s",
        "p99 ns",
        "peak MiB",
        "B/key",
        "ops vs glibc",
        "ops vs mimalloc",
        "alloc geo vs mi"
    );
    for p in Peer::ALL {
        let Some(r) = find(p.name()) else { continue };
        let geo = {
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
            if ratios.is_empty() {
                f64::NAN
            } else {
                (ratios.iter().map(|x| x.ln()).sum::<f64>() / ratios.len() as f64).exp()
            }
        };
        let _ = writeln!(
            out,
            "{:<10} {:>12.0} {:>10.0} {:>10.1} {:>10.1} {:>12} {:>14} {:>15.2}x",
            p.name(),
            r.ops_per_sec,
            r.p99_ns,
            r.peak_rss_bytes as f64 / (1 << 20) as f64,
            r.bytes_per_key,
            glibc.map_or("-".into(), |g| format!("{:.2}x", r.ops_per_sec / g.ops_per_sec)),
            mi.map_or("-".into(), |m| format!("{:.2}x", r.ops_per_sec / m.ops_per_sec)),
            geo
        );
    }
    out.push_str(
        "(alloc geo vs mi: geometric mean of `bench alloc` times relative to mimalloc; lower is better)\n",
    );
    out
}

/// The fast-path experiment as a markdown report: one table per scenario.
pub fn fastpath_markdown(
    rs: &[crate::fastpath::FastpathResult],
    rounds: usize,
    l2: usize,
    valgrind: bool,
) -> String {
    use crate::fastpath::{SCENARIOS, SIZES, STRATEGIES};
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# hopless bench fastpath\n\nMedian of {rounds} rounds, strategies alternating. L2: {} KiB (cold working set: 4x). \
         ns per op; fast-path hit rate; D1 read and write misses and LL read misses per op from cachegrind \
         (1 thread){}.\n",
        l2 >> 10,
        if valgrind { "" } else { " - valgrind not installed (apt-get install valgrind)" }
    );
    for sc in SCENARIOS {
        let _ = writeln!(out, "## {sc}\n");
        let _ = write!(out, "| strategy |");
        for sz in SIZES {
            let _ = write!(out, " {sz} B, 1 thr | {sz} B, 2 thr |");
        }
        out.push('\n');
        out.push_str("|---|");
        for _ in SIZES {
            out.push_str("---|---|");
        }
        out.push('\n');
        for s in STRATEGIES {
            let _ = write!(out, "| {s} |");
            for sz in SIZES {
                for t in [1u32, 2] {
                    match rs
                        .iter()
                        .find(|r| r.strategy == s && r.scenario == sc && r.size == sz && r.threads == t)
                    {
                        Some(r) => {
                            let _ =
                                write!(out, " {:.2} ns, {:.0}%", r.ns_per_op, r.fastpath_hit_rate * 100.0);
                            if let (Some(d1), Some(ll), Some(w)) =
                                (r.d1_misses_per_op, r.ll_misses_per_op, r.d1_write_misses_per_op)
                            {
                                let _ = write!(out, ", D1 rd {d1:.3} wr {w:.3}, LL rd {ll:.3}");
                            }
                            out.push_str(" |");
                        }
                        None => out.push_str(" - |"),
                    }
                }
            }
            out.push('\n');
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
        assert!(t.contains("( 0.50x)"), "{t}");
        assert!(t.contains("( 2.00x)"), "{t}");
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
        }];
        write_json(&path, &rs).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["results"][0]["workload"], "pair-16");
        assert_eq!(v["results"][0]["allocator"], "hopless");
        assert_eq!(v["results"][0]["ns_per_op"], 1.5);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
