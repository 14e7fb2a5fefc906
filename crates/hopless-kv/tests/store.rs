//! TTL, eviction, bad input, and the two crashes the store's design rules out (a reader using a freed
//! value; a key freed twice by racing delete and expiry), on a manual clock.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use hopless_kv::{Config, Error, ExpireCond, ManualClock, Policy, SetCond, SetOptions, Store, Ttl};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

const START: u64 = 1_700_000_000_000;

fn store_with(clock: Arc<ManualClock>, f: impl FnOnce(&mut Config)) -> Store {
    let mut cfg = Config {
        shards: 16,
        active_expiry: false,
        clock,
        ..Config::default()
    };
    f(&mut cfg);
    Store::new(cfg)
}

#[test]
fn keys_expire_lazily_and_actively() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock.clone(), |_| {});
    for i in 0..1000 {
        let k = format!("k{i}");
        s.set(
            k.as_bytes(),
            b"v",
            SetOptions {
                ttl: Ttl::Px(100 + i),
                ..Default::default()
            },
        )
        .unwrap();
    }
    s.set_simple(b"forever", b"v").unwrap();
    assert_eq!(s.pttl(b"k0"), 100);
    assert_eq!(s.ttl(b"k999"), 1);
    assert_eq!(s.ttl(b"forever"), -1);
    assert_eq!(s.ttl(b"missing"), -2);
    assert_eq!(s.stats().keys_with_ttl, 1000);
    clock.advance(100);
    assert!(s.get(b"k0").unwrap().is_none(), "due: gone on access");
    assert!(s.get(b"k1").unwrap().is_some());
    clock.advance(500);
    // 500 keys are due; active expiry removes them without anyone touching them.
    assert_eq!(s.run_active_expiry(), 500);
    assert_eq!(s.dbsize(), 500);
    assert_eq!(s.stats().expired, 501);
    clock.advance(10_000);
    s.run_active_expiry();
    assert_eq!(s.dbsize(), 1);
    assert_eq!(s.stats().keys_with_ttl, 0);
}

