//! The persistence workload's snapshot part, one run of one server: a fresh server in a directory of
//! its own, `keys` small string keys (`key:<i>`, 20-byte values) written pipelined, then
//!
//! - GETs one at a time for a second with no save running: the baseline latency;
//! - BGSAVE: the wall time from the command to the end of the child (INFO persistence polled every
//!   [`POLL`]), the saving child's private dirty memory at its peak (`/proc/<child>/smaps_rollup`,
//!   sampled as often: the copy-on-write and the buffers the snapshot costs), and the latency of GETs
//!   sent one at a time by another connection through the whole save;
//! - the file's size;
//! - a load at start: a fresh server on the same directory, timed from its spawn until it answers
//!   PING, and then holding every key (DBSIZE).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hopless_server::codec::Frame;
use serde::Serialize;

use crate::server::load::{over_connections, run_encoded_while, Conn, Measured};
use crate::server::target::{DataDir, Files, Kind, Running};
use crate::server::types_mix::encode;
use crate::stats::median_of;

/// Every key's value.
const VALUE: &[u8; 20] = b"vvvvvvvvvvvvvvvvvvvv";
/// The GETs go round the first this many keys.
const GET_KEYS: usize = 1000;
/// How long the baseline GETs run.
const BASELINE: Duration = Duration::from_secs(1);
/// How often the save's end and the child's memory are looked at.
pub const POLL: Duration = Duration::from_millis(2);
/// A save not over after this long is an error.
const PATIENCE: Duration = Duration::from_secs(600);

/// What one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotRun {
    /// BGSAVE, from the command to INFO's `rdb_bgsave_in_progress:0`, s.
    pub bgsave_s: f64,
    /// The saving child's private dirty memory at its peak, MiB.
    pub child_dirty_mib: f64,
    /// GET latency through the save, µs.
    pub save_p50_us: f64,
    pub save_p99_us: f64,
    /// GETs answered during the save.
    pub save_gets: u64,
    /// GET latency with no save running, µs.
    pub base_p50_us: f64,
    pub base_p99_us: f64,
    /// `dump.rdb`, MiB.
    pub file_mib: f64,
    /// A fresh server on the file, from its spawn to its first PONG, s.
    pub load_s: f64,
}

