//! Pub/sub against a real `redis-server` (skipped without one, failed under `CI=true`): the replies of
//! (P)(UN)SUBSCRIBE, PUBLISH and PUBSUB, the messages, RESP2's subscribed-mode rules and errors, RESP3's
//! push frames, CONFIG's `client-output-buffer-limit`, CLIENT LIST's and INFO's counts, compared frame
//! by frame with several connections to each server. Then what only hopless can be asked: each
//! publisher's order across event loops, a slow subscriber disconnected at its output limit, nothing
//! left behind by a client that goes, a million channels in one SUBSCRIBE, and redis-py's `pubsub()`.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::differ::{split, start_redis, RedisServer};
use common::{bulk, Raw};
use hopless_server::codec::Frame;
use hopless_server::Server;

/// How the frames of a step are compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    Exact,
    /// In any order (a bare UNSUBSCRIBE goes through the channels in the server's hash order).
    Unordered,
    /// An array whose members come in the server's hash order (PUBSUB CHANNELS): compared sorted.
    Members,
    /// Not compared (HELLO names the server and its version).
    Skip,
}

/// Confirmations in the server's order compared as sets: the names sorted, and the counts (which
/// follow the order, n-1 down to 0) sorted apart from them.
fn unorder(frames: &mut [Frame]) {
    let mut counts: Vec<Frame> = frames
        .iter_mut()
        .filter_map(|f| match f {
            Frame::Array(v) | Frame::Push(v) => v.pop(),
            _ => None,
        })
        .collect();
    frames.sort_by_key(|f| format!("{f:?}"));
    counts.sort_by_key(|f| format!("{f:?}"));
    for (f, c) in frames.iter_mut().zip(counts) {
        if let Frame::Array(v) | Frame::Push(v) = f {
            v.push(c);
        }
    }
}

/// `n` connections to each server; step `i` sends to connection `i` of both.
struct Both {
    redis: Vec<Raw>,
    ours: Vec<Raw>,
    diffs: Vec<String>,
    _guard: RedisServer,
    _server: Server,
}

impl Both {
    fn start(n: usize) -> Option<Both> {
        let (guard, raddr) = start_redis()?;
        let server = common::start();
        Some(Both {
            redis: (0..n).map(|_| Raw::connect(raddr)).collect(),
            ours: (0..n).map(|_| Raw::connect(server.addr())).collect(),
            diffs: Vec::new(),
            _guard: guard,
            _server: server,
        })
    }

    /// Sends `cmd` on connection `i` ("": sends nothing, reads what was pushed to it), reads `n`
    /// frames from each server and compares them.
    fn step(&mut self, i: usize, cmd: &str, n: usize, how: How) -> (Vec<Frame>, Vec<Frame>) {
        let args = split(cmd);
        let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let replies = |r: &mut Raw| {
            if !args.is_empty() {
                r.cmd(&args);
            }
            (0..n).map(|_| r.read()).collect::<Vec<_>>()
        };
        let (mut t, mut o) = (replies(&mut self.redis[i]), replies(&mut self.ours[i]));
        if how == How::Unordered {
            unorder(&mut t);
            unorder(&mut o);
        }
        if how == How::Members {
            for f in t.iter_mut().chain(o.iter_mut()) {
                if let Frame::Array(v) = f {
                    v.sort_by_key(|x| format!("{x:?}"));
                }
            }
        }
        if how != How::Skip && t != o {
            self.diffs
                .push(format!("[{i}] {cmd}\n  redis:   {t:?}\n  hopless: {o:?}"));
        }
        (t, o)
    }

    /// Runs `(connection, command, frames to read)` lines, compared exactly.
    fn script(&mut self, lines: &[(usize, &str, usize)]) {
        for &(i, cmd, n) in lines {
            self.step(i, cmd, n, How::Exact);
        }
    }

