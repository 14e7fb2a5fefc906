//! `hopless bench server --workload persistence`: what persistence costs, hopless against Redis, the same
//! data, servers alternating, a fresh server process and directory for every run.
//!
//! - Snapshots (`snapshot`): BGSAVE's time, the saving child's extra memory, the GET latency a client
//!   sees during the save and without one, the file's size, and the load at start.
//! - The append-only file (`aof`): under `--appendfsync everysec` and `always`, requests/s, latency and
//!   the server's CPU per request of SETs one at a time from several connections.
//!
//! One table: each figure's median [min–max] over the runs, and hopless/redis of the medians. hopless
//! is first started once with the AOF flags: when it refuses them the AOF rows run on Redis alone, and
//! the bench ends with an error that says so, after the table.

mod aof;
mod snapshot;

use serde::Serialize;

use self::aof::{AofLoad, AofRun, POLICIES};
use self::snapshot::SnapshotRun;
use crate::progress::progress;
use crate::server::target::{DataDir, Files, Kind, Running};
use crate::stats::{median, min_max};

/// What the workload is asked for.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Keys written before the snapshot, and the AOF part's key range.
    pub keys: usize,
    pub runs: usize,
    /// How long each AOF run sends.
    pub aof_seconds: f64,
    /// The AOF part's client connections.
    pub connections: usize,
    /// hopless's worker threads.
    pub threads: usize,
    /// Servers on cores of their own (the caller has pinned itself to the rest).
    pub pin: bool,
}

impl Settings {
    /// The sizes for `--quick` or a full run, where `--keys` and `--runs` do not set them: 200k keys
    /// and 2 s per AOF run quick, 2M keys and 10 s full; 3 runs.
    pub fn sized(quick: bool, keys: Option<usize>, runs: Option<usize>) -> Settings {
        Settings {
            keys: keys.unwrap_or(if quick { 200_000 } else { 2_000_000 }).max(1),
            runs: runs.unwrap_or(3).max(1),
            aof_seconds: if quick { 2.0 } else { 10.0 },
            connections: 8,
            threads: 1,
            pin: false,
        }
    }
}

/// What the workload leaves: its `--json` rows, and why hopless has no AOF figures if it has none.
pub struct Outcome {
    pub rows: Vec<serde_json::Value>,
    pub refused: Option<String>,
}

/// A `--json` row: one server's runs of one part.
#[derive(Serialize)]
struct Row<'a, R> {
    workload: &'static str,
    server: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    appendfsync: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<AofLoad>,
    keys: usize,
    server_threads: usize,
    pinned: bool,
    median: R,
    runs: &'a [R],
}

