//! `hopless bench server`: `hopless serve` against `redis-server` over the Redis protocol, with a built-in
//! pipelined load generator (`load`): the KV workload's mix (Zipf 0.99 keys, 60% SET / 40% GET, values
//! 32..=512 B) over C connections at pipeline depths 1 and 16.
//!
//! Each run starts a fresh server child process on a free loopback port (`target`): this executable as
//! `hopless serve --port P --threads T`, or `redis-server --port P --save "" --appendonly no`
//! (Redis's default threading: one thread runs the commands) when it is installed. T defaults to 1, the
//! same as Redis: on a machine whose cores the client threads share, each extra server thread takes CPU
//! from them (`--threads` sets more). The run reads the child's VmRSS, preloads every key
//! once (untimed), reads VmRSS again, runs the measured load, reads VmRSS and VmHWM, and stops the server
//! (SHUTDOWN NOSAVE, kill after 5 s). Runs alternate between the servers (the order rotating each pass);
//! the table gives each figure's median [min–max] over `--runs`, the JSON every run.
//!
//! Bytes per key = (VmRSS after the preload − VmRSS before it) / keys: everything the server holds per key,
//! the 16-byte key and its value (272 B on average) included. CPU per request = the server's CPU time over
//! the measured load (`/proc/PID/stat`) / its requests. With `--pin` (`pin`) each server runs on cores of
//! its own and the load generator on the rest: the figures are then per server core.
//!
//! `--workload persistence` is no request mix: snapshots and the append-only file against Redis, in a
//! table of their own ([`persistence`]), run only when named.

mod load;
pub mod persistence;
mod pin;
pub mod scripts_mix;
pub mod streams_mix;
mod target;
pub mod types_mix;

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

pub use load::{preload, run as run_load, run_encoded, send_all, Load, Measured};
pub use target::{proc_rss, redis_version, Kind, Running};

use crate::json;
use crate::progress::progress;
use crate::stats::{median_of, min_max};

/// What `hopless bench server` was asked for; `None`: the quick or full default.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Fewer keys, ops and runs: well under a minute on 2 cores.
    pub quick: bool,
    /// Runs per server and pipeline depth (default 3 quick, 5 full).
    pub runs: Option<usize>,
    /// Write every run as JSON here.
    pub json: Option<PathBuf>,
    /// Client connections (default 8).
    pub connections: Option<usize>,
    /// Pipeline depths (default 1 and 16).
    pub pipelines: Option<Vec<usize>>,
    /// Keyspace size (default 50k quick, 1M full).
    pub keys: Option<usize>,
    /// Measured requests per run, all connections together (default 50k quick, 1M full).
    pub ops: Option<usize>,
    /// hopless's worker threads (default 1, as Redis runs its commands on one).
    pub threads: Option<usize>,
    /// Leave Redis out even when it is installed.
    pub no_redis: bool,
    /// Which mixes to run (default: every request mix, strings first; persistence only when named).
    pub workloads: Option<Vec<Workload>>,
    /// Servers on cores 0..threads-1, the load generator on the rest.
    pub pin: bool,
}

/// A request mix of `hopless bench server`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Workload {
    /// The KV workload's mix: Zipf keys, 60% SET / 40% GET of 32..=512-byte values.
    Strings,
    /// Hashes, a list, a sorted set and sets ([`types_mix`]).
    Types,
    /// The KV mix, [`TX_COMMANDS`] requests to a MULTI ... EXEC transaction.
    Transactions,
    /// EVALSHA of a rate limiter and of a job queue's move ([`scripts_mix`]).
    Scripts,
    /// An event log: producers' XADD with MAXLEN ~, consumer groups' XREADGROUP and XACK
    /// ([`streams_mix`]).
    Streams,
    /// Snapshots and the append-only file ([`persistence`]): not a request mix, its own table.
    Persistence,
}

/// Commands per transaction of the transactions mix.
pub const TX_COMMANDS: usize = 10;

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Strings => "strings",
            Workload::Types => "types",
            Workload::Transactions => "transactions",
            Workload::Scripts => "scripts",
            Workload::Streams => "streams",
            Workload::Persistence => "persistence",
        }
    }

    /// The `workload` field of its `--json` rows.
    pub fn json_name(self) -> &'static str {
        match self {
            Workload::Strings => "server",
            Workload::Types => "server-types",
            Workload::Transactions => "server-tx",
            Workload::Scripts => "server-scripts",
            Workload::Streams => "server-streams",
            Workload::Persistence => "server-persistence",
        }
    }
}

