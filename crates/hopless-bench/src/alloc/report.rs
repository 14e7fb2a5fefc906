//! What `hopless bench alloc` reports: the rows of both views (in-process and `--c-abi`), their tables
//! and the C-ABI view's JSON document.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::json;
use crate::peers::Peer;

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

/// One row of `--c-abi --json`: a workload on one allocator, every run and their summary.
#[derive(Clone, Debug, Serialize)]
pub struct CAbiResult {
    pub workload: String,
    pub allocator: String,
    /// Median over the runs.
    pub ns_per_op: f64,
    pub min_ns_per_op: f64,
    pub max_ns_per_op: f64,
    /// The median's ratio to mimalloc's median (`None` without mimalloc).
    pub ratio_to_mimalloc: Option<f64>,
    /// Every run's ns/op, in run order.
    pub runs: Vec<f64>,
    /// The object `malloc` resolved to in the children.
    pub malloc_from: String,
    /// Median over the runs of the minor page faults and the voluntary context switches of the child
    /// process during its measured run.
    pub faults: f64,
    pub switches: f64,
}

/// A table of the C-ABI view: a row per workload, a column per library (in `libs` order), each cell
/// `cell` of that library's result ("-" where it has none), then the legend line.
fn c_abi_grid(
    results: &[CAbiResult],
    workloads: &[&str],
    libs: &[&str],
    (corner, width): (&str, usize),
    cell: impl Fn(&CAbiResult) -> String,
    legend: &str,
) -> String {
    let mut out = String::new();
    let _ = write!(out, "{corner:<20}");
    for l in libs {
        let _ = write!(out, " {l:>width$}");
    }
    out.push('\n');
    for w in workloads {
        let _ = write!(out, "{w:<20}");
        for l in libs {
            let text = match results.iter().find(|r| r.workload == *w && r.allocator == *l) {
                Some(r) => cell(r),
                None => "-".to_string(),
            };
            let _ = write!(out, " {text:>width$}");
        }
        out.push('\n');
    }
    out.push_str(legend);
    out.push('\n');
    out
}

/// The C-ABI table: one row per workload, a column per library (in `libs` order), each cell the median
/// ns/op, [min-max] over the runs, and the median's ratio to mimalloc's.
pub fn c_abi_table(results: &[CAbiResult], workloads: &[&str], libs: &[&str]) -> String {
    c_abi_grid(
        results,
        workloads,
        libs,
        ("workload (ns/op)", 27),
        |r| {
            let range = format!("[{:.1}-{:.1}]", r.min_ns_per_op, r.max_ns_per_op);
            match r.ratio_to_mimalloc {
                Some(x) => format!("{:.2} {range} {x:.2}x", r.ns_per_op),
                None => format!("{:.2} {range}", r.ns_per_op),
            }
        },
        "(median [min-max] over the runs; x: the median relative to mimalloc's; lower is better)",
    )
}

/// The C-ABI view's second table: per workload and library, the median minor page faults and voluntary
/// context switches of a measured run (the same ops for every library in a row): what purging freed
/// pages too early, or making threads wait, costs.
pub fn c_abi_cost_table(results: &[CAbiResult], workloads: &[&str], libs: &[&str]) -> String {
    c_abi_grid(
        results,
        workloads,
        libs,
        ("faults / switches", 19),
        |r| format!("{:.0} / {:.0}", r.faults, r.switches),
        "(median over the runs of a measured run's minor page faults / voluntary context switches, whole \
         process)",
    )
}

/// `{"view": "c-abi", "skipped": [...], "results": [...]}`, every run in each result.
pub fn write_c_abi_json(path: &Path, results: &[CAbiResult], skipped: &[String]) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct Doc<'a> {
        view: &'static str,
        skipped: &'a [String],
        results: &'a [CAbiResult],
    }
    json::write(
        path,
        &Doc {
            view: "c-abi",
            skipped,
            results,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn alloc_json_has_the_documented_shape() {
        let r = AllocResult {
            workload: "pair-16".into(),
            allocator: "hopless".into(),
            ns_per_op: 1.5,
            min_ns_per_op: 1.4,
            max_ns_per_op: 1.7,
            rounds: vec![1.4, 1.5, 1.7],
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["workload"], "pair-16");
        assert_eq!(v["allocator"], "hopless");
        assert_eq!(v["ns_per_op"], 1.5);
        assert_eq!(v["min_ns_per_op"], 1.4);
        assert_eq!(v["rounds"][2], 1.7);
    }

    #[test]
    fn c_abi_table_has_a_column_per_library_and_ratios_only_with_mimalloc() {
        let r = |a: &str, v: f64, x: Option<f64>| CAbiResult {
            workload: "pair-16".into(),
            allocator: a.into(),
            ns_per_op: v,
            min_ns_per_op: v,
            max_ns_per_op: v,
            ratio_to_mimalloc: x,
            runs: vec![v],
            malloc_from: String::new(),
            faults: 2.0,
            switches: 1.0,
        };
        let t = c_abi_table(
            &[r("glibc", 6.0, None), r("hopless", 3.0, None)],
            &["pair-16", "lifo-100"],
            &["glibc", "hopless"],
        );
        let row = t.lines().nth(1).unwrap();
        assert!(row.contains("6.00 [6.0-6.0]") && !row.contains('x'), "{t}");
        assert!(t.lines().nth(2).unwrap().ends_with(" -"), "{t}");
        let c = c_abi_cost_table(&[r("glibc", 6.0, None)], &["pair-16"], &["glibc", "hopless"]);
        let row = c.lines().nth(1).unwrap();
        assert!(row.contains("2 / 1") && row.ends_with(" -"), "{c}");
    }
}