#[test]
fn ttl_options_follow_redis() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock.clone(), |_| {});
    let r = s.set(
        b"k",
        b"v",
        SetOptions {
            ttl: Ttl::Ex(0),
            ..Default::default()
        },
    );
    assert_eq!(r.err(), Some(Error::InvalidExpire));
    assert!(s.get(b"k").unwrap().is_none(), "a refused SET stores nothing");
    s.set(
        b"k",
        b"v",
        SetOptions {
            ttl: Ttl::Ex(10),
            ..Default::default()
        },
    )
    .unwrap();
    s.set(
        b"k",
        b"w",
        SetOptions {
            ttl: Ttl::Keep,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.pttl(b"k"), 10_000, "KEEPTTL keeps it");
    s.set_simple(b"k", b"x").unwrap();
    assert_eq!(s.pttl(b"k"), -1, "a plain SET clears it");
    assert!(s.expire(b"k", 5, ExpireCond::Always).unwrap());
    assert!(!s.expire(b"k", 9, ExpireCond::Nx).unwrap());
    assert!(s.expire(b"k", 9, ExpireCond::Gt).unwrap());
    assert!(!s.expire(b"k", 7, ExpireCond::Gt).unwrap());
    assert!(s.expire(b"k", 7, ExpireCond::Lt).unwrap());
    assert_eq!(s.ttl(b"k"), 7);
    assert!(s.persist(b"k"));
    assert!(!s.persist(b"k"));
    assert!(!s.expire(b"k", 7, ExpireCond::Xx).unwrap());
    assert!(s
        .expire_at(b"k", (START / 1000 + 20) as i64, ExpireCond::Always)
        .unwrap());
    assert_eq!(s.ttl(b"k"), 20);
    assert_eq!(s.getex(b"k", Ttl::Persist).unwrap().unwrap().to_vec(), b"x");
    assert_eq!(s.pttl(b"k"), -1);
    assert_eq!(
        s.getex(b"k", Ttl::PxAt(START + 50)).unwrap().unwrap().to_vec(),
        b"x"
    );
    assert_eq!(s.pttl(b"k"), 50);
    assert!(
        s.pexpire(b"k", -1, ExpireCond::Always).unwrap(),
        "a past deadline deletes"
    );
    assert!(s.get(b"k").unwrap().is_none());
    let (w, old) = s
        .set(
            b"n",
            b"1",
            SetOptions {
                cond: SetCond::IfAbsent,
                get: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(w && old.is_none());
    let (w, old) = s
        .set(
            b"n",
            b"2",
            SetOptions {
                cond: SetCond::IfAbsent,
                get: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(!w);
    assert_eq!(old.unwrap().to_vec(), b"1");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |c| {
        c.max_key_len = 16;
        c.max_value_len = 64;
    });
    assert_eq!(s.set_simple(&[b'k'; 17], b"v"), Err(Error::TooLarge));
    assert_eq!(s.set_simple(b"k", &[0; 65]), Err(Error::TooLarge));
    assert_eq!(s.dbsize(), 0);
    s.set_simple(b"k", &[b'a'; 60]).unwrap();
    assert_eq!(s.append(b"k", b"12345"), Err(Error::TooLarge));
    assert_eq!(s.strlen(b"k").unwrap(), 60);
    s.set_simple(b"s", b"not a number").unwrap();
    assert_eq!(s.incr(b"s"), Err(Error::NotInteger));
    assert_eq!(s.get(b"s").unwrap().unwrap().to_vec(), b"not a number");
    for bad in [&b" 1"[..], b"01", b"+1", b"1.5", b"", b"99999999999999999999"] {
        s.set_simple(b"b", bad).unwrap();
        assert_eq!(
            s.incr(b"b"),
            Err(Error::NotInteger),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    s.set_simple(b"max", i64::MAX.to_string().as_bytes()).unwrap();
    assert_eq!(s.incr(b"max"), Err(Error::Overflow));
    assert_eq!(
        s.get(b"max").unwrap().unwrap().to_vec(),
        i64::MAX.to_string().into_bytes()
    );
    assert_eq!(s.decr_by(b"neg", i64::MIN), Err(Error::Overflow));
    assert_eq!(s.incr_by(b"c", -5), Ok(-5));
    assert_eq!(s.decr(b"c"), Ok(-6));
    assert_eq!(
        Error::NotInteger.to_string(),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn noeviction_refuses_writes_at_maxmemory() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |c| {
        c.maxmemory = 200_000;
        c.policy = Policy::NoEviction;
    });
    let mut refused = 0;
    for i in 0..5000 {
        match s.set_simple(format!("k{i}").as_bytes(), &[7; 100]) {
            Ok(()) => {}
            Err(Error::OutOfMemory) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused > 0);
    assert!(s.stats().bytes_used <= 200_000 + 4096, "{}", s.stats().bytes_used);
    assert_eq!(s.del(&[b"k1"]), 1, "DEL still works at the limit");
}

#[test]
fn sampled_lru_evicts_and_keeps_hot_keys() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |c| {
        c.maxmemory = 1 << 20;
        c.policy = Policy::SampledLru;
        c.shards = 4;
    });
    for i in 0..20_000 {
        s.set_simple(format!("k{i}").as_bytes(), &[1; 100]).unwrap();
        // Keep k0..k99 hot.
        let _ = s.get(format!("k{}", i % 100).as_bytes()).unwrap();
    }
    let st = s.stats();
    assert!(st.evicted > 10_000, "{st:?}");
    assert!(st.bytes_used <= (1 << 20) + 4096);
    let hot = (0..100)
        .filter(|i| s.get(format!("k{i}").as_bytes()).unwrap().is_some())
        .count();
    let cold = (1000..1100)
        .filter(|i| s.get(format!("k{i}").as_bytes()).unwrap().is_some())
        .count();
    assert!(hot > 90 && cold < 30, "hot {hot} cold {cold}");
}

/// Collection writes over `maxmemory` under LRU: making room may evict the very key being written (it is
/// then created anew, holding only what came after), and a key of another type is refused before any
/// eviction.
#[test]
fn collection_writes_survive_their_own_key_being_evicted() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |c| {
        c.maxmemory = 64 << 10;
        c.policy = Policy::SampledLru;
        c.shards = 1;
    });
    let mut since = [0usize; 4];
    let mut restarted = 0;
    for i in 0..20_000usize {
        let key = format!("set{}", i % 4);
        let member = format!("{i:0>200}");
        let n = s.sadd(key.as_bytes(), &[member.as_bytes()]).unwrap();
        assert_eq!(n, 1);
        let card = s.scard(key.as_bytes()).unwrap();
        since[i % 4] += 1;
        // Evicted meanwhile: the set is what was added since.
        assert!(card >= 1 && card <= since[i % 4], "{card} {since:?}");
        restarted += usize::from(card < since[i % 4]);
        since[i % 4] = card;
        if s.set_simple(b"str", b"x").is_ok() {
            let before = s.stats().evicted;
            assert_eq!(s.sadd(b"str", &[b"m"]), Err(Error::WrongType));
            assert_eq!(s.stats().evicted, before, "a refused write evicts nothing");
        }
    }
    assert!(
        s.stats().evicted > 100 && restarted > 10,
        "{restarted} {:?}",
        s.stats()
    );
}

#[test]
fn a_value_read_stays_valid_after_overwrite_delete_and_expiry() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock.clone(), |_| {});
    s.set(
        b"k",
        b"first",
        SetOptions {
            ttl: Ttl::Px(10),
            ..Default::default()
        },
    )
    .unwrap();
    let v = s.get(b"k").unwrap().unwrap();
    s.set_simple(b"k", b"second").unwrap();
    let w = s.get(b"k").unwrap().unwrap();
    assert_eq!(s.del(&[b"k"]), 1);
    clock.advance(100);
    s.run_active_expiry();
    s.flush();
    assert_eq!(&*v, b"first");
    assert_eq!(v.key(), b"k");
    assert_eq!(&*w, b"second");
}

