//! Persistence against a real `redis-server` (skipped without one, failed under `CI=true`): DUMP
//! payloads and snapshot files of every type, in small and large encodings, with TTLs, a stream with
//! consumer groups and a function library, moved both ways and the keyspaces compared; RESTORE's options
//! and errors byte for byte; damaged files refused at start without being touched.

mod common;

use std::path::{Path, PathBuf};

use common::differ::{keys, mask_times, start_redis, start_redis_with, Differ, Order};
use hopless_server::codec::Frame;

/// Every type, small (listpack, intset) and large, with and without TTLs.
fn setup() -> Vec<String> {
    let mut v: Vec<String> = [
        "SET s:plain hello",
        "SET s:int 12345",
        "SET s:neg -9000000000",
        "SET s:empty ''",
        "SET s:ttl v PX 500000",
        "RPUSH l:small a 1 -5 300 70000 abcdefghij 3.5",
        "HSET h:small f1 v1 f2 2 f3 -3",
        "SADD st:ints 1 5 -7 100000 3",
        "SADD st:big 9223372036854775807 -9223372036854775808 0",
        "SADD st:words pear fig kiwi",
        "ZADD z:small 1 a 2.5 b -inf c inf d 1e20 e",
        "XADD x:plain 1-1 f v",
        "XADD x:plain 1-2 f w",
        "XADD x:plain 2-0 a 1 b 2",
        "XDEL x:plain 1-2",
        "XADD x:groups 5-1 name alice",
        "XADD x:groups 5-2 name bob",
        "XADD x:groups 6-0 other field",
        "XGROUP CREATE x:groups g1 0",
        "XGROUP CREATE x:groups g2 $",
        "XREADGROUP GROUP g1 c1 COUNT 2 STREAMS x:groups >",
        "XREADGROUP GROUP g1 c2 COUNT 1 STREAMS x:groups >",
        "XACK x:groups g1 5-1",
        "XGROUP CREATECONSUMER x:groups g2 idle",
        "XADD x:empty 7-7 f v",
        "XDEL x:empty 7-7",
        "EXPIRE h:small 100000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Past the compact forms' limits.
    let long = "x".repeat(100);
    v.push(format!("SET s:long {}", "y".repeat(5000)));
    v.push(format!("SET s:compressible {}", "ab".repeat(300)));
    for i in 0..300 {
        v.push(format!("RPUSH l:big item{i} {i}"));
        v.push(format!("HSET h:big field{i} value{i}"));
        v.push(format!("SADD st:table m{i}"));
        v.push(format!("ZADD z:big {} member{i}", i as f64 / 7.0));
        v.push(format!("XADD x:big {}-{} n {i} s {long}", 1000 + i / 3, i % 3));
    }
    v.push(format!("HSET h:longval f {long}"));
    v.push(format!("ZADD z:longmember 1 {long}"));
    v.push(format!("RPUSH l:huge {}", "z".repeat(20000)));
    v
}

/// Compares what the keyspace comparison does not: a stream's groups, consumers and pending entries
/// (their idle and delivery times masked), and FUNCTION LIST.
fn compare_stream_state(d: &mut Differ) {
    let mask = |f: Frame| mask_times(f);
    for k in ["x:plain", "x:groups", "x:empty", "x:big"] {
        d.run_masked(&format!("XINFO STREAM {k}"), mask);
        d.run_masked(&format!("XINFO GROUPS {k}"), mask);
        d.run_masked(&format!("XPENDING {k} g1 - + 10"), mask);
        d.run_masked(&format!("XINFO CONSUMERS {k} g1"), mask);
        d.run_masked(&format!("XINFO CONSUMERS {k} g2"), mask);
    }
}

fn bulk(f: Frame) -> Vec<u8> {
    match f {
        Frame::Bulk(b) => b.to_vec(),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

#[test]
fn dump_payloads_move_both_ways() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let lines = setup();
    let lines: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    d.script(&lines, |_| Order::Exact);
    for k in keys(&mut d.redis) {
        let from_redis = bulk(d.redis.cmd(&[b"DUMP", &k]).read());
        let from_ours = bulk(d.ours.cmd(&[b"DUMP", &k]).read());
        for (prefix, payload) in [(&b"r:"[..], &from_redis), (&b"h:"[..], &from_ours)] {
            let name = [prefix, &k[..]].concat();
            // Each server restores each payload: Redis reads ours, we read Redis's.
            d.run_args(&[b"RESTORE", &name, b"0", payload], Order::Exact);
        }
    }
    d.compare_keyspace();
    d.assert_none();
}

#[test]
fn restore_options_and_errors_match() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(&["SET k v", "RPUSH l a b c", "DEL missing"], |_| Order::Exact);
    let payload = bulk(d.redis.cmd(&[b"DUMP", b"l"]).read());
    let mut flipped = payload.clone();
    flipped[2] ^= 0x40;
    let mut short = payload.clone();
    short.truncate(5);
    let mut newer = payload.clone();
    let n = newer.len();
    newer[n - 10] = 11;
    // A payload whose footer is right but whose body is not a value.
    let bad_body = {
        let body = [18u8, 1, 2, 0x05, 1, 2, 3, 4, 5];
        let mut p = body.to_vec();
        p.extend_from_slice(&10u16.to_le_bytes());
        let crc = crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    };
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"RESTORE", b"k", b"0", &payload],
        vec![b"RESTORE", b"k", b"0", &payload, b"REPLACE"],
        vec![b"TYPE", b"k"],
        vec![b"RESTORE", b"n1", b"-1", &payload],
        vec![b"RESTORE", b"n1", b"x", &payload],
        vec![b"RESTORE", b"n1", b"0", &flipped],
        vec![b"RESTORE", b"n1", b"0", &short],
        vec![b"RESTORE", b"n1", b"0", &newer],
        vec![b"RESTORE", b"n1", b"0", &bad_body],
        vec![b"RESTORE", b"n1", b"0", &payload, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"n1", b"0", &payload, b"IDLETIME", b"x"],
        vec![b"RESTORE", b"n1", b"0", &payload, b"FREQ", b"256"],
        vec![
            b"RESTORE",
            b"n1",
            b"0",
            &payload,
            b"FREQ",
            b"1",
            b"IDLETIME",
            b"1",
        ],
        vec![b"RESTORE", b"n1", b"0", &payload, b"BOGUS"],
        vec![b"RESTORE", b"n1", b"0", &payload, b"IDLETIME", b"10"],
        vec![b"RESTORE", b"n2", b"0", &payload, b"FREQ", b"100"],
        vec![b"RESTORE", b"n3", b"100000", &payload],
        vec![b"PTTL", b"n1"],
        vec![b"RESTORE", b"n4", b"1", &payload, b"ABSTTL"],
        vec![b"EXISTS", b"n4"],
        vec![b"RESTORE", b"l", b"1", &payload, b"ABSTTL", b"REPLACE"],
        vec![b"EXISTS", b"l"],
        vec![b"DUMP", b"missing"],
        vec![b"DUMP"],
        vec![b"RESTORE", b"k", b"0"],
    ];
    for c in &cases {
        d.run_bytes(c);
    }
    // A stream DUMPed by Redis 5 (tests/unit/type/stream-cgroups.tcl): its groups' entries read are
    // worked out as Redis 7.0 works them out.
    let legacy = hex(LEGACY_STREAM);
    d.run_args(&[b"RESTORE", b"legacy", b"0", &legacy], Order::Exact);
    d.run_masked("XINFO STREAM legacy FULL", mask_times);
    d.run_masked("XINFO GROUPS legacy", mask_times);
    let (t, o) = d.run("TTL n3", Order::Exact);
    assert!(
        matches!(t, Frame::Integer(99 | 100)) && matches!(o, Frame::Integer(99 | 100)),
        "{t:?} {o:?}"
    );
    d.compare_keyspace();
    d.assert_none();
}

