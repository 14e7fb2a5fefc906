//! The store against a reference model (a HashMap under one lock, with deadlines), on a manual clock:
//! random operation sequences, single-threaded and in several threads on disjoint key sets at once.

use std::collections::HashMap;
use std::sync::Arc;

use hopless_kv::{Config, Error, ExpireCond, ManualClock, SetCond, SetOptions, Store, Ttl};
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

const START: u64 = 1_700_000_000_000;

#[derive(Default)]
struct Model {
    map: HashMap<Vec<u8>, (Vec<u8>, Option<u64>)>,
}

impl Model {
    fn live(&mut self, k: &[u8], now: u64) -> Option<&mut (Vec<u8>, Option<u64>)> {
        if self.map.get(k).is_some_and(|(_, d)| d.is_some_and(|d| d <= now)) {
            self.map.remove(k);
        }
        self.map.get_mut(k)
    }
}

fn store(clock: Arc<ManualClock>) -> Store {
    Store::new(Config {
        shards: 8,
        active_expiry: false,
        clock,
        ..Config::default()
    })
}

fn parse(v: &[u8]) -> Option<i64> {
    hopless_kv::store::parse_i64(v)
}

/// One random operation applied to both; panics on any difference.
fn step(
    rng: &mut SmallRng,
    s: &Store,
    m: &mut Model,
    clock: &ManualClock,
    advance: bool,
    prefix: &str,
    keys: u32,
) {
    let key = |rng: &mut SmallRng| format!("{prefix}{}", rng.gen_range(0..keys)).into_bytes();
    let val = |rng: &mut SmallRng| -> Vec<u8> {
        if rng.gen_ratio(1, 4) {
            rng.gen_range(-50i64..50).to_string().into_bytes()
        } else {
            let n = rng.gen_range(0..40);
            (0..n).map(|_| rng.gen_range(b'a'..=b'z')).collect()
        }
    };
    let now = clock.now_ms_pub();
    match rng.gen_range(0..20) {
        0..=3 => {
            let (k, v) = (key(rng), val(rng));
            let cond = [
                SetCond::Always,
                SetCond::Always,
                SetCond::IfAbsent,
                SetCond::IfPresent,
            ][rng.gen_range(0..4)];
            let ttl = match rng.gen_range(0..6) {
                0 => Ttl::Px(rng.gen_range(1..500)),
                1 => Ttl::Ex(rng.gen_range(1..3)),
                2 => Ttl::Keep,
                3 => Ttl::PxAt(now + rng.gen_range(1..500)),
                _ => Ttl::None,
            };
            let get = rng.gen_bool(0.3);
            let (written, old) = s.set(&k, &v, SetOptions { cond, ttl, get }).unwrap();
            let cur = m.live(&k, now).cloned();
            assert_eq!(
                old.map(|o| o.to_vec()),
                if get {
                    cur.as_ref().map(|c| c.0.clone())
                } else {
                    None
                }
            );
            let should = match cond {
                SetCond::Always => true,
                SetCond::IfAbsent => cur.is_none(),
                SetCond::IfPresent => cur.is_some(),
            };
            assert_eq!(written, should, "SET {cond:?}");
            if should {
                let d = match ttl {
                    Ttl::Px(ms) => Some(now + ms),
                    Ttl::Ex(s) => Some(now + s * 1000),
                    Ttl::PxAt(ms) => Some(ms),
                    Ttl::Keep => cur.and_then(|c| c.1),
                    _ => None,
                };
                m.map.insert(k, (v, d));
            }
        }
        4..=6 => {
            let k = key(rng);
            assert_eq!(
                s.get(&k).unwrap().map(|v| v.to_vec()),
                m.live(&k, now).map(|e| e.0.clone())
            );
        }
        7 => {
            let ks: Vec<Vec<u8>> = (0..rng.gen_range(1..4)).map(|_| key(rng)).collect();
            let refs: Vec<&[u8]> = ks.iter().map(|k| k.as_slice()).collect();
            let ex = refs.iter().filter(|k| m.live(k, now).is_some()).count();
            assert_eq!(s.exists(&refs), ex);
            if rng.gen_bool(0.5) {
                let mut uniq = ks.clone();
                uniq.sort();
                uniq.dedup();
                let expect = uniq.iter().filter(|k| m.live(k, now).is_some()).count();
                for k in &uniq {
                    m.map.remove(k);
                }
                let refs: Vec<&[u8]> = uniq.iter().map(|k| k.as_slice()).collect();
                assert_eq!(s.del(&refs), expect);
            }
        }
        8 => {
            let (k, v) = (key(rng), val(rng));
            let e = m.live(&k, now).cloned();
            let mut nv = e.as_ref().map(|e| e.0.clone()).unwrap_or_default();
            nv.extend_from_slice(&v);
            assert_eq!(s.append(&k, &v).unwrap(), nv.len());
            m.map.insert(k, (nv, e.and_then(|e| e.1)));
        }
        9 => {
            let k = key(rng);
            assert_eq!(s.strlen(&k).unwrap(), m.live(&k, now).map_or(0, |e| e.0.len()));
        }
        10 => {
            let k = key(rng);
            let delta = rng.gen_range(-5i64..5);
            let e = m.live(&k, now).cloned();
            let cur = e.as_ref().map(|e| parse(&e.0));
            let r = s.incr_by(&k, delta);
            match cur {
                Some(None) => assert_eq!(r, Err(Error::NotInteger)),
                Some(Some(c)) => {
                    assert_eq!(r, Ok(c + delta));
                    m.map
                        .insert(k, ((c + delta).to_string().into_bytes(), e.and_then(|e| e.1)));
                }
                None => {
                    assert_eq!(r, Ok(delta));
                    m.map.insert(k, (delta.to_string().into_bytes(), None));
                }
            }
        }
        11 => {
            let k = key(rng);
            let (a, b) = (rng.gen_range(-10i64..10), rng.gen_range(-10i64..10));
            let expect = m
                .live(&k, now)
                .map(|e| redis_range(&e.0, a, b))
                .unwrap_or_default();
            assert_eq!(s.getrange(&k, a, b).unwrap(), expect);
        }
        12 => {
            let ks: Vec<Vec<u8>> = (0..rng.gen_range(1..5)).map(|_| key(rng)).collect();
            let refs: Vec<&[u8]> = ks.iter().map(|k| k.as_slice()).collect();
            let got: Vec<Option<Vec<u8>>> =
                s.mget(&refs).into_iter().map(|v| v.map(|v| v.to_vec())).collect();
            let want: Vec<Option<Vec<u8>>> = ks.iter().map(|k| m.live(k, now).map(|e| e.0.clone())).collect();
            assert_eq!(got, want);
        }
        13 => {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> =
                (0..rng.gen_range(1..6)).map(|_| (key(rng), val(rng))).collect();
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
            s.mset(&refs).unwrap();
            for (k, v) in pairs {
                m.map.insert(k, (v, None));
            }
        }
        14 => {
            let k = key(rng);
            let cond = [
                ExpireCond::Always,
                ExpireCond::Nx,
                ExpireCond::Xx,
                ExpireCond::Gt,
                ExpireCond::Lt,
            ][rng.gen_range(0..5)];
            let ms = rng.gen_range(-100i64..1000);
            let r = s.pexpire(&k, ms, cond).unwrap();
            let e = m.live(&k, now).cloned();
            let d = (now as i64 + ms).max(0) as u64;
            let ok = match (&e, cond) {
                (None, _) => false,
                (Some(_), ExpireCond::Always) => true,
                (Some(e), ExpireCond::Nx) => e.1.is_none(),
                (Some(e), ExpireCond::Xx) => e.1.is_some(),
                (Some(e), ExpireCond::Gt) => e.1.is_some_and(|c| d > c),
                (Some(e), ExpireCond::Lt) => e.1.is_none_or(|c| d < c),
            };
            assert_eq!(r, ok, "PEXPIRE {ms} {cond:?} on {e:?}");
            if ok {
                if ms <= 0 {
                    m.map.remove(&k);
                } else {
                    m.map.get_mut(&k).unwrap().1 = Some(d);
                }
            }
        }
        15 => {
            let k = key(rng);
            let want = match m.live(&k, now) {
                None => -2,
                Some((_, None)) => -1,
                Some((_, Some(d))) => (*d - now) as i64,
            };
            assert_eq!(s.pttl(&k), want);
        }
        16 => {
            let k = key(rng);
            let had = m.live(&k, now).is_some_and(|e| e.1.take().is_some());
            assert_eq!(s.persist(&k), had);
        }
        17 => {
            let k = key(rng);
            assert_eq!(
                s.getdel(&k).unwrap().map(|v| v.to_vec()),
                m.live(&k, now).map(|e| e.0.clone())
            );
            m.map.remove(&k);
        }
        18 => {
            let k = key(rng);
            let ttl = [Ttl::None, Ttl::Persist, Ttl::Px(300)][rng.gen_range(0..3)];
            let got = s.getex(&k, ttl).unwrap().map(|v| v.to_vec());
            let e = m.live(&k, now);
            assert_eq!(got, e.as_ref().map(|e| e.0.clone()));
            if let Some(e) = e {
                match ttl {
                    Ttl::Persist => e.1 = None,
                    Ttl::Px(ms) => e.1 = Some(now + ms),
                    _ => {}
                }
            }
        }
        _ => {
            let ms = rng.gen_range(0..120);
            if advance {
                clock.advance(ms);
            }
        }
    }
}

