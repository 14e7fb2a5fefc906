//! The store's sorted sets against a reference model (a map of member → score per key, sorted on
//! demand): random command sequences in several threads on disjoint keys, with small compact-form
//! limits so sets convert, plus one key all threads share, checked for the set's invariants.

use std::collections::HashMap;
use std::sync::Arc;

use hopless_kv::types::zset::{AddFlags, Aggregate, RangeBy, RangeSpec, ScoreRange, SetOp};
use hopless_kv::{Config, Error, Limits, ManualClock, Store};
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

type Set = HashMap<Vec<u8>, f64>;

fn store() -> Store {
    let s = Store::new(Config {
        shards: 8,
        active_expiry: false,
        clock: Arc::new(ManualClock::new(1_700_000_000_000)),
        ..Config::default()
    });
    s.set_limit(Limits::index_of("zset-max-listpack-entries").unwrap(), 8);
    s.set_limit(Limits::index_of("zset-max-listpack-value").unwrap(), 6);
    s
}

/// A set's pairs in the store's order: by score, ties by member.
fn sorted(set: &Set) -> Vec<(Vec<u8>, f64)> {
    let mut v: Vec<(Vec<u8>, f64)> = set.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
    v
}

fn all(s: &Store, key: &[u8]) -> Vec<(Vec<u8>, f64)> {
    s.zrange(key, &RangeSpec::new(RangeBy::Rank(0, -1), false))
        .unwrap()
}