/// Runs both parts on `kinds` (hopless first, then Redis when installed; `redis` its version line),
/// prints the table, and returns the JSON rows.
pub fn run(s: &Settings, kinds: &[Kind], redis: Option<&str>) -> Result<Outcome, String> {
    let refused = if kinds.contains(&Kind::Hopless) {
        hopless_refusal(s)
    } else {
        None
    };
    let aof_kinds = kinds
        .iter()
        .filter(|&&k| k != Kind::Hopless || refused.is_none())
        .count();
    let bar = progress(s.runs * (kinds.len() + POLICIES.len() * aof_kinds), "persistence");
    let load = AofLoad {
        keys: s.keys,
        connections: s.connections,
        seconds: s.aof_seconds,
    };
    let mut snapshots: Vec<Vec<SnapshotRun>> = vec![Vec::new(); kinds.len()];
    let mut aofs: Vec<Vec<Vec<AofRun>>> = vec![vec![Vec::new(); kinds.len()]; POLICIES.len()];
    for pass in 0..s.runs {
        for part in 0..=POLICIES.len() {
            for k in 0..kinds.len() {
                let i = (k + pass) % kinds.len();
                let kind = kinds[i];
                let what = match part {
                    0 => "snapshot".to_string(),
                    _ if kind == Kind::Hopless && refused.is_some() => continue,
                    p => format!("aof {}", POLICIES[p - 1]),
                };
                bar.set_message(format!("{what} {}", kind.name()));
                let done = match part {
                    0 => snapshot::run_one(kind, s.threads, s.pin, s.keys).map(|r| snapshots[i].push(r)),
                    p => aof::run_one(kind, POLICIES[p - 1], s.threads, s.pin, &load, pass as u64 + 1)
                        .map(|r| aofs[p - 1][i].push(r)),
                };
                done.map_err(|e| {
                    bar.abandon();
                    format!("persistence, {what} {}: {e}", kind.name())
                })?;
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    print_header(s, redis);
    print!("{}", table(kinds, &snapshots, &aofs));
    let mut rows = Vec::new();
    for (i, &kind) in kinds.iter().enumerate() {
        let what = ("server-snapshot", kind, None, None);
        rows.push(row(s, what, &snapshots[i], snapshot::median)?);
        for (p, &policy) in POLICIES.iter().enumerate() {
            if !aofs[p][i].is_empty() {
                let what = ("server-aof", kind, Some(policy), Some(load));
                rows.push(row(s, what, &aofs[p][i], aof::median)?);
            }
        }
    }
    Ok(Outcome { rows, refused })
}

/// A row's JSON: `what` is its workload, server, fsync policy and load.
fn row<R: Serialize>(
    s: &Settings,
    what: (&'static str, Kind, Option<&'static str>, Option<AofLoad>),
    runs: &[R],
    median: fn(&[R]) -> R,
) -> Result<serde_json::Value, String> {
    let (workload, server, appendfsync, load) = what;
    serde_json::to_value(Row {
        workload,
        server,
        appendfsync,
        load,
        keys: s.keys,
        server_threads: s.threads,
        pinned: s.pin,
        median: median(runs),
        runs,
    })
    .map_err(|e| e.to_string())
}

/// Starts hopless once with the AOF flags, in a directory of its own: `None` when it takes them, else
/// what it said, made plain.
fn hopless_refusal(s: &Settings) -> Option<String> {
    let policy = POLICIES[0];
    let dir = match DataDir::new("aof-probe") {
        Ok(d) => d,
        Err(e) => return Some(e),
    };
    let files = Files {
        dir: Some(dir.path()),
        appendfsync: Some(policy),
    };
    match Running::start_with(Kind::Hopless, s.threads, s.pin, files) {
        Ok(server) => {
            let _ = server.stop();
            None
        }
        Err(e) => Some(format!(
            "the AOF part: {e}; its rows hold Redis's figures alone until `hopless serve` takes \
             --appendonly yes --appendfsync everysec|always"
        )),
    }
}

fn print_header(s: &Settings, redis: Option<&str>) {
    let servers = match redis {
        Some(v) => format!("hopless serve --threads {} and {v}", s.threads),
        None => format!("hopless serve --threads {} alone (no redis-server)", s.threads),
    };
    let placed = if s.pin {
        "servers pinned to cores of their own, the clients on the rest"
    } else {
        "not pinned: servers and clients share every core"
    };
    println!(
        "\nhopless bench server, persistence: {servers}, each with --save \"\" --dir <a fresh directory>; \
         {placed}; median [min–max] of {} runs (a fresh server each, servers alternating)",
        s.runs
    );
    println!(
        "snapshot: {} keys (`key:<i>`, 20-byte values) written pipelined, then BGSAVE (timed to the \
         child's end, INFO polled every {} ms) with GETs one at a time through it, then a fresh server \
         on the file (timed from its spawn to its first PONG, every key checked)",
        s.keys,
        snapshot::POLL.as_millis()
    );
    println!(
        "AOF: --appendonly yes --appendfsync <policy>, {} connections, one SET of a 20-byte value at a \
         time each to uniform keys of {}, {} s per run\n",
        s.connections, s.keys, s.aof_seconds
    );
}

/// A figure of the table: its label, how it is read from a run, how it is written.
struct Figure<R> {
    label: &'static str,
    of: fn(&R) -> f64,
    fmt: fn(f64) -> String,
}

const SNAPSHOT_FIGURES: [Figure<SnapshotRun>; 7] = [
    Figure {
        label: "BGSAVE, command to the child's end (s)",
        of: |r| r.bgsave_s,
        fmt: two,
    },
    Figure {
        label: "the child's private dirty memory at its peak (MiB)",
        of: |r| r.child_dirty_mib,
        fmt: two,
    },
    Figure {
        label: "GET p50 during BGSAVE (µs)",
        of: |r| r.save_p50_us,
        fmt: us,
    },
    Figure {
        label: "GET p99 during BGSAVE (µs)",
        of: |r| r.save_p99_us,
        fmt: us,
    },
    Figure {
        label: "GET p99 without a save (µs)",
        of: |r| r.base_p99_us,
        fmt: us,
    },
    Figure {
        label: "file (MiB)",
        of: |r| r.file_mib,
        fmt: two,
    },
    Figure {
        label: "load at start, until it answers (s)",
        of: |r| r.load_s,
        fmt: two,
    },
];

const AOF_FIGURES: [Figure<AofRun>; 4] = [
    Figure {
        label: "SET/s",
        of: |r| r.ops_per_sec,
        fmt: ops,
    },
    Figure {
        label: "server CPU µs/SET",
        of: |r| r.cpu_us_per_request,
        fmt: two,
    },
    Figure {
        label: "SET p50 (µs)",
        of: |r| r.p50_us,
        fmt: us,
    },
    Figure {
        label: "SET p99 (µs)",
        of: |r| r.p99_us,
        fmt: us,
    },
];

fn two(x: f64) -> String {
    format!("{x:.2}")
}

fn us(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn ops(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else {
        format!("{:.1}k", x / 1e3)
    }
}

/// The table: a line per figure, a column per server (`refused` where hopless has no AOF runs), and
/// hopless/redis of the medians when both ran.
fn table(kinds: &[Kind], snapshots: &[Vec<SnapshotRun>], aofs: &[Vec<Vec<AofRun>>]) -> String {
    let mut s = format!("{:<52}", "measure");
    for k in kinds {
        s += &format!(" {:<26}", k.name());
    }
    if kinds.len() == 2 {
        s += " hopless/redis";
    }
    s += "\n";
    for f in &SNAPSHOT_FIGURES {
        s += &line(f.label, snapshots, f.of, f.fmt);
    }
    for (p, policy) in POLICIES.iter().enumerate() {
        for f in &AOF_FIGURES {
            s += &line(&format!("AOF {policy}: {}", f.label), &aofs[p], f.of, f.fmt);
        }
    }
    s
}

/// A line of the table: `label`, then figure `of` of each server's runs, written by `fmt`.
fn line<R>(label: &str, runs: &[Vec<R>], of: fn(&R) -> f64, fmt: fn(f64) -> String) -> String {
    let mut s = format!("{label:<52}");
    let cols: Vec<Vec<f64>> = runs.iter().map(|rs| rs.iter().map(of).collect()).collect();
    let medians: Vec<f64> = cols.iter().map(|v| median(v)).collect();
    for (v, m) in cols.iter().zip(&medians) {
        let cell = if v.is_empty() {
            "refused".to_string()
        } else {
            let (lo, hi) = min_max(v.iter().copied());
            format!("{} [{}–{}]", fmt(*m), fmt(lo), fmt(hi))
        };
        s += &format!(" {cell:<26}");
    }
    if let [h, r] = medians[..] {
        if h.is_finite() && r > 0.0 {
            s += &format!(" {:.2}x", h / r);
        }
    }
    s.trim_end().to_string() + "\n"
}