/// The resolved parameters.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    pub workloads: Vec<Workload>,
    pub connections: usize,
    pub pipelines: Vec<usize>,
    pub keys: usize,
    pub ops: usize,
    pub runs: usize,
    pub threads: usize,
    pub pin: bool,
}

impl Options {
    pub fn params(&self) -> Params {
        let q = self.quick;
        let mut pipelines = self.pipelines.clone().unwrap_or_else(|| vec![1, 16]);
        pipelines.iter_mut().for_each(|p| *p = (*p).max(1));
        pipelines.dedup();
        Params {
            workloads: self
                .workloads
                .clone()
                .filter(|w| !w.is_empty())
                .unwrap_or_else(|| {
                    vec![
                        Workload::Strings,
                        Workload::Types,
                        Workload::Transactions,
                        Workload::Scripts,
                        Workload::Streams,
                    ]
                }),
            connections: self.connections.unwrap_or(8).max(1),
            pipelines,
            keys: self.keys.unwrap_or(if q { 50_000 } else { 1_000_000 }).max(1),
            ops: self.ops.unwrap_or(if q { 50_000 } else { 1_000_000 }).max(1),
            runs: self.runs.unwrap_or(if q { 3 } else { 5 }).max(1),
            threads: self.threads.unwrap_or(1).max(1),
            pin: self.pin,
        }
    }
}

/// One run: a fresh server, preloaded, then the measured load.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub ops: u64,
    pub elapsed_s: f64,
    pub ops_per_sec: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    /// The server's VmRSS when it first answered PING.
    pub rss_start_bytes: u64,
    /// VmRSS after the preload.
    pub rss_preloaded_bytes: u64,
    /// VmRSS after the measured load.
    pub rss_after_bytes: u64,
    /// VmHWM (peak VmRSS) after the measured load.
    pub hwm_after_bytes: u64,
    /// (rss_preloaded − rss_start) / keys (the types mix: / elements).
    pub bytes_per_key: f64,
    /// The types mix: bytes per element of each preloaded shape ([`types_mix::SHAPES`]), each the VmRSS
    /// growth over its own preload step divided by its elements.
    pub shape_bytes: Option<[f64; 4]>,
    /// The server's CPU time (user + system, every thread) over the measured load, and per request.
    pub server_cpu_s: f64,
    pub cpu_us_per_request: f64,
}

impl RunResult {
    /// A run's row: what the load measured, the server's CPU seconds over it, its VmRSS at start and
    /// after the preload, its (VmRSS, VmHWM) after the load, and how many keys (or elements) the preload
    /// made.
    fn of(
        m: &load::Measured,
        server_cpu_s: f64,
        [rss_start, rss_preloaded]: [u64; 2],
        (rss_after, hwm_after): (u64, u64),
        preloaded: usize,
        shape_bytes: Option<[f64; 4]>,
    ) -> RunResult {
        RunResult {
            server_cpu_s,
            cpu_us_per_request: server_cpu_s * 1e6 / m.ops.max(1) as f64,
            ops: m.ops,
            elapsed_s: m.elapsed.as_secs_f64(),
            ops_per_sec: m.ops_per_sec(),
            p50_ns: m.latency.value_at_quantile(0.50) as f64,
            p99_ns: m.latency.value_at_quantile(0.99) as f64,
            p999_ns: m.latency.value_at_quantile(0.999) as f64,
            rss_start_bytes: rss_start,
            rss_preloaded_bytes: rss_preloaded,
            rss_after_bytes: rss_after,
            hwm_after_bytes: hwm_after,
            bytes_per_key: (rss_preloaded as f64 - rss_start as f64) / preloaded.max(1) as f64,
            shape_bytes,
        }
    }
}

/// One row of the table and the JSON: a server at one pipeline depth, each figure's median, every run.
#[derive(Clone, Debug, Serialize)]
pub struct ServerResult {
    pub workload: &'static str,
    pub server: Kind,
    pub pipeline: usize,
    pub connections: usize,
    pub keys: usize,
    /// The server's threads, and whether it ran on cores of its own (`--pin`): its figures are then per
    /// server core, for the next change to compare against.
    pub server_threads: usize,
    pub pinned: bool,
    /// Each figure's median over `runs` (byte counts rounded).
    pub median: RunResult,
    pub runs: Vec<RunResult>,
}