/// One run of `kind` over `keys` keys (the server with `threads` workers, pinned or not).
pub fn run_one(kind: Kind, threads: usize, pinned: bool, keys: usize) -> Result<SnapshotRun, String> {
    let dir = DataDir::new(&format!("snapshot-{}", kind.name()))?;
    let files = Files {
        dir: Some(dir.path()),
        appendfsync: None,
    };
    let server = Running::start_with(kind, threads, pinned, files)?;
    over_connections(server.addr, keys, 2, 1000, |i, out| {
        encode(out, &[b"SET".to_vec(), key(i), VALUE.to_vec()])
    })?;
    let end = Instant::now() + BASELINE;
    let base = gets(server.addr, &|| Instant::now() < end)?;
    let save = bgsave(&server)?;
    server.stop()?;
    let path = dir.path().join("dump.rdb");
    let file = std::fs::metadata(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let again = Running::start_with(kind, threads, pinned, files)?;
    let loaded = Conn::open(again.addr)?.call(&command(&["DBSIZE"]))?;
    if loaded != Frame::Integer(keys as i64) {
        return Err(format!("loaded {loaded:?} keys of {keys}"));
    }
    let load_s = again.ready_in.as_secs_f64();
    again.stop()?;
    let us = |m: &Measured, q: f64| m.latency.value_at_quantile(q) as f64 / 1e3;
    Ok(SnapshotRun {
        bgsave_s: save.took.as_secs_f64(),
        child_dirty_mib: save.peak_dirty_kib as f64 / 1024.0,
        save_p50_us: us(&save.during, 0.50),
        save_p99_us: us(&save.during, 0.99),
        save_gets: save.during.ops,
        base_p50_us: us(&base, 0.50),
        base_p99_us: us(&base, 0.99),
        file_mib: file as f64 / (1 << 20) as f64,
        load_s,
    })
}

/// Each figure's median over `runs`.
pub fn median(runs: &[SnapshotRun]) -> SnapshotRun {
    let by = |f: fn(&SnapshotRun) -> f64| median_of(runs, f);
    SnapshotRun {
        bgsave_s: by(|r| r.bgsave_s),
        child_dirty_mib: by(|r| r.child_dirty_mib),
        save_p50_us: by(|r| r.save_p50_us),
        save_p99_us: by(|r| r.save_p99_us),
        save_gets: by(|r| r.save_gets as f64) as u64,
        base_p50_us: by(|r| r.base_p50_us),
        base_p99_us: by(|r| r.base_p99_us),
        file_mib: by(|r| r.file_mib),
        load_s: by(|r| r.load_s),
    }
}

/// Key `i`: `key:` and its decimal digits.
fn key(i: usize) -> Vec<u8> {
    format!("key:{i}").into_bytes()
}

/// A request of `args`, encoded.
fn command(args: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(
        &mut out,
        &args.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>(),
    );
    out
}

/// GETs one at a time over one connection, round the first [`GET_KEYS`] keys, while `go()`.
fn gets(addr: SocketAddr, go: &(dyn Fn() -> bool + Sync)) -> Result<Measured, String> {
    let batch = (0..GET_KEYS)
        .map(|i| {
            let mut out = Vec::new();
            encode(&mut out, &[b"GET".to_vec(), key(i)]);
            (out, 1)
        })
        .collect();
    run_encoded_while(addr, vec![batch], go)
}

/// What a BGSAVE cost.
struct Save {
    took: Duration,
    peak_dirty_kib: u64,
    /// The GETs sent through it.
    during: Measured,
}

/// Sets the flag it holds when dropped: whatever way a save's watch ends, its GETs stop.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs a BGSAVE on `server` and watches it to its end: the child's memory and the save's progress
/// every [`POLL`] on one connection, GETs one at a time on another.
fn bgsave(server: &Running) -> Result<Save, String> {
    let mut ctl = Conn::open(server.addr)?;
    let info = command(&["INFO", "persistence"]);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let t0 = Instant::now();
        match ctl.call(&command(&["BGSAVE"]))? {
            Frame::Simple(m) if m.starts_with("Background saving started") => {}
            other => return Err(format!("BGSAVE answered {other:?}")),
        }
        let stopper = StopOnDrop(&stop);
        let getter = s.spawn(|| gets(server.addr, &|| !stop.load(Ordering::Relaxed)));
        let mut peak_dirty_kib = 0;
        let took = loop {
            for child in children(server.pid()) {
                peak_dirty_kib = peak_dirty_kib.max(private_dirty_kib(child));
            }
            if info_field(&mut ctl, &info, "rdb_bgsave_in_progress")? == "0" {
                break t0.elapsed();
            }
            if t0.elapsed() > PATIENCE {
                return Err(format!("BGSAVE still running after {} s", PATIENCE.as_secs()));
            }
            std::thread::sleep(POLL);
        };
        drop(stopper);
        let during = getter
            .join()
            .unwrap_or_else(|_| Err("the GET thread panicked".into()))?;
        let status = info_field(&mut ctl, &info, "rdb_last_bgsave_status")?;
        if status != "ok" {
            return Err(format!("BGSAVE ended {status}"));
        }
        Ok(Save {
            took,
            peak_dirty_kib,
            during,
        })
    })
}

/// `field`'s value in the reply to `info` (an INFO request, encoded).
fn info_field(conn: &mut Conn, info: &[u8], field: &str) -> Result<String, String> {
    let reply = conn.call(info)?;
    let text = String::from_utf8_lossy(reply.as_bytes().unwrap_or_default()).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| format!("INFO persistence has no {field}"))
}

/// The children of process `pid`, from every one of its threads.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Process `pid`'s private dirty memory, KiB (0 when it cannot be read: the child has gone).
fn private_dirty_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Private_Dirty:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_and_this_process_has_private_dirty_memory() {
        let me = std::process::id();
        assert!(private_dirty_kib(me) > 0);
        assert_eq!(private_dirty_kib(u32::MAX), 0);
        assert!(children(u32::MAX).is_empty());
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        assert!(children(me).contains(&child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The snapshot part against `redis-server`, when it is installed: every figure there, the file
    /// loaded back whole. No timing asserts.
    #[test]
    fn a_snapshot_run_against_redis_saves_and_loads_every_key() {
        if crate::server::redis_version().is_none() {
            eprintln!("redis-server is not installed: skipped");
            return;
        }
        let r = run_one(Kind::Redis, 1, false, 5000).unwrap();
        assert!(r.bgsave_s > 0.0 && r.load_s > 0.0, "{r:?}");
        assert!(r.base_p50_us > 0.0 && r.base_p99_us >= r.base_p50_us, "{r:?}");
        assert!(r.file_mib > 0.05, "{r:?}");
    }
}
