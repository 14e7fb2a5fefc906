//! Differential tests of the hash commands against a real `redis-server` (skipped when it is not
//! installed, failed under `CI=true`): a hand-written script over every command, option and error, in
//! both encodings and across the thresholds, in RESP2 and RESP3; then a seeded random sequence of hash
//! commands on both servers, replies compared, keyspaces compared at the end.
//!
//! Replies compare byte for byte except where Redis's order is unspecified: a listpack hash replies in
//! insertion order (both servers agree, so those compare exactly), a hashtable in its own order
//! (compared as sets of fields or of pairs). HSCAN of a hashtable is compared as the union of a full
//! iteration; random picks (HRANDFIELD) by their shape and membership.

mod common;

use std::collections::BTreeSet;

use common::differ::{split, Differ, Order};
use common::Raw;
use hopless_server::codec::Frame;

/// A seeded xorshift for the random sequence (the server's tests have no `rand`).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `lo..hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }

    fn index(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Sends `cmd` to both and compares the replies' bytes.
fn exact(d: &mut Differ, cmd: &str) {
    let a = split(cmd);
    let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
    let t = d.redis.cmd(&a).encoded();
    let o = d.ours.cmd(&a).encoded();
    if t != o {
        d.diffs.push(format!(
            "{cmd}\n  redis:   {:?}\n  hopless: {:?}",
            String::from_utf8_lossy(&t),
            String::from_utf8_lossy(&o)
        ));
    }
}

/// Every line compared byte for byte, except HGETALL, HKEYS and HVALS of a hash that is not a listpack
/// in Redis (compared as sets of pairs or of elements).
fn exact_all(d: &mut Differ, lines: &[&str]) {
    for l in lines {
        let order = order_of(l);
        let key = l.split(' ').nth(1).unwrap_or("");
        if order != Order::Exact && !is_listpack(&mut d.redis, key) {
            d.run(l, order);
        } else {
            exact(d, l);
        }
    }
}

/// Whether `key` is a listpack hash on this server (whose replies come in insertion order).
fn is_listpack(r: &mut Raw, key: &str) -> bool {
    matches!(
        r.cmd(&[b"OBJECT", b"ENCODING", key.as_bytes()]).read(),
        Frame::Bulk(ref b) if &b[..] == b"listpack"
    )
}

/// A hash's fields with their values, as a set.
type Pairs = BTreeSet<(Vec<u8>, Vec<u8>)>;

/// A full HSCAN of `key` (MATCH/COUNT options in `opts`) on one server: every field and value seen, or
/// the error reply.
fn scan_all(r: &mut Raw, key: &str, opts: &str) -> Result<Pairs, Frame> {
    let mut seen = BTreeSet::new();
    let mut cursor = b"0".to_vec();
    for _ in 0..100_000 {
        let mut a: Vec<Vec<u8>> = vec![b"HSCAN".to_vec(), key.as_bytes().to_vec(), cursor.clone()];
        a.extend(split(opts));
        let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
        let parts = match r.cmd(&a).read() {
            Frame::Array(parts) => parts,
            other => return Err(other),
        };
        let [Frame::Bulk(next), Frame::Array(elems)] = &parts[..] else {
            panic!("HSCAN replies [cursor, elements]: {parts:?}");
        };
        for p in elems.chunks(2) {
            let (Frame::Bulk(f), Frame::Bulk(v)) = (&p[0], &p[1]) else {
                panic!("HSCAN elements are bulk strings");
            };
            seen.insert((f.to_vec(), v.to_vec()));
        }
        if &next[..] == b"0" {
            return Ok(seen);
        }
        cursor = next.to_vec();
    }
    panic!("HSCAN {key} did not end");
}

fn compare_scan(d: &mut Differ, key: &str, opts: &str) {
    let t = scan_all(&mut d.redis, key, opts);
    let o = scan_all(&mut d.ours, key, opts);
    if t != o {
        let show = |r: &Result<Pairs, Frame>| match r {
            Ok(s) => format!("{} pairs", s.len()),
            Err(e) => format!("{e:?}"),
        };
        d.diffs.push(format!(
            "full HSCAN {key} {opts}: redis {}, hopless {}",
            show(&t),
            show(&o)
        ));
    }
}

/// The fields and values of a hash on one server.
fn contents(r: &mut Raw, key: &str) -> Pairs {
    match r.cmd(&[b"HGETALL", key.as_bytes()]).read() {
        Frame::Array(v) => v
            .chunks(2)
            .map(|p| match (&p[0], &p[1]) {
                (Frame::Bulk(f), Frame::Bulk(v)) => (f.to_vec(), v.to_vec()),
                other => panic!("HGETALL gave {other:?}"),
            })
            .collect(),
        other => panic!("HGETALL gave {other:?}"),
    }
}

/// HRANDFIELD `key count [WITHVALUES]` (RESP2) on hopless: the reply has the length Redis's has, and
/// every pick is a field (with its value) of the hash; distinct picks when `count` is positive.
fn check_randfield(d: &mut Differ, key: &str, count: i64, with_values: bool) {
    let mut a = vec![
        b"HRANDFIELD".to_vec(),
        key.as_bytes().to_vec(),
        count.to_string().into_bytes(),
    ];
    if with_values {
        a.push(b"WITHVALUES".to_vec());
    }
    let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
    let t = d.redis.cmd(&a).read();
    let o = d.ours.cmd(&a).read();
    let what = format!("HRANDFIELD {key} {count} withvalues={with_values}");
    let (Frame::Array(tv), Frame::Array(ov)) = (&t, &o) else {
        if t != o {
            d.diffs
                .push(format!("{what}\n  redis:   {t:?}\n  hopless: {o:?}"));
        }
        return;
    };
    if tv.len() != ov.len() {
        d.diffs.push(format!(
            "{what}: redis gave {} elements, hopless {}",
            tv.len(),
            ov.len()
        ));
        return;
    }
    let hash = contents(&mut d.ours, key);
    let fields: BTreeSet<Vec<u8>> = hash.iter().map(|(f, _)| f.clone()).collect();
    let step = if with_values { 2 } else { 1 };
    let mut picked = BTreeSet::new();
    for p in ov.chunks(step) {
        let ok = match p {
            [Frame::Bulk(f)] => fields.contains(&f.to_vec()),
            [Frame::Bulk(f), Frame::Bulk(v)] => hash.contains(&(f.to_vec(), v.to_vec())),
            _ => false,
        };
        if !ok {
            d.diffs
                .push(format!("{what}: hopless picked {p:?}, not in the hash"));
        }
        picked.insert(format!("{:?}", p[0]));
    }
    if count > 0 && picked.len() != ov.len() / step {
        d.diffs.push(format!("{what}: hopless repeated a pick: {ov:?}"));
    }
}

/// The hand-written part: every command, option and error, compared byte for byte (RESP2).
const SCRIPT: &[&str] = &[
    // HSET / HMSET / HSETNX, arity and pairs.
    "HSET h",
    "HSET h f",
    "HSET h f1 v1 f2",
    "HSET h f1 v1",
    "HSET h f1 v1b f2 v2 f3 v3",
    "HSET h f1 x f1 y",
    "HGET h f1",
    "HMSET h",
    "HMSET h a",
    "HMSET h a 1 b",
    "HMSET h a 1 b 2",
    "HSETNX h a 9",
    "HSETNX h new 9",
    "HSETNX h",
    "HSETNX hnx f v",
    "HGETALL h",
    "HKEYS h",
    "HVALS h",
    "OBJECT ENCODING h",
    // HGET / HMGET / HEXISTS / HSTRLEN / HLEN.
    "HGET h nofield",
    "HGET nokey f",
    "HGET h",
    "HMGET h f1 nofield a",
    "HMGET nokey a b",
    "HMGET h",
    "HEXISTS h f1",
    "HEXISTS h nofield",
    "HEXISTS nokey f",
    "HSTRLEN h f2",
    "HSTRLEN h nofield",
    "HSTRLEN nokey f",
    "HLEN h",
    "HLEN nokey",
    "HLEN",
    "HGETALL nokey",
    "HKEYS nokey",
    "HVALS nokey",
    // HDEL, and the key going when emptied.
    "HDEL h",
    "HDEL h nofield",
    "HDEL h f1 f1 f2",
    "HDEL nokey f",
    "HSET gone a 1 b 2",
    "HDEL gone a b c",
    "EXISTS gone",
    "TYPE gone",
    "HSET gone a 1",
    "TYPE gone",
    "HDEL gone a",
    "HLEN gone",
    // HINCRBY.
    "HINCRBY n i 5",
    "HINCRBY n i -7",
    "HINCRBY n i abc",
    "HINCRBY n i 1.5",
    "HINCRBY n i 9223372036854775808",
    "HSET n max 9223372036854775807 min -9223372036854775808 s hello sp ' 1' lz 007 e ''",
    "HINCRBY n max 1",
    "HINCRBY n max 0",
    "HINCRBY n min -1",
    "HINCRBY n min 9223372036854775807",
    "HINCRBY n s 1",
    "HINCRBY n sp 1",
    "HINCRBY n lz 1",
    "HINCRBY n e 1",
    "HSET n tr '11 ' neg -9223372036854775484 hex 0x10 plus +5",
    "HINCRBY n tr 1",
    "HINCRBYFLOAT n tr 1",
    "HINCRBY n neg -1",
    "HINCRBY n neg -10000",
    "HINCRBY n hex 1",
    "HINCRBY n plus 1",
    "HINCRBYFLOAT n hex 1",
    "HINCRBYFLOAT n plus 1",
    "HSTRLEN n neg",
    "HSTRLEN n max",
    "HINCRBY n",
    "HINCRBY newn f 3",
    // HINCRBYFLOAT.
    "HINCRBYFLOAT fl x 1.5",
    "HINCRBYFLOAT fl x 2.25",
    "HINCRBYFLOAT fl x -3.75",
    "HINCRBYFLOAT fl x 10",
    "HINCRBYFLOAT fl x 1e3",
    "HINCRBYFLOAT fl x -1010",
    "HINCRBYFLOAT fl y 5.0e0",
    "HINCRBYFLOAT fl y abc",
    "HINCRBYFLOAT fl y ''",
    "HINCRBYFLOAT fl y ' 1'",
    "HINCRBYFLOAT fl y nan",
    "HINCRBYFLOAT fl y inf",
    "HINCRBYFLOAT fl y -inf",
    "HSET fl s hello i 12 inf inf sp ' 1'",
    "HINCRBYFLOAT fl s 1",
    "HINCRBYFLOAT fl i 0.5",
    "HINCRBYFLOAT fl inf 1",
    "HINCRBYFLOAT fl sp 1",
    "HINCRBYFLOAT fl big 1e308",
    "HINCRBYFLOAT fl big 1e308",
    "HINCRBYFLOAT fl tiny 1e-18",
    "HINCRBYFLOAT fl tiny 0.1",
    "HINCRBYFLOAT fl tiny 0.2",
    "HINCRBYFLOAT fl hex 0x1.8p1",
    "HINCRBYFLOAT fl hex 1e4000",
    "HINCRBYFLOAT fl hex 1e4932",
    "HINCRBYFLOAT fl hex 1e5000",
    "HINCRBYFLOAT fl hex 1e-5000",
    "HSET fl i64 9223372036854775807",
    "HINCRBYFLOAT fl i64 1.5",
    "HINCRBYFLOAT fl i64 -0.000001",
    "HINCRBYFLOAT fl i 0",
    "HINCRBY fl i 1",
    "HGETALL fl",
    "HINCRBYFLOAT fl",
    // HRANDFIELD: the deterministic cases (whole hash, one field, errors).
    "HSET r a 1 b 2 c 3",
    "HRANDFIELD r 3",
    "HRANDFIELD r 10 WITHVALUES",
    "HRANDFIELD r 0",
    "HRANDFIELD r 0 WITHVALUES",
    "HRANDFIELD r abc",
    "HRANDFIELD r 1 foo",
    "HRANDFIELD r 1 WITHVALUES x",
    "HRANDFIELD r -9223372036854775808",
    "HRANDFIELD r -9223372036854775807 WITHVALUES",
    "HRANDFIELD r 9223372036854775807 WITHVALUES",
    "HRANDFIELD r 4611686018427387904 WITHVALUES",
    "HRANDFIELD r 4611686018427387903 WITHVALUES",
    "HRANDFIELD r 9223372036854775807",
    "HRANDFIELD nokey",
    "HRANDFIELD nokey 3",
    "HRANDFIELD nokey -3 WITHVALUES",
    "HRANDFIELD nokey abc",
    "HSET one f v",
    "HRANDFIELD one",
    "HRANDFIELD one -4",
    "HRANDFIELD one -3 WITHVALUES",
    "HRANDFIELD one 1 WITHVALUES",
    "HRANDFIELD one -1",
    // HSCAN of a listpack: everything at once, cursor 0, MATCH applied, COUNT ignored.
    "HSCAN h 0",
    "HSCAN h 0 COUNT 1",
    "HSCAN h 0 MATCH f*",
    "HSCAN h 0 MATCH * COUNT 100",
    "HSCAN h 0 MATCH nothing*",
    "HSCAN h 0 COUNT 0",
    "HSCAN h 0 COUNT -1",
    "HSCAN h 0 COUNT abc",
    "HSCAN h 0 MATCH",
    "HSCAN h 0 FOO bar",
    "HSCAN h abc",
    "HSCAN h 18446744073709551616",
    "HSCAN h 18446744073709551615",
    "HSCAN nokey 0",
    "HSCAN nokey 0 FOO",
    "HSCAN nokey abc",
    "HSCAN h",
    // WRONGTYPE against a string, and which error wins.
    "SET str x",
    "HSET str f v",
    "HMSET str f v",
    "HSET str f",
    "HSETNX str f v",
    "HGET str f",
    "HMGET str f",
    "HDEL str f",
    "HLEN str",
    "HSTRLEN str f",
    "HEXISTS str f",
    "HKEYS str",
    "HVALS str",
    "HGETALL str",
    "HINCRBY str f 1",
    "HINCRBY str f abc",
    "HINCRBYFLOAT str f 1",
    "HINCRBYFLOAT str f abc",
    "HINCRBYFLOAT str f inf",
    "HRANDFIELD str",
    "HRANDFIELD str 1",
    "HRANDFIELD str 0",
    "HRANDFIELD str abc",
    "HRANDFIELD str 1 foo",
    "HSCAN str 0",
    "HSCAN str 0 COUNT 0",
    "HSCAN str abc",
    "GET h",
    "TYPE h",
    // Other commands on hashes.
    "EXPIRE h 100",
    "COPY h hcopy",
    "HGETALL hcopy",
    "RENAME hcopy hren",
    "HGETALL hren",
    "OBJECT ENCODING hren",
    "DEL hren",
    "EXISTS hren",
    // Thresholds: entries, value length, conversion that never goes back.
    "CONFIG SET hash-max-listpack-entries 4",
    "CONFIG SET hash-max-listpack-value 8",
    "HSET t a 1 b 2 c 3 d 4",
    "OBJECT ENCODING t",
    "HSET t e 5",
    "OBJECT ENCODING t",
    "HDEL t a b c d",
    "OBJECT ENCODING t",
    "HGETALL t",
    "HSET t2 a 12345678",
    "OBJECT ENCODING t2",
    "HSET t2 a 123456789",
    "OBJECT ENCODING t2",
    "HSET t3 abcdefghi 1",
    "OBJECT ENCODING t3",
    "HSET t4 a 9999999",
    "HINCRBY t4 a 1",
    "OBJECT ENCODING t4",
    "HINCRBY t4 a 1",
    "OBJECT ENCODING t4",
    "HSET t5 a 1.5",
    "HINCRBYFLOAT t5 a 1000000",
    "OBJECT ENCODING t5",
    "HINCRBYFLOAT t5 a 10000000",
    "OBJECT ENCODING t5",
    "HSETNX t6 a 1",
    "HSETNX t6 b 2",
    "HSETNX t6 c 3",
    "HSETNX t6 d 4",
    "OBJECT ENCODING t6",
    "HSETNX t6 a 123456789",
    "OBJECT ENCODING t6",
    "HSETNX t6 e 5",
    "OBJECT ENCODING t6",
    "HSET t7 x 1",
    "HSETNX t7 longfieldname 1",
    "OBJECT ENCODING t7",
    "HSET t8 x 1",
    "HINCRBY t8 longfieldname 1",
    "OBJECT ENCODING t8",
    "CONFIG SET hash-max-ziplist-entries 0",
    "HSET t9 '' ''",
    "OBJECT ENCODING t9",
    "CONFIG SET hash-max-ziplist-entries 128",
    "CONFIG SET hash-max-listpack-value 0",
    "HSET t10 '' ''",
    "OBJECT ENCODING t10",
    "HSET t10 a ''",
    "OBJECT ENCODING t10",
    "CONFIG SET hash-max-listpack-value 64",
    "HSET t11 a 1",
    "OBJECT ENCODING t11",
];

fn order_of(cmd: &str) -> Order {
    let c = cmd.to_ascii_uppercase();
    if c.starts_with("HGETALL") {
        Order::UnorderedPairs
    } else if c.starts_with("HKEYS") || c.starts_with("HVALS") {
        Order::Unordered
    } else {
        Order::Exact
    }
}

#[test]
fn hash_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    exact_all(&mut d, SCRIPT);

    // A hashtable past the entry threshold: unordered replies, a full scan, random picks.
    let mut big = vec!["HSET big".to_string()];
    for i in 0..300 {
        big.push(format!("f{i} v{i}"));
    }
    exact(&mut d, &big.join(" "));
    let lines = [
        "OBJECT ENCODING big",
        "HLEN big",
        "HGET big f17",
        "HMGET big f0 f299 f300",
        "HSTRLEN big f100",
        "HEXISTS big f250",
        "HDEL big f0 f1 nofield",
        "HSET big f2 changed",
        "HGET big f2",
        "HINCRBY big n 5",
        "HINCRBYFLOAT big x 2.5",
        "HRANDFIELD big 0",
        "HSCAN big abc",
        "HSCAN big 0 COUNT 0",
        "COPY big bigcopy",
        "OBJECT ENCODING bigcopy",
        "HLEN bigcopy",
        "HDEL bigcopy f10",
        "HEXISTS big f10",
        "EXPIRE bigcopy 1000",
    ];
    exact_all(&mut d, &lines);
    for l in ["HGETALL big", "HKEYS big", "HVALS big", "HGETALL bigcopy"] {
        d.run(l, order_of(l));
    }
    // A full iteration with several COUNTs and a MATCH, then after removals and additions.
    compare_scan(&mut d, "big", "");
    compare_scan(&mut d, "big", "COUNT 7");
    compare_scan(&mut d, "big", "COUNT 1000");
    compare_scan(&mut d, "big", "MATCH f1* COUNT 3");
    compare_scan(&mut d, "h", "MATCH f*");
    for (count, wv) in [
        (5, false),
        (5, true),
        (150, false),
        (299, true),
        (400, true),
        (-20, true),
        (-1, false),
    ] {
        check_randfield(&mut d, "big", count, wv);
    }
    for (count, wv) in [(2, false), (2, true), (-10, true), (-10, false)] {
        check_randfield(&mut d, "r", count, wv);
    }
    // The same on a hash that converted to a hashtable and lost most fields.
    exact(&mut d, "HDEL big f3 f4 f5 f6 f7 f8 f9 f10");
    compare_scan(&mut d, "big", "COUNT 5");
    d.run("HRANDFIELD big 1000 WITHVALUES", Order::UnorderedPairs);
    d.run("HRANDFIELD r 1000 WITHVALUES", Order::Exact);
    // A hash removed when emptied in the large form too.
    let mut del = vec!["HDEL big".to_string(), "n x".to_string()];
    for i in 0..300 {
        del.push(format!("f{i}"));
    }
    exact(&mut d, &del.join(" "));
    exact_all(&mut d, &["EXISTS big", "HLEN big"]);

    d.compare_keyspace();
    d.assert_none();
}

