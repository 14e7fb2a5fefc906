//! DUMP and RESTORE on the store: payloads redis-server 7.0.15 wrote are read and written back byte for
//! byte; large collections go round trips in the plain forms; every truncation and many byte flips of a
//! payload are refused (or read as some valid value), never a panic, and a refused RESTORE changes
//! nothing.

use std::sync::Arc;

use hopless_kv::persist::LoadError;
use hopless_kv::rdb::encode::Encoder;
use hopless_kv::rdb::{self};
use hopless_kv::{Config, ManualClock, Store};

fn store() -> Store {
    Store::new(Config {
        shards: 8,
        active_expiry: false,
        clock: Arc::new(ManualClock::new(1_700_000_000_000)),
        ..Config::default()
    })
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `DUMP` of each key on redis-server 7.0.15 after: `RPUSH l a 1 -5 300 70000 abcdefghij 3.5`, `HSET h
/// f1 v1 f2 2 f3 -3`, `SADD si 1 5 -7 100000`, `ZADD z 1 a 2.5 b -inf c 1e20 d 0.1 e`, `SET n 12345`,
/// `SET long` 300 times `ab`, and a stream `x` (`XADD x 5-1 name alice n 1`, `5-2 name bob n 2`, `6-0
/// other field`; group g1 from 0 with c1 reading two and c2 one, 5-1 acknowledged; group g2 at `$`
/// with ENTRIESREAD 3).
const REDIS: &[(&str, &str)] = &[
    ("l", "120102282800000007008161020101dffb02c12c02f2701101048a6162636465666768696a0b83332e3504ff0a0009e2d4b1004f3c19"),
    ("h", "101c1c0000000600826631038276310382663203020182663303dffd02ff0a002836032fde984dbf"),
    ("si", "0b180400000004000000f9ffffff0100000005000000a08601000a008257600fb9e9edca"),
    ("z", "11c3363f163f0000000a00816302842d696e660581650293302e3130e00500193114816102010181620283322e35048164028531652b323006ff0a00522a5c5e71d20121"),
    ("n", "00c139300a009d94ea2793fc08b9"),
    ("long", "00c310425802616261e0ff01e0ff01e03a010161620a003897a9748ed12c00"),
    ("x", "130110000000000000000500000000000000014051510000001900030100010201846e616d6505816e02000102010001000185616c696365060101050102010001010183626f62040201050100010101dfff020101856f7468657206856669656c64060601ff0306000501000003020267310600030200000000000000050000000000000002afe5944ea20100000100000000000000060000000000000000afe5944ea20100000102026331afe5944ea20100000100000000000000050000000000000002026332afe5944ea2010000010000000000000006000000000000000002673206000300000a00fca142fd938298da"),
];

#[test]
fn redis_payloads_come_back_byte_for_byte() {
    let s = store();
    for (key, h) in REDIS {
        let payload = hex(h);
        let v = s
            .read_payload(&payload)
            .unwrap_or_else(|e| panic!("{key}: {e:?}"));
        assert!(s.restore(key.as_bytes(), v, None, false).unwrap());
        let again = s.dump(key.as_bytes(), true).unwrap();
        assert_eq!(again, payload, "{key}: DUMP after RESTORE differs from Redis's");
    }
    assert_eq!(s.lrange(b"l", 0, -1).unwrap().len(), 7);
    assert!(!s
        .restore(b"l", s.read_payload(&hex(REDIS[0].1)).unwrap(), None, false)
        .unwrap());
}

/// A payload of `body` (type byte first) with a good footer.
fn payload(body: Vec<u8>) -> Vec<u8> {
    let mut p = body;
    rdb::dump_footer(&mut p);
    p
}

#[test]
fn large_collections_in_plain_forms_go_round_trips() {
    let s = store();
    let n = 2000u64;
    let mut hash = Encoder::new(false);
    hash.u8(rdb::RDB_TYPE_HASH);
    hash.len(n);
    let mut set = Encoder::new(false);
    set.u8(rdb::RDB_TYPE_SET);
    set.len(n);
    let mut zset = Encoder::new(true);
    zset.u8(rdb::RDB_TYPE_ZSET_2);
    zset.len(n);
    let mut list = Encoder::new(true);
    list.u8(rdb::RDB_TYPE_LIST);
    list.len(n);
    for i in 0..n {
        hash.string(format!("field{i}").as_bytes());
        hash.string(format!("value{i}").repeat(3).as_bytes());
        set.string(format!("member{i}").as_bytes());
        zset.string(format!("m{i}").as_bytes());
        zset.binary_double(i as f64 / 3.0 - 100.0);
        list.string(format!("{}", i * 7919).as_bytes());
    }
    for (key, e) in [("h", hash), ("s", set), ("z", zset), ("l", list)] {
        let p = payload(e.out);
        let v = s.read_payload(&p).unwrap();
        s.restore(key.as_bytes(), v, None, false).unwrap();
        // Written in the store's own form, read back under a second name: the same contents.
        let ours = s.dump(key.as_bytes(), true).unwrap();
        let copy = format!("{key}2");
        s.restore(copy.as_bytes(), s.read_payload(&ours).unwrap(), None, false)
            .unwrap();
    }
    let sorted = |mut v: Vec<(Vec<u8>, Vec<u8>)>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(s.hgetall(b"h").unwrap()),
        sorted(s.hgetall(b"h2").unwrap())
    );
    assert_eq!(s.hgetall(b"h").unwrap().len(), n as usize);
    let mut a = s.smembers(b"s").unwrap();
    let mut b = s.smembers(b"s2").unwrap();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(s.lrange(b"l", 0, -1).unwrap(), s.lrange(b"l2", 0, -1).unwrap());
    assert_eq!(s.lrange(b"l", 0, -1).unwrap().len(), n as usize);
    let dz = s.dump(b"z", false).unwrap();
    let dz2 = s.dump(b"z2", false).unwrap();
    assert_eq!(dz, dz2, "a sorted set's plain form is written in score order");
}

#[test]
fn damaged_payloads_are_refused_without_panics() {
    let s = store();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (key, h) in REDIS {
        let good = hex(h);
        for cut in 0..good.len() {
            assert!(
                s.read_payload(&good[..cut]).is_err(),
                "{key}: a payload cut at {cut} was read"
            );
        }
        let body_len = good.len() - 10;
        for _ in 0..400 {
            let mut body = good[..body_len].to_vec();
            let at = (rand() as usize) % body.len();
            body[at] ^= 1 << (rand() % 8);
            // With its checksum made right again, the body is read as some value or refused.
            let p = payload(body);
            if let Ok(v) = s.read_payload(&p) {
                s.restore(b"fuzzed", v, None, true).unwrap();
            }
        }
        let mut wrong = good.clone();
        wrong[0] ^= 0x01;
        assert_eq!(s.read_payload(&wrong).err(), Some(LoadError::Footer));
    }
}
