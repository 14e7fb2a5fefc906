//! Differential test of the stream commands: a hand-written script over every command, option and
//! error, in RESP2 and RESP3, node boundaries and approximate trims included, then a seeded random
//! sequence, against a real `redis-server` (skipped without one, failed under `CI=true`); replies
//! compared, then the keyspaces. XREAD BLOCK is tested against hopless alone (its timing is the test).

mod common;

use std::time::{Duration, Instant};

use common::differ::{Differ, Order};
use common::Raw;
use hopless_server::codec::Frame;

const SCRIPT: &[&str] = &[
    // XADD: ids, fields, errors in Redis's order.
    "XADD s 1-1 a 1 b 2",
    "XADD s 1-1 a 1",
    "XADD s 1-0 a 1",
    "XADD s 1-2 a 3 b 4",
    "XADD s 1-* c 5",
    "XADD s 2-* c 6",
    "XADD s 2 c 7",
    "XADD s 3 a 1 b 2 c 3",
    "XADD s 0-0 a 1",
    "XADD fresh 0-0 a 1",
    "EXISTS fresh",
    "XADD fresh 0-* a 1",
    "XADD fresh 0-1 a 1",
    "XADD s 4-1 a",
    "XADD s 4-1",
    "XADD s 4-1 a 1 b",
    "XADD s 4-x a 1",
    "XADD s 4-1- a 1",
    "XADD s -1 a 1",
    "XADD s + a 1",
    "XADD s - a 1",
    "XADD s 18446744073709551616 a 1",
    "XADD s 007-01 a 1",
    "XADD s NOMKSTREAM 8-0 a 1",
    "XADD nokey NOMKSTREAM 1-0 a 1",
    "EXISTS nokey",
    "XADD nokey NOMKSTREAM * a 1",
    "XADD s MAXLEN",
    "XADD s MAXLEN 5",
    "XADD s MAXLEN x 9-0 a 1",
    "XADD s MAXLEN -1 9-0 a 1",
    "XADD s MAXLEN 5 MINID 1 9-0 a 1",
    "XADD s MINID x 9-0 a 1",
    "XADD s MINID + 9-0 a 1",
    "XADD s LIMIT 10 9-0 a 1",
    "XADD s MAXLEN 100 LIMIT 10 9-0 a 1",
    "XADD s MAXLEN = 100 LIMIT 10 9-0 a 1",
    "XADD s MAXLEN ~ 100 LIMIT -1 9-0 a 1",
    "XADD s MAXLEN ~ 100 LIMIT x 9-0 a 1",
    "XADD s MAXLEN = 100 9-0 a 1",
    "XADD s MAXLEN ~ 100 LIMIT 0 10-0 a 1",
    "XADD s LIMIT 0 11-0 a 1",
    "XADD s NOMKSTREAM MAXLEN 6 12-0 a 1",
    "XLEN s",
    "XRANGE s - +",
    "XADD str 1-0 a 1",
    "SET str x",
    "XADD str 2-0 a 1",
    "XLEN str",
    "XRANGE str - +",
    "XTRIM str MAXLEN 0",
    "XDEL str 1-0",
    "XLEN missing",
    // XRANGE and XREVRANGE: bounds, exclusion, COUNT.
    "XRANGE s - + COUNT 2",
    "XRANGE s - + COUNT 0",
    "XRANGE s - + COUNT -5",
    "XRANGE s - + COUNT x",
    "XRANGE s - + COUNT",
    "XRANGE s - + LIMIT 2",
    "XRANGE s 8 11",
    "XRANGE s (8-0 +",
    "XRANGE s 8 (11-0",
    "XRANGE s (- +",
    "XRANGE s - (+",
    "XRANGE s ( +",
    "XRANGE s (18446744073709551615-18446744073709551615 +",
    "XRANGE s - (0-0",
    "XRANGE s 11 8",
    "XRANGE s x +",
    "XRANGE s - x",
    "XRANGE missing - +",
    "XRANGE missing - + COUNT 0",
    "XREVRANGE s + -",
    "XREVRANGE s + - COUNT 2",
    "XREVRANGE s (12 (8",
    "XREVRANGE s 8 11",
    "XREVRANGE missing + -",
    // XDEL.
    "XDEL s 8-0 9-0 100-0",
    "XDEL s 8-0",
    "XDEL s x",
    "XDEL s 1-0 x",
    "XDEL s +",
    "XDEL missing 1-0",
    "XRANGE s - +",
    "XLEN s",
    // XTRIM.
    "XTRIM s",
    "XTRIM s MAXLEN",
    "XTRIM s FOO 1",
    "XTRIM s MAXLEN 1 x",
    "XTRIM s LIMIT 1",
    "XTRIM s MAXLEN 1 LIMIT 1",
    "XTRIM s MAXLEN ~ 1 LIMIT 1",
    "XTRIM s MINID 10",
    "XRANGE s - +",
    "XTRIM s MAXLEN 1",
    "XRANGE s - +",
    "XTRIM missing MAXLEN 0",
    "XTRIM s MAXLEN 0",
    "XLEN s",
    "EXISTS s",
    "XRANGE s - +",
    "XADD s 12-0 a 1",
    "XADD s 12-1 a 1",
    "XDEL s 12-1",
    "XLEN s",
    "EXISTS s",
    "TYPE s",
    "OBJECT ENCODING s",
    // XSETID.
    "XSETID s 5-0",
    "XSETID s 12-1",
    "XADD s 12-1 a 1",
    "XSETID s 20-0 ENTRIESADDED 1",
    "XSETID s 20-0 ENTRIESADDED -1",
    "XSETID s 20-0 ENTRIESADDED x",
    "XSETID s 20-0 MAXDELETEDID 30-0",
    "XSETID s 20-0 MAXDELETEDID x",
    "XSETID s 20-0 ENTRIESADDED 10 MAXDELETEDID 15-0",
    "XSETID s 20-0 FOO",
    "XSETID s x",
    "XSETID s +",
    "XSETID missing 1-0",
    "XADD s 20-0 a 1",
    "XADD s 20-1 a 1",
    "XSETID e 1",
    // XREAD without blocking.
    "XREAD STREAMS s 0",
    "XREAD COUNT 1 STREAMS s 0-0",
    "XREAD STREAMS s 12",
    "XREAD STREAMS s $",
    "XREAD STREAMS s missing 0 0",
    "XREAD STREAMS missing s 0 0",
    "XREAD STREAMS s",
    "XREAD STREAMS s s 0",
    "XREAD COUNT x STREAMS s 0",
    "XREAD COUNT -1 STREAMS s 0",
    "XREAD BLOCK x STREAMS s 0",
    "XREAD BLOCK -1 STREAMS s 0",
    "XREAD BLOCK 10 STREAMS s 0",
    "XREAD FOO STREAMS s 0",
    "XREAD GROUP g c STREAMS s 0",
    "XREAD NOACK STREAMS s 0",
    "XREAD COUNT 1",
    "XREAD STREAMS s >",
    "XREAD STREAMS s x",
    "XREAD STREAMS str 0",
    "XREAD STREAMS s str 0 0",
    "XREAD STREAMS s str $ $",
    "EVAL \"return redis.call('xread','BLOCK','0','STREAMS','s','$')\" 0",
    "EVAL \"return redis.call('XREAD','BLOCK','0','STREAMS','s','$')\" 0",
    "EVAL \"return redis.call('XREAD','STREAMS','s','0')\" 0",
    "EVAL \"return redis.call('XADD','s','50-0','f','v')\" 0",
    // Copies, renames, deletion.
    "COPY s s2",
    "XRANGE s2 - +",
    "XADD s2 99-0 z z",
    "XLEN s",
    "RENAME s2 s3",
    "XRANGE s3 - +",
    "DEL s3",
    "TYPE fresh",
    "XADD numbers 1-0 1 2 3 -4 100000 12345678901 -0 007 1.5 x",
    "XRANGE numbers - +",
];

