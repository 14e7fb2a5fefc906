//! The load generator: blocking TCP clients, one thread per connection, each sending batches of
//! `pipeline` commands and reading the batch's replies before sending the next (a closed loop, as
//! `redis-benchmark -P`).
//!
//! Workload (the KV mix, `crate::kv_mix`): keys "key:" and 11 digits (16 bytes), drawn from a Zipf
//! distribution with s = 0.99 over `keys` (ranks scattered over the keyspace by a fixed permutation, as
//! `bench kv`), 60% SET with a value of 32..=512 bytes (uniform), 40% GET. Every random choice is drawn
//! before the clock starts.
//!
//! Latency, per request: from just before the `write` of its batch to the return of the `read` that
//! completed its reply (one `Instant::now()` per read, shared by every reply that read completed). With
//! pipeline 1 that is the round trip; with pipeline P a request's latency includes the replies queued
//! before it in its batch, as `redis-benchmark -P` counts it. Recorded in ns into an HDR histogram
//! (3 significant digits) per connection, merged.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hopless_server::codec::{Frame, FrameError};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// What one measured load run does.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    pub connections: usize,
    pub pipeline: usize,
    pub keys: usize,
    /// Requests, all connections together.
    pub ops: usize,
    pub seed: u64,
}

/// What a load run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Requests answered (`ops` rounded down to whole batches per connection).
    pub ops: u64,
    pub elapsed: Duration,
    /// Per-request latency, ns.
    pub latency: Histogram<u64>,
}

impl Measured {
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// A value buffer: the first `len` bytes are a SET's value.
fn value_bytes() -> Vec<u8> {
    (0..512u32).map(|i| b'a' + (i % 26) as u8).collect()
}

/// Key `i`: "key:" and 11 digits.
pub fn key_of(i: u32) -> [u8; 16] {
    let mut out = *b"key:000000000000";
    let mut n = i as u64;
    for d in (4..16).rev() {
        out[d] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out
}

/// Appends `SET key value` (len > 0) or `GET key` (len 0) as a RESP array.
fn encode(out: &mut Vec<u8>, key: u32, len: u16, value: &[u8]) {
    let k = key_of(key);
    if len == 0 {
        out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$16\r\n");
        out.extend_from_slice(&k);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$16\r\n");
        out.extend_from_slice(&k);
        out.extend_from_slice(b"\r\n$");
        out.extend_from_slice(len.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&value[..len as usize]);
        out.extend_from_slice(b"\r\n");
    }
}

/// The value length of every key at preload: uniform 32..=512, from a fixed seed.
pub fn preload_lens(keys: usize) -> Vec<u16> {
    let mut rng = SmallRng::seed_from_u64(7);
    (0..keys).map(|_| rng.gen_range(32..=512u16)).collect()
}

/// One connection's replies, read as they come.
pub(super) struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    chunk: Box<[u8]>,
}

impl Conn {
    pub(super) fn open(addr: SocketAddr) -> Result<Conn, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connecting to {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        Ok(Conn {
            stream,
            buf: Vec::with_capacity(1 << 16),
            pos: 0,
            chunk: vec![0u8; 1 << 16].into_boxed_slice(),
        })
    }

