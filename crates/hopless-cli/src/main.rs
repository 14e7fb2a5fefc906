//! `hopless`: the benchmarks of the allocator (and, later, the store), as one command.
//!
//! With no arguments it runs the quick comparison and prints the headline table.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use hopless_bench::{alloc, kv, peers::Peer, report};
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
    /// The seed's KV workload on the store over each allocator (and dashmap on hopless), side by side.
    Kv(KvArgs),
    /// The SLUB fast-path experiment: array vs intrusive vs cached-next thread caches.
    Fastpath(FastpathArgs),
}

#[derive(Args)]
struct FastpathArgs {
    /// Fewer ops and rounds: finishes in under 3 minutes on a 2-core machine.
    #[arg(long)]
    quick: bool,
    /// Rounds (default 3 quick, 7 full).
    #[arg(long)]
    rounds: Option<usize>,
    /// Write the results as JSON to this path.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Skip the cachegrind runs.
    #[arg(long)]
    no_cachegrind: bool,
    /// Internal: run one cell (strategy:scenario:size:scale) on one thread and print its op count.
    #[arg(long, hide = true)]
    child: Option<String>,
}

#[derive(Args, Clone)]
struct KvArgs {
    /// Fewer ops and rounds: finishes in under 2 minutes on a 2-core machine.
    #[arg(long)]
    quick: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Keyspace size.
    #[arg(long)]
    keys: Option<usize>,
    /// Measured operations, all threads together.
    #[arg(long)]
    ops: Option<usize>,
    /// Rounds (each configuration runs once per round, in a fresh process; default 3 quick, 5 full).
    #[arg(long)]
    rounds: Option<usize>,
    /// Write the results as JSON to this path.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Skip the eviction hit-ratio comparison.
    #[arg(long)]
    no_eviction: bool,
    /// Internal: run one configuration in this process and print its result as JSON.
    #[arg(long, hide = true)]
    child: Option<String>,
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
    /// Also run hopless behind never-inlined calls ("hopless-call"), as the C allocators are called.
    #[arg(long)]
    with_call: bool,
    /// Only these allocators (comma-separated: system, jemalloc, mimalloc, hopless).
    #[arg(long, value_delimiter = ',')]
    peers: Option<Vec<String>>,
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
    let mut peers = Peer::ALL.to_vec();
    if let Some(only) = &args.peers {
        peers.retain(|p| only.iter().any(|o| o == p.name()));
        if peers.is_empty() {
            return Err("--peers names none of system, jemalloc, mimalloc, hopless".into());
        }
    }
    if args.with_call {
        peers.push(Peer::HoplessCall);
    }
    let bar = progress(cfg.rounds * names.len() * peers.len(), "bench alloc");
    let t = Instant::now();
    let results = alloc::run(cfg, &names, &peers, || bar.inc(1));
    bar.finish_and_clear();
    println!(
        "hopless bench alloc: median of {} rounds, peers alternating, {:.1} s\n",
        cfg.rounds,
        t.elapsed().as_secs_f64()
    );
    print!("{}", report::alloc_table(&results, &names));
    if let Some(path) = &args.json {
        let standard: Vec<_> = results
            .iter()
            .filter(|r| r.allocator != "hopless-call")
            .cloned()
            .collect();
        report::write_json(path, &standard).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(results)
}

fn kv_params(args: &KvArgs) -> kv::Params {
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let mut p = if args.quick {
        kv::Params::quick(threads)
    } else {
        kv::Params::full(threads)
    };
    if let Some(k) = args.keys {
        p.keys = k.max(1);
    }
    if let Some(o) = args.ops {
        p.ops = o.max(threads);
        p.warmup_ops = (p.ops / 5).max(threads);
    }
    p
}

fn median_by(rs: &[kv::RunResult], f: impl Fn(&kv::RunResult) -> f64) -> f64 {
    report::median(&rs.iter().map(f).collect::<Vec<_>>())
}

fn bench_kv(args: &KvArgs) -> Result<Vec<kv::KvResult>, String> {
    let p = kv_params(args);
    if let Some(spec) = &args.child {
        let t = kv::Target::parse(spec).ok_or_else(|| format!("unknown configuration {spec}"))?;
        let r = kv::run_target(t, &p);
        println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
        return Ok(Vec::new());
    }
    let rounds = args.rounds.unwrap_or(if args.quick { 3 } else { 5 }).max(1);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bar = progress(rounds * kv::TARGETS.len(), "bench kv");
    let t0 = Instant::now();
    let mut samples: Vec<Vec<kv::RunResult>> = vec![Vec::new(); kv::TARGETS.len()];
    for round in 0..rounds {
        for k in 0..kv::TARGETS.len() {
            let i = (k + round) % kv::TARGETS.len();
            let t = kv::TARGETS[i];
            bar.set_message(t.spec());
            let out = std::process::Command::new(&exe)
                .args(["bench", "kv", "--child", &t.spec()])
                .args(["--threads", &p.threads.to_string(), "--keys", &p.keys.to_string()])
                .args(["--ops", &p.ops.to_string()])
                .output()
                .map_err(|e| format!("running {}: {e}", t.spec()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} failed: {}",
                    t.spec(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let line = String::from_utf8_lossy(&out.stdout);
            let r: kv::RunResult =
                serde_json::from_str(line.trim()).map_err(|e| format!("{}: {e}: {line}", t.spec()))?;
            samples[i].push(r);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let results: Vec<kv::KvResult> = kv::TARGETS
        .iter()
        .zip(&samples)
        .map(|(t, rs)| kv::KvResult {
            workload: "kv".into(),
            store: t.store.into(),
            allocator: t.allocator.into(),
            ops_per_sec: median_by(rs, |r| r.ops_per_sec),
            mean_ns: median_by(rs, |r| r.mean_ns),
            p50_ns: median_by(rs, |r| r.p50_ns),
            p99_ns: median_by(rs, |r| r.p99_ns),
            p999_ns: median_by(rs, |r| r.p999_ns),
            peak_rss_bytes: median_by(rs, |r| r.peak_rss_bytes as f64) as u64,
            bytes_per_key: median_by(rs, |r| r.bytes_per_key),
        })
        .collect();
    println!(
        "hopless bench kv: {} threads, {} keys, Zipf s=0.99, 60% SET / 40% GET, values 32..=512 B, {} measured ops; \
         median of {rounds} rounds (one fresh process per run, configurations alternating), {:.0} s\n",
        p.threads,
        p.keys,
        p.ops,
        t0.elapsed().as_secs_f64()
    );
    print!("{}", report::kv_table(&results));
    let png = PathBuf::from("target/hopless-report/kv.png");
    let bars: Vec<(String, Vec<f64>)> = results
        .iter()
        .map(|r| {
            let label = if r.store == "hopless-kv" {
                r.allocator.clone()
            } else {
                // dashmap runs on hopless; the other bars are hopless-kv on each allocator.
                r.store.clone()
            };
            (label, vec![r.ops_per_sec, r.p99_ns, r.bytes_per_key.max(0.0)])
        })
        .collect();
    match hopless_bench::chart::bars(
        &png,
        "hopless bench kv: hopless-kv on each allocator, and dashmap on hopless",
        &["ops/s", "p99 latency (ns)", "bytes per key"],
        &bars,
    ) {
        Ok(()) => println!("chart: {}", png.display()),
        Err(e) => println!("chart skipped: {e}"),
    }
    if !args.no_eviction {
        let (sampled, exact, cap) =
            kv::eviction_hit_ratios(200_000, if args.quick { 1_000_000 } else { 3_000_000 }, 8 << 20);
        println!(
            "eviction (Zipf s=0.99 over 200k keys, GET then SET on miss, 8 MiB maxmemory = {cap} keys): \
             sampled LRU hit ratio {:.4}, exact LRU {:.4} ({:+.2} points)",
            sampled,
            exact,
            (sampled - exact) * 100.0
        );
    }
    if let Some(path) = &args.json {
        report::write_json(path, &results).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(results)
}

fn bench_fastpath(args: &FastpathArgs) -> Result<(), String> {
    use hopless_bench::fastpath::{self, FastpathResult, SCENARIOS, SIZES, STRATEGIES};
    if let Some(spec) = &args.child {
        let parts: Vec<&str> = spec.split(':').collect();
        let [strategy, scenario, size, scale] = parts[..] else {
            return Err(format!("bad child spec {spec}"));
        };
        let size: u32 = size.parse().map_err(|e| format!("{e}"))?;
        let scale: f64 = scale.parse().map_err(|e| format!("{e}"))?;
        let (_, ops, _) = fastpath::cell(strategy, scenario, size, 1, scale);
        println!("{ops}");
        return Ok(());
    }
    let rounds = args.rounds.unwrap_or(if args.quick { 3 } else { 7 }).max(1);
    let scale = if args.quick { 0.25 } else { 1.0 };
    let mut cells: Vec<(&str, u32, u32)> = Vec::new();
    for sc in SCENARIOS {
        for sz in SIZES {
            for t in [1u32, 2] {
                cells.push((sc, sz, t));
            }
        }
    }
    let valgrind = !args.no_cachegrind
        && std::process::Command::new("valgrind")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    let cg_cells = if valgrind {
        STRATEGIES.len() * SCENARIOS.len() * SIZES.len() * 2
    } else {
        0
    };
    let bar = progress(rounds * cells.len() * STRATEGIES.len() + cg_cells, "fastpath");
    let t0 = Instant::now();
    let mut ns: std::collections::HashMap<(usize, usize), Vec<f64>> = Default::default();
    let mut hit: std::collections::HashMap<(usize, usize), f64> = Default::default();
    for r in 0..rounds {
        for (ci, &(sc, sz, t)) in cells.iter().enumerate() {
            for k in 0..STRATEGIES.len() {
                let si = (k + r + ci) % STRATEGIES.len();
                let (v, _, h) = fastpath::cell(STRATEGIES[si], sc, sz, t, scale);
                ns.entry((si, ci)).or_default().push(v);
                hit.insert((si, ci), h);
                bar.inc(1);
            }
        }
    }
    // cachegrind: one thread, two op counts; the difference cancels start-up and set-up.
    let mut misses: std::collections::HashMap<(usize, &str, u32), (f64, f64, f64)> = Default::default();
    if valgrind {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        for (si, s) in STRATEGIES.iter().enumerate() {
            for sc in SCENARIOS {
                for sz in SIZES {
                    bar.set_message(format!("cachegrind {s} {sc} {sz}"));
                    // `cold` runs whole rounds (scale 0.5: one, 1.0: two); the others scale their op count.
                    let (lo, hi) = if sc == "cold" { (0.5, 1.0) } else { (0.02, 0.04) };
                    let a = fastpath::cachegrind(&exe, s, sc, sz, lo);
                    bar.inc(1);
                    let b = fastpath::cachegrind(&exe, s, sc, sz, hi);
                    bar.inc(1);
                    if let (Some(a), Some(b)) = (a, b) {
                        let dops = b.3.saturating_sub(a.3).max(1) as f64;
                        let per = |x: f64, y: f64| ((y - x) / dops).max(0.0);
                        misses.insert((si, sc, sz), (per(a.0, b.0), per(a.1, b.1), per(a.2, b.2)));
                    }
                }
            }
        }
    }
    bar.finish_and_clear();
    let mut results = Vec::new();
    for (si, s) in STRATEGIES.iter().enumerate() {
        for (ci, &(sc, sz, t)) in cells.iter().enumerate() {
            let m = if t == 1 {
                misses.get(&(si, sc, sz)).copied()
            } else {
                None
            };
            results.push(FastpathResult {
                strategy: s.to_string(),
                scenario: sc.to_string(),
                size: sz,
                threads: t,
                ns_per_op: report::median(&ns[&(si, ci)]),
                d1_misses_per_op: m.map(|m| m.0),
                ll_misses_per_op: m.map(|m| m.1),
                d1_write_misses_per_op: m.map(|m| m.2),
                fastpath_hit_rate: hit[&(si, ci)],
            });
        }
    }
    let md = report::fastpath_markdown(&results, rounds, fastpath::l2_bytes(), valgrind);
    println!(
        "hopless bench fastpath: median of {rounds} rounds, strategies alternating, {:.0} s\n",
        t0.elapsed().as_secs_f64()
    );
    println!("{md}");
    let dir = PathBuf::from("target/hopless-report");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("fastpath.md"), &md).map_err(|e| e.to_string())?;
    let bars: Vec<(String, Vec<f64>)> = STRATEGIES
        .iter()
        .map(|s| {
            let v = SIZES
                .iter()
                .map(|&sz| {
                    results
                        .iter()
                        .find(|r| r.strategy == *s && r.scenario == "cold" && r.size == sz && r.threads == 1)
                        .map_or(0.0, |r| r.ns_per_op)
                })
                .collect();
            (s.to_string(), v)
        })
        .collect();
    let metrics: Vec<String> = SIZES.iter().map(|s| format!("cold, {s} B: ns/alloc")).collect();
    let metric_refs: Vec<&str> = metrics.iter().map(|s| s.as_str()).collect();
    match hopless_bench::chart::bars(
        &dir.join("fastpath.png"),
        "hopless bench fastpath: freed, then allocated again",
        &metric_refs,
        &bars,
    ) {
        Ok(()) => println!(
            "report: {}, chart: {}",
            dir.join("fastpath.md").display(),
            dir.join("fastpath.png").display()
        ),
        Err(e) => println!(
            "report: {} (chart skipped: {e})",
            dir.join("fastpath.md").display()
        ),
    }
    if let Some(path) = &args.json {
        report::write_json(path, &results).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// `cargo run --release`: the quick kv comparison and the quick alloc bench, then the headline table.
fn headline() -> Result<(), String> {
    println!("hopless: the seed's KV workload and the allocator micro-benchmarks, quick runs (full: `hopless bench kv`, `hopless bench alloc`)\n");
    let kv_args = KvArgs {
        quick: true,
        threads: None,
        keys: None,
        ops: None,
        rounds: None,
        json: None,
        no_eviction: true,
        child: None,
    };
    let kv = bench_kv(&kv_args)?;
    println!();
    let alloc = bench_alloc(&AllocArgs {
        quick: true,
        rounds: None,
        json: None,
        workloads: None,
        with_call: false,
        peers: None,
    })?;
    println!("\n{}", report::headline(&kv, &alloc));
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Bench(Bench::Alloc(args))) => bench_alloc(&args).map(|_| ()),
        Some(Command::Bench(Bench::Kv(args))) => bench_kv(&args).map(|_| ()),
        Some(Command::Bench(Bench::Fastpath(args))) => bench_fastpath(&args),
        Some(Command::Stats) => {
            let v: Vec<Vec<u8>> = (0..100_000).map(|i| vec![0u8; 1 + i % 5000]).collect();
            drop(v);
            println!("{}", hopless::stats());
            Ok(())
        }
        None => headline(),
    };
    if let Err(e) = result {
        eprintln!("hopless: {e}");
        std::process::exit(2);
    }
}
