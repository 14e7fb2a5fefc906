//! The cachegrind pass of `hopless bench fastpath`: each single-thread cell run twice under valgrind's
//! cachegrind, at two op counts (the difference cancels start-up and set-up), for D1 and LL misses per op.
//!
//! Each run is this same executable as `hopless bench fastpath --child STRATEGY:SCENARIO:SIZE:SCALE`,
//! which runs [`child`]: the cell on one thread, printing its op count.

use std::collections::HashMap;
use std::path::Path;

use indicatif::ProgressBar;

use super::cell::{cell, SCENARIOS, SIZES, STRATEGIES};

/// Cachegrind runs in one pass (for the progress bar).
pub const RUNS: usize = STRATEGIES.len() * SCENARIOS.len() * SIZES.len() * 2;

/// Misses per op of one cell.
#[derive(Clone, Copy, Debug)]
pub struct Misses {
    pub d1_read: f64,
    pub ll_read: f64,
    pub d1_write: f64,
}

/// Whether valgrind runs on this machine.
pub fn available() -> bool {
    std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The child side: runs one cell (`strategy:scenario:size:scale`) on one thread and prints its op count.
pub fn child(spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [strategy, scenario, size, scale] = parts[..] else {
        return Err(format!("bad child spec {spec}"));
    };
    let size: u32 = size.parse().map_err(|e| format!("{e}"))?;
    let scale: f64 = scale.parse().map_err(|e| format!("{e}"))?;
    let (_, ops, _) = cell(strategy, scenario, size, 1, scale);
    println!("{ops}");
    Ok(())
}

/// Misses per op of every (strategy, scenario, size) on one thread, running `exe` under cachegrind; a cell
/// whose runs failed is left out. Ticks `bar` after each run.
pub fn misses_per_op(exe: &Path, bar: &ProgressBar) -> HashMap<(&'static str, &'static str, u32), Misses> {
    let mut misses = HashMap::new();
    for s in STRATEGIES {
        for sc in SCENARIOS {
            for sz in SIZES {
                bar.set_message(format!("cachegrind {s} {sc} {sz}"));
                // `cold` runs whole rounds (scale 0.5: one, 1.0: two); the others scale their op count.
                let (lo, hi) = if sc == "cold" { (0.5, 1.0) } else { (0.02, 0.04) };
                let a = run_once(exe, s, sc, sz, lo);
                bar.inc(1);
                let b = run_once(exe, s, sc, sz, hi);
                bar.inc(1);
                if let (Some(a), Some(b)) = (a, b) {
                    let dops = b.3.saturating_sub(a.3).max(1) as f64;
                    let per = |x: f64, y: f64| ((y - x) / dops).max(0.0);
                    misses.insert(
                        (s, sc, sz),
                        Misses {
                            d1_read: per(a.0, b.0),
                            ll_read: per(a.1, b.1),
                            d1_write: per(a.2, b.2),
                        },
                    );
                }
            }
        }
    }
    misses
}

/// Misses of one cachegrind run of `exe bench fastpath --child ...`: (D1 read, LL read, D1 write, ops);
/// None if valgrind did not run or its output did not parse.
fn run_once(exe: &Path, strategy: &str, name: &str, size: u32, scale: f64) -> Option<(f64, f64, f64, u64)> {
    let out = std::process::Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--cachegrind-out-file=/dev/null",
        ])
        .arg(exe)
        .args([
            "bench",
            "fastpath",
            "--child",
            &format!("{strategy}:{name}:{size}:{scale}"),
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    // "==N== D1  misses:   1,234  (  1,000 rd   +   234 wr)"
    let field = |label: &str, k: usize| -> Option<f64> {
        let line = err.lines().find(|l| l.contains(label))?;
        let inner = line.split('(').nth(1)?;
        let nums: Vec<&str> = inner
            .split_whitespace()
            .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
            .collect();
        nums.get(k)?.replace(',', "").parse().ok()
    };
    let ops: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
    Some((
        field("D1  misses:", 0)?,
        field("LLd misses:", 0)?,
        field("D1  misses:", 1)?,
        ops,
    ))
}
