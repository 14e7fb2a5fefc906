//! The persistence workload's append-only-file part, one run of one server under one fsync policy: a
//! fresh server with `--appendonly yes --appendfsync POLICY --save "" --dir <a fresh directory>`, then
//! `connections` clients, one request at a time each, SET a 20-byte value to keys drawn uniformly from
//! `keys` for `seconds`. Requests/s, p50 and p99 latency (the load generator's, `load`), and the
//! server's CPU per request (user + system time of every thread from `/proc/PID/stat` around the load).
//! A run whose server wrote no file is an error; the file's bytes per request are kept.

use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::Serialize;

use crate::server::load::run_encoded_while;
use crate::server::pin::cpu_seconds;
use crate::server::target::{DataDir, Files, Kind, Running};
use crate::server::types_mix::encode;
use crate::stats::median_of;

/// The fsync policies measured, in order.
pub const POLICIES: [&str; 2] = ["everysec", "always"];
/// Every SET's value.
const VALUE: &[u8; 20] = b"vvvvvvvvvvvvvvvvvvvv";
/// Requests drawn per connection before the clock starts; a connection goes round them.
const DRAWN: usize = 20_000;

/// What a run sends.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct AofLoad {
    /// Keys are drawn from `key:0` .. `key:<keys - 1>`.
    pub keys: usize,
    pub connections: usize,
    pub seconds: f64,
}

/// What one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct AofRun {
    pub ops: u64,
    pub elapsed_s: f64,
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The server's CPU time over the load (user + system, every thread), and per request.
    pub server_cpu_s: f64,
    pub cpu_us_per_request: f64,
    /// The append-only file's bytes (every file in the directory, after SHUTDOWN) per request.
    pub file_bytes_per_request: f64,
}

/// One run of `kind` (with `threads` workers, pinned or not) under `policy`; `seed` draws the keys.
pub fn run_one(
    kind: Kind,
    policy: &str,
    threads: usize,
    pinned: bool,
    load: &AofLoad,
    seed: u64,
) -> Result<AofRun, String> {
    let dir = DataDir::new(&format!("aof-{policy}-{}", kind.name()))?;
    let files = Files {
        dir: Some(dir.path()),
        appendfsync: Some(policy),
    };
    let server = Running::start_with(kind, threads, pinned, files)?;
    let batches = (0..load.connections.max(1))
        .map(|c| sets(load.keys, seed.wrapping_mul(1000) + c as u64))
        .collect();
    let cpu = cpu_seconds(server.pid());
    let end = Instant::now() + Duration::from_secs_f64(load.seconds);
    let m = run_encoded_while(server.addr, batches, &|| Instant::now() < end)?;
    let cpu = cpu_seconds(server.pid()) - cpu;
    server.stop()?;
    let bytes = dir.data_bytes();
    if bytes == 0 {
        return Err(format!(
            "no append-only file in {} after {} SETs with --appendonly yes",
            dir.path().display(),
            m.ops
        ));
    }
    let per = |x: f64| x / m.ops.max(1) as f64;
    Ok(AofRun {
        ops: m.ops,
        elapsed_s: m.elapsed.as_secs_f64(),
        ops_per_sec: m.ops_per_sec(),
        p50_us: m.latency.value_at_quantile(0.50) as f64 / 1e3,
        p99_us: m.latency.value_at_quantile(0.99) as f64 / 1e3,
        server_cpu_s: cpu,
        cpu_us_per_request: per(cpu * 1e6),
        file_bytes_per_request: per(bytes as f64),
    })
}

/// Each figure's median over `runs`.
pub fn median(runs: &[AofRun]) -> AofRun {
    let by = |f: fn(&AofRun) -> f64| median_of(runs, f);
    AofRun {
        ops: by(|r| r.ops as f64) as u64,
        elapsed_s: by(|r| r.elapsed_s),
        ops_per_sec: by(|r| r.ops_per_sec),
        p50_us: by(|r| r.p50_us),
        p99_us: by(|r| r.p99_us),
        server_cpu_s: by(|r| r.server_cpu_s),
        cpu_us_per_request: by(|r| r.cpu_us_per_request),
        file_bytes_per_request: by(|r| r.file_bytes_per_request),
    }
}

/// A connection's [`DRAWN`] SETs to uniform keys of `keys`, from `seed`, each a batch of its own.
fn sets(keys: usize, seed: u64) -> Vec<(Vec<u8>, usize)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..DRAWN)
        .map(|_| {
            let key = format!("key:{}", rng.gen_range(0..keys.max(1)));
            let mut out = Vec::new();
            encode(&mut out, &[b"SET".to_vec(), key.into_bytes(), VALUE.to_vec()]);
            (out, 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_one_a_batch_within_the_key_range() {
        let s = sets(10, 1);
        assert_eq!(s.len(), DRAWN);
        assert!(s
            .iter()
            .all(|(out, n)| *n == 1 && out.starts_with(b"*3\r\n$3\r\nSET\r\n")));
        let text = String::from_utf8_lossy(&s[0].0).into_owned();
        let k: usize = text
            .split("key:")
            .nth(1)
            .unwrap()
            .split('\r')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(k < 10);
        assert!(text.ends_with("$20\r\nvvvvvvvvvvvvvvvvvvvv\r\n"));
    }

    /// The AOF part against `redis-server`, when it is installed: a second under each policy, every
    /// figure there. No timing asserts.
    #[test]
    fn an_aof_run_against_redis_measures_and_writes_its_file() {
        if crate::server::redis_version().is_none() {
            eprintln!("redis-server is not installed: skipped");
            return;
        }
        let load = AofLoad {
            keys: 1000,
            connections: 2,
            seconds: 0.5,
        };
        for policy in POLICIES {
            let r = run_one(Kind::Redis, policy, 1, false, &load, 1).unwrap();
            assert!(r.ops > 0 && r.ops_per_sec > 0.0, "{r:?}");
            assert!(r.p50_us > 0.0 && r.p99_us >= r.p50_us, "{r:?}");
            assert!(r.file_bytes_per_request > 20.0, "{r:?}");
        }
    }
}
