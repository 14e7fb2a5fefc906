//! The grid's summary (`hopless bench alloc --grid`): one table per thread mode, a row per block size and
//! a column per working set, each cell hopless's median ns per pair and its ratio to mimalloc's in the
//! same run. The full rows (every library, min and max) are the view's own table above it.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::workloads::{GridCell, GridThreads, GRID_LIVE, GRID_SIZES};

/// The summary tables of `subject` against `base` (`hopless` and `mimalloc`) from `(workload,
/// allocator, median ns)` rows; cells without both read `-`.
pub fn grid_table(rows: &[(&str, &str, f64)], modes: &[GridThreads], subject: &str, base: &str) -> String {
    let ns: HashMap<(&str, &str), f64> = rows.iter().map(|&(w, a, v)| ((w, a), v)).collect();
    let mut out = String::new();
    for &threads in modes {
        let mode = match threads {
            GridThreads::Each(1) => "one thread".to_string(),
            GridThreads::Each(k) => format!("{k} threads, each its own blocks"),
            GridThreads::ProducerConsumer => "allocated by one thread, freed by another".to_string(),
        };
        let _ = writeln!(out, "\n{subject} ns per pair (x {base}'s), {mode}:");
        let _ = write!(out, "{:<8}", "size \\ n");
        for live in GRID_LIVE {
            let _ = write!(out, " {live:>13}");
        }
        out.push('\n');
        let mut worst: f64 = 0.0;
        for size in GRID_SIZES {
            let _ = write!(out, "{:<8}", format!("{size} B"));
            for live in GRID_LIVE {
                let name = GridCell { size, live, threads }.name();
                let cell = match (ns.get(&(name.as_str(), subject)), ns.get(&(name.as_str(), base))) {
                    (Some(&s), Some(&b)) if b > 0.0 => {
                        worst = worst.max(s / b);
                        format!("{s:.2} ({:.2}x)", s / b)
                    }
                    (Some(&s), _) => format!("{s:.2}"),
                    _ => "-".to_string(),
                };
                let _ = write!(out, " {cell:>13}");
            }
            out.push('\n');
        }
        if worst > 0.0 {
            let _ = writeln!(out, "(highest ratio {worst:.2}x)");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_shows_the_subject_and_its_ratio_and_gaps_show_a_dash() {
        let rows = [
            ("grid-16-400", "hopless", 12.0),
            ("grid-16-400", "mimalloc", 6.0),
            ("grid-16-1", "hopless", 5.0),
        ];
        let t = grid_table(&rows, &[GridThreads::Each(1)], "hopless", "mimalloc");
        assert!(t.contains("12.00 (2.00x)"), "{t}");
        assert!(t.contains(" 5.00 "), "{t}");
        assert!(t.contains("(highest ratio 2.00x)"), "{t}");
        let line = t.lines().find(|l| l.starts_with("1024 B")).unwrap();
        assert_eq!(line.matches(" -").count(), GRID_LIVE.len(), "{t}");
    }
}