/// No use-after-free: readers keep values while writers overwrite and delete the same keys.
#[test]
fn readers_holding_values_race_writers_and_deleters() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |_| {});
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        for w in 0..2u32 {
            let (s, stop) = (s.clone(), &stop);
            sc.spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let k = n % 64;
                    let v = format!("{k}:{w}:{n}:").repeat(1 + (n % 9) as usize);
                    s.set_simple(format!("key{k}").as_bytes(), v.as_bytes()).unwrap();
                    if n % 5 == 0 {
                        s.del(&[format!("key{}", (n / 5) % 64).as_bytes()]);
                    }
                    n += 1;
                }
            });
        }
        let mut held = Vec::new();
        for round in 0..200_000u32 {
            let k = round % 64;
            if let Some(v) = s.get(format!("key{k}").as_bytes()).unwrap() {
                let text = std::str::from_utf8(&v).unwrap();
                assert!(text.starts_with(&format!("{k}:")), "value of key{k} is {text}");
                held.push(v);
            }
            if held.len() > 500 {
                // Check every held value is still intact, then let them go.
                for v in held.drain(..) {
                    let text = std::str::from_utf8(&v).unwrap().to_owned();
                    let unit = &text[..text.find(':').unwrap() + 1];
                    assert!(text.starts_with(unit));
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
}

/// No double free: the same keys deleted by one thread while the expiry removes them in another
/// (and readers hit them lazily). Each key must go exactly once; a second free would abort the process.
#[test]
fn delete_racing_expiry_frees_each_key_exactly_once() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock.clone(), |_| {});
    const N: usize = 20_000;
    for round in 0..3 {
        for i in 0..N {
            s.set(
                format!("k{i}").as_bytes(),
                b"value",
                SetOptions {
                    ttl: Ttl::Px(10),
                    ..Default::default()
                },
            )
            .unwrap();
        }
        let before = s.stats().expired;
        let deleted = AtomicUsize::new(0);
        clock.advance(10);
        std::thread::scope(|sc| {
            let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
            let deleted = &deleted;
            sc.spawn(move || {
                for i in 0..N {
                    deleted.fetch_add(s1.del(&[format!("k{i}").as_bytes()]), Ordering::Relaxed);
                }
            });
            sc.spawn(move || while s2.run_active_expiry() > 0 {});
            sc.spawn(move || {
                for i in (0..N).rev() {
                    assert!(s3.get(format!("k{i}").as_bytes()).unwrap().is_none());
                }
            });
        });
        s.run_active_expiry();
        let expired = (s.stats().expired - before) as usize;
        assert_eq!(s.dbsize(), 0, "round {round}");
        // An expired key is not deleted by DEL (it is already gone), so the two add up exactly.
        assert_eq!(deleted.load(Ordering::Relaxed) + expired, N, "round {round}");
    }
}

