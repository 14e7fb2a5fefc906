//! Transactions and blocking pops against a real `redis-server`: MULTI/EXEC/DISCARD/WATCH/UNWATCH with
//! their errors, WATCH against writes from other connections, and the blocking pops served by pushes
//! from other connections, compared reply by reply over several connections a side. Then what only
//! hopless can show across event loops (`--threads 2`): a reader never sees a transaction half done,
//! optimistic increments under WATCH lose nothing, blocked clients are served exactly once by pushes
//! from the other loop, and redis-py's transactions work. Skipped without `redis-server` (failed under
//! `CI=true`).

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::differ::{split, start_redis, Differ, Order};
use common::Raw;
use hopless_server::codec::Frame;

#[test]
fn transaction_replies_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(
        &[
            "EXEC",
            "DISCARD",
            "MULTI",
            "MULTI",
            "WATCH a",
            "SET a 1",
            "INCR a",
            "LPUSH a x",
            "GET a",
            "EXEC",
            "GET a",
            // Queue-time errors: EXECABORT, nothing applied.
            "MULTI",
            "SET a 5",
            "NOSUCHCOMMAND x",
            "SET a",
            "EXEC",
            "GET a",
            "MULTI",
            "SHUTDOWN",
            "EXEC",
            "MULTI",
            "WATCH",
            "EXEC",
            // Over maxmemory under noeviction, a denyoom command is refused at queue time.
            "CONFIG SET maxmemory 1",
            "MULTI",
            "DEL a",
            "SET a 1",
            "GET a",
            "EXEC",
            "CONFIG SET maxmemory 0",
            // DISCARD and RESET leave MULTI.
            "MULTI",
            "SET b 1",
            "DISCARD",
            "EXISTS b",
            "MULTI",
            "RESET",
            "EXEC",
            // Blocking commands inside a transaction answer at once.
            "MULTI",
            "BLPOP l 0",
            "BRPOP l 0",
            "BLMOVE l m LEFT RIGHT 0",
            "BRPOPLPUSH l m 0",
            "BLMPOP 0 1 l LEFT",
            "BZPOPMIN z 0",
            "BZPOPMAX z 0",
            "BZMPOP 0 1 z MIN",
            "RPUSH l 1 2 3",
            "BLPOP l 0",
            "BLMOVE l m LEFT RIGHT 0",
            "ZADD z 1 a 2 b",
            "BZPOPMAX z 0",
            "EXEC",
            // WATCH by the client itself, UNWATCH, DISCARD clearing the mark.
            "WATCH a",
            "SET a 10",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH a",
            "SET a 10",
            "UNWATCH",
            "MULTI",
            "INCR a",
            "EXEC",
            "WATCH a",
            "SET a 10",
            "MULTI",
            "DISCARD",
            "MULTI",
            "INCR a",
            "EXEC",
            // Writes that change nothing touch nothing.
            "WATCH nokey a",
            "DEL nokey",
            "SET a 1 NX",
            "LPUSHX nokey x",
            "EXPIRE nokey 10",
            "MULTI",
            "PING",
            "EXEC",
            // EXPIRE and a flush of a watched key that existed abort; a flush of absent ones does not.
            "WATCH a",
            "EXPIRE a 100",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH nokey",
            "FLUSHALL",
            "MULTI",
            "PING",
            "EXEC",
            "SET a 1",
            "WATCH a",
            "FLUSHDB",
            "MULTI",
            "PING",
            "EXEC",
            // RESP3: the aborted EXEC is a null, not a null array.
            "HELLO 3",
            "SET a 1",
            "WATCH a",
            "SET a 2",
            "MULTI",
            "PING",
            "EXEC",
            "MULTI",
            "BLPOP l 0",
            "BLMOVE l m LEFT RIGHT 0",
            "EXEC",
            "HELLO 2",
        ]
        .into_iter()
        .filter(|l| !l.starts_with("HELLO"))
        .collect::<Vec<_>>(),
        |_| Order::Exact,
    );
    d.assert_none();
}