/// Many entries, so that the stream takes several nodes, then approximate and exact trims.
fn nodes_script() -> Vec<String> {
    let mut v = Vec::new();
    for i in 1..=250 {
        v.push(format!("XADD big {i}-0 field {i} other v{i}"));
    }
    for i in 251..=260 {
        v.push(format!("XADD big {i}-0 different {i}"));
    }
    v.extend(
        [
            "XLEN big",
            "XTRIM big MAXLEN ~ 200",
            "XLEN big",
            "XTRIM big MAXLEN ~ 150",
            "XLEN big",
            "XRANGE big - + COUNT 3",
            "XTRIM big MAXLEN 149",
            "XRANGE big - + COUNT 3",
            "XTRIM big MINID ~ 210",
            "XLEN big",
            "XTRIM big MINID ~ 250",
            "XLEN big",
            "XTRIM big MINID 255",
            "XRANGE big - +",
            "XADD big MAXLEN ~ 2 261-0 a b",
            "XLEN big",
            "XADD big MAXLEN 2 262-0 a b",
            "XRANGE big - +",
            "XDEL big 261-0 262-0",
            "XLEN big",
            "XRANGE big - +",
            "XREVRANGE big + -",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    // Big values: Redis's nodes end at stream-node-max-bytes.
    let value = "x".repeat(1000);
    for i in 1..=30 {
        v.push(format!("XADD wide {i}-0 f {value}"));
    }
    v.extend(
        [
            "XTRIM wide MAXLEN ~ 20",
            "XLEN wide",
            "XTRIM wide MAXLEN ~ 5 LIMIT 4",
            "XLEN wide",
        ]
        .map(String::from),
    );
    v.extend(
        [
            "CONFIG SET stream-node-max-entries 3",
            "CONFIG GET stream-node-max-entries",
        ]
        .map(String::from),
    );
    for i in 1..=10 {
        v.push(format!("XADD small {i}-0 f v"));
    }
    v.extend(
        [
            "XTRIM small MAXLEN ~ 5",
            "XLEN small",
            "XADD small MAXLEN ~ 2 LIMIT 3 11-0 f v",
            "XLEN small",
            "CONFIG SET stream-node-max-entries 100",
            "CONFIG SET stream-node-max-bytes 0",
        ]
        .map(String::from),
    );
    v
}

fn exact(_: &str) -> Order {
    Order::Exact
}

#[test]
fn stream_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(SCRIPT, exact);
    let nodes = nodes_script();
    let lines: Vec<&str> = nodes.iter().map(String::as_str).collect();
    d.script(&lines, exact);
    d.compare_keyspace();
    d.assert_none();
}

#[test]
fn resp3_shapes_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("HELLO 3", Order::Exact);
    d.diffs.clear();
    d.script(
        &[
            "XADD r 1-0 a 1",
            "XADD r 2-0 b 2",
            "XADD q 1-0 c 3",
            "XRANGE r - +",
            "XRANGE r - + COUNT 0",
            "XREAD STREAMS r q 0 0",
            "XREAD STREAMS r q $ $",
            "XREAD STREAMS missing 0",
            "XADD r NOMKSTREAM 3-0 a 1",
            "XADD none NOMKSTREAM 3-0 a 1",
        ],
        exact,
    );
    d.assert_none();
}

