//! Differential test of the HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST and
//! `hll-sparse-max-bytes`) against a real `redis-server` (skipped without one, failed under `CI=true`):
//! every command, option and error by hand, values corrupted with SET, SETRANGE and scripts, what WATCH
//! sees, RESP3, then a seeded random sequence; replies compared, then the keyspaces byte for byte.

mod common;

use common::differ::{Differ, Order};
use hopless_server::codec::Frame;

fn exact(_: &str) -> Order {
    Order::Exact
}

/// A sparse header with an invalid cache (`HYLL`, encoding 1), to put opcodes after.
const SPARSE_HDR: &str = r"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80";

/// A script that sets `key` to a dense value with an invalid cache and every register byte `byte`.
fn set_dense(key: &str, byte: &str) -> String {
    format!(
        "EVAL \"redis.call('set', KEYS[1], 'HYLL' .. string.rep(string.char(0), 11) .. string.char(128) .. string.rep(string.char({byte}), 12288)) return 1\" 1 {key}"
    )
}

/// `SET key` of a sparse header followed by `ops` (written in the quoted form redis-cli reads).
fn set_sparse(key: &str, ops: &str) -> String {
    format!("SET {key} \"{SPARSE_HDR}{ops}\"")
}

const BASICS: &[&str] = &[
    "PFADD",
    "PFCOUNT",
    "PFMERGE",
    "PFADD h",
    "PFADD h",
    "EXISTS h",
    "GET h",
    "STRLEN h",
    "TYPE h",
    "OBJECT ENCODING h",
    "PFCOUNT h",
    "PFADD h a b c",
    "PFADD h a b c",
    "PFADD h a",
    "PFADD h A",
    "GET h",
    "PFCOUNT h",
    "GET h",
    "PFCOUNT h",
    "PFADD h ''",
    "PFCOUNT h",
    "PFDEBUG ENCODING h",
    "PFDEBUG DECODE h",
    "PFCOUNT missing",
    "PFCOUNT missing1 missing2",
    "EXISTS missing",
    "PFADD h2 c d e f",
    "PFCOUNT h h2",
    "PFCOUNT h2 h missing",
    "PFCOUNT h h",
    "GET h2",
    "PFCOUNT missing h",
    // Written in place: the TTL stays.
    "PFADD t x",
    "EXPIRE t 1000",
    "PFADD t y",
    "PFCOUNT t",
    "PFDEBUG TODENSE t",
    "PFADD t z",
    "PFMERGE t h",
    "PFCOUNT t",
    // PFMERGE: a missing destination, the destination among the sources, a missing source.
    "PFMERGE m1",
    "GET m1",
    "PFCOUNT m1",
    "PFMERGE m2 h h2",
    "PFCOUNT m2",
    "GET m2",
    "PFMERGE h h2",
    "PFCOUNT h",
    "PFMERGE h2 h2",
    "GET h2",
    "PFMERGE h2 h2 missing h",
    "GET h2",
    "PFMERGE m3 missing",
    "GET m3",
    "PFMERGE m2 m2",
    "GET m2",
    // Dense: TODENSE, GETREG converting, a merge into a sparse destination.
    "PFADD d 1 2 3",
    "PFDEBUG ENCODING d",
    "PFDEBUG TODENSE d",
    "PFDEBUG TODENSE d",
    "PFDEBUG ENCODING d",
    "PFDEBUG DECODE d",
    "STRLEN d",
    "PFCOUNT d",
    "PFADD d 1",
    "PFADD d 4",
    "PFCOUNT d",
    "PFADD s2 1 9",
    "PFDEBUG GETREG s2",
    "PFDEBUG ENCODING s2",
    "PFADD s3 7",
    "PFMERGE s3 d",
    "PFDEBUG ENCODING s3",
    "PFCOUNT s3",
    "PFADD s4 8",
    "PFMERGE d s4",
    "PFDEBUG ENCODING d",
    "PFCOUNT d s4 s3",
    // PFDEBUG's errors: arity, a missing key, an unknown subcommand, in Redis's order.
    "PFDEBUG",
    "PFDEBUG GETREG",
    "PFDEBUG GETREG h extra",
    "PFDEBUG GETREG missing",
    "PFDEBUG FOO missing",
    "PFDEBUG FOO h",
    "PFDEBUG foo h",
    "PFDEBUG getreg h",
    "PFDEBUG encoding h",
    "PFDEBUG Decode h",
    "PFDEBUG todense h",
    "PFSELFTEST x",
    "PFSELFTEST",
];

