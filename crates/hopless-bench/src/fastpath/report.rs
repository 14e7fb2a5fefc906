//! What `hopless bench fastpath` reports: a cell's row (the JSON), the markdown report and the chart.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::cell::{COLD_OBJECTS, SCENARIOS, SIZES, STRATEGIES, WORK_RING};

/// One row of `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct FastpathResult {
    pub strategy: String,
    pub scenario: String,
    pub size: u32,
    /// Median over rounds, and the extremes.
    pub ns_per_op: f64,
    pub min_ns_per_op: f64,
    pub max_ns_per_op: f64,
    /// Every round's ns/op.
    pub rounds: Vec<f64>,
    /// Minor page faults per op in the timed regions, the largest of any round.
    pub faults_per_op: f64,
    /// Per timed op, from callgrind's cache simulator (one run).
    pub d1_read_misses_per_op: Option<f64>,
    pub d1_write_misses_per_op: Option<f64>,
    pub ll_read_misses_per_op: Option<f64>,
    pub ll_write_misses_per_op: Option<f64>,
    pub fastpath_hit_rate: f64,
}

/// The fastpath report: one table per scenario, a row per (size, strategy): median ns/op with min-max,
/// the ratio to `array` at that size, faults per op, and callgrind's misses per timed op.
pub fn fastpath_markdown(rs: &[FastpathResult], rounds: usize, llc: usize, valgrind: bool) -> String {
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

/// The cold scenario: ns per allocation of each strategy, one panel per size.
pub fn chart(png: &Path, results: &[FastpathResult]) -> Result<(), String> {
    let bars: Vec<(String, Vec<f64>)> = STRATEGIES
        .iter()
        .map(|s| {
            let v = SIZES
                .iter()
                .map(|&sz| {
                    results
                        .iter()
                        .find(|r| r.strategy == *s && r.scenario == "cold" && r.size == sz)
                        .map_or(0.0, |r| r.ns_per_op)
                })
                .collect();
            (s.to_string(), v)
        })
        .collect();
    let metrics: Vec<String> = SIZES.iter().map(|s| format!("cold, {s} B: ns/alloc")).collect();
    let metric_refs: Vec<&str> = metrics.iter().map(|s| s.as_str()).collect();
    crate::chart::bars(
        png,
        "hopless bench fastpath: freed, caches evicted, allocated and written",
        &metric_refs,
        &bars,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_has_a_table_per_scenario_with_ratios_to_array() {
        let row = |s: &str, ns: f64| FastpathResult {
            strategy: s.into(),
            scenario: "cold".into(),
            size: 64,
            ns_per_op: ns,
            min_ns_per_op: ns,
            max_ns_per_op: ns,
            rounds: vec![ns],
            faults_per_op: 0.0,
            d1_read_misses_per_op: None,
            d1_write_misses_per_op: None,
            ll_read_misses_per_op: None,
            ll_write_misses_per_op: None,
            fastpath_hit_rate: 1.0,
        };
        let md = fastpath_markdown(&[row("array", 2.0), row("intrusive", 5.0)], 3, 32 << 20, false);
        assert_eq!(md.matches("\n## ").count(), SCENARIOS.len(), "{md}");
        assert!(
            md.contains("| 64 B | intrusive | 5.00 [5.00-5.00] | 2.50x |"),
            "{md}"
        );
        assert!(md.contains("valgrind not installed"), "{md}");
    }
}
