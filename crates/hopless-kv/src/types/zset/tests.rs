//! The sorted set against a sorted `Vec` model, through both forms and the conversion between them.

use allocator_api2::alloc::Global;

use super::sorted_set::Form;
use super::tree;
use super::*;
use crate::types::limits::Limits;

fn limits(entries: i64, value: i64) -> Limits {
    Limits {
        zset_entries: entries,
        zset_value: value,
        ..Limits::default()
    }
}

/// The model: (score, member) pairs, sorted as the set orders them.
fn sorted(model: &std::collections::HashMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
    let mut v: Vec<(Vec<u8>, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(|a, b| tree::cmp_key(a.1, &a.0, b.1, &b.0));
    v
}

fn check(z: &ZSet<Global>, model: &std::collections::HashMap<Vec<u8>, f64>) {
    if let Form::Skiplist(l) = &z.form {
        l.check();
    }
    let want = sorted(model);
    assert_eq!(z.len(), want.len());
    let got: Vec<(Vec<u8>, f64)> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
    assert_eq!(got, want, "{}", z.encoding());
    let back: Vec<(Vec<u8>, f64)> = z
        .walk(want.len().saturating_sub(1), true)
        .map(|(m, s)| (m.to_vec(), s))
        .collect();
    assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>());
    for (k, (m, s)) in want.iter().enumerate() {
        assert_eq!(z.rank(m), Some((k, *s)));
        assert_eq!(z.at(k), (&m[..], *s));
    }
}

fn run(entries: i64, seed: u64) {
    let lim = limits(entries, 16);
    let mut z = ZSet::new_in(Global);
    let mut model = std::collections::HashMap::new();
    let mut x = seed;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let steps = if cfg!(miri) { 150 } else { 4000 };
    for step in 0..steps {
        let member = format!("m{}", rnd(60)).into_bytes();
        let score = [0.0, 1.0, -1.0, 2.5, f64::INFINITY, f64::NEG_INFINITY, 1e20][rnd(7) as usize];
        match rnd(8) {
            0..=2 => {
                let new = z.insert(&member, score, &lim);
                assert_eq!(new, model.insert(member, score).is_none());
            }
            3 => assert_eq!(z.remove(&member), model.remove(&member).is_some()),
            4 if !model.is_empty() => {
                let n = z.len();
                let a = rnd(n as u64) as usize;
                let b = a + rnd((n - a) as u64 + 1) as usize;
                let want: Vec<(Vec<u8>, f64)> = sorted(&model)[a..b].to_vec();
                let mut got = Vec::new();
                z.remove_ranks(a, b, |m, s| got.push((m.to_vec(), s)));
                assert_eq!(got, want, "{}", z.encoding());
                for (m, _) in want {
                    model.remove(&m);
                }
            }
            5 => {
                let r = ScoreRange {
                    min: -1.0,
                    max: 2.5,
                    min_ex: rnd(2) == 0,
                    max_ex: false,
                };
                let (lo, hi) = z.score_ranks(&r);
                let want = model
                    .values()
                    .filter(|&&s| !r.before(s) && r.not_after(s))
                    .count();
                assert_eq!(hi - lo, want);
            }
            6 => {
                let long = vec![b'x'; 20 + step % 3];
                let new = z.insert(&long, 3.0, &lim);
                assert_eq!(new, model.insert(long, 3.0).is_none());
            }
            _ => {
                let got = z.add(
                    &member,
                    1.0,
                    AddFlags {
                        incr: true,
                        ..AddFlags::default()
                    },
                    &lim,
                );
                match model.get_mut(&member) {
                    Some(s) if (*s + 1.0).is_nan() => assert_eq!(got, Err(NanScore)),
                    Some(s) => {
                        *s += 1.0;
                        assert!(matches!(got, Ok(Added::Updated(v) | Added::Same(v)) if v == *s));
                    }
                    None => {
                        model.insert(member, 1.0);
                        assert_eq!(got, Ok(Added::Added(1.0)));
                    }
                }
            }
        }
        check(&z, &model);
        if z.len() > entries as usize {
            assert_eq!(z.encoding(), "skiplist");
        }
    }
    let c = z.try_clone().unwrap();
    check(&c, &model);
}

#[test]
fn both_forms_agree_with_the_model() {
    run(8, 0x1234_5678);
    run(1000, 0x9abc_def1);
    run(0, 0x2222_3333);
}

#[test]
fn add_follows_zadd_options() {
    let lim = Limits::default();
    let mut z = ZSet::new_in(Global);
    let f = |s: &str| {
        let mut a = AddFlags::default();
        for w in s.split_whitespace() {
            match w {
                "nx" => a.nx = true,
                "xx" => a.xx = true,
                "gt" => a.gt = true,
                "lt" => a.lt = true,
                "incr" => a.incr = true,
                _ => unreachable!(),
            }
        }
        a
    };
    assert_eq!(z.add(b"a", 1.0, f("xx"), &lim), Ok(Added::Nop));
    assert_eq!(z.add(b"a", 1.0, f("gt"), &lim), Ok(Added::Added(1.0)));
    assert_eq!(z.add(b"a", 0.0, f("gt"), &lim), Ok(Added::Nop));
    assert_eq!(z.add(b"a", 2.0, f("gt"), &lim), Ok(Added::Updated(2.0)));
    assert_eq!(z.add(b"a", 3.0, f("lt"), &lim), Ok(Added::Nop));
    assert_eq!(z.add(b"a", 5.0, f("nx"), &lim), Ok(Added::Nop));
    assert_eq!(z.add(b"a", 2.0, f(""), &lim), Ok(Added::Same(2.0)));
    assert_eq!(z.add(b"a", -1.0, f("incr lt"), &lim), Ok(Added::Updated(1.0)));
    assert_eq!(
        z.add(b"a", f64::INFINITY, f(""), &lim),
        Ok(Added::Updated(f64::INFINITY))
    );
    assert_eq!(z.add(b"a", f64::NEG_INFINITY, f("incr"), &lim), Err(NanScore));
    assert_eq!(z.score(b"a"), Some(f64::INFINITY));
}

#[test]
fn a_new_set_takes_the_large_form_when_the_hint_is_past_the_limits() {
    let lim = limits(4, 8);
    let mut z: ZSet<Global> = ZSet::new_in(Global);
    z.prepare(3, 8, &lim);
    assert_eq!(z.encoding(), "listpack");
    z.prepare(5, 1, &lim);
    assert_eq!(z.encoding(), "skiplist");
    let mut z: ZSet<Global> = ZSet::new_in(Global);
    z.insert(b"123456789", 1.0, &lim);
    assert_eq!(z.encoding(), "skiplist");
}

#[test]
fn scan_returns_every_stable_member_once() {
    let lim = limits(4, 64);
    let mut z = ZSet::new_in(Global);
    let n = if cfg!(miri) { 40 } else { 500 };
    for i in 0..n {
        z.insert(format!("m{i}").as_bytes(), i as f64, &lim);
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = 0;
    let mut round = 0;
    loop {
        cursor = z.scan(cursor, 7, |m, _| assert!(seen.insert(m.to_vec())));
        // Churn that must not disturb the members present throughout.
        round += 1;
        z.insert(format!("tmp{round}").as_bytes(), -1.0, &lim);
        z.remove(format!("tmp{}", round - 1).as_bytes());
        if cursor == 0 {
            break;
        }
    }
    for i in 0..n {
        assert!(seen.contains(format!("m{i}").as_bytes()));
    }
}