/// One scripted step against several connections a side.
enum Step {
    /// Sends a command and reads its reply (compared).
    Run(usize, &'static str),
    /// Sends a command whose reply comes later (a blocking one).
    Send(usize, &'static str),
    /// Reads a reply that was owed (compared).
    Read(usize),
    /// The connection has no reply waiting (it is still blocked).
    Quiet(usize),
    Sleep(u64),
}

/// Both servers, `conns` connections to each; replies compared step by step.
struct Pairs {
    redis: Vec<Raw>,
    ours: Vec<Raw>,
    diffs: Vec<String>,
}

fn send(r: &mut Raw, cmd: &str) {
    let a = split(cmd);
    let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
    r.cmd(&a);
}

/// Whether a reply arrives within 150 ms.
fn quiet(r: &mut Raw) -> Option<Frame> {
    r.sock.set_read_timeout(Some(Duration::from_millis(150))).unwrap();
    let f = r.try_read();
    r.sock.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    f
}

impl Pairs {
    fn new(redis: SocketAddr, ours: SocketAddr, conns: usize) -> Pairs {
        Pairs {
            redis: (0..conns).map(|_| Raw::connect(redis)).collect(),
            ours: (0..conns).map(|_| Raw::connect(ours)).collect(),
            diffs: Vec::new(),
        }
    }

    fn steps(&mut self, steps: &[Step]) {
        for (n, s) in steps.iter().enumerate() {
            match *s {
                Step::Run(c, cmd) => {
                    send(&mut self.redis[c], cmd);
                    send(&mut self.ours[c], cmd);
                    self.compare(n, c, cmd);
                }
                Step::Send(c, cmd) => {
                    send(&mut self.redis[c], cmd);
                    send(&mut self.ours[c], cmd);
                }
                Step::Read(c) => self.compare(n, c, "(read)"),
                Step::Quiet(c) => {
                    let (t, o) = (quiet(&mut self.redis[c]), quiet(&mut self.ours[c]));
                    if t.is_some() || o.is_some() {
                        self.diffs.push(format!(
                            "step {n}: conn {c} should be blocked: redis {t:?}, hopless {o:?}"
                        ));
                    }
                }
                Step::Sleep(ms) => std::thread::sleep(Duration::from_millis(ms)),
            }
        }
    }

    fn compare(&mut self, n: usize, c: usize, what: &str) {
        let t = self.redis[c].read();
        let o = self.ours[c].read();
        if t != o {
            self.diffs.push(format!(
                "step {n}: conn {c} {what}\n  redis:   {t:?}\n  hopless: {o:?}"
            ));
        }
    }

    fn assert_none(&self) {
        assert!(self.diffs.is_empty(), "differences:\n{}", self.diffs.join("\n"));
    }
}

fn pairs(
    conns: usize,
    threads: usize,
) -> Option<(Pairs, common::differ::RedisServer, hopless_server::Server)> {
    let (guard, raddr) = start_redis()?;
    let server = common::start_with(|o| o.threads = threads);
    let mut p = Pairs::new(raddr, server.addr(), conns);
    p.steps(&[Step::Run(0, "FLUSHALL")]);
    Some((p, guard, server))
}

#[test]
fn watch_against_other_connections_matches_redis() {
    for threads in [1, 2] {
        watch_against_other_connections(threads);
    }
}

/// On one event loop and on two (the connections then alternate between them).
fn watch_against_other_connections(threads: usize) {
    use Step::*;
    let Some((mut p, _g, _s)) = pairs(2, threads) else {
        return;
    };
    p.steps(&[
        Run(0, "SET k 1"),
        // Another client's write aborts; its write to another key does not.
        Run(0, "WATCH k"),
        Run(1, "SET other 1"),
        Run(0, "MULTI"),
        Run(0, "INCR k"),
        Run(0, "EXEC"),
        Run(0, "WATCH k"),
        Run(1, "INCR k"),
        Run(0, "MULTI"),
        Run(0, "INCR k"),
        Run(0, "EXEC"),
        Run(0, "GET k"),
        // A write after MULTI, before EXEC, aborts too.
        Run(0, "WATCH k"),
        Run(0, "MULTI"),
        Run(0, "INCR k"),
        Run(1, "DEL k"),
        Run(0, "EXEC"),
        Run(0, "EXISTS k"),
        // A key created by another client after WATCH aborts.
        Run(0, "WATCH k"),
        Run(1, "RPUSH k a"),
        Run(0, "MULTI"),
        Run(0, "PING"),
        Run(0, "EXEC"),
        // A watched key that expires aborts.
        Run(0, "SET e 1 PX 50"),
        Run(0, "WATCH e"),
        Sleep(120),
        Run(0, "MULTI"),
        Run(0, "PING"),
        Run(0, "EXEC"),
        // Watches end with EXEC: a later write does not reach the next transaction.
        Run(0, "WATCH k"),
        Run(0, "MULTI"),
        Run(0, "PING"),
        Run(0, "EXEC"),
        Run(1, "SET k 2"),
        Run(0, "MULTI"),
        Run(0, "PING"),
        Run(0, "EXEC"),
        // Each type's writes touch.
        Run(1, "HSET h f v"),
        Run(1, "SADD s m"),
        Run(1, "ZADD z 1 m"),
        Run(0, "WATCH h s z"),
        Run(1, "ZINCRBY z 1 m"),
        Run(0, "MULTI"),
        Run(0, "HGET h f"),
        Run(0, "EXEC"),
        Run(0, "WATCH h s"),
        Run(1, "SREM s nosuch"),
        Run(1, "HDEL h nosuch"),
        Run(0, "MULTI"),
        Run(0, "SCARD s"),
        Run(0, "EXEC"),
        // SMOVE changes its destination only when the member is new there, and nothing when the
        // source is the destination (Redis's unit/type/set: "SMOVE only notify dstset when the
        // addition is successful").
        Run(1, "SADD src a b"),
        Run(1, "SADD dst a"),
        Run(0, "WATCH dst"),
        Run(0, "MULTI"),
        Run(0, "SADD dst c"),
        Run(1, "SMOVE src dst a"),
        Run(0, "EXEC"),
        Run(0, "SCARD dst"),
        Run(0, "WATCH src"),
        Run(1, "SMOVE src src b"),
        Run(0, "MULTI"),
        Run(0, "SCARD src"),
        Run(0, "EXEC"),
        Run(0, "WATCH src dst"),
        Run(1, "SMOVE src dst b"),
        Run(0, "MULTI"),
        Run(0, "SCARD dst"),
        Run(0, "EXEC"),
        Run(0, "WATCH dst"),
        Run(1, "SMOVE dst src c"),
        Run(0, "MULTI"),
        Run(0, "SCARD dst"),
        Run(0, "EXEC"),
    ]);
    p.assert_none();
}

#[test]
fn blocking_pops_match_redis() {
    for threads in [1, 2] {
        blocking_pops(threads);
    }
}

fn blocking_pops(threads: usize) {
    use Step::*;
    let Some((mut p, _g, _s)) = pairs(3, threads) else {
        return;
    };
    p.steps(&[
        // Served by a push from another client, before the pusher's next command sees the list.
        Send(0, "BLPOP q 0"),
        Sleep(30),
        Quiet(0),
        Run(1, "RPUSH q x y"),
        Read(0),
        Run(1, "LRANGE q 0 -1"),
        // First come, first served; a client blocked on two keys is served by either.
        Send(0, "BRPOP q1 q2 0"),
        Sleep(30),
        Send(2, "BRPOP q2 0"),
        Sleep(30),
        Run(1, "LPUSH q2 1"),
        Read(0),
        Quiet(2),
        Run(1, "LPUSH q2 2"),
        Read(2),
        // A pipeline behind a blocked command waits for it.
        Send(0, "BLPOP w 0"),
        Send(0, "PING"),
        Sleep(30),
        Quiet(0),
        Run(1, "RPUSH w v"),
        Read(0),
        Read(0),
        // BLMOVE's push serves the destination's waiter in the same pass.
        Send(0, "BLMOVE s1 s2 LEFT RIGHT 0"),
        Sleep(30),
        Send(2, "BLPOP s2 0"),
        Sleep(30),
        Run(1, "RPUSH s1 e"),
        Read(0),
        Read(2),
        Run(1, "EXISTS s1 s2"),
        // Sorted sets, and the multi-key forms with COUNT.
        Send(0, "BZPOPMIN z 0"),
        Sleep(30),
        Run(1, "ZADD z 3 m 1 n"),
        Read(0),
        Send(0, "BZMPOP 0 1 z2 MAX COUNT 5"),
        Sleep(30),
        Run(1, "ZADD z2 3 m 1 n"),
        Read(0),
        Send(0, "BLMPOP 0 2 l1 l2 RIGHT COUNT 2"),
        Sleep(30),
        Run(1, "RPUSH l2 1 2 3"),
        Read(0),
        // A timeout: a null array.
        Run(0, "BLPOP t 0.05"),
        Run(0, "BRPOPLPUSH t u 0.05"),
        // A key of another type keeps the client blocked; a list later serves it.
        Send(0, "BLPOP wt 0"),
        Sleep(30),
        Run(1, "SET wt s"),
        Quiet(0),
        Run(1, "DEL wt"),
        Run(1, "RPUSH wt ok"),
        Read(0),
        // BLMOVE whose destination turned into another type: unblocked with WRONGTYPE, the element back
        // in the source.
        Run(1, "SET dst x"),
        Send(0, "BLMOVE src dst RIGHT LEFT 0"),
        Sleep(30),
        Run(1, "RPUSH src 1"),
        Read(0),
        Run(1, "LRANGE src 0 -1"),
        // The push a served BRPOPLPUSH makes is a write: it aborts a transaction watching its destination.
        Send(0, "BRPOPLPUSH srcl dstl 0"),
        Sleep(30),
        Run(2, "WATCH dstl"),
        Run(2, "MULTI"),
        Run(2, "PING"),
        Run(1, "LPUSH srcl e"),
        Read(0),
        Run(2, "EXEC"),
        // A list rotated onto itself, and two waiters sharing three pushed elements.
        Send(0, "BLMOVE r r RIGHT LEFT 0"),
        Sleep(30),
        Run(1, "RPUSH r 1"),
        Read(0),
        Send(0, "BLPOP k 0"),
        Sleep(30),
        Send(2, "BLPOP k 0"),
        Sleep(30),
        Run(1, "RPUSH k 1 2 3"),
        Read(0),
        Read(2),
        Run(1, "LRANGE k 0 -1"),
        // A transaction's pushes serve waiters after its last command: its own pop comes first.
        Send(0, "BLPOP tq 0"),
        Sleep(30),
        Run(1, "MULTI"),
        Run(1, "RPUSH tq 1 2"),
        Run(1, "LPOP tq"),
        Run(1, "EXEC"),
        Read(0),
        // Bad timeouts and arguments.
        Run(0, "BLPOP a -1"),
        Run(0, "BLPOP a x"),
        Run(0, "BLPOP a inf"),
        Run(0, "BLPOP a 1e16"),
        Run(0, "BLPOP a nan"),
        Run(0, "BLPOP a \"\""),
        Run(0, "BLMPOP x 1 a LEFT"),
        Run(0, "BLMPOP 0.01 0 a LEFT"),
        Run(0, "BLMPOP 0.01 2 a LEFT"),
        Run(0, "BLMPOP -1 1 a MIDDLE"),
        Run(0, "BLMPOP 0.01 1 a LEFT COUNT 0"),
        Run(0, "BZMPOP 0.01 1 a MIN COUNT -1"),
        Run(0, "BLMOVE a b LEFT UP 0"),
        Run(0, "BLMOVE a b LEFT RIGHT -1"),
        Run(1, "SET str v"),
        Run(0, "BLPOP str 0"),
        Run(0, "BZPOPMIN str 0"),
        Run(0, "BLPOP missing str 0"),
        Run(0, "CLIENT UNBLOCK 999999"),
        Run(0, "CLIENT UNBLOCK 1 FOO"),
        Run(0, "CLIENT UNBLOCK x"),
    ]);
    p.assert_none();
}

/// CLIENT UNBLOCK with TIMEOUT and ERROR, and INFO's count of blocked clients.
#[test]
fn client_unblock_matches_redis() {
    let Some((mut p, _g, _s)) = pairs(2, 2) else {
        return;
    };
    let mut ids = Vec::new();
    for side in [&mut p.redis, &mut p.ours] {
        side[0].cmd(&[b"CLIENT", b"ID"]);
        let Frame::Integer(id) = side[0].read() else {
            panic!("CLIENT ID")
        };
        ids.push(id.to_string());
    }
    for (reason, pop) in [
        ("", "BLPOP u 0"),
        ("TIMEOUT", "BZPOPMIN u 0"),
        ("ERROR", "BLMOVE u v LEFT LEFT 0"),
    ] {
        let mut replies = Vec::new();
        for (side, id) in [&mut p.redis, &mut p.ours].into_iter().zip(&ids) {
            send(&mut side[0], pop);
            std::thread::sleep(Duration::from_millis(30));
            side[1].cmd(&[b"INFO", b"clients"]);
            let Frame::Bulk(info) = side[1].read() else {
                panic!("INFO")
            };
            let blocked = String::from_utf8_lossy(&info).contains("blocked_clients:1");
            let mut cmd = vec![&b"CLIENT"[..], b"UNBLOCK", id.as_bytes()];
            if !reason.is_empty() {
                cmd.push(reason.as_bytes());
            }
            side[1].cmd(&cmd);
            let again = [cmd.clone()];
            replies.push((blocked, side[1].read(), side[0].read()));
            side[1].cmd(&again[0]);
            replies.push((blocked, side[1].read(), Frame::Null));
        }
        assert_eq!(replies[..2], replies[2..], "CLIENT UNBLOCK {reason}");
        assert!(replies[0].0, "INFO counts the blocked client");
    }
}

/// A reader polling from the other event loop while a client runs MULTI / 100 INCRs / EXEC sees only
/// multiples of 100; EXEC's replies are the 100 counts in order.
#[test]
fn readers_never_see_half_a_transaction() {
    let server = common::start_with(|o| o.threads = 2);
    let addr = server.addr();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut r = Raw::connect(addr);
            let mut seen = 0usize;
            while !done.load(Ordering::Relaxed) {
                r.cmd(&[b"GET", b"n"]);
                match r.read() {
                    Frame::Null => {}
                    Frame::Bulk(b) => {
                        let v: u64 = String::from_utf8_lossy(&b).parse().unwrap();
                        assert_eq!(v % 100, 0, "a reader saw {v}: part of a transaction");
                        seen += 1;
                    }
                    f => panic!("GET: {f:?}"),
                }
            }
            seen
        })
    };
    let mut w = Raw::connect(addr);
    for t in 0..200u64 {
        let mut batch = b"*1\r\n$5\r\nMULTI\r\n".to_vec();
        for _ in 0..100 {
            batch.extend_from_slice(b"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n");
        }
        batch.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
        w.send(&batch);
        assert_eq!(w.read(), Frame::Simple("OK".into()));
        for _ in 0..100 {
            assert_eq!(w.read(), Frame::Simple("QUEUED".into()));
        }
        let Frame::Array(replies) = w.read() else {
            panic!("EXEC")
        };
        let want: Vec<Frame> = (1..=100).map(|i| Frame::Integer((t * 100 + i) as i64)).collect();
        assert_eq!(replies, want);
    }
    done.store(true, Ordering::Relaxed);
    let seen = reader.join().unwrap();
    assert!(seen > 0, "the reader ran");
}

