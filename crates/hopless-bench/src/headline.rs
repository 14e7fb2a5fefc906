//! `hopless` with no arguments (`cargo run --release`): the quick kv comparison and the quick alloc bench
//! (with hopless-call, hopless behind never-inlined calls), then the headline table, also written as
//! `target/hopless-report/headline.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::alloc::{self, AllocResult};
use crate::common::Common;
use crate::json;
use crate::kv::{self, KvResult};
use crate::peers::Peer;

/// Where the headline's JSON goes.
pub const JSON: &str = "target/hopless-report/headline.json";

/// Runs both quick benches (the kv one without the eviction comparison), prints the headline table and
/// writes its JSON.
pub fn run() -> Result<(), String> {
    println!("hopless: the KV workload (Zipf 0.99, 60% SET / 40% GET, 32-512 B values) and the allocator micro-benchmarks, quick runs (full: `hopless bench kv`, `hopless bench alloc`)\n");
    let quick = Common {
        quick: true,
        ..Common::default()
    };
    let kv = kv::run(&kv::Options {
        common: quick.clone(),
        no_eviction: true,
        ..kv::Options::default()
    })?;
    println!("note: {}\n", HOPLESS_INLINED_NOTE);
    let alloc = alloc::run(&alloc::Options {
        common: quick,
        with_call: true,
        ..alloc::Options::default()
    })?;
    let rows = headline_rows(&kv, &alloc);
    let kv_runs = kv.first().map_or(0, |r| r.runs.len());
    println!("\n{}", headline(&rows, kv_runs));
    json::write_results(Path::new(JSON), &rows).map_err(|e| format!("writing {JSON}: {e}"))?;
    println!("wrote {JSON}");
    Ok(())
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

/// The headline: hopless-kv under the KV workload by allocator → OPS, p99, memory, with ratios; hopless
/// inlined and hopless-call side by side.
pub fn headline(rows: &[HeadlineRow], kv_runs: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== headline: hopless-kv under the KV workload (Zipf 0.99, 60% SET / 40% GET, 32-512 B values), by allocator (medians of {kv_runs} runs) =="
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
