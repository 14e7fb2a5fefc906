//! # hopless-bench
//!
//! Side-by-side benchmarks: every workload runs on glibc (`System`), jemalloc, mimalloc and hopless in one
//! invocation, in alternating rounds (the order rotates each round), and reports the median of the rounds
//! with each allocator's ratio to mimalloc. These machines are shared and noisy: a ratio measured in one
//! run means far more than an absolute time.
//!
//! # Layout
//!
//! | module | what it holds |
//! |---|---|
//! | [`peers`] | the allocators under test, behind one enum |
//! | [`alloc`] | `hopless bench alloc`: the allocator micro-workloads and their runner |
//! | [`fastpath`] | `hopless bench fastpath`: the SLUB experiment, four thread-cache strategies |
//! | [`kv`] | `hopless bench kv`: the seed's store workload, one configuration per child process |
//! | [`via`] | any `GlobalAlloc` as an `allocator_api2` allocator, for the store |
//! | [`report`] | medians, tables and JSON |

pub mod alloc;
pub mod chart;
pub mod fastpath;
pub mod kv;
pub mod peers;
pub mod report;
pub mod via;

#[cfg(test)]
#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;