/// One random command applied to both; panics on any difference.
fn step(rng: &mut SmallRng, s: &Store, m: &mut HashMap<Vec<u8>, Set>, prefix: &str) {
    let key = |rng: &mut SmallRng| format!("{prefix}{}", rng.gen_range(0..6)).into_bytes();
    let member = |rng: &mut SmallRng| {
        let long = if rng.gen_ratio(1, 20) { "-long" } else { "" };
        format!("m{}{long}", rng.gen_range(0..40)).into_bytes()
    };
    let score = |rng: &mut SmallRng| [0.0, 1.0, -2.5, 3.0, 1e9, f64::INFINITY][rng.gen_range(0..6)];
    let k = key(rng);
    match rng.gen_range(0..12) {
        0..=3 => {
            let pairs: Vec<(f64, Vec<u8>)> = (0..rng.gen_range(1..4))
                .map(|_| (score(rng), member(rng)))
                .collect();
            let flags = [
                AddFlags::default(),
                AddFlags {
                    nx: true,
                    ..AddFlags::default()
                },
                AddFlags {
                    xx: true,
                    ..AddFlags::default()
                },
                AddFlags {
                    gt: true,
                    ..AddFlags::default()
                },
                AddFlags {
                    lt: true,
                    ..AddFlags::default()
                },
            ][rng.gen_range(0..5)];
            let refs: Vec<(f64, &[u8])> = pairs.iter().map(|(s, m)| (*s, &m[..])).collect();
            let r = s.zadd(&k, flags, &refs).unwrap();
            let set = m.entry(k.clone()).or_default();
            let (mut added, mut updated) = (0, 0);
            for (sc, mb) in &pairs {
                match set.get(mb).copied() {
                    Some(_) if flags.nx => {}
                    Some(cur) if (flags.gt && *sc <= cur) || (flags.lt && *sc >= cur) => {}
                    Some(cur) => {
                        if cur != *sc {
                            updated += 1;
                        }
                        set.insert(mb.clone(), *sc);
                    }
                    None if flags.xx => {}
                    None => {
                        added += 1;
                        set.insert(mb.clone(), *sc);
                    }
                }
            }
            if set.is_empty() {
                m.remove(&k);
            }
            assert_eq!((r.added, r.updated), (added, updated));
        }
        4 => {
            let (d, mb) = (score(rng), member(rng));
            let set = m.entry(k.clone()).or_default();
            let cur = set.get(&mb).copied().unwrap_or(0.0);
            let want = cur + d;
            match s.zincrby(&k, d, &mb) {
                Ok(v) => {
                    assert!(!want.is_nan());
                    assert_eq!(v, want);
                    set.insert(mb, want);
                }
                Err(e) => {
                    assert!(want.is_nan(), "{e}");
                    assert!(matches!(e, Error::Msg(_)));
                    if set.is_empty() {
                        m.remove(&k);
                    }
                }
            }
        }
        5 => {
            let ms: Vec<Vec<u8>> = (0..3).map(|_| member(rng)).collect();
            let refs: Vec<&[u8]> = ms.iter().map(|x| &x[..]).collect();
            let n = s.zrem(&k, &refs).unwrap();
            let mut want = 0;
            if let Some(set) = m.get_mut(&k) {
                for x in &ms {
                    want += set.remove(x).is_some() as usize;
                }
                if set.is_empty() {
                    m.remove(&k);
                }
            }
            assert_eq!(n, want);
        }
        6 => {
            let mb = member(rng);
            let want = m.get(&k).map(sorted).unwrap_or_default();
            let rank = want.iter().position(|p| p.0 == mb);
            assert_eq!(s.zrank(&k, &mb, false).unwrap(), rank);
            assert_eq!(s.zrank(&k, &mb, true).unwrap(), rank.map(|r| want.len() - 1 - r));
            assert_eq!(s.zscore(&k, &mb).unwrap(), rank.map(|r| want[r].1));
        }
        7 => {
            let (a, b) = (score(rng), score(rng));
            let r = ScoreRange {
                min: a.min(b),
                max: a.max(b),
                min_ex: rng.gen(),
                max_ex: false,
            };
            let want: Vec<(Vec<u8>, f64)> = m
                .get(&k)
                .map(sorted)
                .unwrap_or_default()
                .into_iter()
                .filter(|p| !r.before(p.1) && r.not_after(p.1))
                .collect();
            let got = s.zrange(&k, &RangeSpec::new(RangeBy::Score(r), false)).unwrap();
            assert_eq!(got, want);
            assert_eq!(s.zcount(&k, &RangeBy::Score(r)).unwrap(), want.len());
        }
        8 => {
            let n = rng.gen_range(0..4);
            let max = rng.gen();
            let got = s.zpop(&k, n, max).unwrap();
            let mut want = m.get(&k).map(sorted).unwrap_or_default();
            if max {
                want.reverse();
            }
            want.truncate(n);
            for (mb, _) in &want {
                m.get_mut(&k).unwrap().remove(mb);
            }
            if m.get(&k).is_some_and(|x| x.is_empty()) {
                m.remove(&k);
            }
            assert_eq!(got, want);
        }
        9 => {
            let (start, stop) = (rng.gen_range(-8..8), rng.gen_range(-8..8));
            let set = m.get(&k).map(sorted).unwrap_or_default();
            let n = set.len() as i64;
            let (a, b) = (
                if start < 0 { (n + start).max(0) } else { start },
                if stop < 0 { n + stop } else { stop.min(n - 1) },
            );
            let removed = s.zremrange(&k, &RangeBy::Rank(start, stop)).unwrap();
            let want = if a > b || a >= n { 0 } else { (b - a + 1) as usize };
            assert_eq!(removed, want);
            if want > 0 {
                for (mb, _) in &set[a as usize..=b as usize] {
                    m.get_mut(&k).unwrap().remove(mb);
                }
                if m.get(&k).is_some_and(|x| x.is_empty()) {
                    m.remove(&k);
                }
            }
        }
        10 => {
            let (k1, k2) = (key(rng), key(rng));
            let op = [SetOp::Union, SetOp::Inter, SetOp::Diff][rng.gen_range(0..3)];
            let n = s
                .zsetop_store(op, &k, &[&k1, &k2], &[1.0, 2.0], Aggregate::Max)
                .unwrap();
            let (a, b) = (
                m.get(&k1).cloned().unwrap_or_default(),
                m.get(&k2).cloned().unwrap_or_default(),
            );
            let mut out = Set::new();
            match op {
                SetOp::Union => {
                    for (mb, sc) in &a {
                        out.insert(mb.clone(), *sc);
                    }
                    for (mb, sc) in &b {
                        let v = 2.0 * sc;
                        let e = out.entry(mb.clone()).or_insert(v);
                        if v > *e {
                            *e = v;
                        }
                    }
                }
                SetOp::Inter => {
                    for (mb, sc) in &a {
                        if let Some(sb) = b.get(mb) {
                            out.insert(mb.clone(), sc.max(2.0 * sb));
                        }
                    }
                }
                SetOp::Diff => {
                    for (mb, sc) in &a {
                        if !b.contains_key(mb) {
                            out.insert(mb.clone(), *sc);
                        }
                    }
                }
            }
            assert_eq!(n, out.len());
            if out.is_empty() {
                m.remove(&k);
            } else {
                m.insert(k.clone(), out);
            }
        }
        _ => {
            let want = m.get(&k).map(sorted).unwrap_or_default();
            assert_eq!(s.zcard(&k).unwrap(), want.len());
            assert_eq!(all(s, &k), want);
        }
    }
}

