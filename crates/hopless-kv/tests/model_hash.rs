//! The store's hash commands against a reference model (a `HashMap` of `HashMap`s): random sequences
//! with thresholds low enough that hashes convert mid-sequence, one thread and several threads on
//! disjoint keys; plus one hash every thread works on at once, checked for its invariants.

use std::collections::HashMap;
use std::sync::Arc;

use hopless_kv::{Config, Error, Limits, ManualClock, Store};
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

type Hash = HashMap<Vec<u8>, Vec<u8>>;

fn store() -> Store {
    Store::new(Config {
        shards: 8,
        active_expiry: false,
        clock: Arc::new(ManualClock::new(1_700_000_000_000)),
        limits: Limits {
            hash_entries: 6,
            hash_value: 12,
            ..Limits::default()
        },
        ..Config::default()
    })
}

fn sorted(mut v: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Vec<u8>, Vec<u8>)> {
    v.sort();
    v
}

fn model_pairs(h: Option<&Hash>) -> Vec<(Vec<u8>, Vec<u8>)> {
    sorted(
        h.map(|h| h.iter().map(|(f, v)| (f.clone(), v.clone())).collect())
            .unwrap_or_default(),
    )
}

/// One random operation on the store and the model; panics on any difference.
fn step(rng: &mut SmallRng, s: &Store, m: &mut HashMap<Vec<u8>, Hash>, prefix: &str) {
    let key = format!("{prefix}{}", rng.gen_range(0..4)).into_bytes();
    let field = |rng: &mut SmallRng| format!("f{}", rng.gen_range(0..12)).into_bytes();
    let value = |rng: &mut SmallRng| -> Vec<u8> {
        match rng.gen_range(0..3) {
            0 => rng.gen_range(-50i64..50).to_string().into_bytes(),
            1 => format!("{}.5", rng.gen_range(-9..9)).into_bytes(),
            _ => vec![b'v'; rng.gen_range(0..20)],
        }
    };
    match rng.gen_range(0..11) {
        0 | 1 => {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..4))
                .map(|_| (field(rng), value(rng)))
                .collect();
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
            let h = m.entry(key.clone()).or_default();
            let new = pairs
                .iter()
                .filter(|(f, v)| h.insert(f.clone(), v.clone()).is_none())
                .count();
            assert_eq!(s.hset(&key, &refs).unwrap(), new);
        }
        2 => {
            let (f, v) = (field(rng), value(rng));
            let h = m.entry(key.clone()).or_default();
            let new = !h.contains_key(&f);
            if new {
                h.insert(f.clone(), v.clone());
            }
            assert_eq!(s.hsetnx(&key, &f, &v).unwrap(), new);
        }
        3 => {
            let fields: Vec<Vec<u8>> = (0..rng.gen_range(1..4)).map(|_| field(rng)).collect();
            let refs: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
            let gone = match m.get_mut(&key) {
                Some(h) => fields.iter().filter(|f| h.remove(*f).is_some()).count(),
                None => 0,
            };
            assert_eq!(s.hdel(&key, &refs).unwrap(), gone);
        }
        4 => {
            let f = field(rng);
            let want = m.get(&key).and_then(|h| h.get(&f)).cloned();
            assert_eq!(s.hget(&key, &f).unwrap(), want);
            assert_eq!(s.hexists(&key, &f).unwrap(), want.is_some());
            assert_eq!(s.hstrlen(&key, &f).unwrap(), want.map_or(0, |v| v.len()));
            let g = field(rng);
            let both = s.hmget(&key, &[&f, &g]).unwrap();
            let h = m.get(&key);
            assert_eq!(both[1], h.and_then(|h| h.get(&g)).cloned());
        }
        5 => {
            let d = rng.gen_range(-100i64..100);
            let f = field(rng);
            let h = m.entry(key.clone()).or_default();
            let cur = h.get(&f).map(|v| hopless_kv::store::parse_i64(v));
            match (s.hincrby(&key, &f, d), cur) {
                (Ok(n), None) => {
                    assert_eq!(n, d);
                    h.insert(f, n.to_string().into_bytes());
                }
                (Ok(n), Some(Some(c))) => {
                    assert_eq!(n, c + d);
                    h.insert(f, n.to_string().into_bytes());
                }
                (Err(Error::Msg("ERR hash value is not an integer")), Some(None)) => {}
                (r, c) => panic!("HINCRBY gave {r:?} on {c:?}"),
            }
        }
        6 => {
            let (dt, d) = [("0.5", 0.5), ("-1.25", -1.25), ("3", 3.0)][rng.gen_range(0..3)];
            let f = field(rng);
            let h = m.entry(key.clone()).or_default();
            let cur = h.get(&f).map(|v| {
                std::str::from_utf8(v)
                    .ok()
                    .filter(|s| !s.is_empty())
                    .and_then(|s| s.parse::<f64>().ok())
            });
            match (s.hincrbyfloat(&key, &f, dt.as_bytes()), cur) {
                (Ok(text), None) => {
                    assert_eq!(text.as_slice(), format!("{d}").as_bytes());
                    h.insert(f, text);
                }
                (Ok(text), Some(Some(c))) => {
                    let got: f64 = std::str::from_utf8(&text).unwrap().parse().unwrap();
                    assert_eq!(got, c + d);
                    h.insert(f, text);
                }
                (Err(Error::Msg("ERR hash value is not a float")), Some(None)) => {}
                (r, c) => panic!("HINCRBYFLOAT gave {r:?} on {c:?}"),
            }
        }
        7 => {
            let h = m.get(&key);
            assert_eq!(sorted(s.hgetall(&key).unwrap()), model_pairs(h));
            assert_eq!(s.hlen(&key).unwrap(), h.map_or(0, |h| h.len()));
            let mut keys = s.hkeys(&key).unwrap();
            keys.sort();
            let mut want: Vec<Vec<u8>> = h.map(|h| h.keys().cloned().collect()).unwrap_or_default();
            want.sort();
            assert_eq!(keys, want);
            assert_eq!(s.hvals(&key).unwrap().len(), want.len());
        }
        8 => {
            let h = m.get(&key);
            let count = rng.gen_range(-8i64..8);
            let picks = s.hrandfield(&key, count).unwrap();
            let len = h.map_or(0, |h| h.len());
            let want = if count < 0 {
                if len == 0 {
                    0
                } else {
                    count.unsigned_abs() as usize
                }
            } else {
                (count as usize).min(len)
            };
            assert_eq!(picks.len(), want);
            for (f, v) in &picks {
                assert_eq!(h.and_then(|h| h.get(f)), Some(v));
            }
            if count > 0 {
                let mut fs: Vec<&Vec<u8>> = picks.iter().map(|(f, _)| f).collect();
                fs.sort();
                fs.dedup();
                assert_eq!(fs.len(), picks.len());
            }
        }
        9 => {
            // A full HSCAN with a small COUNT sees every field.
            let mut seen = Vec::new();
            let mut cursor = 0;
            loop {
                let (next, part) = s.hscan(&key, cursor, 2, None).unwrap();
                seen.extend(part);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            seen.sort();
            seen.dedup();
            assert_eq!(seen, model_pairs(m.get(&key)));
        }
        _ => {
            // A key emptied by HDEL is gone, and the encoding is one of the two.
            let exists = s.hlen(&key).unwrap() > 0;
            assert_eq!(exists, m.get(&key).is_some_and(|h| !h.is_empty()));
            let enc = s.coll_encoding(&key);
            assert!(
                matches!(enc, None | Some("listpack") | Some("hashtable")),
                "{enc:?}"
            );
            assert_eq!(enc.is_some(), exists);
        }
    }
    m.retain(|_, h| !h.is_empty());
}

