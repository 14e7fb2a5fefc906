//! The differential harness: a real `redis-server` beside `hopless serve`, the same commands to both,
//! replies compared byte for byte (or as sets where Redis's order is unspecified), and the keyspaces
//! compared at the end, key by key and type by type.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hopless_server::codec::Frame;
use hopless_server::Server;

use super::{require_tool, Raw};

pub struct RedisServer(Child);

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Real Redis on a free port; None (the test skips) when it is not installed and CI is not set.
///
/// A port found free can be taken before redis-server binds it (by a server another test starts at the
/// same moment), so the server that answers must be ours: its INFO names our child's pid, or another port
/// is tried.
pub fn start_redis() -> Option<(RedisServer, SocketAddr)> {
    start_redis_with(&["--save", ""])
}

/// [`start_redis`] with these arguments after the port's and `--bind`'s (`--save` or `--dir` and
/// `--dbfilename`: a server that loads a snapshot at start).
pub fn start_redis_with(extra: &[&str]) -> Option<(RedisServer, SocketAddr)> {
    if !require_tool("redis-server") {
        return None;
    }
    for _ in 0..10 {
        let port = redis_port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--appendonly",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let mut guard = RedisServer(child);
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        for _ in 0..200 {
            if matches!(guard.0.try_wait(), Ok(Some(_))) {
                break; // it exited: the port was taken
            }
            let ours = format!("process_id:{}\r\n", guard.0.id());
            match info_server(addr) {
                // Refused, reset or closed: nobody listening yet, or a server going away (ours
                // failing to bind, or another test's): look again.
                None => {}
                Some(Frame::Bulk(b)) if String::from_utf8_lossy(&b).contains(&ours) => {
                    return Some((guard, addr));
                }
                Some(_) => break, // another server holds the port
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = guard.0.kill();
    }
    panic!("redis-server did not start on a port of its own in 10 tries");
}

/// `INFO server` from whatever listens at `addr`; None when nothing does, or the connection is reset or
/// closed before the reply (a redis-server that lost the port to another and is exiting: a panic here
/// would fail the test on such a reset).
fn info_server(addr: SocketAddr) -> Option<Frame> {
    use std::io::Write;
    let sock = std::net::TcpStream::connect(addr).ok()?;
    sock.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut raw = Raw {
        sock,
        buf: Vec::new(),
        ended: None,
    };
    raw.sock.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").ok()?;
    raw.try_read()
}

/// A free port below the kernel's ephemeral range (32768 and up by default), for a redis-server: a port
/// from that range can be taken, between our check and redis-server's bind, by any socket the tests
/// open (a hopless server on port 0, or a client's own end, which can even connect to itself), and
/// the test then talks to the wrong peer or to nobody.
fn redis_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::process::id().wrapping_mul(2_654_435_761).wrapping_add(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos()),
    );
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + (seed.wrapping_add(n.wrapping_mul(7_919)) % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// How two replies are compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Order {
    /// Byte for byte.
    Exact,
    /// An array whose elements Redis returns in no set order (SMEMBERS, SUNION, HKEYS): compared sorted.
    Unordered,
    /// An array of pairs in no set order (HGETALL, HRANDFIELD WITHVALUES): compared as sorted pairs.
    UnorderedPairs,
}

/// A reply in a form that compares as the [`Order`] asks.
fn normalise(f: Frame, order: Order) -> Frame {
    match (f, order) {
        (Frame::Array(mut v), Order::Unordered) => {
            v.sort_by_key(|x| format!("{x:?}"));
            Frame::Array(v)
        }
        (Frame::Array(v), Order::UnorderedPairs) => {
            let mut pairs: Vec<Vec<Frame>> = v.chunks(2).map(|c| c.to_vec()).collect();
            pairs.sort_by_key(|p| format!("{p:?}"));
            Frame::Array(pairs.into_iter().flatten().collect())
        }
        (f, _) => f,
    }
}

/// One connection to each server.
pub struct Differ {
    pub redis: Raw,
    pub ours: Raw,
    pub diffs: Vec<String>,
    _guard: RedisServer,
    _server: Server,
}

pub fn split(cmd: &str) -> Vec<Vec<u8>> {
    hopless_server::codec::split_args(cmd.as_bytes()).unwrap()
}

impl Differ {
    /// Both servers, flushed; None when redis-server is missing (and CI is not set).
    pub fn start() -> Option<Differ> {
        Differ::start_with(&["--save", ""], |_| {})
    }

    /// [`Differ::start`] with these arguments to redis-server and these options for hopless.
    pub fn start_with(
        redis: &[&str],
        ours: impl FnOnce(&mut hopless_server::ServeOptions),
    ) -> Option<Differ> {
        let (guard, raddr) = start_redis_with(redis)?;
        let server = super::start_with(ours);
        let mut redis = Raw::connect(raddr);
        let ours = Raw::connect(server.addr());
        redis.cmd(&[b"FLUSHALL"]).read();
        Some(Differ {
            redis,
            ours,
            diffs: Vec::new(),
            _guard: guard,
            _server: server,
        })
    }

    /// Sends `args` to both; records a difference; returns both replies (Redis's first).
    pub fn run_args(&mut self, args: &[&[u8]], order: Order) -> (Frame, Frame) {
        let t = self.redis.cmd(args).read();
        let o = self.ours.cmd(args).read();
        let (nt, no) = (normalise(t.clone(), order), normalise(o.clone(), order));
        if nt != no {
            let show: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            self.diffs
                .push(format!("{}\n  redis:   {t:?}\n  hopless: {o:?}", show.join(" ")));
        }
        (t, o)
    }

    /// Sends `args` to both; records a difference unless the two replies are the same bytes (where
    /// [`Differ::run_args`] compares parsed frames: a RESP3 double's spelling, or RESP2's null bulk
    /// against its null array, count here).
    pub fn run_bytes(&mut self, args: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
        let t = self.redis.cmd(args).read_bytes();
        let o = self.ours.cmd(args).read_bytes();
        if t != o {
            let show: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            self.diffs.push(format!(
                "{}\n  redis:   {:?}\n  hopless: {:?}",
                show.join(" "),
                String::from_utf8_lossy(&t),
                String::from_utf8_lossy(&o)
            ));
        }
        (t, o)
    }

    /// [`Differ::run_bytes`] of each command line, in order.
    pub fn script_bytes(&mut self, lines: &[&str]) {
        for l in lines {
            let a = split(l);
            let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
            self.run_bytes(&a);
        }
    }

    /// [`Differ::run`] with both replies passed through `mask` before they are compared (to blank out
    /// what differs by the clock: idle times, delivery times).
    pub fn run_masked(&mut self, cmd: &str, mask: impl Fn(Frame) -> Frame) {
        let a = split(cmd);
        let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
        let t = mask(self.redis.cmd(&a).read());
        let o = mask(self.ours.cmd(&a).read());
        if t != o {
            self.diffs
                .push(format!("{cmd}\n  redis:   {t:?}\n  hopless: {o:?}"));
        }
    }

    /// [`Differ::run_args`] of a command line (split as redis-cli splits it).
    pub fn run(&mut self, cmd: &str, order: Order) -> (Frame, Frame) {
        let a = split(cmd);
        let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
        self.run_args(&a, order)
    }

    /// Runs every line in order; lines of commands with unordered replies are matched by `order_of`.
    pub fn script(&mut self, lines: &[&str], order_of: impl Fn(&str) -> Order) {
        for l in lines {
            self.run(l, order_of(l));
        }
    }

    /// Compares the two keyspaces: the same keys, and each key's type, contents (in the type's order,
    /// or sorted where the type has none) and whether it has a TTL.
    pub fn compare_keyspace(&mut self) {
        let (kt, ko) = (keys(&mut self.redis), keys(&mut self.ours));
        if kt != ko {
            let show = |k: &[Vec<u8>]| {
                k.iter()
                    .map(|x| String::from_utf8_lossy(x).into_owned())
                    .collect::<Vec<_>>()
            };
            self.diffs.push(format!(
                "KEYS *\n  redis:   {:?}\n  hopless: {:?}",
                show(&kt),
                show(&ko)
            ));
            return;
        }
        for k in kt {
            let (t, _) = self.run_args(&[b"TYPE", &k], Order::Exact);
            let reads: Vec<(Vec<&[u8]>, Order)> = match t {
                Frame::Simple(s) if s == "string" => vec![(vec![b"GET", &k], Order::Exact)],
                Frame::Simple(s) if s == "list" => vec![(vec![b"LRANGE", &k, b"0", b"-1"], Order::Exact)],
                Frame::Simple(s) if s == "hash" => vec![(vec![b"HGETALL", &k], Order::UnorderedPairs)],
                Frame::Simple(s) if s == "set" => vec![(vec![b"SMEMBERS", &k], Order::Unordered)],
                Frame::Simple(s) if s == "zset" => {
                    vec![(vec![b"ZRANGE", &k, b"0", b"-1", b"WITHSCORES"], Order::Exact)]
                }
                Frame::Simple(s) if s == "stream" => {
                    vec![
                        (vec![b"XRANGE", &k, b"-", b"+"], Order::Exact),
                        (vec![b"XLEN", &k], Order::Exact),
                    ]
                }
                _ => vec![],
            };
            for (a, order) in reads {
                self.run_args(&a, order);
            }
            let t = self.redis.cmd(&[b"TTL", &k]).read();
            let o = self.ours.cmd(&[b"TTL", &k]).read();
            let has = |f: &Frame| !matches!(f, Frame::Integer(-1));
            if has(&t) != has(&o) {
                self.diffs.push(format!(
                    "TTL {}\n  redis:   {t:?}\n  hopless: {o:?}",
                    String::from_utf8_lossy(&k)
                ));
            }
        }
    }

    /// Fails the test with every difference recorded.
    pub fn assert_none(&self) {
        assert!(
            self.diffs.is_empty(),
            "{} differences:\n{}",
            self.diffs.len(),
            self.diffs.join("\n")
        );
    }
}

/// Blanks what two servers' replies differ in for no fault of either: the integers after `idle` and
/// `inactive` (times since the last access), the pending entries' idle times (XPENDING's extended rows:
/// id, consumer, idle, deliveries), and XINFO STREAM's radix-tree counts (each server's node layout).
pub fn mask_times(f: Frame) -> Frame {
    match f {
        Frame::Array(v) => {
            let mut out = Vec::with_capacity(v.len());
            let mut blank = false;
            for x in v {
                if blank {
                    out.push(Frame::Integer(0));
                    blank = false;
                    continue;
                }
                if let Frame::Bulk(b) = &x {
                    blank = matches!(
                        &b[..],
                        b"idle" | b"inactive" | b"radix-tree-nodes" | b"radix-tree-keys"
                    );
                }
                out.push(mask_times(x));
            }
            if out.len() == 4 && matches!(out[1], Frame::Bulk(_)) && matches!(out[2], Frame::Integer(_)) {
                out[2] = Frame::Integer(0);
            }
            Frame::Array(out)
        }
        other => other,
    }
}

/// Every key of the server `r` talks to, sorted.
pub fn keys(r: &mut Raw) -> Vec<Vec<u8>> {
    match r.cmd(&[b"KEYS", b"*"]).read() {
        Frame::Array(v) => {
            let mut k: Vec<Vec<u8>> = v
                .into_iter()
                .map(|f| match f {
                    Frame::Bulk(b) => b.to_vec(),
                    other => panic!("KEYS gave {other:?}"),
                })
                .collect();
            k.sort();
            k
        }
        other => panic!("KEYS gave {other:?}"),
    }
}
