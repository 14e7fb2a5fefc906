//! `hopless bench fastpath`, the command: the SLUB experiment. hopless's thread cache and three models of
//! SLUB's (`cell`), every (scenario, size) cell in rounds with the strategies alternating, then, with
//! valgrind installed, every cell once under callgrind's cache simulator for the timed region's misses
//! (`cachegrind`); prints the report as markdown and writes it, with a chart, to `target/hopless-report/`,
//! and writes the JSON (`report`).

mod cachegrind;
mod cell;
mod report;

use std::path::PathBuf;
use std::time::Instant;

pub use cachegrind::child;
pub use cell::{cell, llc_bytes, COLD_OBJECTS, SCENARIOS, SIZES, STRATEGIES, WORK_RING};
pub use report::FastpathResult;

use crate::common::Common;
use crate::progress::progress;
use crate::stats::{median, min_max};
use report::{chart, fastpath_markdown};

/// What `hopless bench fastpath` was asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub common: Common,
    /// Skip the callgrind runs.
    pub no_cachegrind: bool,
}

/// Runs the bench, prints the markdown report, writes it and the chart to `target/hopless-report/`, writes
/// `--json`. Returns every cell's result.
pub fn run(o: &Options) -> Result<Vec<FastpathResult>, String> {
    let rounds = o.common.rounds_or(if o.common.quick { 5 } else { 9 });
    let scale = if o.common.quick { 0.25 } else { 1.0 };
    // (scenario, size)
    let cells: Vec<(&str, u32)> = SCENARIOS
        .iter()
        .flat_map(|&sc| SIZES.iter().map(move |&sz| (sc, sz)))
        .collect();
    let valgrind = !o.no_cachegrind && cachegrind::available();
    let cg_runs = if valgrind { cachegrind::RUNS } else { 0 };
    let bar = progress(rounds * cells.len() * STRATEGIES.len() + cg_runs, "fastpath");
    let t0 = Instant::now();
    // [strategy][cell]: each round's result.
    let mut got = vec![vec![Vec::new(); cells.len()]; STRATEGIES.len()];
    for r in 0..rounds {
        for (ci, &(sc, sz)) in cells.iter().enumerate() {
            for k in 0..STRATEGIES.len() {
                let si = (k + r + ci) % STRATEGIES.len();
                got[si][ci].push(cell(STRATEGIES[si], sc, sz, scale));
                bar.inc(1);
            }
        }
    }
    let misses = if valgrind {
        let exe = crate::child::this_exe()?;
        cachegrind::misses_per_op(&exe, &bar)
    } else {
        Default::default()
    };
    bar.finish_and_clear();
    let mut results = Vec::new();
    for (si, s) in STRATEGIES.iter().enumerate() {
        for (ci, &(sc, sz)) in cells.iter().enumerate() {
            let m = misses.get(&(*s, sc, sz)).copied();
            let rs = &got[si][ci];
            let ns: Vec<f64> = rs.iter().map(|r| r.ns_per_op).collect();
            let (min, max) = min_max(ns.iter().copied());
            results.push(FastpathResult {
                strategy: s.to_string(),
                scenario: sc.to_string(),
                size: sz,
                ns_per_op: median(&ns),
                min_ns_per_op: min,
                max_ns_per_op: max,
                rounds: ns,
                faults_per_op: rs.iter().map(|r| r.faults_per_op).fold(0.0, f64::max),
                d1_read_misses_per_op: m.map(|m| m.d1_read),
                d1_write_misses_per_op: m.map(|m| m.d1_write),
                ll_read_misses_per_op: m.map(|m| m.ll_read),
                ll_write_misses_per_op: m.map(|m| m.ll_write),
                fastpath_hit_rate: rs.last().map_or(0.0, |r| r.fast_rate),
            });
        }
    }
    let md = fastpath_markdown(&results, rounds, llc_bytes(), valgrind);
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
