//! `hopless`: the benchmarks of the allocator and the store, as one command.
//!
//! With no arguments it runs the quick comparison and prints the headline table. The benchmarks
//! themselves (run loops, child processes, tables, charts, JSON) live in hopless-bench, the server
//! (`hopless serve`) in hopless-server, the heap-profile reader (`hopless prof`) in hopless-prof; this
//! crate parses the command line and dispatches.
//!
//! # Layout
//!
//! | module | what it holds |
//! |---|---|
//! | `main.rs` | the command tree and the dispatch |
//! | [`args`] | the `bench` subcommands' arguments (`--quick`, `--rounds`, `--json` shared by all) |
//! | [`server_args`] | `bench server`'s arguments |
//! | [`prof_args`] | `prof`'s arguments |

mod args;
mod prof_args;
mod server_args;

use std::io::Write;

use clap::{Parser, Subcommand};
use hopless_bench::{alloc, fastpath, headline, kv, server};

use crate::args::{AllocArgs, FastpathArgs, KvArgs};
use crate::prof_args::ProfArgs;
use crate::server_args::ServerArgs;

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

#[derive(Parser)]
#[command(
    name = "hopless",
    version,
    about = "hopless: the allocator without the extra hop, measured"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a benchmark.
    #[command(subcommand)]
    Bench(Bench),
    /// Print hopless's own statistics table (slabinfo style) after a short warm-up workload.
    Stats,
    /// Serve the store over the Redis protocol (RESP2/RESP3) until SIGINT/SIGTERM. A cache: nothing is
    /// written to disk.
    Serve(hopless_server::ServeArgs),
    /// Read a heap profile (pprof format, as hopless writes them): symbolize it from the module files
    /// on disk and print the total, the top functions by flat and cumulative value, and the top
    /// allocation sites.
    Prof(ProfArgs),
}

#[derive(Subcommand)]
enum Bench {
    /// Allocator micro-workloads on glibc, jemalloc, mimalloc and hopless, side by side.
    Alloc(AllocArgs),
    /// The KV workload (Zipf 0.99, 60% SET / 40% GET, 32-512 B values) on the store over each
    /// allocator (and dashmap on hopless), side by side.
    Kv(KvArgs),
    /// The SLUB fast-path experiment: array vs intrusive vs cached-next thread caches.
    Fastpath(FastpathArgs),
    /// `hopless serve` against redis-server (when installed), each a child process, under a pipelined
    /// load: ops/s, p50/p99/p99.9 latency, RSS, bytes per key.
    Server(ServerArgs),
}

/// `hopless stats`: a short warm-up workload, then the allocator's statistics table.
fn stats() -> Result<(), String> {
    let v: Vec<Vec<u8>> = (0..100_000).map(|i| vec![0u8; 1 + i % 5000]).collect();
    drop(v);
    println!("{}", hopless::stats());
    Ok(())
}

/// `hopless prof`: the report (or folded stacks) on stdout.
fn prof(options: hopless_prof::Options) -> Result<(), String> {
    let out = hopless_prof::run(&options).map_err(|e| match e {
        // Names its file already.
        hopless_prof::Error::Io { .. } => e.to_string(),
        e => format!("{}: {e}", options.path.display()),
    })?;
    // A reader that stops early (`| head`) is not an error.
    match std::io::stdout().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}

fn main() {
    let result = match Cli::parse().command {
        Some(Command::Bench(Bench::Alloc(args))) => alloc::run(&args.into()).map(drop),
        Some(Command::Bench(Bench::Kv(mut args))) => match args.child.take() {
            Some(spec) => kv::child(&spec, &args.into()),
            None => kv::run(&args.into()).map(drop),
        },
        Some(Command::Bench(Bench::Fastpath(args))) => match &args.child {
            Some(spec) => fastpath::child(spec),
            None => fastpath::run(&args.into()).map(drop),
        },
        Some(Command::Bench(Bench::Server(args))) => server::run(&args.into()).map(drop),
        Some(Command::Stats) => stats(),
        Some(Command::Serve(args)) => {
            hopless_server::run(hopless_server::ServeOptions::from(args)).map_err(|e| e.to_string())
        }
        Some(Command::Prof(args)) => prof(args.into()),
        None => headline::run(),
    };
    if let Err(e) = result {
        eprintln!("hopless: {e}");
        std::process::exit(2);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::CommandFactory;
    use hopless_bench::common::Common;

    use super::*;

    fn parse(args: &str) -> Option<Command> {
        Cli::try_parse_from(std::iter::once("hopless").chain(args.split_whitespace()))
            .unwrap_or_else(|e| panic!("{args}: {e}"))
            .command
    }

    #[test]
    fn the_command_tree_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_bench_takes_quick_rounds_and_json() {
        for bench in ["alloc", "kv", "fastpath"] {
            let common: Common = match parse(&format!("bench {bench} --quick --rounds 2 --json out.json")) {
                Some(Command::Bench(Bench::Alloc(a))) => alloc::Options::from(a).common,
                Some(Command::Bench(Bench::Kv(a))) => kv::Options::from(a).common,
                Some(Command::Bench(Bench::Fastpath(a))) => fastpath::Options::from(a).common,
                _ => unreachable!(),
            };
            assert!(common.quick, "{bench}");
            assert_eq!(common.rounds, Some(2), "{bench}");
            assert_eq!(common.json.as_deref(), Some(Path::new("out.json")), "{bench}");
        }
    }

    #[test]
    fn the_invocations_the_readme_scripts_and_children_use_parse() {
        for args in [
            "",
            "stats",
            // scripts/bench/debug_cost.py
            "bench alloc --quick --rounds 1 --peers hopless --json x.json",
            "bench alloc --with-call --peers mimalloc,hopless --rounds 11",
            "bench alloc --workloads pair-16,lifo-100",
            "bench alloc --c-abi --grid 1,2,4,pc --runs 5",
            "bench alloc --grid 1 --with-call",
            "bench kv --quick --threads 2 --keys 1000 --ops 5000 --no-eviction",
            "bench fastpath --quick --no-cachegrind",
            "bench server --quick --runs 1 --connections 4 --pipeline 1,16 --keys 1000 --ops 5000",
            "bench server --quick --pin --workload strings",
            "bench server --workload persistence --keys 2000000 --runs 3 --pin",
            // The children kv and fastpath run.
            "bench kv --child hopless-kv:hopless --threads 2 --keys 1000 --ops 5000",
            "bench fastpath --child array:cold:64:0.5",
            "prof heap.pb.gz",
            "prof heap.pb.gz --sample alloc --top 5 --svg top.svg",
            "prof heap.pb.gz --sample inuse_objects --collapsed",
        ] {
            parse(args);
        }
    }
}