impl ServerResult {
    fn range(&self, f: fn(&RunResult) -> f64) -> (f64, f64) {
        min_max(self.runs.iter().map(f))
    }
}

/// Runs the measured `load` against `server`, then stops it: what the load measured, the server's CPU
/// seconds over it, and its (VmRSS, VmHWM) after it.
fn measure_and_stop(
    server: Running,
    load: impl FnOnce(std::net::SocketAddr) -> Result<load::Measured, String>,
) -> Result<(load::Measured, f64, (u64, u64)), String> {
    let cpu = pin::cpu_seconds(server.pid());
    let m = load(server.addr)?;
    let cpu = pin::cpu_seconds(server.pid()) - cpu;
    let after = server.rss();
    server.stop()?;
    Ok((m, cpu, after))
}

/// Each request encoded on its own (a preload's commands, for [`send_all`]).
fn encoded(requests: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
    requests
        .iter()
        .map(|a| {
            let mut out = Vec::new();
            types_mix::encode(&mut out, a);
            out
        })
        .collect()
}

/// A connection's requests encoded in batches of `pipeline`, each with its request count (what
/// [`run_encoded`] sends).
fn pipelined(requests: &[Vec<Vec<u8>>], pipeline: usize) -> Vec<(Vec<u8>, usize)> {
    requests
        .chunks(pipeline)
        .map(|batch| {
            let mut out = Vec::new();
            for a in batch {
                types_mix::encode(&mut out, a);
            }
            (out, batch.len())
        })
        .collect()
}

/// One run of `kind` at `pipeline`, of the types mix: preload shape by shape (VmRSS after each), then
/// the measured requests.
pub fn run_one_types(kind: Kind, pipeline: usize, p: &Params, seed: u64) -> Result<RunResult, String> {
    let server = Running::start(kind, p.threads, p.pin)?;
    let (rss_start, _) = server.rss();
    let sizes = types_mix::Sizes::of(p.keys);
    let mut shape_bytes = [0.0; 4];
    let mut before = rss_start;
    for (shape, elems) in sizes.elements().into_iter().enumerate() {
        send_all(
            server.addr,
            &encoded(&types_mix::preload(shape, &sizes)),
            p.connections,
            64,
        )?;
        let (rss, _) = server.rss();
        shape_bytes[shape] = (rss as f64 - before as f64) / elems.max(1) as f64;
        before = rss;
    }
    let rss_preloaded = before;
    let per_conn = p.ops / p.connections / pipeline * pipeline;
    let batches = (0..p.connections)
        .map(|c| {
            pipelined(
                &types_mix::requests(&sizes, per_conn, seed.wrapping_mul(1000) + c as u64),
                pipeline,
            )
        })
        .collect();
    let (m, cpu, after) = measure_and_stop(server, |addr| run_encoded(addr, batches))?;
    let total: usize = sizes.elements().iter().sum();
    Ok(RunResult::of(
        &m,
        cpu,
        [rss_start, rss_preloaded],
        after,
        total,
        Some(shape_bytes),
    ))
}

/// One run of `kind` at `pipeline`, of the scripts mix: both scripts loaded and the delayed jobs
/// preloaded (untimed), then the measured EVALSHAs.
pub fn run_one_scripts(kind: Kind, pipeline: usize, p: &Params, seed: u64) -> Result<RunResult, String> {
    let server = Running::start(kind, p.threads, p.pin)?;
    let (rss_start, _) = server.rss();
    let per_conn = p.ops / p.connections / pipeline * pipeline;
    // One connection loads the scripts before the jobs go in over all of them.
    let pre = scripts_mix::preload(per_conn * p.connections);
    let (scripts, jobs) = pre.split_at(2);
    send_all(server.addr, &encoded(scripts), 1, 2)?;
    send_all(server.addr, &encoded(jobs), p.connections, 64)?;
    let (rss_preloaded, _) = server.rss();
    let batches = (0..p.connections)
        .map(|c| {
            pipelined(
                &scripts_mix::requests(per_conn, p.keys, seed.wrapping_mul(1000) + c as u64),
                pipeline,
            )
        })
        .collect();
    let (m, cpu, after) = measure_and_stop(server, |addr| run_encoded(addr, batches))?;
    Ok(RunResult::of(
        &m,
        cpu,
        [rss_start, rss_preloaded],
        after,
        p.keys,
        None,
    ))
}

