//! `hopless bench alloc`, the command: picks the workloads and peers, measures them in alternating rounds
//! under a progress bar (the in-process view, `in_process`), prints the table and writes the JSON; with
//! `--c-abi`, the C-ABI view (`cabi`) instead.
//!
//! Both views run the one set of workloads (`workloads`), each written once, generic over how a block is
//! allocated (`blocks`) and what is done to it (`touch`); the rows, tables and JSON are `report`'s. With
//! `--grid`, either view runs the grid's cells instead and `grid_report` sums them up.

mod blocks;
mod cabi;
mod grid_report;
mod in_process;
mod report;
mod touch;
mod workloads;

use std::time::Instant;

pub use cabi::{Variant, C_WORKLOADS};
pub use in_process::{measure, Config, WORKLOADS};
pub use report::{AllocResult, CAbiResult};
pub use workloads::GridThreads;

use crate::common::Common;
use crate::peers::Peer;
use crate::progress::progress;
use grid_report::grid_table;
use report::alloc_table;
use workloads::grid_names;

/// What `hopless bench alloc` was asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub common: Common,
    /// Only these workloads (all if `None`).
    pub workloads: Option<Vec<String>>,
    /// Also run hopless behind never-inlined calls ("hopless-call").
    pub with_call: bool,
    /// Only these allocators (all four if `None`).
    pub peers: Option<Vec<String>>,
    /// The C-ABI view instead: `malloc`/`free` of each shared library, one `LD_PRELOAD` child per run.
    pub c_abi: bool,
    /// C-ABI view: runs per workload and allocator (default 3 quick, 5 full; else `--rounds` if given).
    pub runs: Option<usize>,
    /// C-ABI view: where the other libraries are (default: Debian's multiarch directory).
    pub lib_dir: Option<std::path::PathBuf>,
    /// C-ABI view: another build of `libhopless.so`, as the column `before`.
    pub before: Option<std::path::PathBuf>,
    /// C-ABI view: more `libhopless.so` columns, each with a variable set in its children.
    pub variants: Vec<Variant>,
    /// The grid's cells instead of the workloads, in these thread modes (either view).
    pub grid: Option<Vec<GridThreads>>,
    /// Internal: the C-ABI child side, `LIB:WORKLOAD:SCALE`.
    pub child: Option<String>,
}

/// Runs the bench, prints its table (and writes `--json`, without the hopless-call rows); returns every
/// result. With `c_abi`, runs the C-ABI view instead (its table and JSON; returns no Rust-view result);
/// with `child`, is that view's child process.
pub fn run(o: &Options) -> Result<Vec<AllocResult>, String> {
    if let Some(spec) = &o.child {
        cabi::child(spec)?;
        return Ok(Vec::new());
    }
    if o.c_abi {
        let default = if o.common.quick { 3 } else { 5 };
        let runs = o.runs.or(o.common.rounds).unwrap_or(default).max(1);
        let names = match &o.grid {
            Some(modes) => grid_names(modes),
            None => selected(o.workloads.as_deref(), &C_WORKLOADS)?,
        };
        let c = cabi::CAbiOptions {
            quick: o.common.quick,
            runs,
            json: o.common.json.as_deref(),
            lib_dir: o.lib_dir.as_deref(),
            before: o.before.as_deref(),
            variants: &o.variants,
        };
        let results = cabi::run(&c, &names)?;
        if let Some(modes) = &o.grid {
            let rows: Vec<_> = results
                .iter()
                .map(|r| (r.workload.as_str(), r.allocator.as_str(), r.ns_per_op))
                .collect();
            print!("{}", grid_table(&rows, modes, "hopless", "mimalloc"));
        }
        return Ok(Vec::new());
    }
    let mut cfg = if o.common.quick {
        Config::quick()
    } else {
        Config::full()
    };
    cfg.rounds = o.runs.or(o.common.rounds).unwrap_or(cfg.rounds).max(1);
    let names = match &o.grid {
        Some(modes) => grid_names(modes),
        None => selected_workloads(o.workloads.as_deref())?,
    };
    let peers = selected_peers(o.peers.as_deref(), o.with_call)?;
    let bar = progress(cfg.rounds * names.len() * peers.len(), "bench alloc");
    let t = Instant::now();
    let results = measure(cfg, &names, &peers, || bar.inc(1));
    bar.finish_and_clear();
    println!(
        "hopless bench alloc: median of {} rounds, peers alternating, {:.1} s\n",
        cfg.rounds,
        t.elapsed().as_secs_f64()
    );
    print!("{}", alloc_table(&results, &names));
    if let Some(modes) = &o.grid {
        let rows: Vec<_> = results
            .iter()
            .map(|r| (r.workload.as_str(), r.allocator.as_str(), r.ns_per_op))
            .collect();
        for subject in [Peer::Hopless, Peer::HoplessCall] {
            if peers.contains(&subject) {
                print!(
                    "{}",
                    grid_table(&rows, modes, subject.name(), Peer::Mimalloc.name())
                );
            }
        }
    }
    if o.common.json.is_some() {
        let standard: Vec<_> = results
            .iter()
            .filter(|r| r.allocator != Peer::HoplessCall.name())
            .cloned()
            .collect();
        o.common.write_json(&standard)?;
    }
    Ok(results)
}

/// The workloads asked for, in table order.
fn selected_workloads(only: Option<&[String]>) -> Result<Vec<&'static str>, String> {
    selected(only, &WORKLOADS)
}

/// The workloads of `known` asked for (all if `None`), in table order.
fn selected(only: Option<&[String]>, known: &[&'static str]) -> Result<Vec<&'static str>, String> {
    let Some(only) = only else {
        return Ok(known.to_vec());
    };
    if let Some(w) = only.iter().find(|w| !known.contains(&w.as_str())) {
        return Err(format!("unknown workload {w:?}; known: {}", known.join(", ")));
    }
    Ok(known
        .iter()
        .copied()
        .filter(|w| only.iter().any(|x| x == w))
        .collect())
}

/// The peers asked for, in table order, then hopless-call if asked for.
fn selected_peers(only: Option<&[String]>, with_call: bool) -> Result<Vec<Peer>, String> {
    let mut peers = Peer::ALL.to_vec();
    if let Some(only) = only {
        peers.retain(|p| only.iter().any(|o| o == p.name()));
        if peers.is_empty() {
            return Err("--peers names none of system, jemalloc, mimalloc, hopless".into());
        }
    }
    if with_call {
        peers.push(Peer::HoplessCall);
    }
    Ok(peers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_keeps_table_order_and_rejects_unknown_names() {
        let ask = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            selected_workloads(Some(&ask(&["lifo-100", "pair-16"]))).unwrap(),
            ["pair-16", "lifo-100"]
        );
        assert!(selected_workloads(Some(&ask(&["nope"])))
            .unwrap_err()
            .contains("unknown workload"));
        assert_eq!(
            selected_peers(Some(&ask(&["hopless", "mimalloc"])), true).unwrap(),
            [Peer::Mimalloc, Peer::Hopless, Peer::HoplessCall]
        );
        assert!(selected_peers(Some(&ask(&["tcmalloc"])), false).is_err());
        assert_eq!(selected_peers(None, false).unwrap(), Peer::ALL);
    }
}