#[test]
fn random_sequences_match_the_model_single_threaded() {
    let s = store();
    let mut m = HashMap::new();
    let mut rng = SmallRng::seed_from_u64(7);
    s.set(b"str", b"x", Default::default()).unwrap();
    for _ in 0..20_000 {
        step(&mut rng, &s, &mut m, "k");
    }
    assert_eq!(s.hget(b"str", b"f"), Err(Error::WrongType));
    assert_eq!(s.hset(b"str", &[(b"f", b"v")]), Err(Error::WrongType));
}

#[test]
fn threads_on_disjoint_keys_and_one_shared_hash() {
    let s = store();
    let threads = 4;
    let rounds = 5_000;
    std::thread::scope(|sc| {
        for t in 0..threads {
            let s = &s;
            sc.spawn(move || {
                let mut m = HashMap::new();
                let mut rng = SmallRng::seed_from_u64(100 + t);
                let mine = format!("t{t}").into_bytes();
                for i in 0..rounds {
                    step(&mut rng, s, &mut m, &format!("t{t}-"));
                    // The shared hash: this thread's counter only grows by one each round; other
                    // fields come and go under everyone.
                    assert_eq!(s.hincrby(b"shared", &mine, 1).unwrap(), i + 1);
                    let f = format!("tmp{}", rng.gen_range(0..20)).into_bytes();
                    if rng.gen_bool(0.5) {
                        s.hset(b"shared", &[(&f, b"x")]).unwrap();
                    } else {
                        s.hdel(b"shared", &[&f]).unwrap();
                    }
                    if i % 100 == 0 {
                        let all = s.hgetall(b"shared").unwrap();
                        assert_eq!(all.iter().filter(|(f, _)| f == &mine).count(), 1);
                        let mut fs: Vec<&Vec<u8>> = all.iter().map(|(f, _)| f).collect();
                        fs.sort();
                        fs.dedup();
                        assert_eq!(fs.len(), all.len(), "a field listed twice");
                    }
                }
            });
        }
    });
    for t in 0..threads {
        let f = format!("t{t}").into_bytes();
        assert_eq!(
            s.hget(b"shared", &f).unwrap(),
            Some(rounds.to_string().into_bytes())
        );
    }
    assert_eq!(s.coll_encoding(b"shared"), Some("hashtable"));
}