#[test]
fn scan_returns_every_key_present_throughout_while_others_write() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |c| c.shards = 8);
    for i in 0..20_000 {
        s.set_simple(format!("stable{i}").as_bytes(), b"x").unwrap();
    }
    let stop = AtomicBool::new(false);
    let mut seen = std::collections::HashSet::new();
    std::thread::scope(|sc| {
        let (w, stop2) = (s.clone(), &stop);
        sc.spawn(move || {
            let mut n = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                w.set_simple(format!("churn{}", n % 50_000).as_bytes(), b"y")
                    .unwrap();
                if n % 3 == 0 {
                    w.del(&[format!("churn{}", (n / 3) % 50_000).as_bytes()]);
                }
                n += 1;
            }
        });
        let mut cursor = 0;
        loop {
            let (next, keys) = s.scan(cursor, 100, Some(b"stable*"));
            for k in keys {
                assert!(k.starts_with(b"stable"));
                seen.insert(k);
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(seen.len(), 20_000);
}

#[test]
fn the_expiry_thread_runs_and_stops_with_the_last_handle() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock.clone(), |c| c.active_expiry = true);
    s.set(
        b"k",
        b"v",
        SetOptions {
            ttl: Ttl::Px(5),
            ..Default::default()
        },
    )
    .unwrap();
    clock.advance(10);
    let mut gone = false;
    for _ in 0..100 {
        if s.stats().expired == 1 {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(gone, "the background pass removed the key");
    let s2 = s.clone();
    drop(s);
    s2.set_simple(b"still", b"works").unwrap();
    drop(s2); // joins the thread; a hang here fails the test by timeout
}

#[test]
fn stats_count_operations_hits_and_misses() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |_| {});
    s.set_simple(b"a", b"1").unwrap();
    let _ = s.get(b"a").unwrap();
    let _ = s.get(b"b").unwrap();
    s.mset(&[(&b"x"[..], &b"1"[..]), (b"y", b"2")]).unwrap();
    let st = s.stats();
    assert_eq!((st.hits, st.misses, st.keys), (1, 1, 3));
    assert_eq!(st.ops[hopless_kv::Op::Get as usize], 2);
    assert_eq!(st.ops[hopless_kv::Op::MSet as usize], 2);
    assert!(st.bytes_used > 0);
}

