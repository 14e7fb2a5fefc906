//! # hopless-bench
//!
//! Side-by-side benchmarks: every workload runs on glibc (`System`), jemalloc, mimalloc and hopless in one
//! invocation, in alternating rounds (the order rotates each round), and reports the median of the rounds
//! with each allocator's ratio to mimalloc. These machines are shared and noisy: a ratio measured in one
//! run means far more than an absolute time.
//!
//! # Layout
//!
//! Each bench is one module, its command (options, the run loop: rounds, child processes, progress bar),
//! with its own files below it for what it measures and for its table, chart and JSON (`report.rs`). What
//! the benches share sits below them all and names no bench.
//!
//! Layers, top to bottom: a module names only modules listed below it, and its own children
//! (`scripts/check/layers.py` checks this).
//!
//! | module | what it holds |
//! |---|---|
//! | `headline` | `hopless` with no arguments: the quick kv and alloc runs, then the headline rows, table and JSON |
//! | `alloc` | `hopless bench alloc`: picks workloads and peers, runs a view, prints its table, writes its JSON |
//! | `alloc::in_process` | the in-process view: the workloads on every peer's `GlobalAlloc`, in alternating rounds |
//! | `alloc::cabi` | `--c-abi`: the workloads through `malloc`/`free`, one `LD_PRELOAD` child per run; `cabi/malloc.rs`: the process's `malloc`/`free` and where they resolved |
//! | `alloc::grid_report` | `--grid`'s summary: a table per thread mode, block sizes by working sets, hopless against mimalloc |
//! | `alloc::report` | both views' result rows, tables, and the C-ABI JSON document |
//! | `alloc::workloads` | the workloads, each written once and run by name; `workloads/single_thread.rs`, `workloads/cross_thread.rs`, `workloads/grid.rs` (the grid's cells) |
//! | `alloc::touch` | what a workload does to its blocks: each view's own (`Bare`, `TaggedWord`) |
//! | `alloc::blocks` | `Blocks`, how a workload allocates and frees: for every `GlobalAlloc` |
//! | `kv` | `hopless bench kv`: one child process per configuration and run, medians, table, chart, JSON |
//! | `kv::report` | a configuration's row (medians and every run), the table and the chart |
//! | `kv::hash_seed` | `--hash-seed`: fixed or random per store |
//! | `kv::eviction` | sampled LRU against exact LRU, on one trace |
//! | `kv::workload` | the KV workload on the store, in one process (the child side) |
//! | `kv::purge` | asking each allocator to give memory back |
//! | `fastpath` | `hopless bench fastpath`: the SLUB experiment's rounds, then the report |
//! | `fastpath::report` | a cell's row, the markdown report and the chart |
//! | `fastpath::cachegrind` | every cell under callgrind's cache simulator (a child each), timed loops only, misses per op |
//! | `fastpath::cell` | one cell: an allocator model (array or SLUB) on one scenario and size, timed loops apart, faults counted |
//! | `server` | `hopless bench server`: `hopless serve` vs `redis-server` (child processes) under a pipelined load; `server/load.rs` the load generator, `server/target.rs` the server processes, `server/pin.rs` `--pin` and the servers' CPU time; `server/persistence.rs` snapshots and the append-only file (`persistence/snapshot.rs`, `persistence/aof.rs`) |
//! | `chart` | PNG bar charts |
//! | `peers` | the allocators under test, behind one enum |
//! | `via` | any `GlobalAlloc` as an `allocator_api2` allocator, for the store |
//! | `child` | the child-process protocol: run this executable as `bench X --child SPEC`, read back its JSON line |
//! | `common` | the options every bench takes: `--quick`, `--rounds`, `--json` |
//! | `json` | writing results as a JSON file |
//! | `progress` | the progress bar |
//! | `stats` | median, min and max of samples |
//! | `rss` | a process's RSS and peak RSS |
//! | `kv_mix` | the KV workload's operation mix (Zipf 0.99 keys, 60% SET / 40% GET, 32-512 B values) |

pub mod alloc;
pub mod chart;
pub mod child;
pub mod common;
pub mod fastpath;
pub mod headline;
pub mod json;
pub mod kv;
pub mod kv_mix;
pub mod peers;
pub mod progress;
pub mod rss;
pub mod server;
pub mod stats;
pub mod via;

#[cfg(test)]
#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;
