//! The string and keyspace operations beyond GET, SET, DEL, INCR and EXPIRE: SETRANGE, INCRBYFLOAT,
//! RENAME(NX), MSETNX, KEYS, RANDOMKEY, MEMORY USAGE, (P)EXPIRETIME; and maxmemory / policy changed at
//! run time.

use std::sync::Arc;

use hopless_kv::{Config, Error, ExpireCond, ManualClock, Policy, SetOptions, Store, Ttl};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

const START: u64 = 1_700_000_000_000;

fn store() -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START));
    let cfg = Config {
        shards: 8,
        active_expiry: false,
        clock: clock.clone(),
        ..Config::default()
    };
    (Store::new(cfg), clock)
}

#[test]
fn setrange_pads_overwrites_and_ignores_empty_patches() {
    let (s, _) = store();
    assert_eq!(s.setrange(b"k", 0, b""), Ok(0));
    assert_eq!(s.exists(&[b"k"]), 0, "an empty patch creates no key");
    assert_eq!(s.setrange(b"k", 3, b"ab"), Ok(5));
    assert_eq!(&*s.get(b"k").unwrap().unwrap(), b"\0\0\0ab");
    s.set_simple(b"h", b"Hello World").unwrap();
    assert_eq!(s.setrange(b"h", 6, b"Redis"), Ok(11));
    assert_eq!(&*s.get(b"h").unwrap().unwrap(), b"Hello Redis");
    assert_eq!(s.setrange(b"h", 0, b""), Ok(11));
    assert_eq!(s.setrange(b"h", 512 << 20, b"x"), Err(Error::TooLarge));
}

#[test]
fn setrange_keeps_the_ttl() {
    let (s, _) = store();
    s.set(
        b"k",
        b"abc",
        SetOptions {
            ttl: Ttl::Ex(100),
            ..Default::default()
        },
    )
    .unwrap();
    s.setrange(b"k", 1, b"X").unwrap();
    assert_eq!(s.ttl(b"k"), 100);
}

#[test]
fn incrbyfloat_follows_redis() {
    let (s, _) = store();
    s.set_simple(b"f", b"10.50").unwrap();
    assert_eq!(s.incr_by_float(b"f", 0.1).unwrap(), b"10.6");
    assert_eq!(s.incr_by_float(b"f", -5.0).unwrap(), b"5.6");
    s.set_simple(b"g", b"5.0e3").unwrap();
    assert_eq!(s.incr_by_float(b"g", 2.0e2).unwrap(), b"5200");
    assert_eq!(s.incr_by_float(b"new", 0.1).unwrap(), b"0.1");
    assert_eq!(s.incr_by_float(b"new", 0.2).unwrap(), b"0.3");
    assert_eq!(s.incr_by_float(b"big", 1e20).unwrap(), b"100000000000000000000");
    s.set_simple(b"s", b"abc").unwrap();
    assert_eq!(s.incr_by_float(b"s", 1.0), Err(Error::NotFloat));
    s.set_simple(b"sp", b" 1").unwrap();
    assert_eq!(s.incr_by_float(b"sp", 1.0), Err(Error::NotFloat));
    // Redis computes in long double: twice f64's largest is still finite there (its text is Redis's).
    s.set_simple(b"d", b"1.7976931348623157e308").unwrap();
    let twice = s.incr_by_float(b"d", 1.7976931348623157e308).unwrap();
    assert!(
        twice.starts_with(b"3595386269724631399918420935482088680967"),
        "{twice:?}"
    );
    assert_eq!(twice.len(), 309);
    s.set_simple(b"m", b"1e4932").unwrap();
    assert_eq!(s.incr_by_float_text(b"m", b"1e4932"), Err(Error::NanOrInfinity));
    assert_eq!(
        &*s.get(b"m").unwrap().unwrap(),
        b"1e4932",
        "a failed increment changes nothing"
    );
    assert_eq!(s.incr_by_float_text(b"m", b"inf"), Err(Error::NanOrInfinity));
    assert_eq!(s.incr_by_float_text(b"m", b"nan"), Err(Error::NotFloat));
}