#[test]
fn a_fixed_hash_seed_gives_the_same_layout_in_every_store() {
    // Every cursor and every batch of a full SCAN: what the key layout shows from outside.
    let scan_all = |hash_seed: Option<u64>| {
        let s = store_with(Arc::new(ManualClock::new(START)), |c| c.hash_seed = hash_seed);
        for i in 0..2000 {
            s.set_simple(format!("key:{i}").as_bytes(), b"v").unwrap();
        }
        let (mut cursor, mut steps) = (0, Vec::new());
        loop {
            let (next, keys) = s.scan(cursor, 10, None);
            steps.push((cursor, keys));
            if next == 0 {
                break steps;
            }
            cursor = next;
        }
    };
    let seeded = scan_all(Some(0x5eed));
    assert_eq!(seeded.iter().map(|(_, k)| k.len()).sum::<usize>(), 2000);
    assert_eq!(seeded, scan_all(Some(0x5eed)));
    assert_ne!(seeded, scan_all(Some(0x5eed + 1)));
    // The default (None) draws a seed for each store.
    assert_ne!(scan_all(None), scan_all(None));
}

/// A clock that counts its reads.
#[derive(Default)]
struct CountingClock {
    at: ManualClock,
    reads: AtomicUsize,
}

impl hopless_kv::Clock for CountingClock {
    fn now_ms(&self) -> u64 {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.at.now_ms()
    }
}

#[test]
fn writes_and_reads_of_keys_without_a_ttl_never_read_the_clock_and_due_keys_still_go() {
    let clock = Arc::new(CountingClock::default());
    clock.at.set(START);
    let s = Store::new(Config {
        shards: 16,
        active_expiry: false,
        clock: clock.clone(),
        ..Config::default()
    });
    let reads = || clock.reads.load(Ordering::SeqCst);
    // A write or read of a key without a TTL never reads the clock (a vDSO call): the store's workload
    // is mostly such writes.
    let before = reads();
    for i in 0..100 {
        let k = format!("k{i}");
        s.set_simple(k.as_bytes(), b"v").unwrap();
        s.set_simple(k.as_bytes(), b"w").unwrap();
        assert_eq!(s.get(k.as_bytes()).unwrap().as_deref(), Some(&b"w"[..]));
        s.append(k.as_bytes(), b"x").unwrap();
        assert_eq!(s.getdel(k.as_bytes()).unwrap().as_deref(), Some(&b"wx"[..]));
    }
    assert_eq!(reads(), before, "no key had a TTL");

    // A key with a TTL is still found dead by each write once due (SET NX and GET, APPEND, GETDEL),
    // never read back.
    let px = |ms| SetOptions {
        ttl: Ttl::Px(ms),
        ..Default::default()
    };
    let nx_get = SetOptions {
        cond: SetCond::IfAbsent,
        get: true,
        ..Default::default()
    };
    for k in [&b"a"[..], b"b", b"c"] {
        s.set(k, b"old", px(10)).unwrap();
    }
    assert!(reads() > before, "a relative TTL reads the clock");
    clock.at.advance(10);
    assert!(
        s.set(b"a", b"new", nx_get).unwrap().0,
        "SET NX on a due key writes"
    );
    assert_eq!(s.get(b"a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(
        s.append(b"b", b"x").unwrap(),
        1,
        "APPEND to a due key starts afresh"
    );
    assert!(
        s.getdel(b"c").unwrap().is_none(),
        "GETDEL of a due key finds nothing"
    );
    assert_eq!(s.stats().expired, 3);
    assert_eq!(s.stats().keys_with_ttl, 0);
}

/// Threads own the counters' stripes and count with a load and a store, and the shard byte counts change
/// with a load and a store under the shard's lock: neither may lose a count. More threads at once than
/// there are stripes to own (the rest share one with atomic adds), in rounds, so that stripes pass from
/// exited threads to new ones, all writing and reading the same few keys.
#[test]
fn counts_stay_exact_with_more_racing_threads_than_stripes_to_own() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock, |_| {});
    let base = s.stats().bytes_used;
    let (threads, rounds, per) = if cfg!(miri) { (3, 2, 20) } else { (40, 3, 400) };
    let hits = AtomicUsize::new(0);
    for _ in 0..rounds {
        let barrier = std::sync::Barrier::new(threads);
        std::thread::scope(|sc| {
            for t in 0..threads {
                let (s, barrier, hits) = (&s, &barrier, &hits);
                sc.spawn(move || {
                    barrier.wait();
                    for i in 0..per {
                        let k = format!("key{}", (t * 7 + i) % 24);
                        s.set_simple(k.as_bytes(), &vec![b'v'; 1 + (t + i) % 200])
                            .unwrap();
                        if s.get(format!("key{}", (t + i) % 24).as_bytes())
                            .unwrap()
                            .is_some()
                        {
                            hits.fetch_add(1, Ordering::Relaxed);
                        }
                        if i % 3 == 0 {
                            s.del(&[k.as_bytes()]);
                        }
                    }
                });
            }
        });
    }
    let n = (threads * rounds * per) as u64;
    let st = s.stats();
    assert_eq!(st.ops[hopless_kv::Op::Set as usize], n);
    assert_eq!(st.ops[hopless_kv::Op::Get as usize], n);
    assert_eq!(
        st.ops[hopless_kv::Op::Del as usize],
        (threads * rounds * per.div_ceil(3)) as u64
    );
    assert_eq!(
        (st.hits, st.hits + st.misses),
        (hits.load(Ordering::Relaxed) as u64, n)
    );
    let keys: Vec<String> = (0..24).map(|k| format!("key{k}")).collect();
    s.del(&keys.iter().map(|k| k.as_bytes()).collect::<Vec<_>>());
    assert_eq!(s.dbsize(), 0);
    assert_eq!(
        s.stats().bytes_used,
        base,
        "every item's bytes counted in and out"
    );
}