/// Strings that are not HyperLogLogs, and keys of other types, through every command.
const WRONG: &[&str] = &[
    "SET str hello",
    "SET num 12345",
    "SET empty ''",
    "SET short HYLL",
    r#"SET magic "HYLX\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80""#,
    "SET enc \"HYLL\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x80\\x7f\\xff\"",
    "SET dense_short \"HYLL\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x80\"",
    "RPUSH list a",
    "HSET hash f v",
    "SADD set m",
    "ZADD zset 1 m",
    "XADD stream 1-1 f v",
    "PFADD ok a",
];

/// Every command over every key of [`WRONG`], in several orders.
fn wrong_type_lines() -> Vec<String> {
    let keys = [
        "str",
        "num",
        "empty",
        "short",
        "magic",
        "enc",
        "dense_short",
        "list",
        "hash",
        "set",
        "zset",
        "stream",
    ];
    let mut out = Vec::new();
    for k in keys {
        out.push(format!("PFADD {k} a"));
        out.push(format!("PFADD {k}"));
        out.push(format!("PFCOUNT {k}"));
        out.push(format!("PFCOUNT ok {k}"));
        out.push(format!("PFCOUNT {k} ok"));
        out.push(format!("PFCOUNT missing {k} list"));
        out.push(format!("PFCOUNT missing {k} str"));
        out.push(format!("PFMERGE {k} ok"));
        out.push(format!("PFMERGE ok {k}"));
        out.push(format!("PFMERGE newdest ok {k} hash"));
        out.push(format!("PFMERGE newdest ok hash {k}"));
        out.push(format!("PFMERGE newdest {k} str"));
        out.push("EXISTS newdest".into());
        for sub in ["GETREG", "DECODE", "ENCODING", "TODENSE", "FOO"] {
            out.push(format!("PFDEBUG {sub} {k}"));
        }
        out.push(format!("TYPE {k}"));
    }
    out.push("GET ok".into());
    out
}