/// Clients on both loops increment one counter optimistically (WATCH, GET, MULTI, SET, EXEC, retry on
/// a null EXEC): no increment is lost and none is applied twice.
#[test]
fn optimistic_increments_under_watch_lose_nothing() {
    let server = common::start_with(|o| o.threads = 2);
    let addr = server.addr();
    let (clients, each) = (4, 150);
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                let mut retries = 0;
                for _ in 0..each {
                    loop {
                        c.cmd(&[b"WATCH", b"counter"]).read();
                        c.cmd(&[b"GET", b"counter"]);
                        let v: i64 = match c.read() {
                            Frame::Bulk(b) => String::from_utf8_lossy(&b).parse().unwrap(),
                            _ => 0,
                        };
                        let next = (v + 1).to_string();
                        c.cmd(&[b"MULTI"]).read();
                        c.cmd(&[b"SET", b"counter", next.as_bytes()]).read();
                        match c.cmd(&[b"EXEC"]).read() {
                            Frame::Array(_) => break,
                            Frame::Null => retries += 1,
                            f => panic!("EXEC: {f:?}"),
                        }
                    }
                }
                retries
            })
        })
        .collect();
    let retries: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let mut c = Raw::connect(addr);
    c.cmd(&[b"GET", b"counter"]);
    assert_eq!(c.read(), Frame::Bulk((clients * each).to_string().into()));
    eprintln!("{retries} retries");
}

