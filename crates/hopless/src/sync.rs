//! The atomics the lock-free pieces are built from. Here they are core's; the loom model tests
//! (`crates/hopless-loom`) compile those pieces against a module of the same name that re-exports
//! loom's, so the code under test is the code that ships.

pub use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