/// RESP3 shapes: HGETALL a map, HRANDFIELD WITHVALUES a list of pairs, nulls.
#[test]
fn hash_replies_in_resp3_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.redis.cmd(&[b"HELLO", b"3"]).read();
    d.ours.cmd(&[b"HELLO", b"3"]).read();
    exact_all(
        &mut d,
        &[
            "HSET h a 1 b 2 c 3",
            "HGETALL h",
            "HGETALL nokey",
            "HKEYS h",
            "HVALS h",
            "HKEYS nokey",
            "HGET h nofield",
            "HGET nokey f",
            "HMGET h a nofield",
            "HMGET nokey a",
            "HINCRBYFLOAT h f 1.5",
            "HRANDFIELD h 10 WITHVALUES",
            "HRANDFIELD h 4",
            "HRANDFIELD h 0 WITHVALUES",
            "HRANDFIELD nokey",
            "HRANDFIELD nokey 2 WITHVALUES",
            "HSET one f v",
            "HRANDFIELD one -3 WITHVALUES",
            "HRANDFIELD one 1 WITHVALUES",
            "HRANDFIELD one -2",
            "HSCAN h 0",
            "HSCAN nokey 0",
        ],
    );
    // A hashtable: HGETALL's map compared as a set of pairs, HRANDFIELD's nested pairs by shape.
    let mut big = vec!["HSET big".to_string()];
    big.extend((0..200).map(|i| format!("f{i} v{i}")));
    exact(&mut d, &big.join(" "));
    let sorted_map = |f: Frame| match f {
        Frame::Map(mut m) => {
            m.sort_by_key(|p| format!("{p:?}"));
            m
        }
        other => panic!("HGETALL gave {other:?} under RESP3"),
    };
    let t = sorted_map(d.redis.cmd(&[b"HGETALL", b"big"]).read());
    let o = sorted_map(d.ours.cmd(&[b"HGETALL", b"big"]).read());
    assert_eq!(t, o, "HGETALL big under RESP3");
    for count in [&b"-5"[..], b"5", b"300"] {
        let shape = |f: Frame| {
            match f {
            Frame::Array(v) => v
                .iter()
                .map(|p| matches!(p, Frame::Array(pair) if matches!(&pair[..], [Frame::Bulk(_), Frame::Bulk(_)])))
                .filter(|ok| *ok)
                .count(),
            other => panic!("HRANDFIELD gave {other:?}"),
        }
        };
        let a: [&[u8]; 4] = [b"HRANDFIELD", b"big", count, b"WITHVALUES"];
        let t = shape(d.redis.cmd(&a).read());
        let o = shape(d.ours.cmd(&a).read());
        assert_eq!(
            t,
            o,
            "HRANDFIELD big {} WITHVALUES under RESP3",
            String::from_utf8_lossy(count)
        );
    }
    d.assert_none();
}