/// Consumers blocked on both loops, producers pushing from both: every element is received exactly
/// once, and consumers blocked on a key a transaction pushes to are served at its EXEC.
#[test]
fn blocked_clients_are_served_once_across_loops() {
    let server = common::start_with(|o| o.threads = 2);
    let addr = server.addr();
    let (consumers, per) = (4, 200);
    let takers: Vec<_> = (0..consumers)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                let mut got = Vec::new();
                for _ in 0..per {
                    c.cmd(&[b"BLPOP", b"jobs", b"jobs2", b"0"]);
                    match c.read() {
                        Frame::Array(kv) => match &kv[1] {
                            Frame::Bulk(b) => {
                                got.push(String::from_utf8_lossy(&b[..]).parse::<usize>().unwrap())
                            }
                            f => panic!("{f:?}"),
                        },
                        f => panic!("BLPOP: {f:?}"),
                    }
                }
                got
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let producers: Vec<_> = (0..2)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                for i in 0..consumers * per / 2 {
                    let v = (p * consumers * per / 2 + i).to_string();
                    if i % 10 == 0 {
                        // Some through a transaction.
                        c.cmd(&[b"MULTI"]).read();
                        c.cmd(&[b"RPUSH", b"jobs2", v.as_bytes()]).read();
                        c.cmd(&[b"EXEC"]).read();
                    } else {
                        c.cmd(&[b"RPUSH", b"jobs", v.as_bytes()]).read();
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let mut all: Vec<usize> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..consumers * per).collect::<Vec<_>>());
    let mut c = Raw::connect(addr);
    c.cmd(&[b"INFO", b"clients"]);
    let Frame::Bulk(info) = c.read() else { panic!() };
    assert!(String::from_utf8_lossy(&info).contains("blocked_clients:0"));
}

