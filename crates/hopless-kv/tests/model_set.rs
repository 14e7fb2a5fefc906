//! The store's set commands against a reference model (a map of `BTreeSet`s beside plain strings): random
//! operation sequences in several threads at once, each on its own keys, with small compact-form
//! thresholds so that sets cross every conversion; plus one key all threads share, each adding and
//! removing only its own members, checked for what each thread knows of it.

use std::collections::{BTreeSet, HashMap};

use hopless_kv::store::Moved;
use hopless_kv::{Config, Error, Limits, Store};
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

#[derive(Clone, Debug)]
enum Entry {
    Str,
    Set(BTreeSet<Vec<u8>>),
}

#[derive(Default)]
struct Model {
    map: HashMap<Vec<u8>, Entry>,
}

impl Model {
    /// The set at `k`: `Ok(None)` if missing, `Err` if a string.
    fn set(&self, k: &[u8]) -> Result<Option<&BTreeSet<Vec<u8>>>, Error> {
        match self.map.get(k) {
            None => Ok(None),
            Some(Entry::Str) => Err(Error::WrongType),
            Some(Entry::Set(s)) => Ok(Some(s)),
        }
    }

    fn set_mut(&mut self, k: &[u8]) -> &mut BTreeSet<Vec<u8>> {
        match self
            .map
            .entry(k.to_vec())
            .or_insert_with(|| Entry::Set(BTreeSet::new()))
        {
            Entry::Set(s) => s,
            Entry::Str => panic!("checked before"),
        }
    }

    /// Removes `k` if it holds an empty set (as the store does).
    fn tidy(&mut self, k: &[u8]) {
        if matches!(self.map.get(k), Some(Entry::Set(s)) if s.is_empty()) {
            self.map.remove(k);
        }
    }