/// A key's deadline lives in the expiry map, and the item's header flag says whether it has one, so that
/// writes to keys without one skip the map: overwriting, renaming, copying and deleting keys with and
/// without deadlines leave no entry behind (a stale one would hand its deadline to the next item at that
/// address) and lose none.
#[test]
fn deadlines_follow_their_keys_through_overwrites_renames_and_deletes() {
    let clock = Arc::new(ManualClock::new(START));
    let s = store_with(clock.clone(), |_| {});
    let ex = |secs| SetOptions {
        ttl: Ttl::Ex(secs),
        ..Default::default()
    };
    for round in 0..200u64 {
        let (a, b) = (format!("a{}", round % 7), format!("b{}", round % 5));
        s.set(a.as_bytes(), b"with", ex(100)).unwrap();
        s.set_simple(a.as_bytes(), b"without").unwrap();
        assert_eq!(s.ttl(a.as_bytes()), -1, "a plain SET drops the deadline");
        s.set(b.as_bytes(), b"with", ex(50)).unwrap();
        s.set(b.as_bytes(), b"again", ex(60)).unwrap();
        assert_eq!(s.ttl(b.as_bytes()), 60);
        // A key without a deadline written where one with a deadline was just freed.
        s.set_simple(format!("c{round}").as_bytes(), b"with").unwrap();
        assert_eq!(s.ttl(format!("c{round}").as_bytes()), -1);
    }
    assert_eq!(s.stats().keys_with_ttl, 5, "only the b keys have deadlines");
    s.rename(b"b0", b"moved", false).unwrap();
    assert_eq!(s.ttl(b"moved"), 60);
    assert!(s.copy(b"moved", b"copied", false).unwrap());
    assert_eq!(s.ttl(b"copied"), 60);
    s.rename(b"a0", b"b1", false).unwrap();
    assert_eq!(s.ttl(b"b1"), -1, "RENAME over a key with a deadline drops it");
    assert_eq!(s.stats().keys_with_ttl, 5);
    assert_eq!(s.del(&[b"moved", b"copied", b"b2", b"b3", b"b4"]), 5);
    assert_eq!(s.stats().keys_with_ttl, 0);
    clock.advance(1_000_000);
    assert_eq!(s.run_active_expiry(), 0);
    assert_eq!(s.dbsize(), 7 + 200);
}
