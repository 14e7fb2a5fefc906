//! # hopless-bench
//!
//! Side-by-side benchmarks: every workload runs on glibc (`System`), jemalloc, mimalloc and hopless in one
//! invocation, in alternating rounds (the order rotates each round), and reports the median of the rounds
//! with each allocator's ratio to mimalloc. These machines are shared and noisy: a ratio measured in one
//! run means far more than an absolute time.
//!
//! # Layout
//!
//! Each bench is one module, its command: options, the run loop (rounds, child processes, progress bar),
//! the table, chart and JSON; what it measures sits in the module's own files.
//!
//! | module | what it holds |
//! |---|---|
//! | [`child`] | the child-process protocol: run this executable as `bench X --child SPEC`, read back its JSON line |
//! | [`common`] | the options every bench takes: `--quick`, `--rounds`, `--json` |
//! | [`stats`], [`json`], [`progress`], [`rss`], [`seed_mix`] | what every bench shares: medians and min/max, JSON files, the progress bar, RSS, the seed's operation mix |
//! | [`peers`] | the allocators under test, behind one enum |
//! | [`via`] | any `GlobalAlloc` as an `allocator_api2` allocator, for the store |
//! | [`alloc`] | `hopless bench alloc`: picks workloads and peers, runs them; `alloc/report.rs` its tables and JSON |
//! | `alloc/workloads.rs` | the allocator workloads, each written once, generic over `alloc/blocks.rs` and `alloc/touch.rs` |
//! | `alloc/in_process.rs` | the workloads on every peer's `GlobalAlloc`, in alternating rounds |
//! | `alloc/cabi.rs` | `--c-abi`: the workloads through `malloc`/`free`, one `LD_PRELOAD` child per run |
//! | [`kv`] | `hopless bench kv`: one child process per configuration and round; `kv/report.rs` medians, table, chart |
//! | `kv/hash_seed.rs` | `--hash-seed`: fixed or random per store |
//! | `kv/workload.rs` | the seed's store workload in one process (the child side) |
//! | `kv/eviction.rs` | sampled LRU against exact LRU, on one trace |
//! | [`fastpath`] | `hopless bench fastpath`: the SLUB experiment's rounds; `fastpath/report.rs` its report, chart and JSON rows |
//! | `fastpath/cell.rs` | one cell: an allocator model (array or SLUB) on one scenario and size, timed loops apart, faults counted |
//! | `fastpath/cachegrind.rs` | every cell under callgrind's cache simulator, timed loops only, misses per op |
//! | [`server`] | `hopless bench server`: `hopless serve` vs `redis-server` (child processes) under a pipelined load; `server/load.rs` the load generator, `server/target.rs` the server processes |
//! | [`headline`] | `hopless` with no arguments: the quick kv and alloc runs, then the headline rows and table |
//! | [`chart`] | PNG bar charts |

pub mod alloc;
pub mod chart;
pub mod child;
pub mod common;
pub mod fastpath;
pub mod headline;
pub mod json;
pub mod kv;
pub mod peers;
pub mod progress;
pub mod rss;
pub mod seed_mix;
pub mod server;
pub mod stats;
pub mod via;

#[cfg(test)]
#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;
