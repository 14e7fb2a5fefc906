//! Keyspace events against a real `redis-server` (skipped without one, failed under `CI=true`): a
//! subscriber to every keyspace and keyevent channel on each server, a script of commands covering
//! each event Redis publishes (and the commands that publish none), the messages compared one by one
//! after each command; then the classes one at a time, `new` and `keymiss`, expiry, a blocked pop
//! served later, and CONFIG's text. Eviction is tested on hopless alone (the two servers count memory
//! differently).

mod common;

use std::time::{Duration, Instant};

use common::differ::{split, Differ, Order};
use common::Raw;
use hopless_server::codec::Frame;

/// A subscriber on each server.
struct Listeners {
    redis: Raw,
    ours: Raw,
}

impl Listeners {
    fn new(d: &Differ, pattern: &str) -> Listeners {
        let sub = |addr| {
            let mut r = Raw::connect(addr);
            r.cmd(&[b"PSUBSCRIBE", pattern.as_bytes()]).read();
            r
        };
        Listeners {
            redis: sub(d.redis.sock.peer_addr().unwrap()),
            ours: sub(d.ours.sock.peer_addr().unwrap()),
        }
    }

    /// The messages each subscriber has been sent so far (a PING's answer marks the end).
    fn take(&mut self) -> (Vec<Frame>, Vec<Frame>) {
        let drain = |r: &mut Raw| {
            r.cmd(&[b"PING", b"end"]);
            let mut got = Vec::new();
            loop {
                let f = r.read();
                if let Frame::Array(v) = &f {
                    if v.first().is_some_and(|x| *x == common::bulk("pong")) {
                        return got;
                    }
                }
                got.push(f);
            }
        };
        (drain(&mut self.redis), drain(&mut self.ours))
    }
}

/// Runs each line on both servers, then compares the replies and the messages it caused.
fn compare(d: &mut Differ, l: &mut Listeners, lines: &[&str]) {
    for line in lines {
        let args = split(line);
        let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        d.run_args(&args, Order::Exact);
        let (theirs, ours) = l.take();
        if theirs != ours {
            d.diffs
                .push(format!("{line}\n  redis:   {theirs:?}\n  hopless: {ours:?}"));
        }
    }
}

