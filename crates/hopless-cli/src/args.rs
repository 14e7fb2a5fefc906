//! The `hopless bench` subcommands' arguments, and the hopless-bench options each becomes.
//!
//! `--quick`, `--rounds` and `--json` are declared once, in [`CommonArgs`], and flattened into every
//! subcommand; each subcommand words their help for itself (its own durations and default round counts).

use std::path::PathBuf;

use clap::Args;
use hopless_bench::{alloc, common::Common, fastpath, kv};

/// The arguments every bench takes.
#[derive(Args)]
pub struct CommonArgs {
    /// Fewer ops and rounds.
    #[arg(long)]
    quick: bool,
    /// Rounds.
    #[arg(long)]
    rounds: Option<usize>,
    /// Write the results as JSON to this path.
    #[arg(long)]
    json: Option<PathBuf>,
}

impl From<CommonArgs> for Common {
    fn from(a: CommonArgs) -> Common {
        Common {
            quick: a.quick,
            rounds: a.rounds,
            json: a.json,
        }
    }
}

// `hopless bench alloc`.
#[derive(Args)]
#[command(
    mut_arg("quick", |a| a.help("Fewer rounds and ops: finishes in well under a minute")),
    mut_arg("rounds", |a| a.help("Measured rounds (default: 5 with --quick, 11 without)")),
)]
pub struct AllocArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Only these workloads (comma-separated; with --c-abi, of its list).
    #[arg(long, value_delimiter = ',')]
    workloads: Option<Vec<String>>,
    /// Also run hopless behind never-inlined calls ("hopless-call"), as the C allocators are called.
    #[arg(long)]
    with_call: bool,
    /// Only these allocators (comma-separated: system, jemalloc, mimalloc, hopless).
    #[arg(long, value_delimiter = ',')]
    peers: Option<Vec<String>>,
    /// The C-ABI view: malloc/free of libhopless.so, jemalloc, tcmalloc, mimalloc and glibc, each in its
    /// own LD_PRELOAD child process per run, with cross-thread workloads.
    #[arg(long, conflicts_with_all = ["with_call", "peers"])]
    c_abi: bool,
    /// Runs (rounds) per workload and allocator: median [min-max] of them (default 5 with --quick, 11
    /// without; with --c-abi, 3 and 5).
    #[arg(long)]
    runs: Option<usize>,
    /// With --c-abi: where jemalloc's, tcmalloc's and mimalloc's libraries are (default: Debian's
    /// /usr/lib/ARCH-linux-gnu).
    #[arg(long, requires = "c_abi", value_name = "DIR")]
    lib_dir: Option<PathBuf>,
    /// With --c-abi: another build of libhopless.so, as the column "before".
    #[arg(long, requires = "c_abi", value_name = "PATH")]
    before: Option<PathBuf>,
    /// With --c-abi: another libhopless.so column (or, with NAME:LIB, of another library), run with
    /// KEY=VALUE in its environment (repeatable), e.g. owned=HOPLESS_OWNED_SLABS=1 or
    /// je-prof:jemalloc=MALLOC_CONF=prof:true.
    #[arg(long = "variant", requires = "c_abi", value_name = "NAME[:LIB]=KEY=VALUE")]
    variants: Vec<alloc::Variant>,
    /// The grid instead of the workloads: n blocks of one size (16, 32, 64, 256, 1024 B) allocated, then
    /// half freed oldest first and half newest first, never written, for n = 1 to 10 000; in these
    /// thread modes (comma-separated: 1, 2, 4 threads each running it, pc: freed by another thread).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "MODES",
        conflicts_with = "workloads"
    )]
    grid: Option<Vec<alloc::GridThreads>>,
    /// Internal: run one C-ABI workload (LIB:WORKLOAD:SCALE) in this process and print its result as JSON.
    #[arg(long, hide = true)]
    child: Option<String>,
}

impl From<AllocArgs> for alloc::Options {
    fn from(a: AllocArgs) -> alloc::Options {
        alloc::Options {
            common: a.common.into(),
            workloads: a.workloads,
            with_call: a.with_call,
            peers: a.peers,
            c_abi: a.c_abi,
            runs: a.runs,
            lib_dir: a.lib_dir,
            before: a.before,
            variants: a.variants,
            grid: a.grid,
            child: a.child,
        }
    }
}

// `hopless bench kv`.
#[derive(Args)]
#[command(
    mut_arg("quick", |a| a.help("Fewer ops and rounds: finishes in under 2 minutes on a 2-core machine")),
    mut_arg("rounds", |a| a.long("runs").alias("rounds").value_name("N").help(
        "Runs of each configuration, each in a fresh process, configurations alternating; the table shows \
         the median [min–max] (default 3 quick, 5 full; --rounds is an alias)"
    )),
)]
pub struct KvArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Keyspace size.
    #[arg(long)]
    keys: Option<usize>,
    /// Measured operations, all threads together.
    #[arg(long)]
    ops: Option<usize>,
    /// Skip the eviction hit-ratio comparison.
    #[arg(long)]
    no_eviction: bool,
    /// The store's hash seed: a number (decimal or 0x hex) or "random" (a new one per store).
    #[arg(long, default_value_t)]
    hash_seed: kv::HashSeed,
    /// Each allocator with its own transparent-huge-page option on (glibc.malloc.hugetlb=1, jemalloc
    /// thp:always, MIMALLOC_ALLOW_THP=1 (mimalloc 3's default anyway), HOPLESS_HUGE_PAGES=1)
    #[arg(long)]
    huge_pages: bool,
    /// Internal: run one configuration in this process and print its result as JSON.
    #[arg(long, hide = true)]
    pub child: Option<String>,
}

impl From<KvArgs> for kv::Options {
    fn from(a: KvArgs) -> kv::Options {
        kv::Options {
            common: a.common.into(),
            threads: a.threads,
            keys: a.keys,
            ops: a.ops,
            no_eviction: a.no_eviction,
            hash_seed: a.hash_seed,
            huge_pages: a.huge_pages,
        }
    }
}

// `hopless bench fastpath`.
#[derive(Args)]
#[command(
    mut_arg("quick", |a| a.help("Fewer ops and rounds: finishes in under 3 minutes on a 2-core machine")),
    mut_arg("rounds", |a| a.help("Rounds (default 3 quick, 7 full)")),
)]
pub struct FastpathArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Skip the cachegrind runs.
    #[arg(long)]
    no_cachegrind: bool,
    /// Internal: run one cell (strategy:scenario:size:scale) on one thread and print its op count.
    #[arg(long, hide = true)]
    pub child: Option<String>,
}

impl From<FastpathArgs> for fastpath::Options {
    fn from(a: FastpathArgs) -> fastpath::Options {
        fastpath::Options {
            common: a.common.into(),
            no_cachegrind: a.no_cachegrind,
        }
    }
}