/// A blocked client that disconnects, or is killed, leaves nothing: the next push stays in the list.
#[test]
fn a_blocked_client_that_leaves_leaves_nothing() {
    let server = common::start_with(|o| o.threads = 2);
    let addr = server.addr();
    {
        let mut gone = Raw::connect(addr);
        gone.cmd(&[b"BLPOP", b"gone", b"0"]);
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut killed = Raw::connect(addr);
    killed.cmd(&[b"CLIENT", b"ID"]);
    let Frame::Integer(id) = killed.read() else {
        panic!()
    };
    killed.cmd(&[b"BLPOP", b"gone", b"0"]);
    std::thread::sleep(Duration::from_millis(50));
    let mut c = Raw::connect(addr);
    c.cmd(&[b"CLIENT", b"KILL", b"ID", id.to_string().as_bytes()]);
    assert_eq!(c.read(), Frame::Integer(1));
    assert!(killed.closed());
    std::thread::sleep(Duration::from_millis(50));
    c.cmd(&[b"RPUSH", b"gone", b"v"]).read();
    c.cmd(&[b"LLEN", b"gone"]);
    assert_eq!(c.read(), Frame::Integer(1));
    c.cmd(&[b"INFO", b"clients"]);
    let Frame::Bulk(info) = c.read() else { panic!() };
    assert!(String::from_utf8_lossy(&info).contains("blocked_clients:0"));
}

/// A 100 000-command transaction runs, and is EXECABORTed whole when one command in it is refused.
#[test]
fn a_huge_transaction_runs_or_aborts_whole() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    for bad in [false, true] {
        let mut batch = b"*1\r\n$5\r\nMULTI\r\n".to_vec();
        for i in 0..100_000 {
            if bad && i == 99_999 {
                batch.extend_from_slice(b"*1\r\n$3\r\nSET\r\n");
            } else {
                batch.extend_from_slice(b"*2\r\n$4\r\nINCR\r\n$4\r\nbig1\r\n");
            }
        }
        batch.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
        c.send(&batch);
        c.read();
        for _ in 0..100_000 {
            c.read();
        }
        match c.read() {
            Frame::Array(r) => {
                assert!(!bad);
                assert_eq!(r.len(), 100_000);
            }
            Frame::Error(e) => {
                assert!(bad);
                assert_eq!(e, "EXECABORT Transaction discarded because of previous errors.");
            }
            f => panic!("EXEC: {f:?}"),
        }
        c.cmd(&[b"GET", b"big1"]);
        assert_eq!(c.read(), Frame::Bulk(b"100000".to_vec().into()));
    }
}