    /// Compares `key:value` fields of a text reply (CLIENT LIST, INFO) sent on connection `i`.
    fn fields(&mut self, i: usize, cmd: &str, names: &[&str]) {
        let (t, o) = self.step(i, cmd, 1, How::Skip);
        let pick = |f: &Frame, sep: char| -> Vec<String> {
            let text = match f {
                Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                Frame::Verbatim(_, b) => String::from_utf8_lossy(b).into_owned(),
                other => format!("{other:?}"),
            };
            text.split([' ', '\r', '\n'])
                .filter(|w| names.iter().any(|n| w.starts_with(&format!("{n}{sep}"))))
                .map(str::to_string)
                .collect()
        };
        let sep = if cmd.starts_with("INFO") { ':' } else { '=' };
        let (t, o) = (pick(&t[0], sep), pick(&o[0], sep));
        if t != o || t.len() != names.len() {
            self.diffs.push(format!(
                "[{i}] {cmd} {names:?}\n  redis:   {t:?}\n  hopless: {o:?}"
            ));
        }
    }

    fn assert_none(&self) {
        assert!(
            self.diffs.is_empty(),
            "{} differences:\n{}",
            self.diffs.len(),
            self.diffs.join("\n")
        );
    }
}

/// Subscriber 0, publisher 1, in RESP2: replies, messages, introspection, subscribed mode's errors.
#[test]
fn resp2_replies_messages_and_errors_match_redis() {
    let Some(mut b) = Both::start(3) else { return };
    b.script(&[
        (1, "PUBSUB NUMPAT", 1),
        (1, "PUBSUB CHANNELS", 1),
        (0, "SUBSCRIBE a b a", 3),
        (0, "PSUBSCRIBE x* a", 2),
        // Subscribed mode: only (P)(UN)SUBSCRIBE, PING, QUIT, RESET; arity and unknown commands first.
        (0, "GET x", 1),
        (0, "SET x 1", 1),
        (0, "PUBSUB NUMPAT", 1),
        (0, "CONFIG GET maxmemory", 1),
        (0, "COMMAND", 1),
        (0, "HELLO 3", 1),
        (0, "PUBLISH a b", 1),
        (0, "FOOBAR x", 1),
        (0, "GET", 1),
        (0, "PING", 1),
        (0, "PING hi", 1),
        (0, "PING a b", 1),
        (0, "SUBSCRIBE", 1),
        (1, "GET x", 1),
        // Messages: the channel's, then each matching pattern's.
        (1, "PUBLISH a hello", 1),
        (0, "", 2),
        (1, "PUBLISH xyz m", 1),
        (0, "", 1),
        (1, "PUBLISH nobody m", 1),
        (1, "PUBLISH b \"\"", 1),
        (0, "", 1),
        (1, "PUBSUB NUMSUB a b c", 1),
        (1, "PUBSUB NUMSUB", 1),
        (1, "PUBSUB NUMPAT", 1),
        (1, "PUBSUB CHANNELS a*", 1),
        (1, "PUBSUB CHANNELS a b", 1),
        (1, "PUBSUB channels a b", 1),
        (1, "PUBSUB NUMPAT x", 1),
        (1, "PUBSUB HELP", 1),
        (1, "PUBSUB HELP x", 1),
        (1, "PUBSUB FOO", 1),
        (1, "PUBSUB", 1),
        (1, "PUBSUB SHARDCHANNELS", 1),
        (1, "PUBSUB SHARDCHANNELS a b", 1),
        (1, "PUBSUB SHARDNUMSUB a", 1),
        (1, "PUBLISH a", 1),
        (1, "PSUBSCRIBE", 1),
        // Not subscribed: unsubscribing answers with a nil name, or the name, and a count of 0.
        (1, "UNSUBSCRIBE", 1),
        (1, "PUNSUBSCRIBE", 1),
        (1, "UNSUBSCRIBE x", 1),
        (1, "PUNSUBSCRIBE x y", 2),
        (1, "PING", 1),
        // A second subscriber of the same pattern: NUMPAT counts patterns, not subscriptions.
        (2, "PSUBSCRIBE x*", 1),
        (1, "PUBSUB NUMPAT", 1),
        (1, "PUBLISH xa m", 1),
        (0, "", 1),
        (2, "", 1),
        (2, "PUNSUBSCRIBE x*", 1),
        (2, "PING", 1),
    ]);
    b.step(1, "PUBSUB CHANNELS", 1, How::Members);
    b.step(1, "PUBSUB CHANNELS [ab]", 1, How::Members);
    b.fields(1, "INFO stats", &["pubsub_channels", "pubsub_patterns"]);
    b.script(&[
        (0, "UNSUBSCRIBE b", 1),
        (0, "UNSUBSCRIBE", 1),
        (0, "UNSUBSCRIBE", 1),
        (0, "UNSUBSCRIBE nothere", 1),
    ]);
    b.step(0, "PUNSUBSCRIBE", 2, How::Unordered);
    b.script(&[
        // Out of subscribed mode.
        (0, "PING", 1),
        (0, "PUNSUBSCRIBE", 1),
        (0, "GET x", 1),
        (0, "SUBSCRIBE c d", 2),
        (0, "RESET", 1),
        (0, "PING", 1),
        (1, "PUBSUB NUMSUB c d", 1),
        (1, "PUBLISH c m", 1),
        (0, "SUBSCRIBE c", 1),
        (0, "QUIT", 1),
    ]);
    b.fields(1, "INFO stats", &["pubsub_channels", "pubsub_patterns"]);
    b.assert_none();
}

