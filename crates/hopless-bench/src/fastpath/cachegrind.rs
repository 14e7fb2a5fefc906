//! The cache-simulation pass of `hopless bench fastpath`: each cell run once under valgrind's callgrind
//! with its cache simulator, collecting inside the timed loops only (`--collect-atstart=no
//! --toggle-collect` on the functions of `cell::timed`); the caches are simulated throughout, so the
//! set-up and the eviction shape what the timed loop finds. Reported per timed op: D1 and LL read and
//! write misses.
//!
//! Each run is this same executable as `hopless bench fastpath --child STRATEGY:SCENARIO:SIZE:SCALE`
//! under valgrind (`crate::child`), which runs [`child`]: the cell, printing its timed op count.

use std::collections::HashMap;
use std::path::Path;

use indicatif::ProgressBar;

use super::cell::{cell, SCENARIOS, SIZES, STRATEGIES};
use crate::child::{self, Child};

/// Runs in one pass (for the progress bar).
pub const RUNS: usize = STRATEGIES.len() * SCENARIOS.len() * SIZES.len();

/// Misses per timed op of one cell.
#[derive(Clone, Copy, Debug)]
pub struct Misses {
    pub d1_read: f64,
    pub d1_write: f64,
    pub ll_read: f64,
    pub ll_write: f64,
}

/// Whether valgrind runs on this machine.
pub fn available() -> bool {
    std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The child side: runs one cell (`strategy:scenario:size:scale`) and prints its timed op count.
pub fn child(spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [strategy, scenario, size, scale] = parts[..] else {
        return Err(format!("bad child spec {spec}"));
    };
    let size: u32 = size.parse().map_err(|e| format!("{e}"))?;
    let scale: f64 = scale.parse().map_err(|e| format!("{e}"))?;
    child::reply(&cell(strategy, scenario, size, scale).ops)
}

/// Scale of a cell under callgrind (about 50x slower than native): `cold` runs one timed round.
fn scale_of(scenario: &str) -> f64 {
    match scenario {
        "cold" => 0.06,
        _ => 0.02,
    }
}

/// Misses per timed op of every (strategy, scenario, size), running `exe` under callgrind; a cell whose
/// run failed is left out. Ticks `bar` after each run.
pub fn misses_per_op(exe: &Path, bar: &ProgressBar) -> HashMap<(&'static str, &'static str, u32), Misses> {
    let mut misses = HashMap::new();
    for s in STRATEGIES {
        for sc in SCENARIOS {
            for sz in SIZES {
                bar.set_message(format!("callgrind {s} {sc} {sz}"));
                if let Some(m) = run_once(exe, s, sc, sz, scale_of(sc)) {
                    misses.insert((s, sc, sz), m);
                }
                bar.inc(1);
            }
        }
    }
    misses
}

/// Misses per timed op of one callgrind run of `exe bench fastpath --child ...`; None if valgrind did not
/// run or its output did not parse.
fn run_once(exe: &Path, strategy: &str, name: &str, size: u32, scale: f64) -> Option<Misses> {
    let out_file = std::env::temp_dir().join(format!(
        "hopless-callgrind-{}-{strategy}-{name}-{size}.out",
        std::process::id()
    ));
    let spec = format!("{strategy}:{name}:{size}:{scale}");
    let valgrind = [
        "--tool=callgrind".to_string(),
        "--cache-sim=yes".to_string(),
        "--collect-atstart=no".to_string(),
        // This machine's caches (valgrind's own guess of the last level can be far off).
        cache_arg("--D1", false),
        cache_arg("--LL", true),
        // Demangled (Rust legacy mangling) and mangled spellings of `cell::timed::*`.
        "--toggle-collect=*cell::timed::*".to_string(),
        "--toggle-collect=*4cell5timed*".to_string(),
        format!("--callgrind-out-file={}", out_file.display()),
    ];
    let ops = Child::under("valgrind", valgrind, exe, "fastpath", &spec).run::<u64>();
    let text = std::fs::read_to_string(&out_file).ok();
    let _ = std::fs::remove_file(&out_file);
    let ops = ops.ok()?;
    parse(&text?, ops)
}

/// `--D1=size,ways,line` for the level-1 data cache, or `--LL=` for the last level, from cpu0's caches
/// in sysfs (picked by their `level` and `type`). valgrind wants a power-of-two set count; when the
/// cache is unknown or its sets are not a power of two, a harmless repeated default is passed instead
/// and valgrind keeps its own guess.
fn cache_arg(flag: &str, last_level: bool) -> String {
    let mut best: Option<(u32, u64, u64, u64)> = None;
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).unwrap_or_default();
        let level: u32 = match read("level").trim().parse() {
            Ok(l) => l,
            Err(_) => continue,
        };
        let kind = read("type");
        let wanted = if last_level {
            kind.trim() == "Unified" || kind.trim() == "Data"
        } else {
            level == 1 && kind.trim() == "Data"
        };
        let size = read("size");
        let size = size.trim();
        let bytes = match (size.strip_suffix('K'), size.strip_suffix('M')) {
            (Some(n), _) => n.parse::<u64>().ok().map(|n| n << 10),
            (_, Some(n)) => n.parse::<u64>().ok().map(|n| n << 20),
            _ => size.parse().ok(),
        };
        let ways: Option<u64> = read("ways_of_associativity").trim().parse().ok();
        let line: Option<u64> = read("coherency_line_size").trim().parse().ok();
        if let (true, Some(b), Some(w), Some(l)) = (wanted, bytes, ways, line) {
            if best.is_none_or(|(lv, ..)| level > lv) {
                best = Some((level, b, w, l));
            }
        }
    }
    match best {
        Some((_, b, w, l)) if w > 0 && l > 0 && b % (w * l) == 0 && (b / (w * l)).is_power_of_two() => {
            format!("{flag}={b},{w},{l}")
        }
        _ => "--cache-sim=yes".to_string(),
    }
}

/// Per-op misses from a callgrind output file's `events:` and `totals:`/`summary:` lines.
fn parse(text: &str, ops: u64) -> Option<Misses> {
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))?
        .split_whitespace()
        .collect();
    let totals: Vec<f64> = text
        .lines()
        .find_map(|l| l.strip_prefix("totals:").or_else(|| l.strip_prefix("summary:")))?
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    let get = |name: &str| {
        events
            .iter()
            .position(|e| *e == name)
            .and_then(|i| totals.get(i).copied())
            .unwrap_or(0.0)
            / ops.max(1) as f64
    };
    // Nothing collected means the toggle matched no function: report nothing rather than zeros.
    if get("Ir") == 0.0 {
        return None;
    }
    Some(Misses {
        d1_read: get("D1mr"),
        d1_write: get("D1mw"),
        ll_read: get("DLmr"),
        ll_write: get("DLmw"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_callgrind_totals() {
        let text = "version: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nfn=x\n1 2\ntotals: 1000 200 100 0 40 20 0 8 4\n";
        let m = parse(text, 10).unwrap();
        assert_eq!(
            (m.d1_read, m.d1_write, m.ll_read, m.ll_write),
            (4.0, 2.0, 0.8, 0.4)
        );
        assert!(parse("events: Ir D1mr\ntotals: 0 0\n", 10).is_none());
    }
}