/// One run of `kind` at `pipeline`, of the streams mix: the stream and its groups preloaded (untimed;
/// bytes per entry from the VmRSS growth), then the producers' and consumers' requests.
pub fn run_one_streams(kind: Kind, pipeline: usize, p: &Params, _seed: u64) -> Result<RunResult, String> {
    let server = Running::start(kind, p.threads, p.pin)?;
    let (rss_start, _) = server.rss();
    let (adds, groups) = streams_mix::preload(p.keys, p.connections);
    // One connection, so the ids go in in order.
    send_all(server.addr, &encoded(&adds), 1, 64)?;
    let (rss_preloaded, _) = server.rss();
    send_all(server.addr, &encoded(&groups), 1, 4)?;
    let per_conn = p.ops / p.connections / pipeline * pipeline;
    let batches = (0..p.connections)
        .map(|c| {
            pipelined(
                &streams_mix::requests(c, p.connections, p.keys, per_conn),
                pipeline,
            )
        })
        .collect();
    let (m, cpu, after) = measure_and_stop(server, |addr| run_encoded(addr, batches))?;
    Ok(RunResult::of(
        &m,
        cpu,
        [rss_start, rss_preloaded],
        after,
        p.keys,
        None,
    ))
}

/// One run of `kind` at `pipeline` (transactions a batch), of the KV mix in transactions of
/// [`TX_COMMANDS`] commands.
pub fn run_one_tx(kind: Kind, pipeline: usize, p: &Params, seed: u64) -> Result<RunResult, String> {
    run_kv_mix(kind, pipeline, p, seed, |addr, spec| {
        load::run_transactions(addr, spec, TX_COMMANDS)
    })
}

/// One run of `kind` at `pipeline`, of the KV (strings) mix.
pub fn run_one(kind: Kind, pipeline: usize, p: &Params, seed: u64) -> Result<RunResult, String> {
    run_kv_mix(kind, pipeline, p, seed, run_load)
}

/// One run of the KV mix's keys and requests, sent by `send`: a fresh server, the keys preloaded, then
/// the measured load.
fn run_kv_mix(
    kind: Kind,
    pipeline: usize,
    p: &Params,
    seed: u64,
    send: fn(std::net::SocketAddr, &Load) -> Result<load::Measured, String>,
) -> Result<RunResult, String> {
    let server = Running::start(kind, p.threads, p.pin)?;
    let (rss_start, _) = server.rss();
    preload(server.addr, p.keys, p.connections)?;
    let (rss_preloaded, _) = server.rss();
    let spec = Load {
        connections: p.connections,
        pipeline,
        keys: p.keys,
        ops: p.ops,
        seed,
    };
    let (m, cpu, after) = measure_and_stop(server, |addr| send(addr, &spec))?;
    Ok(RunResult::of(
        &m,
        cpu,
        [rss_start, rss_preloaded],
        after,
        p.keys,
        None,
    ))
}

fn median(rs: &[RunResult]) -> RunResult {
    let by = |f: fn(&RunResult) -> f64| median_of(rs, f);
    RunResult {
        ops: by(|r| r.ops as f64) as u64,
        elapsed_s: by(|r| r.elapsed_s),
        ops_per_sec: by(|r| r.ops_per_sec),
        p50_ns: by(|r| r.p50_ns),
        p99_ns: by(|r| r.p99_ns),
        p999_ns: by(|r| r.p999_ns),
        rss_start_bytes: by(|r| r.rss_start_bytes as f64) as u64,
        rss_preloaded_bytes: by(|r| r.rss_preloaded_bytes as f64) as u64,
        rss_after_bytes: by(|r| r.rss_after_bytes as f64) as u64,
        hwm_after_bytes: by(|r| r.hwm_after_bytes as f64) as u64,
        bytes_per_key: by(|r| r.bytes_per_key),
        server_cpu_s: by(|r| r.server_cpu_s),
        cpu_us_per_request: by(|r| r.cpu_us_per_request),
        shape_bytes: rs
            .first()
            .and_then(|r| r.shape_bytes)
            .map(|_| core::array::from_fn(|i| median_of(rs, |r| r.shape_bytes.map_or(0.0, |b| b[i])))),
    }
}

