//! `hopless` with no arguments (`cargo run --release`): the quick kv comparison and the quick alloc bench,
//! then the headline table.

use crate::common::Common;
use crate::{alloc, kv, report};

/// Runs both quick benches (the kv one without the eviction comparison) and prints the headline table.
pub fn run() -> Result<(), String> {
    println!("hopless: the seed's KV workload and the allocator micro-benchmarks, quick runs (full: `hopless bench kv`, `hopless bench alloc`)\n");
    let quick = Common {
        quick: true,
        ..Common::default()
    };
    let kv = kv::run(&kv::Options {
        common: quick.clone(),
        no_eviction: true,
        ..kv::Options::default()
    })?;
    println!();
    let alloc = alloc::run(&alloc::Options {
        common: quick,
        ..alloc::Options::default()
    })?;
    println!("\n{}", report::headline(&kv, &alloc));
    Ok(())
}