/// Corrupt values: opcodes short of the registers, past them, an XZERO cut short, a cache valid over
/// corrupt registers, a dense value of the wrong length, registers past the estimator.
fn corrupt_lines() -> Vec<String> {
    let mut out = vec![
        // One XZERO of 1 register: short.
        set_sparse("c1", r"\x40\x00"),
        // XZERO of 16384, then a VAL: past the end.
        set_sparse("c2", r"\x7f\xff\x80"),
        // XZERO of 8192 twice then a ZERO of 1: past the end by one.
        set_sparse("c3", r"\x5f\xff\x5f\xff\x00"),
        // XZERO of 8192: half the registers covered.
        set_sparse("c4", r"\x5f\xff"),
        // A VAL of value 32 covering 4 registers, then XZERO of 16380.
        set_sparse("c5", r"\xfc\x7f\xfb"),
        // A valid sparse value whose opcodes cover all registers, then its cache made valid.
        set_sparse("c6", r"\x7f\xff"),
        r#"SETRANGE c6 15 "\x00""#.into(),
        // A sparse value with no opcodes at all.
        set_sparse("c7", ""),
        // Corrupt, but its cache valid: a one-key PFCOUNT answers the cache.
        "SET c8 \"HYLL\\x01\\x00\\x00\\x00\\x07\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x40\\x00\"".into(),
        // Encoding byte 1 with garbage after.
        set_sparse("c9", r"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
        // Many ZERO opcodes of 64 registers: 256 of them cover the registers.
        format!("SET c10 \"{SPARSE_HDR}{}\"", r"\x3f".repeat(256)),
        format!("SET c11 \"{SPARSE_HDR}{}\"", r"\x3f".repeat(255)),
        format!("SET c12 \"{SPARSE_HDR}{}\"", r"\x3f".repeat(257)),
        // An XZERO cut short by the end of the value, alone and after half the registers.
        set_sparse("c16", r"\x7f"),
        set_sparse("c17", r"\x5f\xff\x5f"),
    ];
    // A valid sparse value with an opcode overwritten.
    out.extend([
        "PFADD c13 a b c d e f g h i j".into(),
        "PFDEBUG DECODE c13".into(),
        r#"SETRANGE c13 16 "\x7f""#.into(),
        "PFDEBUG DECODE c13".into(),
        "PFADD c14 a b c".into(),
        "SETRANGE c14 0 HYLX".into(),
        "PFADD c15 a b c".into(),
        r#"SETRANGE c15 4 "\x05""#.into(),
    ]);
    // Dense values made by script: truncated, one byte too long, and register bytes all 0xff (every
    // register 63), all 0x41 or all 0.
    out.extend([
        "PFADD dsrc 1 2 3 4 5".into(),
        "PFDEBUG TODENSE dsrc".into(),
        "EVAL \"redis.call('set', KEYS[2], string.sub(redis.call('get', KEYS[1]), 1, 1000)) return 1\" 2 dsrc dtrunc".into(),
        "EVAL \"redis.call('set', KEYS[2], redis.call('get', KEYS[1]) .. 'x') return 1\" 2 dsrc dlong".into(),
        set_dense("dmax", "255"),
        set_dense("dmid", "65"),
        set_dense("dzero", "0"),
        // A valid cache near the top of the range over empty registers.
        "EVAL \"redis.call('set', KEYS[1], 'HYLL' .. string.char(0, 0, 0, 0) .. string.rep(string.char(255), 7) .. string.char(127) .. string.rep(string.char(0), 12288)) return 1\" 1 dcache".into(),
    ]);
    let keys = [
        "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11", "c12", "c13", "c14", "c15",
        "c16", "c17", "dtrunc", "dlong", "dmax", "dmid", "dzero", "dcache",
    ];
    for k in keys {
        out.push(format!("PFDEBUG ENCODING {k}"));
        out.push(format!("PFDEBUG DECODE {k}"));
        out.push(format!("PFCOUNT {k}"));
        out.push(format!("PFCOUNT {k}"));
        out.push(format!("PFCOUNT {k} ok"));
        out.push(format!("PFCOUNT ok {k}"));
        out.push(format!("PFMERGE newdest2 ok {k}"));
        out.push("GET newdest2".into());
        out.push(format!("PFMERGE {k} ok"));
        out.push(format!("PFDEBUG GETREG {k}"));
        out.push(format!("PFDEBUG TODENSE {k}"));
        out.push(format!("PFADD {k}"));
        out.push(format!("PFADD {k} a b c d e f g h i j k l m n o p"));
        out.push(format!("PFCOUNT {k}"));
        out.push(format!("GET {k}"));
        out.push(format!("PFDEBUG ENCODING {k}"));
    }
    out
}

/// `hll-sparse-max-bytes`: CONFIG's range checks, and the promotion to dense it decides.
const CONFIG: &[&str] = &[
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG GET hll*",
    "CONFIG SET hll-sparse-max-bytes -1",
    "CONFIG SET hll-sparse-max-bytes 5x",
    "CONFIG SET hll-sparse-max-bytes ' 5'",
    "CONFIG SET hll-sparse-max-bytes 9223372036854775808",
    "CONFIG SET hll-sparse-max-bytes 99999999999999999999",
    "CONFIG SET hll-sparse-max-bytes 10000000000gb",
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG SET hll-sparse-max-bytes 20000000000gb",
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG SET hll-sparse-max-bytes 9223372036854775807",
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG SET hll-sparse-max-bytes ''",
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG SET hll-sparse-max-bytes kb",
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG SET hll-sparse-max-bytes 1KB",
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG SET hll-sparse-max-bytes 2k",
    "CONFIG GET hll-sparse-max-bytes",
    "CONFIG SET HLL-SPARSE-MAX-BYTES 3000",
    "CONFIG GET hll-sparse-max-bytes",
    // 0: a new value stays sparse until its first change.
    "CONFIG SET hll-sparse-max-bytes 0",
    "PFADD p0",
    "PFDEBUG ENCODING p0",
    "PFADD p0 a",
    "PFDEBUG ENCODING p0",
    "PFADD p1 a",
    "PFDEBUG ENCODING p1",
    "PFADD p2",
    "PFMERGE p2 ok",
    "PFDEBUG ENCODING p2",
    // 40 bytes: a few elements, then dense.
    "CONFIG SET hll-sparse-max-bytes 40",
    "PFADD p3 1 2 3",
    "PFDEBUG ENCODING p3",
    "PFDEBUG DECODE p3",
    "PFADD p3 4 5 6 7 8",
    "PFDEBUG ENCODING p3",
    "PFADD p3 9 10 11 12 13 14 15 16 17 18 19 20",
    "PFDEBUG ENCODING p3",
    "PFCOUNT p3",
    "PFADD p4 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25",
    "PFDEBUG ENCODING p4",
    "PFCOUNT p4",
    "PFADD p5 1",
    "PFADD p6 2 3 4 5 6 7 8 9 10 11 12",
    "PFMERGE p5 p6",
    "PFDEBUG ENCODING p5",
    "CONFIG SET hll-sparse-max-bytes 3000",
    "PFADD p7 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25",
    "PFDEBUG ENCODING p7",
    "PFDEBUG DECODE p7",
    "PFCOUNT p7",
];

/// What WATCH sees: a change only where Redis signals one.
const WATCHES: &[&str] = &[
    "PFADD w1 a b",
    // PFADD changing nothing: the transaction runs.
    "WATCH w1",
    "PFADD w1 a",
    "MULTI",
    "PING",
    "EXEC",
    // PFADD changing a register: aborted.
    "WATCH w1",
    "PFADD w1 c",
    "MULTI",
    "PING",
    "EXEC",
    // PFCOUNT writing the cache: aborted.
    "WATCH w1",
    "PFCOUNT w1",
    "MULTI",
    "PING",
    "EXEC",
    // PFCOUNT answering from the cache: runs.
    "WATCH w1",
    "PFCOUNT w1",
    "MULTI",
    "PING",
    "EXEC",
    // PFCOUNT of several keys writes nothing: runs.
    "PFADD w1 d",
    "WATCH w1",
    "PFCOUNT w1 w2",
    "MULTI",
    "PING",
    "EXEC",
    // PFDEBUG TODENSE converts without a signal: runs.
    "WATCH w1",
    "PFDEBUG TODENSE w1",
    "MULTI",
    "PING",
    "EXEC",
    // PFMERGE signals its destination, not its sources.
    "PFADD w2 x",
    "WATCH w2",
    "PFMERGE w3 w2",
    "MULTI",
    "PING",
    "EXEC",
    "WATCH w3",
    "PFMERGE w3 w2",
    "MULTI",
    "PING",
    "EXEC",
    // A PFADD that failed: runs.
    "SET w4 notanhll",
    "WATCH w4",
    "PFADD w4 a",
    "MULTI",
    "PING",
    "EXEC",
    // Inside MULTI.
    "MULTI",
    "PFADD w5 a b c",
    "PFCOUNT w5",
    "PFCOUNT w5 w1",
    "PFMERGE w6 w5 w1",
    "PFDEBUG ENCODING w6",
    "PFADD w4 a",
    "EXEC",
    // From a script.
    "EVAL \"redis.call('pfadd', KEYS[1], 'a', 'b') return redis.call('pfcount', KEYS[1])\" 1 w7",
    "EVAL \"return redis.call('pfdebug', 'decode', KEYS[1])\" 1 w7",
    "EVAL \"return redis.call('pfdebug', 'encoding', KEYS[1])\" 1 w7",
    "EVAL \"return redis.pcall('pfadd', KEYS[1], 'a')\" 1 w4",
    "EVAL_RO \"return redis.call('pfcount', KEYS[1])\" 1 w7",
    "EVAL_RO \"return redis.pcall('pfadd', KEYS[1], 'z')\" 1 w7",
    "COMMAND GETKEYS PFADD k a b",
    "COMMAND GETKEYS PFCOUNT k1 k2 k3",
    "COMMAND GETKEYS PFMERGE d s1 s2",
    "COMMAND GETKEYS PFDEBUG GETREG k",
];

#[test]
fn hll_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(BASICS, exact);
    d.script(WRONG, exact);
    let lines = wrong_type_lines();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    d.script(&lines, exact);
    d.compare_keyspace();
    d.assert_none();
}