#[test]
fn random_sequences_match_the_model_in_four_threads_with_a_shared_key() {
    let s = store();
    let steps = if cfg!(miri) { 200 } else { 20_000 };
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let s = s.clone();
            sc.spawn(move || {
                let mut m = HashMap::new();
                let mut rng = SmallRng::seed_from_u64(7 + t);
                let mut forms = std::collections::HashSet::new();
                for i in 0..steps {
                    step(&mut rng, &s, &mut m, &format!("t{t}-"));
                    if let Some(k) = m.keys().next() {
                        forms.extend(s.coll_encoding(k));
                    }
                    // The shared key: every thread adds, bumps and pops; nobody can predict its
                    // contents, but it must stay a well-formed sorted set.
                    if i % 4 == 0 {
                        let mb = format!("s{}", rng.gen_range(0..50)).into_bytes();
                        match rng.gen_range(0..4) {
                            0 | 1 => {
                                s.zadd(
                                    b"shared",
                                    AddFlags::default(),
                                    &[(rng.gen_range(0..20) as f64, &mb)],
                                )
                                .unwrap();
                            }
                            2 => {
                                s.zincrby(b"shared", 1.0, &mb).unwrap();
                            }
                            _ => {
                                s.zpop(b"shared", 2, rng.gen()).unwrap();
                            }
                        }
                        let v = all(&s, b"shared");
                        assert!(
                            v.windows(2).all(|w| (w[0].1, &w[0].0) < (w[1].1, &w[1].0)),
                            "{v:?}"
                        );
                    }
                }
                for (k, set) in &m {
                    assert_eq!(all(&s, k), sorted(set));
                }
                assert!(
                    forms.contains("listpack") && forms.contains("skiplist"),
                    "both forms met: {forms:?}"
                );
            });
        }
    });
    // Quiet now: the shared key's ranks, scores and count agree with its full range.
    let v = all(&s, b"shared");
    assert_eq!(s.zcard(b"shared").unwrap(), v.len());
    for (r, (mb, sc)) in v.iter().enumerate() {
        assert_eq!(s.zrank(b"shared", mb, false).unwrap(), Some(r));
        assert_eq!(s.zscore(b"shared", mb).unwrap(), Some(*sc));
    }
}

/// Over `maxmemory` under `noeviction`, ZADD is refused whatever its options (Redis's `denyoom`),
/// XX included, and nothing changes; ZREM and ZPOPMIN, which free memory, still run.
#[test]
fn zadd_is_refused_over_maxmemory() {
    let s = store();
    s.zadd(b"z", AddFlags::default(), &[(1.0, b"a"), (2.0, b"b")])
        .unwrap();
    s.set_maxmemory(1);
    let xx = AddFlags {
        xx: true,
        ..AddFlags::default()
    };
    for flags in [AddFlags::default(), xx] {
        assert_eq!(s.zadd(b"z", flags, &[(5.0, b"a")]), Err(Error::OutOfMemory));
        assert_eq!(s.zadd(b"nokey", flags, &[(5.0, b"a")]), Err(Error::OutOfMemory));
    }
    assert_eq!(s.zincrby(b"z", 1.0, b"a"), Err(Error::OutOfMemory));
    assert_eq!(all(&s, b"z"), vec![(b"a".to_vec(), 1.0), (b"b".to_vec(), 2.0)]);
    assert_eq!(s.zpop(b"z", 1, false).unwrap(), vec![(b"a".to_vec(), 1.0)]);
    assert_eq!(s.zrem(b"z", &[b"b"]).unwrap(), 1);
    s.set_maxmemory(0);
    assert_eq!(s.zadd(b"z", xx, &[(5.0, b"a")]).unwrap().added, 0);
    assert_eq!(s.zcard(b"z").unwrap(), 0);
}

/// Over `maxmemory` under `noeviction`, the STORE forms (ZUNIONSTORE and friends, ZRANGESTORE), whose
/// destination may grow, are refused before they look at a key, and change nothing.
#[test]
fn the_store_forms_are_refused_over_maxmemory() {
    let s = store();
    s.zadd(b"z", AddFlags::default(), &[(1.0, b"a"), (2.0, b"b")])
        .unwrap();
    s.set_maxmemory(1);
    for op in [SetOp::Union, SetOp::Inter, SetOp::Diff] {
        assert_eq!(
            s.zsetop_store(op, b"dst", &[b"z"], &[], Aggregate::Sum),
            Err(Error::OutOfMemory)
        );
    }
    let every = RangeSpec::new(RangeBy::Rank(0, -1), false);
    assert_eq!(s.zrangestore(b"dst", b"z", &every), Err(Error::OutOfMemory));
    assert_eq!(s.zcard(b"dst").unwrap(), 0);
    assert_eq!(all(&s, b"z"), vec![(b"a".to_vec(), 1.0), (b"b".to_vec(), 2.0)]);
    s.set_maxmemory(0);
    assert_eq!(s.zrangestore(b"dst", b"z", &every).unwrap(), 2);
}