/// Runs the bench: for each pass, each pipeline depth, each server (order rotating per pass), one fresh
/// server process; then the table, the ratios, the equivalent `redis-benchmark` commands and `--json`.
pub fn run(o: &Options) -> Result<Vec<ServerResult>, String> {
    let p = o.params();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let client = pin::client_cores(p.threads, cores);
    if p.pin {
        if client.is_empty() {
            return Err(format!(
                "--pin: {cores} cores leave none for the load generator beside {} server threads",
                p.threads
            ));
        }
        // The load generator's threads start later and inherit this.
        pin::pin_this_thread(&client)?;
    }
    let redis = if o.no_redis { None } else { redis_version() };
    let mut kinds = vec![Kind::Hopless];
    if redis.is_some() {
        kinds.push(Kind::Redis);
    }
    let configs: Vec<(Workload, Kind, usize)> = p
        .workloads
        .iter()
        .filter(|&&w| w != Workload::Persistence)
        .flat_map(|&w| p.pipelines.iter().flat_map(move |&pl| [(w, pl)]))
        .flat_map(|(w, pl)| kinds.iter().map(move |&k| (w, k, pl)))
        .collect();
    let bar = progress(p.runs * configs.len(), "bench server");
    let t0 = Instant::now();
    let mut samples: Vec<Vec<RunResult>> = vec![Vec::new(); configs.len()];
    for pass in 0..p.runs {
        for group in 0..configs.len() / kinds.len() {
            for k in 0..kinds.len() {
                let i = group * kinds.len() + (k + pass) % kinds.len();
                let (workload, kind, pipeline) = configs[i];
                bar.set_message(format!("{} {} -P {pipeline}", workload.name(), kind.name()));
                let one = match workload {
                    Workload::Strings => run_one,
                    Workload::Types => run_one_types,
                    Workload::Transactions => run_one_tx,
                    Workload::Scripts => run_one_scripts,
                    Workload::Streams => run_one_streams,
                    Workload::Persistence => continue,
                };
                let r = one(kind, pipeline, &p, pass as u64 + 1).map_err(|e| {
                    bar.abandon();
                    format!("{} {} pipeline {pipeline}: {e}", workload.name(), kind.name())
                })?;
                samples[i].push(r);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let results: Vec<ServerResult> = configs
        .iter()
        .zip(samples)
        .map(|(&(workload, server, pipeline), runs)| ServerResult {
            workload: workload.json_name(),
            server,
            pipeline,
            connections: p.connections,
            keys: p.keys,
            server_threads: p.threads,
            pinned: p.pin,
            median: median(&runs),
            runs,
        })
        .collect();
    let redis_threads = if p.pin && p.threads > 1 {
        format!("--io-threads {}", p.threads)
    } else {
        "default threads".to_string()
    };
    let servers = match &redis {
        Some(v) => format!("{v} (--save \"\" --appendonly no, {redis_threads})"),
        None if o.no_redis => "Redis left out (--no-redis)".to_string(),
        None => "redis-server not found: hopless only".to_string(),
    };
    let servers = if p.pin {
        format!(
            "{servers}; pinned: servers on cores {:?}, the load generator on {client:?} (per server core)",
            pin::server_cores(p.threads)
        )
    } else {
        format!("{servers}; not pinned: servers and load generator share every core")
    };
    for &w in &p.workloads {
        let mine: Vec<ServerResult> = results
            .iter()
            .filter(|r| r.workload == w.json_name())
            .cloned()
            .collect();
        match w {
            Workload::Strings => {
                println!(
                    "hopless bench server, strings: {} connections, {} keys (preloaded, untimed), Zipf s=0.99, 60% \
                     SET / 40% GET, values 32..=512 B, {} requests per run; hopless serve --threads {}, {servers}; \
                     median [min–max] of {} runs (a fresh server process each, servers alternating)",
                    p.connections, p.keys, p.ops, p.threads, p.runs,
                );
                println!(
                    "latency: per request, from writing its batch to reading its reply; bytes/key: (VmRSS after \
                     preload - VmRSS at start) / keys, key and value (~288 B raw) included\n"
                );
            }
            Workload::Types => {
                println!(
                    "\nhopless bench server, types: {} connections, {} elements preloaded (untimed) as a quarter \
                     each: hashes of 10 fields, one long list, one big sorted set, sets of 10 members; {} \
                     requests per run, a quarter each of HSET/HGET, LPUSH/RPOP, ZADD/ZRANGE top 10, \
                     SADD/SISMEMBER; hopless serve --threads {}, {servers}; median [min–max] of {} runs",
                    p.connections, p.keys, p.ops, p.threads, p.runs,
                );
                println!("bytes/key here: (VmRSS after preload - VmRSS at start) / elements\n");
            }
            Workload::Scripts => {
                println!(
                    "\nhopless bench server, scripts: {} connections; EVALSHA of two scripts loaded once \
                     (untimed), half each: a rate limiter (INCR, PEXPIRE on the first hit, compare; {} \
                     counters) and a job queue's move (ZPOPMIN, HSET, LPUSH; a delayed job preloaded for every \
                     move); {} scripts per run; hopless serve --threads {}, {servers}; median [min–max] of {} runs",
                    p.connections, p.keys, p.ops, p.threads, p.runs,
                );
                println!("ops/s here: scripts run (each 3 or 4 commands inside the server)\n");
            }
            Workload::Streams => {
                println!(
                    "\nhopless bench server, streams: {} connections; the stream preloaded (untimed) with {} \
                     entries of two fields; {} consumer connections, each a group's only reader, XREADGROUP \
                     COUNT {} then XACK of those ids; the others XADD with MAXLEN ~ twice the preload; {} \
                     requests per run; hopless serve --threads {}, {servers}; median [min–max] of {} runs",
                    p.connections,
                    p.keys,
                    streams_mix::consumers(p.connections),
                    streams_mix::READ_COUNT,
                    p.ops,
                    p.threads,
                    p.runs,
                );
                println!("bytes/key here: (VmRSS after preload - VmRSS at start) / entries\n");
            }
            Workload::Transactions => {
                println!(
                    "\nhopless bench server, transactions: the strings mix ({} connections, {} keys preloaded), \
                     {TX_COMMANDS} requests to a MULTI ... EXEC sent at once, -P N: N transactions a batch; \
                     {} requests per run; hopless serve --threads {}, {servers}; median [min–max] of {} runs",
                    p.connections, p.keys, p.ops, p.threads, p.runs,
                );
                println!(
                    "ops/s here: replies (MULTI, {TX_COMMANDS} QUEUED, EXEC: {} a transaction); latency: per reply\n",
                    TX_COMMANDS + 2
                );
            }
            Workload::Persistence => continue,
        }
        print!("{}", table(&mine));
        if w == Workload::Types {
            print!("{}", shape_table(&mine));
        }
        for &pl in &p.pipelines {
            let find = |k: Kind| mine.iter().find(|r| r.server == k && r.pipeline == pl);
            if let (Some(h), Some(r)) = (find(Kind::Hopless), find(Kind::Redis)) {
                println!(
                    "pipeline {pl:>2}: hopless/redis ops/s {:.2}x, CPU/request {:.2}x, p99 {:.2}x, bytes/{} {:.2}x",
                    h.median.ops_per_sec / r.median.ops_per_sec,
                    h.median.cpu_us_per_request / r.median.cpu_us_per_request,
                    h.median.p99_ns / r.median.p99_ns,
                    match w {
                        Workload::Types => "element",
                        Workload::Streams => "entry",
                        _ => "key",
                    },
                    h.median.bytes_per_key / r.median.bytes_per_key
                );
            }
        }
        if w == Workload::Strings {
            println!(
                "\nroughly equivalent redis-benchmark runs (uniform keys, fixed 272 B values, SET and GET \
                 separately):"
            );
            for &pl in &p.pipelines {
                println!(
                    "  redis-benchmark -h 127.0.0.1 -p PORT -t set,get -P {pl} -c {} -n {} -r {} -d 272 -q",
                    p.connections, p.ops, p.keys
                );
            }
        }
    }
    let persisted = if p.workloads.contains(&Workload::Persistence) {
        let s = persistence::Settings {
            connections: p.connections,
            threads: p.threads,
            pin: p.pin,
            ..persistence::Settings::sized(o.quick, o.keys, o.runs)
        };
        Some(persistence::run(&s, &kinds, redis.as_deref())?)
    } else {
        None
    };
    println!("\n{:.0} s", t0.elapsed().as_secs_f64());
    if let Some(path) = &o.json {
        let mut rows = results
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        rows.extend(persisted.iter().flat_map(|o| o.rows.iter().cloned()));
        json::write_results(path, &rows).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    match persisted.and_then(|o| o.refused) {
        Some(refused) => Err(refused),
        None => Ok(results),
    }
}

/// The types mix's bytes per element, shape by shape: median [min–max] for each server (the first
/// pipeline depth's runs: the preload is the same at every depth).
fn shape_table(results: &[ServerResult]) -> String {
    let mut s = format!("\n{:<20}", "bytes per element");
    let first = results.first().map_or(1, |r| r.pipeline);
    let rows: Vec<&ServerResult> = results.iter().filter(|r| r.pipeline == first).collect();
    for r in &rows {
        s += &format!(" {:<22}", r.server.name());
    }
    s += "\n";
    for (i, shape) in types_mix::SHAPES.iter().enumerate() {
        s += &format!("{shape:<20}");
        for r in &rows {
            let f = |x: &RunResult| x.shape_bytes.map_or(0.0, |b| b[i]);
            let (lo, hi) = min_max(r.runs.iter().map(f));
            s += &format!(" {:<22}", format!("{:.1} [{:.1}–{:.1}]", f(&r.median), lo, hi));
        }
        s += "\n";
    }
    s
}

fn table(results: &[ServerResult]) -> String {
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let cell = |r: &ServerResult, f: fn(&RunResult) -> f64, fmt: &dyn Fn(f64) -> String| {
        let (lo, hi) = r.range(f);
        format!("{} [{}–{}]", fmt(f(&r.median)), fmt(lo), fmt(hi))
    };
    let ops = |x: f64| {
        if x >= 1e6 {
            format!("{:.2}M", x / 1e6)
        } else {
            format!("{:.0}k", x / 1e3)
        }
    };
    let us = |ns: f64| {
        if ns >= 100_000.0 {
            format!("{:.0}", ns / 1e3)
        } else {
            format!("{:.1}", ns / 1e3)
        }
    };
    let int = |x: f64| format!("{x:.0}");
    let cpu = |x: f64| format!("{x:.2}");
    let mut s = format!(
        "{:<8} {:>2}  {:<22} {:<20} {:<20} {:<20} {:<20} {:>8} {:>8}  {}\n",
        "server",
        "-P",
        "ops/s",
        "CPU µs/req",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "RSS MiB",
        "HWM MiB",
        "bytes/key"
    );
    for r in results {
        s += &format!(
            "{:<8} {:>2}  {:<22} {:<20} {:<20} {:<20} {:<20} {:>8.1} {:>8.1}  {}\n",
            r.server.name(),
            r.pipeline,
            cell(r, |x| x.ops_per_sec, &ops),
            cell(r, |x| x.cpu_us_per_request, &cpu),
            cell(r, |x| x.p50_ns, &us),
            cell(r, |x| x.p99_ns, &us),
            cell(r, |x| x.p999_ns, &us),
            mib(r.median.rss_after_bytes as f64),
            mib(r.median.hwm_after_bytes as f64),
            cell(r, |x| x.bytes_per_key, &int),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The load generator against an in-process server: every request answered, latencies recorded, the
    /// preload visible. No timing asserts.
    #[test]
    fn the_load_runs_against_an_in_process_server() {
        let server = hopless_server::Server::start(hopless_server::ServeOptions {
            port: 0,
            threads: 2,
            ..Default::default()
        })
        .unwrap();
        preload(server.addr(), 500, 3).unwrap();
        assert_eq!(server.store().dbsize(), 500);
        for pipeline in [1, 16] {
            let m = run_load(
                server.addr(),
                &Load {
                    connections: 3,
                    pipeline,
                    keys: 500,
                    ops: 3_000,
                    seed: 1,
                },
            )
            .unwrap();
            let per = 3_000 / 3 / pipeline * pipeline;
            assert_eq!(m.ops, 3 * per as u64);
            assert_eq!(m.latency.len(), m.ops);
            assert!(m.ops_per_sec() > 0.0);
        }
        server.shutdown().unwrap();
    }

    #[test]
    fn params_default_to_the_quick_or_full_sizes() {
        let q = Options {
            quick: true,
            ..Default::default()
        }
        .params();
        assert_eq!((q.keys, q.ops, q.runs, q.connections), (50_000, 50_000, 3, 8));
        assert_eq!(q.pipelines, vec![1, 16]);
        let f = Options {
            pipelines: Some(vec![0, 4]),
            ..Default::default()
        }
        .params();
        assert_eq!((f.keys, f.runs, f.pipelines), (1_000_000, 5, vec![1, 4]));
    }
}