#[test]
fn corrupt_values_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("PFADD ok a b c", Order::Exact);
    let lines = corrupt_lines();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    d.script(&lines, exact);
    d.compare_keyspace();
    d.assert_none();
}

#[test]
fn sparse_limit_and_watches_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("PFADD ok a b c", Order::Exact);
    d.script(CONFIG, exact);
    d.script(WATCHES, exact);
    d.compare_keyspace();
    d.assert_none();
}

#[test]
fn resp3_replies_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.redis.cmd(&[b"HELLO", b"3"]).read();
    d.ours.cmd(&[b"HELLO", b"3"]).read();
    d.script(
        &[
            "PFADD r a b c",
            "PFADD r a",
            "PFCOUNT r",
            "PFCOUNT r missing",
            "PFDEBUG DECODE r",
            "PFDEBUG ENCODING r",
            "PFDEBUG GETREG r",
            "PFDEBUG TODENSE r",
            "PFDEBUG TODENSE r",
            "PFDEBUG DECODE r",
            "PFDEBUG GETREG missing",
            "PFDEBUG FOO r",
            "PFMERGE r2 r",
            "PFCOUNT r2",
            "SET s x",
            "PFCOUNT s",
            "PFADD s a",
        ],
        exact,
    );
    d.compare_keyspace();
    d.assert_none();
}