    /// Sends `out` and reads `n` replies; `each(at)` is called for every reply with the time of the read
    /// that completed it. An error reply is an error.
    fn round(&mut self, out: &[u8], n: usize, mut each: impl FnMut(Instant)) -> Result<(), String> {
        self.stream.write_all(out).map_err(|e| format!("write: {e}"))?;
        let mut got = 0;
        let mut at = Instant::now();
        while got < n {
            match Frame::check(&self.buf[self.pos..]) {
                Ok(len) => {
                    if self.buf[self.pos] == b'-' {
                        let line = String::from_utf8_lossy(&self.buf[self.pos..self.pos + len]);
                        return Err(format!("server replied {}", line.trim_end()));
                    }
                    self.pos += len;
                    got += 1;
                    each(at);
                }
                Err(FrameError::Incomplete) => at = self.read_more()?,
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    /// Sends one request (`out`, encoded) and returns its reply; an error reply is an error.
    pub(super) fn call(&mut self, out: &[u8]) -> Result<Frame, String> {
        self.stream.write_all(out).map_err(|e| format!("write: {e}"))?;
        loop {
            match Frame::parse(&self.buf[self.pos..]) {
                Ok((Frame::Error(e), _)) => return Err(format!("server replied -{e}")),
                Ok((frame, len)) => {
                    self.pos += len;
                    return Ok(frame);
                }
                Err(FrameError::Incomplete) => {
                    self.read_more()?;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Drops the replies consumed and reads what the server sent next; returns when the read returned.
    fn read_more(&mut self) -> Result<Instant, String> {
        self.buf.drain(..self.pos);
        self.pos = 0;
        let r = self
            .stream
            .read(&mut self.chunk)
            .map_err(|e| format!("read: {e}"))?;
        let at = Instant::now();
        if r == 0 {
            return Err("the server closed the connection".into());
        }
        self.buf.extend_from_slice(&self.chunk[..r]);
        Ok(at)
    }
}

/// Sets every key once (value lengths from [`preload_lens`]), split over `connections`, 256 commands per
/// batch. Untimed.
pub fn preload(addr: SocketAddr, keys: usize, connections: usize) -> Result<(), String> {
    let lens = preload_lens(keys);
    let value = value_bytes();
    over_connections(addr, keys, connections, 256, |i, out| {
        encode(out, i as u32, lens[i], &value)
    })
}

/// Sends requests `0..n` (request `i` written by `encode_one(i, out)`), split into `connections`
/// contiguous runs, `per_batch` requests a round trip: the untimed preloads' one loop.
pub(super) fn over_connections(
    addr: SocketAddr,
    n: usize,
    connections: usize,
    per_batch: usize,
    encode_one: impl Fn(usize, &mut Vec<u8>) + Sync,
) -> Result<(), String> {
    let connections = connections.max(1);
    let per = n.div_ceil(connections).max(1);
    let encode_one = &encode_one;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..connections)
            .map(|c| {
                s.spawn(move || -> Result<(), String> {
                    let mut conn = Conn::open(addr)?;
                    let (start, end) = ((c * per).min(n), ((c + 1) * per).min(n));
                    let mut out = Vec::new();
                    let mut i = start;
                    while i < end {
                        let stop = (i + per_batch.max(1)).min(end);
                        out.clear();
                        for j in i..stop {
                            encode_one(j, &mut out);
                        }
                        conn.round(&out, stop - i, |_| {})?;
                        i = stop;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|_| Err("preload thread panicked".into())))
    })
}

/// One connection's pre-drawn requests: key index, value length (0 = GET).
fn plan(l: &Load, conn: usize) -> Vec<(u32, u16)> {
    let n = l.ops / l.connections / l.pipeline * l.pipeline;
    crate::kv_mix::kv_ops(l.keys, n, l.seed.wrapping_mul(1000) + conn as u64)
}

/// Runs the measured load of the KV mix: every connection draws its requests, then
/// [`run_encoded`] sends them.
pub fn run(addr: SocketAddr, l: &Load) -> Result<Measured, String> {
    let l = Load {
        connections: l.connections.max(1),
        pipeline: l.pipeline.max(1),
        keys: l.keys.max(1),
        ..*l
    };
    let value = value_bytes();
    let batches = (0..l.connections)
        .map(|c| {
            plan(&l, c)
                .chunks(l.pipeline)
                .map(|batch| {
                    let mut out = Vec::with_capacity(batch.len() * 600);
                    for &(k, len) in batch {
                        encode(&mut out, k, len, &value);
                    }
                    (out, batch.len())
                })
                .collect()
        })
        .collect();
    run_encoded(addr, batches)
}

/// Runs the KV mix as transactions: every `per_tx` requests of a connection's plan wrapped in MULTI
/// ... EXEC and sent at once (as a client library's transaction pipeline sends them), `l.pipeline`
/// transactions a batch. Each transaction is `per_tx + 2` replies; `Measured::ops` counts replies.
pub fn run_transactions(addr: SocketAddr, l: &Load, per_tx: usize) -> Result<Measured, String> {
    let per_tx = per_tx.max(1);
    let l = Load {
        connections: l.connections.max(1),
        pipeline: l.pipeline.max(1),
        keys: l.keys.max(1),
        ..*l
    };
    let value = value_bytes();
    let batches = (0..l.connections)
        .map(|c| {
            plan(&l, c)
                .chunks(per_tx * l.pipeline)
                .filter(|b| b.len() == per_tx * l.pipeline)
                .map(|batch| {
                    let mut out = Vec::with_capacity(batch.len() * 600);
                    for tx in batch.chunks(per_tx) {
                        out.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n");
                        for &(k, len) in tx {
                            encode(&mut out, k, len, &value);
                        }
                        out.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
                    }
                    (out, l.pipeline * (per_tx + 2))
                })
                .collect()
        })
        .collect();
    run_encoded(addr, batches)
}

/// Sends each connection's batches (the bytes of a batch of requests, and how many requests it holds),
/// one batch at a time, reading its replies before the next. Every connection opens first, then all
/// start together; the elapsed time runs from the start to the last connection's last reply. Everything
/// is encoded before the clock starts, so the timed region holds the same client work for every server.
pub fn run_encoded(addr: SocketAddr, batches: Vec<Vec<(Vec<u8>, usize)>>) -> Result<Measured, String> {
    drive(addr, batches, None)
}

/// [`run_encoded`], each connection going round its batches again and again for as long as `go()`
/// says so (asked before every batch): a load of a duration, or one that runs until told to stop.
pub fn run_encoded_while(
    addr: SocketAddr,
    batches: Vec<Vec<(Vec<u8>, usize)>>,
    go: &(dyn Fn() -> bool + Sync),
) -> Result<Measured, String> {
    drive(addr, batches, Some(go))
}

/// The connections' threads of [`run_encoded`] (`go` absent: each batch once) and
/// [`run_encoded_while`].
fn drive(
    addr: SocketAddr,
    batches: Vec<Vec<(Vec<u8>, usize)>>,
    go: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<Measured, String> {
    let start = Barrier::new(batches.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .iter()
            .map(|mine| {
                let start = &start;
                s.spawn(move || -> Result<(Histogram<u64>, u64, Instant), String> {
                    let conn = Conn::open(addr);
                    let mut hist =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
                    start.wait();
                    let mut conn = conn?;
                    let mut n = 0;
                    'rounds: loop {
                        for (out, len) in mine {
                            if go.is_some_and(|go| !go()) {
                                break 'rounds;
                            }
                            let sent = Instant::now();
                            conn.round(out, *len, |at| {
                                hist.saturating_record((at - sent).as_nanos().max(1) as u64);
                            })?;
                            n += *len as u64;
                        }
                        if go.is_none() || mine.is_empty() {
                            break;
                        }
                    }
                    Ok((hist, n, Instant::now()))
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
        let mut ops = 0;
        let mut end = t0;
        for h in handles {
            let (hist, n, done) = h.join().unwrap_or_else(|_| Err("load thread panicked".into()))?;
            latency.add(&hist).map_err(|e| e.to_string())?;
            ops += n;
            end = end.max(done);
        }
        Ok(Measured {
            ops,
            elapsed: end - t0,
            latency,
        })
    })
}

/// Sends every command of `cmds` (pre-encoded requests, any mix), `per_batch` a batch, split over
/// `connections`: an untimed preload.
pub fn send_all(
    addr: SocketAddr,
    cmds: &[Vec<u8>],
    connections: usize,
    per_batch: usize,
) -> Result<(), String> {
    over_connections(addr, cmds.len(), connections, per_batch, |i, out| {
        out.extend_from_slice(&cmds[i])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sixteen_bytes_and_distinct() {
        assert_eq!(&key_of(0), b"key:000000000000");
        assert_eq!(&key_of(123), b"key:000000000123");
        assert_ne!(key_of(1), key_of(10));
    }

    #[test]
    fn commands_encode_as_resp_arrays() {
        let v = value_bytes();
        let mut out = Vec::new();
        encode(&mut out, 5, 0, &v);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000005\r\n");
        out.clear();
        encode(&mut out, 5, 3, &v);
        assert_eq!(
            out,
            b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000005\r\n$3\r\nabc\r\n"
        );
    }

    #[test]
    fn the_plan_is_the_kv_mix() {
        let l = Load {
            connections: 2,
            pipeline: 16,
            keys: 1000,
            ops: 20_000,
            seed: 1,
        };
        let p = plan(&l, 0);
        assert_eq!(p.len(), 10_000 / 16 * 16);
        let sets = p.iter().filter(|&&(_, len)| len > 0).count();
        assert!((5_500..6_500).contains(&(sets * 10_000 / p.len())), "{sets}");
        assert!(p
            .iter()
            .all(|&(k, len)| (k as usize) < 1000 && (len == 0 || (32..=512).contains(&len))));
    }
}