const LEGACY_STREAM: &str = "0f011000000000000000010000000000000000c3404a405716570000002300020104010101846461746105000103010020010381610204200a0001400a0062600a0002400a0063600a4022018164200a4039200a0065600a0005400a0066200a00ff02060002026731050004000000000000000100000000000000003ef783437a01000001000000000000000200000000000000003ef783437a01000001000000000000000400000000000000003ef783437a01000001000000000000000500000000000000003ef783437a0100000101036331313ef783437a01000004000000000000000100000000000000000000000000000002000000000000000000000000000000040000000000000000000000000000000500000000000000000267320000000009003d52ef6867521dfa";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Redis's CRC64 (Jones), for building payloads by hand.
fn crc64(data: &[u8]) -> u64 {
    hopless_kv::rdb::crc64::crc64(0, data)
}

/// A fresh directory under the system's temporary one.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "hopless-persist-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.subsec_nanos())
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn hopless_loading(dir: &Path) -> std::io::Result<hopless_server::Server> {
    let mut o = common::options();
    o.snapshot.dir = dir.to_path_buf();
    o.load_snapshot = true;
    hopless_server::Server::start(o)
}

#[test]
fn snapshot_files_move_both_ways() {
    let from_redis = temp_dir("from-redis");
    let dir = from_redis.to_str().unwrap().to_string();
    let from_ours = temp_dir("from-hopless");
    let ours_dir = from_ours.to_str().unwrap().to_string();
    let Some(mut d) = Differ::start_with(&["--save", "", "--dir", &dir], |o| {
        o.snapshot.dir = from_ours.clone()
    }) else {
        return;
    };
    let lines = setup();
    let lines: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    d.script(&lines, |_| Order::Exact);
    let lib = "#!lua name=mylib\nredis.register_function('echo1', function(keys, args) return args[1] end)";
    d.run_args(&[b"FUNCTION", b"LOAD", lib.as_bytes()], Order::Exact);

    // Redis writes, hopless loads: the loaded server stands in for ours beside the Redis that made it.
    assert_eq!(d.redis.cmd(&[b"SAVE"]).read(), common::simple("OK"));
    assert_eq!(d.ours.cmd(&[b"SAVE"]).read(), common::simple("OK"));
    // Both refuse to move the file at run time (protected configs).
    d.run(&format!("CONFIG SET dir {dir}"), Order::Exact);
    d.run("CONFIG SET dbfilename x.rdb", Order::Exact);
    let loaded = hopless_loading(&from_redis).expect("hopless loads Redis's snapshot");
    d.ours = common::Raw::connect(loaded.addr());
    d.compare_keyspace();
    compare_stream_state(&mut d);
    d.run("FUNCTION LIST WITHCODE", Order::Exact);
    d.run("FCALL echo1 0 hi", Order::Exact);

    // hopless writes, Redis loads: that Redis stands in for ours.
    let (guard, raddr) = start_redis_with(&["--save", "", "--dir", &ours_dir]).unwrap();
    d.ours = common::Raw::connect(raddr);
    d.compare_keyspace();
    compare_stream_state(&mut d);
    d.run("FUNCTION LIST WITHCODE", Order::Exact);
    d.assert_none();
    drop((guard, loaded));
    let _ = std::fs::remove_dir_all(&from_redis);
    let _ = std::fs::remove_dir_all(&from_ours);
}