fn redis_range(v: &[u8], start: i64, end: i64) -> Vec<u8> {
    let len = v.len() as i64;
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return vec![];
    }
    let s = if start < 0 { (start + len).max(0) } else { start };
    let e = if end < 0 {
        (end + len).max(0)
    } else {
        end.min(len - 1)
    };
    if s > e || s >= len {
        return vec![];
    }
    v[s as usize..=e as usize].to_vec()
}

trait Now {
    fn now_ms_pub(&self) -> u64;
}
impl Now for ManualClock {
    fn now_ms_pub(&self) -> u64 {
        use hopless_kv::Clock;
        self.now_ms()
    }
}

#[test]
fn random_sequences_match_the_model_single_threaded() {
    for seed in 0..4 {
        let clock = Arc::new(ManualClock::new(START));
        let s = store(clock.clone());
        let mut m = Model::default();
        let mut rng = SmallRng::seed_from_u64(seed);
        for _ in 0..30_000 {
            step(&mut rng, &s, &mut m, &clock, true, "k", 200);
        }
        let now = clock.now_ms_pub();
        m.map.retain(|_, e| e.1.is_none_or(|d| d > now));
        // Everything the model has is there with the same value; expired keys may linger until touched.
        for (k, (v, _)) in &m.map {
            assert_eq!(s.get(k).unwrap().map(|x| x.to_vec()).as_ref(), Some(v));
        }
        s.run_active_expiry();
        assert_eq!(
            s.dbsize(),
            m.map.len(),
            "after an active expiry pass only live keys remain"
        );
        let st = s.stats();
        assert!(
            st.expired > 100 && st.hits > 1000 && st.misses > 100,
            "the sequence exercised expiry: {st:?}"
        );
        assert_eq!(st.keys, m.map.len() as u64);
    }
}

#[test]
fn random_sequences_match_the_model_in_four_threads() {
    // Disjoint keys per thread, shared shards and tables. The clock stays put here (threads would race on
    // it); TTLs are still set, read and removed, and the single-threaded test covers expiry.
    let clock = Arc::new(ManualClock::new(START));
    let s = store(clock.clone());
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let (s, clock) = (s.clone(), clock.clone());
            sc.spawn(move || {
                let mut m = Model::default();
                let mut rng = SmallRng::seed_from_u64(100 + t);
                for _ in 0..15_000 {
                    step(&mut rng, &s, &mut m, &clock, false, &format!("t{t}-"), 100);
                }
                for (k, (v, _)) in &m.map {
                    assert_eq!(s.get(k).unwrap().map(|x| x.to_vec()).as_ref(), Some(v));
                }
            });
        }
    });
}