/// RESP3: confirmations and messages are push frames, any command runs while subscribed, and a
/// message to oneself comes before PUBLISH's reply.
#[test]
fn resp3_push_frames_match_redis() {
    let Some(mut b) = Both::start(2) else { return };
    b.step(0, "HELLO 3", 1, How::Skip);
    b.script(&[
        (0, "SUBSCRIBE a b", 2),
        (0, "GET x", 1),
        (0, "PING", 1),
        (0, "PING hi", 1),
        (0, "PUBSUB NUMSUB a", 1),
        (1, "PUBLISH a hi", 1),
        (0, "", 1),
        (0, "PSUBSCRIBE *", 1),
        (0, "PUBLISH a self", 3),
        (0, "UNSUBSCRIBE a", 1),
        (0, "UNSUBSCRIBE", 1),
        (0, "UNSUBSCRIBE", 1),
        (0, "PUNSUBSCRIBE", 1),
        (0, "PUNSUBSCRIBE", 1),
        // Back to RESP2 while subscribed: subscribed mode's rules apply again.
        (0, "SUBSCRIBE z", 1),
    ]);
    b.step(0, "HELLO 2", 1, How::Skip);
    b.script(&[(0, "GET x", 1), (0, "PING", 1), (0, "UNSUBSCRIBE", 1)]);
    b.assert_none();
}