    /// The sources of a multi-key command: WRONGTYPE if any is a string; missing ones are empty.
    fn sources(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<BTreeSet<Vec<u8>>>>, Error> {
        keys.iter().map(|k| Ok(self.set(k)?.cloned())).collect()
    }
}

fn algebra(op: usize, sets: &[Option<BTreeSet<Vec<u8>>>]) -> BTreeSet<Vec<u8>> {
    match op {
        0 => {
            if sets.iter().any(|s| s.is_none()) {
                return BTreeSet::new();
            }
            let mut it = sets.iter().flatten();
            let first = it.next().unwrap().clone();
            it.fold(first, |acc, s| acc.intersection(s).cloned().collect())
        }
        1 => sets.iter().flatten().flatten().cloned().collect(),
        _ => {
            let mut out = sets[0].clone().unwrap_or_default();
            for s in sets[1..].iter().flatten() {
                out.retain(|m| !s.contains(m));
            }
            out
        }
    }
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

fn small_limits(s: &Store) {
    for (name, v) in [
        ("set-max-intset-entries", 6),
        ("set-max-listpack-entries", 5),
        ("set-max-listpack-value", 6),
    ] {
        s.set_limit(Limits::index_of(name).unwrap(), v);
    }
}

/// An intset replies in ascending numeric order: check it where the store says it keeps one.
fn check_intset_order(s: &Store, k: &[u8], got: &[Vec<u8>]) {
    if s.coll_encoding(k) == Some("intset") {
        let nums: Vec<i64> = got
            .iter()
            .map(|m| std::str::from_utf8(m).unwrap().parse().unwrap())
            .collect();
        assert!(nums.windows(2).all(|w| w[0] < w[1]), "intset order: {nums:?}");
    }
}

fn step(rng: &mut SmallRng, s: &Store, m: &mut Model, prefix: &str) {
    let key = |rng: &mut SmallRng| format!("{prefix}{}", rng.gen_range(0..6)).into_bytes();
    let member = |rng: &mut SmallRng| -> Vec<u8> {
        match rng.gen_range(0..8) {
            0..=3 => rng.gen_range(-5..20).to_string().into_bytes(),
            4 => format!("0{}", rng.gen_range(0..3)).into_bytes(),
            5 => format!("long-{}", rng.gen_range(0..4)).into_bytes(),
            _ => format!("m{}", rng.gen_range(0..10)).into_bytes(),
        }
    };
    let k = key(rng);
    match rng.gen_range(0..20) {
        0..=3 => {
            let ms: Vec<Vec<u8>> = (0..rng.gen_range(1..5)).map(|_| member(rng)).collect();
            let refs: Vec<&[u8]> = ms.iter().map(|x| &x[..]).collect();
            let got = s.sadd(&k, &refs);
            match m.set(&k) {
                Err(e) => assert_eq!(got, Err(e)),
                Ok(_) => {
                    let set = m.set_mut(&k);
                    let n = ms.iter().filter(|x| set.insert(x.to_vec())).count();
                    assert_eq!(got, Ok(n));
                }
            }
        }
        4 | 5 => {
            let ms: Vec<Vec<u8>> = (0..rng.gen_range(1..4)).map(|_| member(rng)).collect();
            let refs: Vec<&[u8]> = ms.iter().map(|x| &x[..]).collect();
            let got = s.srem(&k, &refs);
            match m.set(&k) {
                Err(e) => assert_eq!(got, Err(e)),
                Ok(None) => assert_eq!(got, Ok(0)),
                Ok(Some(_)) => {
                    let set = m.set_mut(&k);
                    let n = ms.iter().filter(|x| set.remove(*x)).count();
                    assert_eq!(got, Ok(n));
                    m.tidy(&k);
                }
            }
        }
        6 => {
            let x = member(rng);
            let want = m.set(&k).map(|o| o.is_some_and(|s| s.contains(&x)));
            assert_eq!(s.sismember(&k, &x), want);
            let y = member(rng);
            let want = m.set(&k).map(|o| {
                vec![
                    o.is_some_and(|s| s.contains(&x)),
                    o.is_some_and(|s| s.contains(&y)),
                ]
            });
            assert_eq!(s.smismember(&k, &[&x, &y]), want);
        }
        7 => {
            let want = m.set(&k).map(|o| o.map_or(0, |s| s.len()));
            assert_eq!(s.scard(&k), want);
        }
        8 => {
            let got = s.smembers(&k);
            let want = m
                .set(&k)
                .map(|o| o.cloned().unwrap_or_default().into_iter().collect::<Vec<_>>());
            if let Ok(g) = &got {
                check_intset_order(s, &k, g);
            }
            assert_eq!(got.map(sorted), want);
        }
        9 => {
            let got = s.spop(&k);
            match m.set(&k) {
                Err(e) => assert_eq!(got, Err(e)),
                Ok(None) => assert_eq!(got, Ok(None)),
                Ok(Some(_)) => {
                    let p = got.unwrap().expect("a member");
                    assert!(m.set_mut(&k).remove(&p));
                    m.tidy(&k);
                }
            }
        }
        10 => {
            let count = rng.gen_range(0..8u64);
            let got = s.spop_count(&k, count);
            match m.set(&k) {
                Err(e) => assert_eq!(got, Err(e)),
                Ok(None) => assert_eq!(got, Ok(vec![])),
                Ok(Some(set)) => {
                    let g = got.unwrap();
                    assert_eq!(g.len(), (count as usize).min(set.len()));
                    let set = m.set_mut(&k);
                    for p in &g {
                        assert!(set.remove(p), "popped a member twice or a stranger");
                    }
                    m.tidy(&k);
                }
            }
        }
        11 => {
            let count = rng.gen_range(-8..8i64);
            let got = s.srandmember_count(&k, count);
            match m.set(&k) {
                Err(e) => assert_eq!(got, Err(e)),
                Ok(None) => assert_eq!(got, Ok(vec![])),
                Ok(Some(set)) => {
                    let g = got.unwrap();
                    let want = if count < 0 {
                        count.unsigned_abs() as usize
                    } else {
                        (count as usize).min(set.len())
                    };
                    assert_eq!(g.len(), want);
                    assert!(g.iter().all(|x| set.contains(x)));
                    if count >= 0 {
                        assert_eq!(g.iter().collect::<BTreeSet<_>>().len(), g.len(), "distinct");
                    }
                }
            }
            let one = s.srandmember(&k);
            match m.set(&k) {
                Err(e) => assert_eq!(one, Err(e)),
                Ok(o) => assert_eq!(one.unwrap().is_some_and(|x| o.unwrap().contains(&x)), o.is_some()),
            }
        }
        12 => {
            let (d, x) = (key(rng), member(rng));
            let got = s.smove(&k, &d, &x);
            // (in the source, in the destination), or None when the source is missing.
            let found = match (m.set(&k), m.set(&d)) {
                (Ok(None), _) => Ok(None),
                (Err(e), _) | (_, Err(e)) => Err(e),
                (Ok(Some(src)), Ok(dst)) => Ok(Some((src.contains(&x), dst.is_some_and(|d| d.contains(&x))))),
            };
            let want = found.map(|f| match f {
                None | Some((false, _)) => Moved::No,
                Some((true, _)) if k == d => Moved::InPlace,
                Some((true, had)) => {
                    m.set_mut(&k).remove(&x);
                    m.tidy(&k);
                    m.set_mut(&d).insert(x.clone());
                    Moved::Yes { added: !had }
                }
            });
            assert_eq!(got, want);
        }
        13..=15 => {
            let op = rng.gen_range(0..3);
            let keys: Vec<Vec<u8>> = (0..rng.gen_range(1..4)).map(|_| key(rng)).collect();
            let refs: Vec<&[u8]> = keys.iter().map(|x| &x[..]).collect();
            let want = m.sources(&keys).map(|srcs| algebra(op, &srcs));
            let got = match op {
                0 => s.sinter(&refs),
                1 => s.sunion(&refs),
                _ => s.sdiff(&refs),
            };
            assert_eq!(got.map(|g| g.into_iter().collect::<BTreeSet<_>>()), want.clone());
            if op == 0 {
                let limit = rng.gen_range(0..4usize);
                let want_card = want.map(|w| if limit == 0 { w.len() } else { w.len().min(limit) });
                assert_eq!(s.sintercard(&refs, limit), want_card);
            }
        }
        16 | 17 => {
            let op = rng.gen_range(0..3);
            let dst = key(rng);
            let keys: Vec<Vec<u8>> = (0..rng.gen_range(1..4)).map(|_| key(rng)).collect();
            let refs: Vec<&[u8]> = keys.iter().map(|x| &x[..]).collect();
            let got = match op {
                0 => s.sinterstore(&dst, &refs),
                1 => s.sunionstore(&dst, &refs),
                _ => s.sdiffstore(&dst, &refs),
            };
            match m.sources(&keys) {
                Err(e) => assert_eq!(got, Err(e)),
                Ok(srcs) => {
                    let out = algebra(op, &srcs);
                    assert_eq!(got, Ok(out.len()));
                    if out.is_empty() {
                        m.map.remove(&dst);
                    } else {
                        m.map.insert(dst.clone(), Entry::Set(out));
                    }
                }
            }
        }
        18 => {
            // A whole SSCAN: every member exactly as the model has it (nothing changes meanwhile).
            let count = rng.gen_range(1..4);
            let mut cursor = 0;
            let mut seen = BTreeSet::new();
            let pattern: Option<&[u8]> = if rng.gen_bool(0.3) { Some(b"m*") } else { None };
            loop {
                match s.sscan(&k, cursor, count, pattern) {
                    Err(e) => {
                        assert_eq!(m.set(&k).err(), Some(e));
                        return;
                    }
                    Ok((next, got)) => {
                        seen.extend(got);
                        cursor = next;
                    }
                }
                if cursor == 0 {
                    break;
                }
            }
            let want: BTreeSet<Vec<u8>> = m
                .set(&k)
                .unwrap()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|x| pattern.is_none() || x.starts_with(b"m"))
                .collect();
            assert_eq!(seen, want);
        }
        _ => {
            if rng.gen_bool(0.5) {
                s.set_simple(&k, b"str").unwrap();
                m.map.insert(k, Entry::Str);
            } else {
                s.del(&[&k]);
                m.map.remove(&k);
            }
        }
    }
}

fn check_all(s: &Store, m: &Model, prefix: &str) {
    for i in 0..6 {
        let k = format!("{prefix}{i}").into_bytes();
        match m.map.get(&k) {
            None => assert_eq!(s.key_type(&k), None),
            Some(Entry::Str) => assert_eq!(s.smembers(&k), Err(Error::WrongType)),
            Some(Entry::Set(set)) => {
                assert_eq!(
                    s.smembers(&k).map(sorted),
                    Ok(set.iter().cloned().collect::<Vec<_>>())
                );
            }
        }
    }
}

#[test]
fn sets_match_the_model_single_threaded() {
    let s = Store::new(Config::default());
    small_limits(&s);
    let mut m = Model::default();
    let mut rng = SmallRng::seed_from_u64(1);
    for _ in 0..20_000 {
        step(&mut rng, &s, &mut m, "k");
    }
    check_all(&s, &m, "k");
}

#[test]
fn sets_match_the_model_in_threads_with_a_shared_key() {
    let s = Store::new(Config::default());
    small_limits(&s);
    let threads = 4;
    let steps = 8_000;
    let owned: Vec<BTreeSet<Vec<u8>>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let s = &s;
                sc.spawn(move || {
                    let prefix = format!("t{t}:");
                    let mut m = Model::default();
                    let mut rng = SmallRng::seed_from_u64(100 + t as u64);
                    // This thread's members of the shared key: only it adds or removes them.
                    let mut mine = BTreeSet::new();
                    for i in 0..steps {
                        step(&mut rng, s, &mut m, &prefix);
                        let x = format!("t{t}-{}", rng.gen_range(0..20)).into_bytes();
                        if rng.gen_bool(0.5) {
                            assert_eq!(s.sadd(b"shared", &[&x]), Ok(mine.insert(x.clone()) as usize));
                        } else {
                            assert_eq!(s.srem(b"shared", &[&x]), Ok(mine.remove(&x) as usize));
                        }
                        assert_eq!(s.sismember(b"shared", &x), Ok(mine.contains(&x)));
                        let card = s.scard(b"shared").unwrap();
                        assert!(card >= mine.len(), "the shared set lost members");
                        if i % 500 == 0 {
                            let all = s.smembers(b"shared").unwrap();
                            let theirs: BTreeSet<Vec<u8>> = all
                                .into_iter()
                                .filter(|x| x.starts_with(format!("t{t}-").as_bytes()))
                                .collect();
                            assert_eq!(theirs, mine);
                        }
                    }
                    check_all(s, &m, &prefix);
                    mine
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let want: BTreeSet<Vec<u8>> = owned.into_iter().flatten().collect();
    let got: BTreeSet<Vec<u8>> = s.smembers(b"shared").unwrap().into_iter().collect();
    assert_eq!(got, want);
    assert_eq!(s.coll_encoding(b"shared").is_some(), !want.is_empty());
}

#[test]
fn bytes_are_accounted_through_growth_conversions_and_a_whole_pop() {
    let s = Store::new(Config::default());
    let base = s.stats().bytes_used;
    let n = 20_000;
    let members: Vec<Vec<u8>> = (0..n).map(|i| format!("member:{i}").into_bytes()).collect();
    for chunk in members.chunks(100) {
        let refs: Vec<&[u8]> = chunk.iter().map(|x| &x[..]).collect();
        s.sadd(b"big", &refs).unwrap();
    }
    assert_eq!(s.coll_encoding(b"big"), Some("hashtable"));
    let grown = s.stats().bytes_used - base;
    assert!(
        grown > n as u64 * 16,
        "a member costs at least its bytes and its slot: {grown}"
    );
    assert_eq!(
        s.memory_usage(b"big").map(|m| m as u64 > n as u64 * 16),
        Some(true)
    );
    // SPOP of at least the size takes every member and the key, the blocks freed off the lock.
    let popped: BTreeSet<Vec<u8>> = s.spop_count(b"big", u64::MAX).unwrap().into_iter().collect();
    assert_eq!(popped.len(), n);
    assert_eq!(s.key_type(b"big"), None);
    assert_eq!(s.stats().bytes_used, base, "every byte given back to the count");
    // Small integers: an intset of two bytes a member.
    let ints: Vec<Vec<u8>> = (0..500).map(|i: i32| (i * 3).to_string().into_bytes()).collect();
    let refs: Vec<&[u8]> = ints.iter().map(|x| &x[..]).collect();
    s.sadd(b"ints", &refs).unwrap();
    assert_eq!(s.coll_encoding(b"ints"), Some("intset"));
    let used = s.stats().bytes_used - base;
    assert!(
        used < 500 * 2 * 2 + 1024,
        "intset of 500 small integers took {used} bytes"
    );
    s.srem(b"ints", &refs).unwrap();
    assert_eq!(s.stats().bytes_used, base);
}

#[test]
fn srandmember_refuses_a_reply_it_could_not_build() {
    let s = Store::new(Config::default());
    s.sadd(b"k", &[b"a", b"b"]).unwrap();
    assert_eq!(s.srandmember_count(b"k", -1000).map(|v| v.len()), Ok(1000));
    assert!(matches!(
        s.srandmember_count(b"k", -(1 << 24) - 1),
        Err(Error::Msg(_))
    ));
    assert!(matches!(s.srandmember_count(b"k", i64::MIN), Err(Error::Msg(_))));
    assert_eq!(s.srandmember_count(b"k", i64::MAX).map(|v| v.len()), Ok(2));
}