fn have_redis_py() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import redis"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var("CI").as_deref() != Ok("true"),
        "python3 with redis-py is not installed, and CI=true: install it (pip install redis)"
    );
    ok
}

/// redis-py's pipeline transactions and `transaction()` with WATCH and retries, threads racing.
const REDIS_PY_SCRIPT: &str = r#"
import sys, threading, redis
port = int(sys.argv[1])
r = redis.Redis(port=port)
r.flushall()
p = r.pipeline(transaction=True)
p.set("a", 1).incr("a").lpush("l", "x").get("a")
assert p.execute() == [True, 2, 1, b"2"]
p = r.pipeline(transaction=True)
p.set("a", 5).lpush("a", "x")
try:
    p.execute()
    raise SystemExit("a failing command inside EXEC must raise")
except redis.ResponseError:
    pass
assert r.get("a") == b"5"
def add(pipe):
    v = int(pipe.get("counter") or 0)
    pipe.multi()
    pipe.set("counter", v + 1)
def worker():
    for _ in range(100):
        r2 = redis.Redis(port=port)
        r2.transaction(add, "counter")
ts = [threading.Thread(target=worker) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
assert r.get("counter") == b"400", r.get("counter")
w = r.pipeline()
w.watch("a")
r.set("a", 6)
w.multi()
w.incr("a")
try:
    w.execute()
    raise SystemExit("a touched WATCH must abort")
except redis.WatchError:
    pass
r.rpush("q", "job")
assert r.blpop(["q"], timeout=1) == (b"q", b"job")
assert r.blpop(["q"], timeout=0.1) is None
print("ok")
"#;

#[test]
fn redis_py_transactions_work() {
    if !have_redis_py() {
        return;
    }
    let server = common::start_with(|o| o.threads = 2);
    let out = std::process::Command::new("python3")
        .args(["-c", REDIS_PY_SCRIPT, &server.addr().port().to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.starts_with(b"ok"),
        "redis-py:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