/// A seeded random sequence of stream commands over a few keys, small nodes so that trims cut them.
#[test]
fn random_sequences_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("CONFIG SET stream-node-max-entries 7", Order::Exact);
    let mut seed = 0x5eed_u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut ms = [0u64; 3];
    for _ in 0..3000 {
        let k = next(3) as usize;
        let key = format!("k{k}");
        let cmd = match next(10) {
            0..=4 => {
                ms[k] += next(3);
                let fields = if next(2) == 0 {
                    "a 1 b 2".to_string()
                } else {
                    format!("f{} v", next(3))
                };
                let trim = match next(6) {
                    0 => format!("MAXLEN ~ {} ", next(30)),
                    1 => format!("MAXLEN {} ", next(30)),
                    2 => format!("MINID ~ {} ", ms[k].saturating_sub(next(20))),
                    _ => String::new(),
                };
                let id = if next(2) == 0 {
                    format!("{}-*", ms[k])
                } else {
                    format!("{}-{}", ms[k], next(3))
                };
                format!("XADD {key} {trim}{id} {fields}")
            }
            5 => format!("XDEL {key} {}-{} {}-0", next(ms[k] + 1), next(3), next(ms[k] + 1)),
            6 => format!(
                "XTRIM {key} MAXLEN {}{}",
                if next(2) == 0 { "~ " } else { "" },
                next(40)
            ),
            7 => format!("XRANGE {key} {} + COUNT {}", next(ms[k] + 1), next(10)),
            8 => format!("XREVRANGE {key} + ({} COUNT {}", next(ms[k] + 1), next(10)),
            _ => format!(
                "XREAD COUNT {} STREAMS {key} k{} {}-0 0",
                next(5),
                (k + 1) % 3,
                next(ms[k] + 1)
            ),
        };
        d.run(&cmd, Order::Exact);
        if d.diffs.len() > 5 {
            break;
        }
    }
    d.run("CONFIG SET stream-node-max-entries 100", Order::Exact);
    d.compare_keyspace();
    d.assert_none();
}