#[test]
fn damaged_snapshots_are_refused_and_left_alone() {
    if start_redis().is_none() {
        return;
    }
    let dir = temp_dir("damaged");
    let s = common::start_with(|o| o.snapshot.dir = dir.clone());
    let mut c = common::Raw::connect(s.addr());
    for i in 0..200 {
        c.cmd(&[b"SET", format!("k{i}").as_bytes(), b"some value"]).read();
    }
    c.cmd(&[b"RPUSH", b"list", b"a", b"b"]).read();
    assert_eq!(c.cmd(&[b"SAVE"]).read(), common::simple("OK"));
    drop(s);
    let file = dir.join("dump.rdb");
    let good = std::fs::read(&file).unwrap();
    let back = hopless_loading(&dir).expect("its own snapshot loads");
    let mut c = common::Raw::connect(back.addr());
    assert_eq!(c.cmd(&[b"DBSIZE"]).read(), Frame::Integer(201));
    drop(back);
    let mut bad: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("not rdb", b"GARBAGE!!garbage".to_vec()),
        ("newer version", [b"REDIS0011", &good[9..]].concat()),
        ("empty", Vec::new()),
    ];
    for at in [20, good.len() / 3, good.len() - 12] {
        let mut f = good.clone();
        f[at] ^= 0x55;
        bad.push(("flipped", f));
    }
    for (what, bytes) in bad {
        std::fs::write(&file, &bytes).unwrap();
        let r = hopless_loading(&dir);
        assert!(r.is_err(), "{what}: a damaged snapshot was loaded");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            bytes,
            "{what}: the file was changed"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bgsave_and_save_points_write_while_serving() {
    if start_redis().is_none() {
        return;
    }
    let dir = temp_dir("bgsave");
    let s = common::start_with(|o| {
        o.snapshot.dir = dir.clone();
        o.snapshot.save = hopless_server::parse_save("1 5").unwrap();
    });
    let mut c = common::Raw::connect(s.addr());
    let info = |c: &mut common::Raw, field: &str| -> String {
        let f = bulk(c.cmd(&[b"INFO", b"persistence"]).read());
        let text = String::from_utf8(f).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
            .unwrap_or_else(|| panic!("no {field} in INFO"))
    };
    for i in 0..10 {
        c.cmd(&[b"SET", format!("k{i}").as_bytes(), b"v"]).read();
    }
    assert_eq!(info(&mut c, "rdb_changes_since_last_save"), "10");
    // The save point (5 changes, 1 s old) starts a background save within a couple of seconds.
    let start = std::time::Instant::now();
    while info(&mut c, "rdb_saves") == "0" {
        assert!(start.elapsed().as_secs() < 10, "the save point did not save");
        c.cmd(&[b"PING"]).read();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(info(&mut c, "rdb_changes_since_last_save"), "0");
    assert_eq!(info(&mut c, "rdb_last_bgsave_status"), "ok");
    let lastsave = c.cmd(&[b"LASTSAVE"]).read();
    assert!(matches!(lastsave, Frame::Integer(t) if t > 1_700_000_000));
    assert!(dir.join("dump.rdb").exists());
    // BGSAVE: served while the child writes; a second one is refused or scheduled.
    c.cmd(&[b"SET", b"after", b"1"]).read();
    assert_eq!(
        c.cmd(&[b"BGSAVE"]).read(),
        common::simple("Background saving started")
    );
    let again = c.cmd(&[b"BGSAVE"]).read();
    assert!(
        again == common::err("ERR Background save already in progress")
            || again == common::simple("Background saving started"),
        "{again:?}"
    );
    assert_eq!(c.cmd(&[b"GET", b"after"]).read(), common::bulk("1"));
    drop(s);
    let back = hopless_loading(&dir).unwrap();
    let mut c = common::Raw::connect(back.addr());
    assert_eq!(c.cmd(&[b"GET", b"after"]).read(), common::bulk("1"));
    assert_eq!(c.cmd(&[b"DBSIZE"]).read(), Frame::Integer(11));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn migrate_moves_keys_as_redis_does() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    // Each source migrates to a Redis of its own; the targets' keyspaces are compared after.
    let (t1, a1) = start_redis().unwrap();
    let (t2, a2) = start_redis().unwrap();
    d.script(
        &[
            "SET a 1",
            "SET b 2 PX 100000",
            "RPUSH l x y z",
            "HSET h f v",
            "SET c 3",
            "SET d 4",
            "SET e 5",
        ],
        |_| Order::Exact,
    );
    let (p1, p2) = (a1.port().to_string(), a2.port().to_string());
    let dead = common::free_port().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["MIGRATE", "127.0.0.1", "{port}", "a", "0", "1000"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "a", "0", "1000"],
        vec![
            "MIGRATE",
            "127.0.0.1",
            "{port}",
            "",
            "0",
            "1000",
            "KEYS",
            "b",
            "l",
            "nope",
        ],
        vec!["MIGRATE", "127.0.0.1", "{port}", "h", "0", "1000", "COPY"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "h", "0", "1000", "COPY"],
        vec![
            "MIGRATE",
            "127.0.0.1",
            "{port}",
            "h",
            "0",
            "1000",
            "COPY",
            "REPLACE",
        ],
        vec![
            "MIGRATE",
            "127.0.0.1",
            "{port}",
            "c",
            "0",
            "1000",
            "AUTH",
            "secret",
        ],
        vec!["MIGRATE", "127.0.0.1", "{port}", "c", "1", "1000"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "c", "0", "1000", "KEYS", "d"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "c", "0", "1000", "BOGUS"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "c", "0", "x"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "c", "x", "1000"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "missing", "0", "1000"],
        vec!["MIGRATE", "127.0.0.1", "{dead}", "e", "0", "200"],
        vec!["MIGRATE", "127.0.0.1", "{port}", "c", "0", "1000", "AUTH"],
        vec!["EXISTS", "a", "b", "l", "h", "c", "d", "e"],
        vec!["PTTL", "b"],
    ];
    for case in &cases {
        let with = |port: &str| -> Vec<Vec<u8>> {
            case.iter()
                .map(|w| match *w {
                    "{port}" => port.as_bytes().to_vec(),
                    "{dead}" => dead.as_bytes().to_vec(),
                    w => w.as_bytes().to_vec(),
                })
                .collect()
        };
        let (r, o) = (with(&p1), with(&p2));
        let r: Vec<&[u8]> = r.iter().map(|x| &x[..]).collect();
        let o: Vec<&[u8]> = o.iter().map(|x| &x[..]).collect();
        let tr = d.redis.cmd(&r).read_bytes();
        let to = d.ours.cmd(&o).read_bytes();
        assert_eq!(
            String::from_utf8_lossy(&tr),
            String::from_utf8_lossy(&to),
            "{}",
            case.join(" ")
        );
    }
    // The targets got the same keys, values and TTLs.
    let mut targets = Differ::start().unwrap();
    targets.redis = common::Raw::connect(a1);
    targets.ours = common::Raw::connect(a2);
    targets.compare_keyspace();
    targets.assert_none();
    drop((t1, t2));
}