/// CONFIG's `client-output-buffer-limit`, CLIENT LIST's `flags`, `sub` and `psub`.
#[test]
fn config_and_client_list_match_redis() {
    let Some(mut b) = Both::start(2) else { return };
    b.script(&[
        (1, "CONFIG GET client-output-buffer-limit", 1),
        (
            1,
            "CONFIG SET client-output-buffer-limit \"pubsub 1mb 512kb 10\"",
            1,
        ),
        (1, "CONFIG GET client-output-buffer-limit", 1),
        (
            1,
            "CONFIG SET client-output-buffer-limit \"normal 1 2 3 replica 4 5 6\"",
            1,
        ),
        (1, "CONFIG GET client-output-buffer-limit", 1),
        (1, "CONFIG SET client-output-buffer-limit \"\"", 1),
        (1, "CONFIG SET client-output-buffer-limit \"pubsub 1 2\"", 1),
        (1, "CONFIG SET client-output-buffer-limit \"foo 1 2 3\"", 1),
        (
            1,
            "CONFIG SET client-output-buffer-limit \"pubsub 1 2 3 foo 1 2 3\"",
            1,
        ),
        (1, "CONFIG SET client-output-buffer-limit \"pubsub x 2 3\"", 1),
        (1, "CONFIG SET client-output-buffer-limit \"pubsub 1 2 -1\"", 1),
        (1, "CONFIG SET client-output-buffer-limit \" pubsub 1 2 3\"", 1),
        (1, "CONFIG GET client-output-buffer-limit", 1),
        (
            1,
            "CONFIG SET client-output-buffer-limit \"normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60\"",
            1,
        ),
        (1, "CONFIG GET client-output-buffer-limit", 1),
    ]);
    let id = |r: &mut Raw| match r.cmd(&[b"CLIENT", b"ID"]).read() {
        Frame::Integer(i) => i,
        other => panic!("CLIENT ID: {other:?}"),
    };
    let (tid, oid) = (id(&mut b.redis[0]), id(&mut b.ours[0]));
    let fields = ["flags", "sub", "psub"];
    let list = |b: &mut Both| {
        let cmd_t = format!("CLIENT LIST ID {tid}");
        let cmd_o = format!("CLIENT LIST ID {oid}");
        // The ids differ: ask each server for its own subscriber.
        let t = b.redis[1]
            .cmd(&split(&cmd_t).iter().map(|a| &a[..]).collect::<Vec<_>>())
            .read();
        let o = b.ours[1]
            .cmd(&split(&cmd_o).iter().map(|a| &a[..]).collect::<Vec<_>>())
            .read();
        let pick = |f: Frame| match f {
            Frame::Bulk(s) => String::from_utf8_lossy(&s)
                .split_whitespace()
                .filter(|w| fields.iter().any(|n| w.starts_with(&format!("{n}="))))
                .map(str::to_string)
                .collect::<Vec<_>>(),
            other => panic!("CLIENT LIST: {other:?}"),
        };
        let (t, o) = (pick(t), pick(o));
        assert_eq!(t.len(), 3, "{t:?}");
        assert_eq!(t, o);
    };
    list(&mut b);
    b.script(&[(0, "SUBSCRIBE a b", 2), (0, "PSUBSCRIBE c*", 1)]);
    list(&mut b);
    // A subscriber is of type pubsub, no longer normal.
    let lines = |b: &mut Both, cmd: &str| {
        let (t, o) = b.step(1, cmd, 1, How::Skip);
        let count = |f: &Frame| match f {
            Frame::Bulk(s) => s.split(|&c| c == b'\n').filter(|l| !l.is_empty()).count(),
            other => panic!("{cmd}: {other:?}"),
        };
        assert_eq!((count(&t[0]), count(&o[0])), (1, 1), "{cmd}");
    };
    lines(&mut b, "CLIENT LIST TYPE pubsub");
    lines(&mut b, "CLIENT LIST TYPE normal");
    b.script(&[
        (1, "CLIENT LIST TYPE foo", 1),
        (1, "CLIENT KILL TYPE foo", 1),
        (1, "CLIENT KILL TYPE master", 1),
    ]);
    b.step(0, "UNSUBSCRIBE", 2, How::Unordered);
    b.script(&[(0, "PUNSUBSCRIBE", 1)]);
    list(&mut b);
    b.script(&[(0, "SUBSCRIBE a", 1), (1, "CLIENT KILL TYPE pubsub", 1)]);
    eventually(
        &mut b.ours[1],
        &[b"PUBSUB", b"NUMSUB", b"a"],
        Frame::Array(vec![bulk("a"), Frame::Integer(0)]),
    );
    assert_closed(&mut b.ours[0]);
    b.assert_none();
}

/// Frames of one message: `message` or `pmessage`, the channel, the payload.
fn message(f: Frame) -> (String, String) {
    let v = match f {
        Frame::Array(v) | Frame::Push(v) => v,
        other => panic!("not a message: {other:?}"),
    };
    let text = |f: &Frame| match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a bulk string: {other:?}"),
    };
    (text(&v[0]), text(v.last().unwrap()))
}