/// A seeded random sequence of hash commands on a few keys (one of them a string), with the thresholds
/// moved now and then so that hashes convert mid-sequence; replies compared, keyspaces at the end.
#[test]
fn random_hash_sequences_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let seed = std::env::var("HASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x4a54_u64);
    let mut rng = Rng(seed | 1);
    let keys = ["k0", "k1", "k2", "k3", "k4", "str"];
    exact(&mut d, "SET str text");
    let steps = 4000;
    for _ in 0..steps {
        let key = keys[rng.index(keys.len())];
        let field = |rng: &mut Rng| format!("f{}", rng.range(0, 24));
        let value = |rng: &mut Rng| -> String {
            match rng.range(0, 6) {
                0 => rng.range(-100i64, 100).to_string(),
                1 => format!("{}.5", rng.range(-20i64, 20)),
                2 => "x".repeat(rng.index(19) + 1),
                3 => "-0.5".to_string(),
                4 => "''".to_string(),
                _ => format!("v{}", rng.range(0, 1000)),
            }
        };
        let cmd = match rng.range(0, 100) {
            0..=19 => {
                let n = rng.range(1, 4);
                let mut c = format!("HSET {key}");
                for _ in 0..n {
                    c += &format!(" {} {}", field(&mut rng), value(&mut rng));
                }
                c
            }
            20..=24 => format!("HSETNX {key} {} {}", field(&mut rng), value(&mut rng)),
            25..=32 => format!("HGET {key} {}", field(&mut rng)),
            33..=36 => format!("HMGET {key} {} {}", field(&mut rng), field(&mut rng)),
            37..=46 => {
                let n = rng.range(1, 4);
                let mut c = format!("HDEL {key}");
                for _ in 0..n {
                    c += &format!(" {}", field(&mut rng));
                }
                c
            }
            47..=49 => format!("HLEN {key}"),
            50..=52 => format!("HSTRLEN {key} {}", field(&mut rng)),
            53..=55 => format!("HEXISTS {key} {}", field(&mut rng)),
            56..=58 => format!("HGETALL {key}"),
            59..=60 => format!("HKEYS {key}"),
            61..=62 => format!("HVALS {key}"),
            63..=70 => format!(
                "HINCRBY {key} {} {}",
                field(&mut rng),
                [1i64, -3, 1000, 9223372036854775807, -9223372036854775807][rng.index(5)]
            ),
            71..=77 => format!(
                "HINCRBYFLOAT {key} {} {}",
                field(&mut rng),
                ["1.5", "-0.25", "3", "1e2", "abc", "0.1", "-1e-18", "1e300", "0x1p-3"][rng.index(9)]
            ),
            78..=80 => format!("HRANDFIELD {key} 1000"),
            81..=82 => format!("HRANDFIELD {key} 1000 WITHVALUES"),
            83..=85 => format!("OBJECT ENCODING {key}"),
            86..=88 => "scan".to_string(),
            89 if key == "str" => "SET str text".to_string(),
            89 => format!("DEL {key}"),
            90..=91 => format!(
                "CONFIG SET hash-max-listpack-entries {}",
                [2, 8, 128][rng.index(3)]
            ),
            92..=93 => format!("CONFIG SET hash-max-listpack-value {}", [4, 16, 64][rng.index(3)]),
            94..=95 => "randfield".to_string(),
            _ => format!("EXISTS {key}"),
        };
        if cmd == "scan" {
            compare_scan(&mut d, key, ["", "COUNT 3", "MATCH f1*"][rng.index(3)]);
            continue;
        }
        if cmd == "randfield" {
            let count = [1i64, 2, 5, -3, -8][rng.index(5)];
            check_randfield(&mut d, key, count, rng.next() % 2 == 0);
            continue;
        }
        // Listpack hashes reply in insertion order on both servers: compare exactly then.
        let listpack = is_listpack(&mut d.redis, key);
        let order = if listpack {
            Order::Exact
        } else if cmd.ends_with("WITHVALUES") {
            Order::UnorderedPairs
        } else if cmd.starts_with("HRANDFIELD") {
            Order::Unordered
        } else {
            order_of(&cmd)
        };
        d.run(&cmd, order);
        if d.diffs.len() > 20 {
            break;
        }
    }
    d.compare_keyspace();
    d.assert_none();
}