const EVERY_EVENT: &[&str] = &[
    "SET s1 v",
    "SET s1 v EX 100",
    "SET s1 v NX",
    "SET s2 v XX",
    "SET s2 v NX PX 100000",
    "SET s1 w KEEPTTL GET",
    "SETNX s1 v",
    "SETNX s3 v",
    "SETEX s4 100 v",
    "PSETEX s5 100000 v",
    "GETSET s1 x",
    "MSET m1 1 m2 2",
    "MSETNX m1 1 m3 3",
    "MSETNX m4 1 m5 3",
    "GETDEL m4",
    "GETDEL m4",
    "GETEX m5 EX 100",
    "GETEX m5 PERSIST",
    "GETEX m5 PERSIST",
    "GETEX m5",
    "GETEX m5 PXAT 1",
    "APPEND a x",
    "SETRANGE a 3 y",
    "SETRANGE a 0 ''",
    "SETRANGE nokey 0 ''",
    "INCR n",
    "DECRBY n 5",
    "INCRBYFLOAT n 1.5",
    "SETBIT b 3 1",
    "BITFIELD b GET u8 0",
    "BITFIELD b SET u8 0 7",
    "BITOP OR b2 b a",
    "BITOP AND b2 nokey1 nokey2",
    "DEL s1 s1 nokey s2",
    "UNLINK s3",
    "EXPIRE m1 100",
    "EXPIRE nokey 100",
    "PEXPIRE m1 100000 NX",
    "PERSIST m1",
    "PERSIST m1",
    "EXPIRE m1 -1",
    "RENAME m2 r1",
    "RENAME r1 r1",
    "RENAMENX r1 m3",
    "SET r2 v",
    "RENAMENX r2 r3",
    "COPY r3 c1",
    "COPY r3 c1",
    "LPUSH l a b c",
    "RPUSH l d",
    "LPUSHX nol a",
    "RPUSHX l e",
    "LINSERT l BEFORE a x",
    "LINSERT l BEFORE nothere x",
    "LSET l 0 y",
    "LPOP l",
    "RPOP l 2",
    "LREM l 0 x",
    "LREM l 0 nothere",
    "LTRIM l 0 0",
    "LTRIM nol 0 0",
    "RPUSH l2 1 2",
    "LMOVE l2 l3 LEFT RIGHT",
    "RPOPLPUSH l2 l3",
    "LMOVE l3 l3 LEFT LEFT",
    "LMPOP 2 nol l3 RIGHT COUNT 5",
    "RPUSH l4 1",
    "BLPOP l4 0",
    "BRPOP nol 0.01",
    "HSET h f v g w",
    "HMSET h f v",
    "HSETNX h f v",
    "HSETNX h z v",
    "HINCRBY h n 1",
    "HINCRBYFLOAT h n 1.5",
    "HDEL h f nothere",
    "HDEL h g n z",
    "SADD st a b c",
    "SADD st a",
    "SREM st a b",
    "SPOP st",
    "SADD st b",
    "SADD st2 x",
    "SMOVE st st2 x",
    "SMOVE st st2 b",
    "SMOVE st2 st2 x",
    "SMOVE st2 st3 x",
    "SADD st3 q",
    "SINTERSTORE d1 st3 st3",
    "SUNIONSTORE d1 nokey",
    "SDIFFSTORE d2 nokey",
    "ZADD z 1 a 2 b",
    "ZADD z 1 a",
    "ZADD z 3 a",
    "ZADD z XX 4 c",
    "ZADD z INCR 1 a",
    "ZADD z NX INCR 1 a",
    "ZINCRBY z 1 b",
    "ZREM z nothere",
    "ZADD z 5 c 6 d 7 e",
    "ZREM z a",
    "ZREMRANGEBYSCORE z 5 5",
    "ZREMRANGEBYRANK z 0 0",
    "ZREMRANGEBYLEX z - +",
    "ZADD z 1 a 2 b 3 c",
    "ZPOPMIN z",
    "ZPOPMAX z 5",
    "ZADD z 1 a 2 b",
    "BZPOPMIN z 0",
    "ZMPOP 1 z MAX",
    "ZADD z1 1 a",
    "ZUNIONSTORE zd 1 z1",
    "ZINTERSTORE zd 1 nokey",
    "ZADD z1 2 b",
    "ZRANGESTORE zd2 z1 0 -1",
    "ZDIFFSTORE zd2 1 nokey",
    "XADD x 1-1 f v",
    "XADD x MAXLEN 1 2-1 f v",
    "XADD x NOMKSTREAM 3-1 f v",
    "XADD nox NOMKSTREAM 3-1 f v",
    "XTRIM x MAXLEN 5",
    "XDEL x 2-1",
    "XDEL x 9-9",
    "XSETID x 5-5",
    "XGROUP CREATE x g $",
    "XGROUP CREATE x2 g $ MKSTREAM",
    "XGROUP SETID x g 0",
    "XGROUP CREATECONSUMER x g c1",
    "XGROUP CREATECONSUMER x g c1",
    "XGROUP DELCONSUMER x g c1",
    "XGROUP DESTROY x g",
    "XGROUP DESTROY x g",
    "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOADD g 13.361389 38.115556 Palermo",
    "GEOADD g XX CH 13.361389 38.2 Palermo",
    "GEOSEARCHSTORE gd g FROMLONLAT 15 37 BYRADIUS 200 km",
    "GEOSEARCHSTORE gd g FROMLONLAT 0 0 BYRADIUS 1 km",
    "GEORADIUS g 15 37 200 km STORE gd2",
    "GEORADIUS g 15 37 200 km STOREDIST gd3",
    "PFADD hl a b",
    "PFADD hl a",
    "PFADD hl2",
    "PFCOUNT hl",
    "PFMERGE hl3 hl hl2",
    "RPUSH sl 3 1 2",
    "SORT sl STORE sd",
    "SORT nol STORE sd",
    "SORT sl",
    "GET s1",
    "LRANGE l 0 -1",
    "MULTI",
    "SET t1 v",
    "LPUSH t2 v",
    "EXEC",
    "EVAL \"redis.call('set', KEYS[1], 'v'); redis.call('del', KEYS[1])\" 1 e1",
    "FLUSHALL",
];

