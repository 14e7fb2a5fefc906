//! `hopless`: the benchmarks of the allocator (and, later, the store), as one command.
//!
//! With no arguments it runs the quick comparison and prints the headline table.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use hopless_bench::{alloc, peers::Peer, report};
use indicatif::{ProgressBar, ProgressStyle};

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
}

#[derive(Subcommand)]
enum Bench {
    /// Allocator micro-workloads on glibc, jemalloc, mimalloc and hopless, side by side.
    Alloc(AllocArgs),
}

#[derive(Args)]
struct AllocArgs {
    /// Fewer rounds and ops: finishes in well under a minute.
    #[arg(long)]
    quick: bool,
    /// Measured rounds (default: 5 with --quick, 11 without).
    #[arg(long)]
    rounds: Option<usize>,
    /// Write the results as JSON to this path.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Only these workloads (comma-separated).
    #[arg(long, value_delimiter = ',')]
    workloads: Option<Vec<String>>,
}

fn progress(len: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>12} [{bar:40}] {pos}/{len} runs, {elapsed} elapsed, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}

fn bench_alloc(args: &AllocArgs) -> Result<Vec<report::AllocResult>, String> {
    let mut cfg = if args.quick {
        alloc::Config::quick()
    } else {
        alloc::Config::full()
    };
    if let Some(r) = args.rounds {
        cfg.rounds = r.max(1);
    }
    let names: Vec<&str> = match &args.workloads {
        Some(ws) => {
            for w in ws {
                if !alloc::WORKLOADS.contains(&w.as_str()) {
                    return Err(format!(
                        "unknown workload {w:?}; known: {}",
                        alloc::WORKLOADS.join(", ")
                    ));
                }
            }
            alloc::WORKLOADS
                .iter()
                .copied()
                .filter(|w| ws.iter().any(|x| x == w))
                .collect()
        }
        None => alloc::WORKLOADS.to_vec(),
    };
    let bar = progress(cfg.rounds * names.len() * Peer::ALL.len(), "bench alloc");
    let t = Instant::now();
    let results = alloc::run(cfg, &names, &Peer::ALL, || bar.inc(1));
    bar.finish_and_clear();
    println!(
        "hopless bench alloc: median of {} rounds, peers alternating, {:.1} s\n",
        cfg.rounds,
        t.elapsed().as_secs_f64()
    );
    print!("{}", report::alloc_table(&results, &names));
    if let Some(path) = &args.json {
        report::write_json(path, &results).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(results)
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Bench(Bench::Alloc(args))) => bench_alloc(&args).map(|_| ()),
        Some(Command::Stats) => {
            let v: Vec<Vec<u8>> = (0..100_000).map(|i| vec![0u8; 1 + i % 5000]).collect();
            drop(v);
            println!("{}", hopless::stats());
            Ok(())
        }
        None => {
            println!("hopless: quick allocator comparison (the full run: `hopless bench alloc`)\n");
            bench_alloc(&AllocArgs {
                quick: true,
                rounds: None,
                json: None,
                workloads: None,
            })
            .map(|_| ())
        }
    };
    if let Err(e) = result {
        eprintln!("hopless: {e}");
        std::process::exit(2);
    }
}
