//! `hopless` with no arguments (`cargo run --release`): the quick kv comparison and the quick alloc bench
//! (with hopless-call, hopless behind never-inlined calls), then the headline table, also written as
//! `target/hopless-report/headline.json`.

use std::path::Path;

use crate::common::Common;
use crate::{alloc, kv, report};

/// Where the headline's JSON goes.
pub const JSON: &str = "target/hopless-report/headline.json";

/// Runs both quick benches (the kv one without the eviction comparison), prints the headline table and
/// writes its JSON.
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
    println!("note: {}\n", report::HOPLESS_INLINED_NOTE);
    let alloc = alloc::run(&alloc::Options {
        common: quick,
        with_call: true,
        ..alloc::Options::default()
    })?;
    let rows = report::headline_rows(&kv, &alloc);
    let kv_runs = kv.first().map_or(0, |r| r.runs.len());
    println!("\n{}", report::headline(&rows, kv_runs));
    report::write_json(Path::new(JSON), &rows).map_err(|e| format!("writing {JSON}: {e}"))?;
    println!("wrote {JSON}");
    Ok(())
}