fn bulk(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

/// `*` ids come from the clock and never go back; `<ms>-*` takes the next sequence number.
#[test]
fn auto_ids_follow_the_clock() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let a = bulk(&c.cmd(&[b"XADD", b"auto", b"*", b"f", b"v"]).read());
    let (ms, seq) = a.split_once('-').unwrap();
    let ms: u64 = ms.parse().unwrap();
    assert!(ms >= before && ms < before + 10_000, "{a}");
    assert_eq!(seq, "0");
    c.cmd(&[b"XADD", b"auto", b"99999999999999-5", b"f", b"v"]).read();
    assert_eq!(
        bulk(&c.cmd(&[b"XADD", b"auto", b"*", b"f", b"v"]).read()),
        "99999999999999-6"
    );
    assert_eq!(
        bulk(&c.cmd(&[b"XADD", b"auto", b"99999999999999-*", b"f", b"v"]).read()),
        "99999999999999-7"
    );
    c.cmd(&[b"XSETID", b"auto", b"18446744073709551615-18446744073709551615"])
        .read();
    assert_eq!(
        c.cmd(&[b"XADD", b"auto", b"*", b"f", b"v"]).read(),
        Frame::Error("ERR The stream has exhausted the last possible ID, unable to add more items".into())
    );
}

/// XREAD BLOCK: served by an XADD from another connection, with only what came after its id; `$`
/// waits for new entries; a timeout answers a null array; inside MULTI it does not block (inside a
/// script BLOCK is refused: the differential script has it).
#[test]
fn blocked_readers_are_served_by_new_entries() {
    let server = common::start();
    let mut w = Raw::connect(server.addr());
    w.cmd(&[b"XADD", b"bs", b"1-0", b"old", b"1"]).read();
    let mut r1 = Raw::connect(server.addr());
    let mut r2 = Raw::connect(server.addr());
    let mut r3 = Raw::connect(server.addr());
    r1.cmd(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"bs", b"$"]);
    r2.cmd(&[
        b"XREAD", b"BLOCK", b"5000", b"STREAMS", b"other", b"bs", b"0", b"5-0",
    ]);
    r3.cmd(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"bs", b"1-0"]);
    std::thread::sleep(Duration::from_millis(100));
    w.cmd(&[b"XADD", b"bs", b"2-0", b"new", b"2"]).read();
    let entry = |id: &str, f: &str, v: &str| {
        Frame::Array(vec![
            Frame::Bulk(id.to_string().into()),
            Frame::Array(vec![
                Frame::Bulk(f.to_string().into()),
                Frame::Bulk(v.to_string().into()),
            ]),
        ])
    };
    let one = |key: &str, entries: Vec<Frame>| {
        Frame::Array(vec![Frame::Array(vec![
            Frame::Bulk(key.to_string().into()),
            Frame::Array(entries),
        ])])
    };
    assert_eq!(r1.read(), one("bs", vec![entry("2-0", "new", "2")]));
    assert_eq!(r3.read(), one("bs", vec![entry("2-0", "new", "2")]));
    // r2 waits above 5-0: 2-0 is not for it.
    w.cmd(&[b"XADD", b"bs", b"6-0", b"newer", b"3"]).read();
    assert_eq!(r2.read(), one("bs", vec![entry("6-0", "newer", "3")]));
    let t = Instant::now();
    assert_eq!(
        r1.cmd(&[b"XREAD", b"BLOCK", b"100", b"STREAMS", b"bs", b"$"])
            .read(),
        Frame::Null
    );
    assert!(t.elapsed() >= Duration::from_millis(100));
    r1.cmd(&[b"MULTI"]).read();
    r1.cmd(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"bs", b"$"])
        .read();
    assert_eq!(r1.cmd(&[b"EXEC"]).read(), Frame::Array(vec![Frame::Null]));
}