#[test]
fn every_event_matches_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("CONFIG SET notify-keyspace-events KEA", Order::Exact);
    let mut l = Listeners::new(&d, "__key*__:*");
    compare(&mut d, &mut l, EVERY_EVENT);
    d.assert_none();
}

#[test]
fn classes_new_and_keymiss_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let mut l = Listeners::new(&d, "__key*__:*");
    for flags in ["K$", "El", "Kgs", "Ehz", "KEt", "KEn", "Em", "KA", "x", ""] {
        d.run(
            &format!("CONFIG SET notify-keyspace-events {flags}"),
            Order::Exact,
        );
        d.run("CONFIG GET notify-keyspace-events", Order::Exact);
        compare(
            &mut d,
            &mut l,
            &[
                "SET k v",
                "LPUSH lk a",
                "SADD sk a",
                "HSET hk f v",
                "ZADD zk 1 a",
                "XADD xk 1-1 f v",
                "GET missing",
                "LRANGE missing 0 -1",
                "EXISTS missing k",
                "DEL k lk sk hk zk xk",
            ],
        );
    }
    d.run("CONFIG SET notify-keyspace-events KEq", Order::Exact);
    d.run("CONFIG SET notify-keyspace-events gKEAn$lshzxetdm", Order::Exact);
    d.run("CONFIG GET notify-keyspace-events", Order::Exact);
    d.assert_none();
}

/// A key with a TTL expires with its `expired` event (what Spring Session listens for), found by the active
/// expiry or by an access; a blocked pop served by a later push publishes its pop.
#[test]
fn expiry_and_served_pops_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("CONFIG SET notify-keyspace-events KEA", Order::Exact);
    let mut l = Listeners::new(&d, "__key*__:*");
    compare(
        &mut d,
        &mut l,
        &["SET session:1 v PX 50", "SET session:2 v PX 50"],
    );
    // Past the TTL: the active expiry (every 100 ms in both) publishes it unasked.
    std::thread::sleep(Duration::from_millis(400));
    // Each key's two messages in order; the keys in the order each server's expiry cycle finds them.
    let (mut theirs, mut ours) = l.take();
    theirs.sort_by_key(|f| format!("{f:?}"));
    ours.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(theirs, ours, "expired events");
    assert_eq!(
        ours.len(),
        4,
        "both keys' expired events, on both channels: {ours:?}"
    );
    // A blocked BLMOVE, served by a push from another connection.
    let mut blockers: Vec<Raw> = [
        d.redis.sock.peer_addr().unwrap(),
        d.ours.sock.peer_addr().unwrap(),
    ]
    .into_iter()
    .map(Raw::connect)
    .collect();
    for b in &mut blockers {
        b.cmd(&[b"BLMOVE", b"src", b"dst", b"RIGHT", b"LEFT", b"0"]);
    }
    std::thread::sleep(Duration::from_millis(100));
    compare(&mut d, &mut l, &["RPUSH src a"]);
    for b in &mut blockers {
        assert_eq!(b.read(), common::bulk("a"));
    }
    d.assert_none();
}

/// Eviction under `maxmemory` publishes `evicted` for each key it takes.
#[test]
fn eviction_publishes_evicted() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    let mut sub = Raw::connect(server.addr());
    sub.cmd(&[b"SUBSCRIBE", b"__keyevent@0__:evicted"]).read();
    c.cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"Ee"])
        .read();
    c.cmd(&[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lru"])
        .read();
    c.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"1mb"]).read();
    let value = vec![b'x'; 1000];
    for i in 0..3000 {
        c.cmd(&[b"SET", format!("k{i}").as_bytes(), &value]).read();
    }
    let size = match c.cmd(&[b"DBSIZE"]).read() {
        Frame::Integer(n) => n as usize,
        f => panic!("{f:?}"),
    };
    assert!(size < 3000, "keys were evicted ({size} left)");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = 0;
    while seen < 3000 - size && Instant::now() < deadline {
        match sub.read() {
            Frame::Array(v) if v.len() == 3 && v[0] == common::bulk("message") => seen += 1,
            f => panic!("{f:?}"),
        }
    }
    assert_eq!(seen, 3000 - size, "one evicted event per key evicted");
}
