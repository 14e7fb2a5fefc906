//! The in-process view of `hopless bench alloc`: the workloads of `workloads.rs` (this view's list is
//! [`WORKLOADS`]) on every peer's `GlobalAlloc`, called directly in this process with [`Bare`] blocks,
//! in alternating rounds.

use std::alloc::GlobalAlloc;

use super::report::AllocResult;
use super::touch::Bare;
use super::workloads::{self, ChurnPlan};
use crate::peers::{Peer, WithAlloc};
use crate::stats::{median, min_max};

/// Workload names, in table order.
pub const WORKLOADS: [&str; 12] = [
    "pair-16",
    "pair-64",
    "pair-256",
    "pair-1024",
    "pair-4096",
    "lifo-100",
    "random-churn",
    "fifo-lifo-100",
    "fifo-lifo-1600",
    "mixed-sizes",
    "producer-consumer",
    "exchange-4",
];

/// How much work one measured run does, and how many rounds.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub rounds: usize,
    /// Multiplies every workload's op count.
    pub scale: f64,
}

impl Config {
    pub fn quick() -> Self {
        Config {
            rounds: 5,
            scale: 1.0,
        }
    }
    pub fn full() -> Self {
        Config {
            rounds: 11,
            scale: 3.0,
        }
    }
}

/// One measured run of a workload on whichever peer [`Peer::with`] passes it: ns per op.
struct Run<'a> {
    workload: &'a str,
    scale: f64,
    churn: &'a ChurnPlan,
}

impl WithAlloc<f64> for Run<'_> {
    fn call<A: GlobalAlloc + Sync>(self, a: &A) -> f64 {
        workloads::run::<A, Bare>(a, self.workload, self.scale, self.churn)
    }
}

/// Runs every workload on every peer: one warm-up round, then `rounds` measured rounds, the peer order
/// rotating each round. `tick` is called after each measured run (for a progress bar).
pub fn measure(cfg: Config, workloads: &[&str], peers: &[Peer], mut tick: impl FnMut()) -> Vec<AllocResult> {
    let churn = ChurnPlan::new();
    let mut samples: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); peers.len()]; workloads.len()];
    for round in 0..=cfg.rounds {
        for (wi, name) in workloads.iter().enumerate() {
            for k in 0..peers.len() {
                let pi = (k + round) % peers.len();
                let scale = if round == 0 { cfg.scale / 4.0 } else { cfg.scale };
                let ns = peers[pi].with(Run {
                    workload: name,
                    scale,
                    churn: &churn,
                });
                if round > 0 {
                    samples[wi][pi].push(ns);
                    tick();
                }
            }
        }
    }
    let mut out = Vec::new();
    for (wi, name) in workloads.iter().enumerate() {
        for (pi, p) in peers.iter().enumerate() {
            let s = &samples[wi][pi];
            let (min, max) = min_max(s.iter().copied());
            out.push(AllocResult {
                workload: name.to_string(),
                allocator: p.name().to_string(),
                ns_per_op: median(s),
                min_ns_per_op: min,
                max_ns_per_op: max,
                rounds: s.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_runs_on_every_peer() {
        let cfg = Config {
            rounds: 1,
            scale: 0.001,
        };
        let mut ticks = 0;
        let rs = measure(cfg, &WORKLOADS, &Peer::ALL, || ticks += 1);
        assert_eq!(rs.len(), WORKLOADS.len() * 4);
        assert_eq!(ticks, WORKLOADS.len() * 4);
        assert!(
            rs.iter().all(|r| r.ns_per_op.is_finite() && r.ns_per_op > 0.0),
            "{rs:?}"
        );
    }
}