/// HINCRBYFLOAT over random numbers of every shape (long mantissas, exponents far both ways, integers
/// near 2^63, hex), stored value and increment alike: Redis's `long double` sums and prints, digit for
/// digit.
#[test]
fn hincrbyfloat_matches_redis_on_random_numbers() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let mut rng = Rng(0x11d0_u64);
    let number = |rng: &mut Rng| -> String {
        let sign = ["", "-", "+"][rng.index(3)];
        // One to `max` random digits.
        let digits = |rng: &mut Rng, max: usize| -> String {
            let n = rng.index(max) + 1;
            (0..n).map(|_| char::from(b'0' + rng.index(10) as u8)).collect()
        };
        match rng.index(6) {
            0 => format!("{sign}{}", digits(rng, 25)),
            1 => {
                let int = digits(rng, 12);
                format!("{sign}{int}.{}", digits(rng, 25))
            }
            2 => format!("{sign}{}e{}", digits(rng, 20), rng.range(-60, 60)),
            3 => format!("{sign}0.{}e{}", digits(rng, 20), rng.range(-4950, 4932)),
            4 => format!("{sign}{}", 9223372036854775807i64 - rng.range(0, 1000)),
            _ => format!(
                "{sign}0x{:x}.{:x}p{}",
                rng.next() >> 8,
                rng.next() >> 40,
                rng.range(-80, 80)
            ),
        }
    };
    for i in 0..1500 {
        let (a, b) = (number(&mut rng), number(&mut rng));
        exact(&mut d, &format!("HSET fl f{} {a}", i % 50));
        exact(&mut d, &format!("HINCRBYFLOAT fl f{} {b}", i % 50));
        exact(&mut d, &format!("HINCRBYFLOAT fl f{} {b}", i % 50));
        if d.diffs.len() > 10 {
            break;
        }
    }
    d.assert_none();
}

/// COMMAND INFO of each hash command: name, arity, flags, key positions and ACL categories as Redis 7.0
/// lists them (the tips, key specs and subcommands after those hopless leaves empty).
#[test]
fn command_info_rows_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for name in [
        "hset",
        "hsetnx",
        "hget",
        "hmget",
        "hmset",
        "hdel",
        "hlen",
        "hstrlen",
        "hexists",
        "hkeys",
        "hvals",
        "hgetall",
        "hincrby",
        "hincrbyfloat",
        "hrandfield",
        "hscan",
    ] {
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