/// Two publishers on connections of their own (with two loops, on both of them), 1000 numbered
/// messages each, half of them pipelined: the subscriber sees each one's messages in order, by channel
/// and by pattern.
fn publishers_keep_their_order(threads: usize) {
    let server = common::start_with(|o| o.threads = threads);
    let addr = server.addr();
    let mut sub = Raw::connect(addr);
    sub.cmd(&[b"SUBSCRIBE", b"ch"]).read();
    sub.cmd(&[b"PSUBSCRIBE", b"c*"]).read();
    let publishers: Vec<_> = (0..2)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                let mut i = 0;
                while i < 1000 {
                    // Alternately one at a time and a pipeline of 50.
                    let batch = if (i / 50) % 2 == 0 { 1 } else { 50 };
                    let mut req = Vec::new();
                    for k in i..i + batch {
                        let m = format!("{p}:{k}");
                        req.extend_from_slice(
                            format!("*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n${}\r\n{m}\r\n", m.len()).as_bytes(),
                        );
                    }
                    c.send(&req);
                    for _ in 0..batch {
                        assert_eq!(c.read(), Frame::Integer(2));
                    }
                    i += batch;
                }
            })
        })
        .collect();
    let mut next = [[0u32; 2]; 2]; // [kind][publisher]
    for _ in 0..4000 {
        let (kind, payload) = message(sub.read());
        let k = usize::from(kind == "pmessage");
        let (p, n) = payload.split_once(':').unwrap();
        let (p, n): (usize, u32) = (p.parse().unwrap(), n.parse().unwrap());
        assert_eq!(n, next[k][p], "{kind} from publisher {p} out of order");
        next[k][p] += 1;
    }
    for p in publishers {
        p.join().unwrap();
    }
    assert_eq!(next, [[1000, 1000], [1000, 1000]]);
}

#[test]
fn each_publishers_order_is_kept_on_one_loop() {
    publishers_keep_their_order(1);
}

#[test]
fn each_publishers_order_is_kept_across_two_loops() {
    publishers_keep_their_order(2);
}

