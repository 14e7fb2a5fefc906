//! `hopless bench server`'s arguments, and the hopless-bench options they become.

use std::path::PathBuf;

use clap::Args;
use hopless_bench::server;

/// `hopless bench server [--quick] [--runs N] [--json PATH] [--connections C] [--pipeline P,...] [--keys K]
/// [--ops N] [--workload strings,types,...,persistence]`.
#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Fewer keys, requests and runs: finishes in well under a minute on 2 cores.
    #[arg(long)]
    quick: bool,
    /// Runs per server and pipeline depth, each on a fresh server process (default: 3 with --quick, 5
    /// without; 3 for persistence).
    #[arg(long, alias = "rounds")]
    runs: Option<usize>,
    /// Write every run as JSON to this path.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Client connections, one thread each (default 8).
    #[arg(long)]
    connections: Option<usize>,
    /// Pipeline depths, comma-separated (default: 1,16).
    #[arg(long, value_delimiter = ',')]
    pipeline: Option<Vec<usize>>,
    /// Keys, preloaded before the measured requests (default: 50k with --quick, 1M without); for
    /// persistence, the keys saved and loaded and the AOF part's key range (default: 200k, 2M).
    #[arg(long)]
    keys: Option<usize>,
    /// Measured requests per run, all connections together (default: 50k with --quick, 1M without).
    #[arg(long)]
    ops: Option<usize>,
    /// `hopless serve --threads` (default 1: one event loop, as Redis runs its commands).
    #[arg(long)]
    threads: Option<usize>,
    /// Benchmark hopless alone even when redis-server is installed.
    #[arg(long)]
    no_redis: bool,
    /// Per server core: each server on cores 0..threads-1 (Redis with --io-threads when threads > 1),
    /// the load generator on the cores left.
    #[arg(long)]
    pin: bool,
    /// The mixes to run, comma-separated: `strings` (the KV workload's SET/GET mix), `types` (hashes, a
    /// list, a sorted set, sets), `transactions` (the strings mix, 10 requests to a MULTI/EXEC),
    /// `scripts` (EVALSHA of a rate limiter and of a job queue's move), `streams` (XADD with MAXLEN ~,
    /// XREADGROUP and XACK by consumer groups), `persistence` (BGSAVE, its memory and the latency
    /// during it, the file and its load at start; then SETs with an append-only file under
    /// `--appendfsync everysec` and `always`). Default: all but persistence.
    #[arg(long, value_delimiter = ',', value_parser = parse_workload)]
    workload: Option<Vec<server::Workload>>,
}

fn parse_workload(s: &str) -> Result<server::Workload, String> {
    match s {
        "strings" => Ok(server::Workload::Strings),
        "types" => Ok(server::Workload::Types),
        "transactions" | "tx" => Ok(server::Workload::Transactions),
        "scripts" => Ok(server::Workload::Scripts),
        "streams" => Ok(server::Workload::Streams),
        "persistence" => Ok(server::Workload::Persistence),
        _ => Err(format!(
            "unknown workload '{s}' (strings, types, transactions, scripts, streams, persistence)"
        )),
    }
}

impl From<ServerArgs> for server::Options {
    fn from(a: ServerArgs) -> Self {
        server::Options {
            quick: a.quick,
            runs: a.runs,
            json: a.json,
            connections: a.connections,
            pipelines: a.pipeline,
            keys: a.keys,
            ops: a.ops,
            threads: a.threads,
            no_redis: a.no_redis,
            workloads: a.workload,
            pin: a.pin,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ServerArgs,
    }

    #[test]
    fn the_documented_flags_parse() {
        let a = Cli::try_parse_from(
            "x --quick --runs 2 --json o.json --connections 4 --pipeline 1,16 --keys 1000 --ops 5000"
                .split_whitespace(),
        )
        .unwrap()
        .args;
        let o = server::Options::from(a);
        assert!(o.quick);
        assert_eq!(o.runs, Some(2));
        assert_eq!(o.pipelines, Some(vec![1, 16]));
        assert_eq!((o.connections, o.keys, o.ops), (Some(4), Some(1000), Some(5000)));
        assert_eq!(o.json.as_deref(), Some(std::path::Path::new("o.json")));
        let a =
            Cli::try_parse_from("x --workload persistence --keys 200000 --runs 1 --pin".split_whitespace())
                .unwrap()
                .args;
        let o = server::Options::from(a);
        assert_eq!(o.workloads, Some(vec![server::Workload::Persistence]));
        assert!(o.pin);
    }
}