/// COMMAND INFO of each HyperLogLog command: name, arity, flags, key positions and ACL categories as
/// Redis 7.0 lists them.
#[test]
fn command_info_rows_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for name in ["pfadd", "pfcount", "pfmerge", "pfdebug", "pfselftest"] {
        let a: [&[u8]; 3] = [b"COMMAND", b"INFO", name.as_bytes()];
        let head = |f: Frame| match f {
            Frame::Array(mut v) => match v.pop() {
                Some(Frame::Array(mut row)) => {
                    row.truncate(7);
                    row
                }
                other => panic!("COMMAND INFO {name} gave {other:?}"),
            },
            other => panic!("COMMAND INFO {name} gave {other:?}"),
        };
        let t = head(d.redis.cmd(&a).read());
        let o = head(d.ours.cmd(&a).read());
        if t != o {
            d.diffs
                .push(format!("COMMAND INFO {name}\n  redis:   {t:?}\n  hopless: {o:?}"));
        }
    }
    d.assert_none();
}

/// Seeded random PFADD, PFCOUNT, PFMERGE and PFDEBUG over a few keys, some with TTLs, under a few
/// sparse limits: replies compared, then the keyspaces byte for byte.
#[test]
fn random_hll_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let mut seed = 0x4a11_u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let key = |i: u64| format!("r{i}");
    for step in 0..1500 {
        let cmd = match next(20) {
            0..=8 => {
                // Elements from a small range (repeats) or a wide one (growth, promotion).
                let n = [0, 1, 2, 5, 30, 200][next(6) as usize];
                let wide = next(3) == 0;
                let mut c = format!("PFADD {}", key(next(6)));
                for _ in 0..n {
                    let e = if wide { next(1_000_000) } else { next(50) };
                    c += &format!(" e{e}");
                }
                c
            }
            9..=12 => {
                let mut c = "PFCOUNT".to_string();
                for _ in 0..1 + next(3) {
                    c += &format!(" {}", key(next(7)));
                }
                c
            }
            13..=15 => {
                let mut c = format!("PFMERGE {}", key(next(7)));
                for _ in 0..next(4) {
                    c += &format!(" {}", key(next(7)));
                }
                c
            }
            16 => format!(
                "PFDEBUG {} {}",
                ["ENCODING", "DECODE", "TODENSE", "GETREG"][next(4) as usize],
                key(next(7))
            ),
            17 => format!("GET {}", key(next(7))),
            18 => format!("EXPIRE {} 10000", key(next(7))),
            _ => format!(
                "CONFIG SET hll-sparse-max-bytes {}",
                [0, 20, 100, 300, 3000, 10000][next(6) as usize]
            ),
        };
        d.run(&cmd, Order::Exact);
        if d.diffs.len() > 5 {
            break;
        }
        if step % 300 == 299 {
            d.compare_keyspace();
        }
    }
    d.compare_keyspace();
    d.assert_none();
}