/// Polls `cmd` on `c` until it answers `want` (a few seconds at most).
fn eventually(c: &mut Raw, cmd: &[&[u8]], want: Frame) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = c.cmd(cmd).read();
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{cmd:?}: {got:?}, not {want:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn info_field(c: &mut Raw, name: &str) -> String {
    let Frame::Bulk(text) = c.cmd(&[b"INFO", b"stats"]).read() else {
        panic!("INFO")
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Reads what the server still sends until it closes the connection: every frame must be a message,
/// in order; a connection still open after 10 s fails.
fn read_until_closed(sub: &mut Raw) -> usize {
    sub.sock.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut n = 0;
    while let Some(f) = sub.try_read() {
        let (kind, payload) = message(f);
        assert_eq!(kind, "message");
        assert_eq!(payload.len(), 10_000);
        n += 1;
    }
    assert_closed(sub);
    n
}

/// The server closed the connection (`try_read` also gives up on a read timeout: this tells them
/// apart).
fn assert_closed(c: &mut Raw) {
    use std::io::Read;
    match c.sock.read(&mut [0u8; 1]) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the connection is still open: {other:?}"),
    }
}

/// A 100 MB message to a subscriber: past the 32mb hard limit at once, so the subscriber is
/// disconnected (as Redis does, reading or not), the message is not kept, and the publisher is
/// unharmed.
#[test]
fn a_huge_message_disconnects_its_subscriber_not_the_publisher() {
    let server = common::start();
    let mut sub = Raw::connect(server.addr());
    let mut other = Raw::connect(server.addr());
    sub.cmd(&[b"SUBSCRIBE", b"ch"]).read();
    other.cmd(&[b"SUBSCRIBE", b"quiet"]).read();
    let mut publ = Raw::connect(server.addr());
    let big = vec![b'x'; 100 << 20];
    assert_eq!(publ.cmd(&[b"PUBLISH", b"ch", &big]).read(), Frame::Integer(1));
    eventually(
        &mut publ,
        &[b"PUBSUB", b"NUMSUB", b"ch"],
        Frame::Array(vec![bulk("ch"), Frame::Integer(0)]),
    );
    sub.sock.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(
        sub.try_read(),
        None,
        "the message was not sent, the connection closed"
    );
    assert_closed(&mut sub);
    assert_eq!(
        info_field(&mut publ, "client_output_buffer_limit_disconnections"),
        "1"
    );
    assert_eq!(publ.cmd(&[b"SET", b"k", b"v"]).read(), Frame::Simple("OK".into()));
    // The other subscriber is still there.
    assert_eq!(publ.cmd(&[b"PUBLISH", b"quiet", b"m"]).read(), Frame::Integer(1));
    assert_eq!(message(other.read()), ("message".into(), "m".into()));
}

/// A subscriber that stops reading: its messages pile up in its outbox until the pubsub class's hard
/// limit, then it is disconnected; one that reads the same flood stays and gets every message.
#[test]
fn a_subscriber_that_does_not_read_is_disconnected_at_the_limit() {
    let server = common::start();
    let addr = server.addr();
    let mut slow = Raw::connect(addr);
    slow.cmd(&[b"SUBSCRIBE", b"ch"]).read();
    // How many messages the reader has read: the publisher stays within 1000 (10 MB) of it, so that
    // a reader slowed by a busy machine is not taken for one that does not read.
    let progress = Arc::new(AtomicUsize::new(0));
    let read = progress.clone();
    let reader = std::thread::spawn(move || {
        let mut fast = Raw::connect(addr);
        fast.cmd(&[b"SUBSCRIBE", b"ch"]).read();
        let mut n = 0;
        loop {
            let (_, payload) = message(fast.read());
            if payload == "end" {
                return n;
            }
            assert_eq!(&payload[..6], format!("{n:06}"));
            n += 1;
            read.store(n, Ordering::Relaxed);
        }
    });
    let mut publ = Raw::connect(addr);
    eventually(
        &mut publ,
        &[b"PUBSUB", b"NUMSUB", b"ch"],
        Frame::Array(vec![bulk("ch"), Frame::Integer(2)]),
    );
    // 10 000 messages of 10 000 bytes: 100 MB, three times the 32 MB limit.
    let total = 10_000;
    for batch in 0..total / 100 {
        while batch * 100 > progress.load(Ordering::Relaxed) + 1000 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut req = Vec::new();
        for i in batch * 100..(batch + 1) * 100 {
            let m = format!("{i:06}{}", "y".repeat(10_000 - 6));
            write!(req, "*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n${}\r\n{m}\r\n", m.len()).unwrap();
        }
        publ.send(&req);
        for _ in 0..100 {
            assert!(matches!(publ.read(), Frame::Integer(1 | 2)));
        }
    }
    publ.cmd(&[b"PUBLISH", b"ch", b"end"]).read();
    assert_eq!(reader.join().unwrap(), total);
    eventually(
        &mut publ,
        &[b"PUBSUB", b"NUMSUB", b"ch"],
        Frame::Array(vec![bulk("ch"), Frame::Integer(0)]),
    );
    let delivered = read_until_closed(&mut slow);
    assert!(delivered < total / 2, "{delivered} of {total} delivered");
    assert_eq!(
        info_field(&mut publ, "client_output_buffer_limit_disconnections"),
        "1"
    );
}

/// A client that disconnects, or is killed, leaves no channel, pattern or count behind.
#[test]
fn a_client_that_goes_leaves_nothing_behind() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    for round in 0..2 {
        let mut sub = Raw::connect(server.addr());
        let id = match sub.cmd(&[b"CLIENT", b"ID"]).read() {
            Frame::Integer(i) => i,
            other => panic!("{other:?}"),
        };
        let mut req: Vec<Vec<u8>> = vec![b"SUBSCRIBE".to_vec()];
        req.extend((0..100).map(|i| format!("ch{i}").into_bytes()));
        sub.cmd(&req.iter().map(|a| &a[..]).collect::<Vec<_>>());
        for _ in 0..100 {
            sub.read();
        }
        sub.cmd(&[b"PSUBSCRIBE", b"p*", b"q*"]);
        sub.read();
        sub.read();
        assert_eq!(
            c.cmd(&[b"PUBSUB", b"NUMSUB", b"ch7"]).read(),
            Frame::Array(vec![bulk("ch7"), Frame::Integer(1)])
        );
        assert_eq!(info_field(&mut c, "pubsub_channels"), "100");
        if round == 0 {
            drop(sub);
        } else {
            let id = id.to_string();
            c.cmd(&[b"CLIENT", b"KILL", b"ID", id.as_bytes()]).read();
        }
        eventually(&mut c, &[b"PUBSUB", b"NUMPAT"], Frame::Integer(0));
        eventually(&mut c, &[b"PUBSUB", b"CHANNELS"], Frame::Array(vec![]));
        assert_eq!(
            c.cmd(&[b"PUBSUB", b"NUMSUB", b"ch7"]).read(),
            Frame::Array(vec![bulk("ch7"), Frame::Integer(0)])
        );
        assert_eq!(c.cmd(&[b"PUBLISH", b"ch7", b"m"]).read(), Frame::Integer(0));
        assert_eq!(info_field(&mut c, "pubsub_channels"), "0");
        assert_eq!(info_field(&mut c, "pubsub_patterns"), "0");
    }
}

/// SUBSCRIBE to a million channels in one command: a million confirmations, counted one by one;
/// UNSUBSCRIBE of them all; the same again, and a disconnect that removes them all.
#[test]
fn a_million_channels_in_one_subscribe() {
    let server = common::start();
    let n = 1_000_000;
    let mut req = format!("*{}\r\n$9\r\nSUBSCRIBE\r\n", n + 1).into_bytes();
    for i in 0..n {
        let ch = format!("c{i}");
        write!(req, "${}\r\n{ch}\r\n", ch.len()).unwrap();
    }
    let mut c = Raw::connect(server.addr());
    let started = Instant::now();
    let mut sub = Raw::connect(server.addr());
    // Seconds on a loaded machine: more than `Raw`'s 30 s read timeout allows for.
    sub.sock.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    for round in 0..2 {
        sub.send(&req);
        for i in 0..n {
            let Frame::Array(v) = sub.read() else {
                panic!("not a confirmation")
            };
            assert_eq!(v[2], Frame::Integer(i as i64 + 1));
        }
        assert_eq!(info_field(&mut c, "pubsub_channels"), n.to_string());
        assert_eq!(
            c.cmd(&[b"PUBSUB", b"NUMSUB", b"c0", b"c999999"]).read(),
            Frame::Array(vec![
                bulk("c0"),
                Frame::Integer(1),
                bulk("c999999"),
                Frame::Integer(1)
            ])
        );
        if round == 0 {
            sub.cmd(&[b"UNSUBSCRIBE"]);
            for i in 0..n {
                let Frame::Array(v) = sub.read() else {
                    panic!("not a confirmation")
                };
                assert_eq!(v[2], Frame::Integer((n - i - 1) as i64));
            }
            assert_eq!(sub.cmd(&[b"PING"]).read(), Frame::Simple("PONG".into()));
            assert_eq!(info_field(&mut c, "pubsub_channels"), "0");
        }
    }
    drop(sub);
    let deadline = Instant::now() + Duration::from_secs(30);
    while info_field(&mut c, "pubsub_channels") != "0" {
        assert!(Instant::now() < deadline, "channels left behind");
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("a million channels, twice: {:?}", started.elapsed());
}

/// Whether python3 with redis-py is there: without it the test is skipped, but fails under CI.
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

/// redis-py's `pubsub()`: subscribe, psubscribe, get_message, a handler in `run_in_thread`,
/// unsubscribe, close; in RESP2 and RESP3; the same script against Redis first, so a failure is ours.
const REDIS_PY_SCRIPT: &str = r#"
import sys, time, redis
port, proto = int(sys.argv[1]), int(sys.argv[2])
r = redis.Redis(port=port, protocol=proto)
p = r.pubsub()
p.subscribe("news", "sport")
p.psubscribe("n*")
got = [p.get_message(timeout=5) for _ in range(3)]
assert [(m["type"], m["channel"], m["data"]) for m in got] == [
    ("subscribe", b"news", 1), ("subscribe", b"sport", 2), ("psubscribe", b"n*", 3)], got
assert r.publish("news", "hello") == 2
got = [p.get_message(timeout=5) for _ in range(2)]
assert [(m["type"], m["pattern"], m["channel"], m["data"]) for m in got] == [
    ("message", None, b"news", b"hello"), ("pmessage", b"n*", b"news", b"hello")], got
assert r.pubsub_numsub("news", "none") == [(b"news", 1), (b"none", 0)]
assert r.pubsub_numpat() == 1
assert sorted(r.pubsub_channels()) == [b"news", b"sport"]
p.ping()
assert p.get_message(timeout=5)["type"] == "pong"
received = []
q = r.pubsub()
q.subscribe(**{"events": lambda m: received.append(m["data"])})
worker = q.run_in_thread(sleep_time=0.01)
deadline = time.time() + 10
while r.pubsub_numsub("events") != [(b"events", 1)]:
    assert time.time() < deadline
    time.sleep(0.01)
for i in range(200):
    r.publish("events", str(i))
while len(received) < 200:
    assert time.time() < deadline, len(received)
    time.sleep(0.01)
assert received == [str(i).encode() for i in range(200)]
worker.stop()
p.unsubscribe()
p.punsubscribe()
got = [p.get_message(timeout=5) for _ in range(3)]
assert sorted(m["type"] for m in got) == ["punsubscribe", "unsubscribe", "unsubscribe"], got
assert got[-1]["data"] == 0, got
p.close()
q.close()
while r.pubsub_numsub("news", "events") != [(b"news", 0), (b"events", 0)] or r.pubsub_numpat() != 0:
    assert time.time() < deadline
    time.sleep(0.01)
print("ok")
"#;

fn run_redis_py(addr: SocketAddr, proto: u8) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            REDIS_PY_SCRIPT,
            &addr.port().to_string(),
            &proto.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.starts_with(b"ok"),
        "redis-py against {addr}, RESP{proto}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn redis_py_pubsub_works() {
    if !have_redis_py() {
        return;
    }
    let Some((_guard, raddr)) = start_redis() else {
        return;
    };
    let server = common::start();
    for proto in [2, 3] {
        run_redis_py(raddr, proto);
        run_redis_py(server.addr(), proto);
    }
}

/// CLIENT REPLY OFF, SKIP and ON against Redis: the replies dropped (errors and a blocked command's
/// timeout too) and the ones kept, and pub/sub frames that go out whatever the mode.
#[test]
fn client_reply_modes_match_redis() {
    let Some((_guard, raddr)) = start_redis() else {
        return;
    };
    let server = common::start();
    let run = |addr: SocketAddr| -> Vec<Frame> {
        let (mut c, mut p) = (Raw::connect(addr), Raw::connect(addr));
        let until = |c: &mut Raw, marker: &str, got: &mut Vec<Frame>| loop {
            let f = c.read();
            let end = f == bulk(marker);
            got.push(f);
            if end {
                break;
            }
        };
        let mut got = Vec::new();
        for cmd in [
            "CLIENT REPLY OFF",
            "SET a 1",
            "GET a",
            "NOSUCHCOMMAND x",
            "CLIENT REPLY SKIP",
            "GET a",
            "CLIENT REPLY ON",
            "GET a",
            "CLIENT REPLY SKIP",
            "GET a",
            "GET a",
            "CLIENT REPLY SKIP",
            "CLIENT REPLY ON",
            "CLIENT REPLY SKIP",
            "BLPOP nosuchlist 0.05",
            "ECHO first",
        ] {
            let a = split(cmd);
            c.cmd(&a.iter().map(|x| &x[..]).collect::<Vec<_>>());
        }
        until(&mut c, "first", &mut got);
        c.cmd(&[b"CLIENT", b"REPLY", b"OFF"]).cmd(&[b"SUBSCRIBE", b"ch"]);
        got.push(c.read());
        got.push(p.cmd(&[b"PUBLISH", b"ch", b"hello"]).read());
        got.push(c.read());
        c.cmd(&[b"UNSUBSCRIBE", b"ch"])
            .cmd(&[b"CLIENT", b"REPLY", b"ON"])
            .cmd(&[b"CLIENT", b"REPLY", b"MAYBE"])
            .cmd(&[b"ECHO", b"second"]);
        until(&mut c, "second", &mut got);
        got
    };
    let (theirs, ours) = (run(raddr), run(server.addr()));
    assert_eq!(theirs, ours, "Redis's replies first");
}
