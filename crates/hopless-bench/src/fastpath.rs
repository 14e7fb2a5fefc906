//! `hopless bench fastpath`: the SLUB experiment. The same central heap under four thread-cache
//! strategies (`cell`), every (scenario, size, 1 or 2 threads) cell in alternating rounds, then, with
//! valgrind installed, the single-thread cells under cachegrind (`cachegrind`); prints the report as
//! markdown and writes it, with a chart, to `target/hopless-report/`, and writes the JSON.

mod cachegrind;
mod cell;

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

pub use cachegrind::child;
pub use cell::{cell, l2_bytes, SCENARIOS, SIZES, STRATEGIES};

use crate::common::{progress, Common};
use crate::report;

/// What `hopless bench fastpath` was asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub common: Common,
    /// Skip the cachegrind runs.
    pub no_cachegrind: bool,
}

/// One row of `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct FastpathResult {
    pub strategy: String,
    pub scenario: String,
    pub size: u32,
    pub threads: u32,
    pub ns_per_op: f64,
    /// D1 and LL read misses per op (cachegrind), and D1 write misses: where an intrusive list's links are
    /// written into cold blocks, the miss shows up as a write.
    pub d1_misses_per_op: Option<f64>,
    pub ll_misses_per_op: Option<f64>,
    pub d1_write_misses_per_op: Option<f64>,
    pub fastpath_hit_rate: f64,
}

/// Runs the bench, prints the markdown report, writes it and the chart to `target/hopless-report/`, writes
/// `--json`. Returns every cell's result.
pub fn run(o: &Options) -> Result<Vec<FastpathResult>, String> {
    let rounds = o.common.rounds_or(if o.common.quick { 3 } else { 7 });
    let scale = if o.common.quick { 0.25 } else { 1.0 };
    // (scenario, size, threads)
    let mut cells: Vec<(&str, u32, u32)> = Vec::new();
    for sc in SCENARIOS {
        for sz in SIZES {
            for t in [1u32, 2] {
                cells.push((sc, sz, t));
            }
        }
    }
    let valgrind = !o.no_cachegrind && cachegrind::available();
    let cg_runs = if valgrind { cachegrind::RUNS } else { 0 };
    let bar = progress(rounds * cells.len() * STRATEGIES.len() + cg_runs, "fastpath");
    let t0 = Instant::now();
    // [strategy][cell]: ns/op of each round, and the last round's fast-path hit rate.
    let mut ns = vec![vec![Vec::new(); cells.len()]; STRATEGIES.len()];
    let mut hit = vec![vec![0.0; cells.len()]; STRATEGIES.len()];
    for r in 0..rounds {
        for (ci, &(sc, sz, t)) in cells.iter().enumerate() {
            for k in 0..STRATEGIES.len() {
                let si = (k + r + ci) % STRATEGIES.len();
                let (v, _, h) = cell(STRATEGIES[si], sc, sz, t, scale);
                ns[si][ci].push(v);
                hit[si][ci] = h;
                bar.inc(1);
            }
        }
    }
    let misses = if valgrind {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        cachegrind::misses_per_op(&exe, &bar)
    } else {
        Default::default()
    };
    bar.finish_and_clear();
    let mut results = Vec::new();
    for (si, s) in STRATEGIES.iter().enumerate() {
        for (ci, &(sc, sz, t)) in cells.iter().enumerate() {
            let m = if t == 1 {
                misses.get(&(*s, sc, sz)).copied()
            } else {
                None
            };
            results.push(FastpathResult {
                strategy: s.to_string(),
                scenario: sc.to_string(),
                size: sz,
                threads: t,
                ns_per_op: report::median(&ns[si][ci]),
                d1_misses_per_op: m.map(|m| m.d1_read),
                ll_misses_per_op: m.map(|m| m.ll_read),
                d1_write_misses_per_op: m.map(|m| m.d1_write),
                fastpath_hit_rate: hit[si][ci],
            });
        }
    }
    let md = report::fastpath_markdown(&results, rounds, l2_bytes(), valgrind);
    println!(
        "hopless bench fastpath: median of {rounds} rounds, strategies alternating, {:.0} s\n",
        t0.elapsed().as_secs_f64()
    );
    println!("{md}");
    let dir = PathBuf::from("target/hopless-report");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("fastpath.md"), &md).map_err(|e| e.to_string())?;
    match chart(&dir.join("fastpath.png"), &results) {
        Ok(()) => println!(
            "report: {}, chart: {}",
            dir.join("fastpath.md").display(),
            dir.join("fastpath.png").display()
        ),
        Err(e) => println!(
            "report: {} (chart skipped: {e})",
            dir.join("fastpath.md").display()
        ),
    }
    o.common.write_json(&results)?;
    Ok(results)
}

/// The cold scenario on one thread: ns per allocation of each strategy, one panel per size.
fn chart(png: &std::path::Path, results: &[FastpathResult]) -> Result<(), String> {
    let bars: Vec<(String, Vec<f64>)> = STRATEGIES
        .iter()
        .map(|s| {
            let v = SIZES
                .iter()
                .map(|&sz| {
                    results
                        .iter()
                        .find(|r| r.strategy == *s && r.scenario == "cold" && r.size == sz && r.threads == 1)
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
        "hopless bench fastpath: freed, then allocated again",
        &metric_refs,
        &bars,
    )
}