#[test]
fn rename_moves_value_and_ttl_and_respects_nx() {
    let (s, _) = store();
    assert_eq!(s.rename(b"nope", b"x", false), Err(Error::NoSuchKey));
    s.set(
        b"a",
        b"1",
        SetOptions {
            ttl: Ttl::Ex(50),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.rename(b"a", b"b", false), Ok(true));
    assert!(s.get(b"a").unwrap().is_none());
    assert_eq!(&*s.get(b"b").unwrap().unwrap(), b"1");
    assert_eq!(s.ttl(b"b"), 50);
    s.set_simple(b"c", b"2").unwrap();
    assert_eq!(s.rename(b"b", b"c", true), Ok(false));
    assert_eq!(&*s.get(b"c").unwrap().unwrap(), b"2");
    assert_eq!(s.rename(b"b", b"c", false), Ok(true));
    assert_eq!(&*s.get(b"c").unwrap().unwrap(), b"1");
    assert_eq!(
        s.ttl(b"c"),
        50,
        "RENAME carries the source's TTL over the destination's"
    );
    assert_eq!(s.rename(b"c", b"c", false), Ok(true));
    assert_eq!(s.rename(b"c", b"c", true), Ok(false));
    assert_eq!(s.dbsize(), 1);
    // Many keys: across and within shards.
    for i in 0..500 {
        s.set_simple(format!("k{i}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    for i in 0..500 {
        assert_eq!(
            s.rename(format!("k{i}").as_bytes(), format!("r{i}").as_bytes(), false),
            Ok(true)
        );
    }
    for i in 0..500 {
        assert_eq!(
            &*s.get(format!("r{i}").as_bytes()).unwrap().unwrap(),
            format!("v{i}").as_bytes()
        );
    }
    assert_eq!(s.dbsize(), 501);
}

#[test]
fn msetnx_writes_all_or_nothing() {
    let (s, _) = store();
    assert_eq!(s.msetnx(&[(b"a", b"1"), (b"b", b"2")]), Ok(true));
    assert_eq!(s.msetnx(&[(b"c", b"3"), (b"b", b"x")]), Ok(false));
    assert!(s.get(b"c").unwrap().is_none());
    assert_eq!(&*s.get(b"b").unwrap().unwrap(), b"2");
}

#[test]
fn keys_randomkey_and_memory_usage() {
    let (s, clock) = store();
    assert!(s.random_key().is_none());
    for i in 0..100 {
        s.set_simple(format!("user:{i}").as_bytes(), b"v").unwrap();
    }
    s.set(
        b"tmp",
        b"v",
        SetOptions {
            ttl: Ttl::Px(10),
            ..Default::default()
        },
    )
    .unwrap();
    let mut k = s.keys(b"user:1*");
    k.sort();
    assert_eq!(k.len(), 11);
    assert_eq!(s.keys(b"*").len(), 101);
    clock.advance(20);
    assert_eq!(s.keys(b"*").len(), 100, "expired keys are not listed");
    for _ in 0..50 {
        assert!(s.random_key().unwrap().starts_with(b"user:"));
    }
    assert!(s.memory_usage(b"user:1").unwrap() > 16 + 6);
    assert!(s.memory_usage(b"nope").is_none());
}

#[test]
fn expiretime_reports_the_deadline() {
    let (s, _) = store();
    assert_eq!(s.pexpiretime(b"k"), -2);
    s.set_simple(b"k", b"v").unwrap();
    assert_eq!(s.expiretime(b"k"), -1);
    s.pexpire_at(b"k", START as i64 + 5_500, ExpireCond::Always)
        .unwrap();
    assert_eq!(s.pexpiretime(b"k"), START as i64 + 5_500);
    assert_eq!(s.expiretime(b"k"), (START as i64 + 5_500) / 1000);
}

#[test]
fn maxmemory_and_policy_change_at_run_time() {
    let (s, _) = store();
    assert_eq!((s.maxmemory(), s.policy()), (0, Policy::NoEviction));
    for i in 0..100 {
        s.set_simple(format!("k{i}").as_bytes(), &[7u8; 100]).unwrap();
    }
    s.set_maxmemory(1);
    assert_eq!(s.set_simple(b"more", b"v"), Err(Error::OutOfMemory));
    s.set_policy(Policy::SampledLru);
    s.set_maxmemory(s.stats().bytes_used);
    s.set_simple(b"more", &[1u8; 100]).unwrap();
    assert!(s.stats().evicted > 0);
    s.set_maxmemory(0);
    s.set_simple(b"free", b"v").unwrap();
}
