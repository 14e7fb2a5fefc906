//! The store's list commands against a model (a map of `VecDeque`s), in several threads at once, each on
//! its own keys; plus one list all threads push to and pop from, checked for what a queue promises (no
//! element lost or doubled, each producer's elements leave in the order they came).

use std::collections::{HashMap, VecDeque};

use hopless_kv::types::list::End;
use hopless_kv::{Config, Error, Kind, Store};
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

type Model = HashMap<Vec<u8>, VecDeque<Vec<u8>>>;

/// The model's LRANGE/LTRIM range (Redis's normalisation), as (first, count).
fn range(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, (stop.min(len - 1) - start + 1) as usize))
}

fn index(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (i >= 0 && (i as usize) < len).then_some(i as usize)
}

fn pop(l: &mut VecDeque<Vec<u8>>, end: End) -> Option<Vec<u8>> {
    match end {
        End::Left => l.pop_front(),
        End::Right => l.pop_back(),
    }
}

fn push(l: &mut VecDeque<Vec<u8>>, end: End, e: Vec<u8>) {
    match end {
        End::Left => l.push_front(e),
        End::Right => l.push_back(e),
    }
}

/// One random list command on this thread's keys, applied to both; panics on any difference.
fn step(rng: &mut SmallRng, s: &Store, m: &mut Model, prefix: &str) {
    let key = |rng: &mut SmallRng| format!("{prefix}{}", rng.gen_range(0..4)).into_bytes();
    let elem = |rng: &mut SmallRng| -> Vec<u8> {
        match rng.gen_range(0..4) {
            0 => rng.gen_range(0..5).to_string().into_bytes(),
            1 => vec![b'x'; rng.gen_range(100..3000)],
            _ => (0..rng.gen_range(0..6))
                .map(|_| rng.gen_range(b'a'..=b'c'))
                .collect(),
        }
    };
    let end = |rng: &mut SmallRng| if rng.gen_bool(0.5) { End::Left } else { End::Right };
    let k = key(rng);
    let strkey = format!("{prefix}str").into_bytes();
    match rng.gen_range(0..16) {
        0..=3 => {
            let (end, only) = (end(rng), rng.gen_ratio(1, 5));
            let elems: Vec<Vec<u8>> = (0..rng.gen_range(1..5)).map(|_| elem(rng)).collect();
            let got = s.list_push(&k, end, &elems, only).unwrap();
            if !only || m.contains_key(&k) {
                let l = m.entry(k.clone()).or_default();
                for x in elems {
                    push(l, end, x);
                }
            }
            assert_eq!(got, m.get(&k).map_or(0, |l| l.len()));
        }
        4 => {
            let end = end(rng);
            let got = s.list_pop(&k, end).unwrap();
            assert_eq!(got, m.get_mut(&k).and_then(|l| pop(l, end)));
        }
        5 => {
            let (end, n) = (end(rng), rng.gen_range(0..6));
            let got = s.list_pop_many(&k, end, n).unwrap();
            let want = m
                .get_mut(&k)
                .map(|l| (0..n).map_while(|_| pop(l, end)).collect::<Vec<_>>());
            assert_eq!(got, want);
        }
        6 => {
            let (a, b) = (rng.gen_range(-8..8), rng.gen_range(-8..8));
            let got = s.lrange(&k, a, b).unwrap();
            let want: Vec<Vec<u8>> = match m.get(&k).and_then(|l| range(l.len(), a, b)) {
                Some((f, n)) => m[&k].iter().skip(f).take(n).cloned().collect(),
                None => Vec::new(),
            };
            assert_eq!(got, want);
        }
        7 => {
            let i = rng.gen_range(-8..8);
            let got = s.lindex(&k, i).unwrap();
            let want = m.get(&k).and_then(|l| index(l.len(), i).map(|i| l[i].clone()));
            assert_eq!(got, want);
        }
        8 => {
            let (i, e) = (rng.gen_range(-8..8), elem(rng));
            let got = s.lset(&k, i, &e);
            let want = match m.get_mut(&k) {
                None => Err(Error::NoSuchKey),
                Some(l) => match index(l.len(), i) {
                    Some(i) => {
                        l[i] = e;
                        Ok(())
                    }
                    None => Err(Error::Msg("ERR index out of range")),
                },
            };
            assert_eq!(got, want);
        }
        9 => {
            let (pivot, e, after) = (elem(rng), elem(rng), rng.gen_bool(0.5));
            let got = s.linsert(&k, after, &pivot, &e).unwrap();
            let want = match m.get_mut(&k) {
                None => 0,
                Some(l) => match l.iter().position(|x| *x == pivot) {
                    Some(i) => {
                        l.insert(i + after as usize, e);
                        l.len() as i64
                    }
                    None => -1,
                },
            };
            assert_eq!(got, want);
        }
        10 => {
            let (count, e) = (rng.gen_range(-3..4), elem(rng));
            let got = s.lrem(&k, count, &e).unwrap();
            let mut want = 0;
            if let Some(l) = m.get_mut(&k) {
                let max = if count == 0 {
                    usize::MAX
                } else {
                    count.unsigned_abs() as usize
                };
                let idx: Vec<usize> = if count >= 0 {
                    (0..l.len()).collect()
                } else {
                    (0..l.len()).rev().collect()
                };
                let mut gone: Vec<usize> = idx.into_iter().filter(|&i| l[i] == e).take(max).collect();
                gone.sort_unstable();
                for i in gone.into_iter().rev() {
                    l.remove(i);
                    want += 1;
                }
            }
            assert_eq!(got, want);
        }
        11 if rng.gen_ratio(1, 4) => {
            let (a, b) = (rng.gen_range(-8..8), rng.gen_range(-8..8));
            s.ltrim(&k, a, b).unwrap();
            if let Some(l) = m.get_mut(&k) {
                *l = match range(l.len(), a, b) {
                    Some((f, n)) => l.iter().skip(f).take(n).cloned().collect(),
                    None => VecDeque::new(),
                };
            }
        }
        12 => {
            let (e, rank) = (elem(rng), [1, 2, -1, -2][rng.gen_range(0..4)]);
            let (count, maxlen) = (rng.gen_range(0..3), rng.gen_range(0..6));
            let got = s.lpos(&k, &e, rank, count, maxlen).unwrap();
            let want = m.get(&k).map(|l| {
                let look = if maxlen == 0 { l.len() } else { maxlen.min(l.len()) };
                let order: Vec<usize> = if rank > 0 {
                    (0..look).collect()
                } else {
                    (l.len() - look..l.len()).rev().collect()
                };
                let hits = order.into_iter().filter(|&i| l[i] == e);
                let hits = hits.skip(rank.unsigned_abs() as usize - 1);
                if count == 0 {
                    hits.collect::<Vec<_>>()
                } else {
                    hits.take(count).collect()
                }
            });
            assert_eq!(got, want);
        }
        13 => {
            let (dst, from, to) = (key(rng), end(rng), end(rng));
            let got = s.lmove(&k, &dst, from, to).unwrap();
            let want = m.get_mut(&k).and_then(|l| pop(l, from));
            if let Some(e) = &want {
                push(m.entry(dst.clone()).or_default(), to, e.clone());
            }
            assert_eq!(got, want);
        }
        14 => {
            let (k2, end, n) = (key(rng), end(rng), rng.gen_range(1..4));
            let got = s.list_pop_first(&[&k, &k2], end, n).unwrap();
            let want = [&k, &k2].iter().enumerate().find_map(|(i, kk)| {
                let l = m.get_mut(*kk)?;
                Some((i, (0..n).map_while(|_| pop(l, end)).collect::<Vec<_>>()))
            });
            assert_eq!(got, want);
        }
        _ => {
            // WRONGTYPE from every command on a string key, and nothing changed.
            s.set_simple(&strkey, b"v").unwrap();
            assert_eq!(
                s.list_push(&strkey, End::Left, &[b"a"], false),
                Err(Error::WrongType)
            );
            assert_eq!(s.list_pop(&strkey, End::Right), Err(Error::WrongType));
            assert_eq!(s.llen(&strkey), Err(Error::WrongType));
            assert_eq!(s.lset(&strkey, 0, b"x"), Err(Error::WrongType));
            assert_eq!(s.lmove(&k, &strkey, End::Left, End::Left).map(|_| ()).err(), {
                if m.contains_key(&k) {
                    Some(Error::WrongType)
                } else {
                    None
                }
            });
            assert_eq!(
                s.list_pop_first(&[&strkey, &k], End::Left, 1),
                Err(Error::WrongType)
            );
            assert_eq!(&*s.get(&strkey).unwrap().unwrap(), b"v");
        }
    }
    // A list emptied is a key removed; the keys the model holds, and only those, are lists of the
    // model's length.
    m.retain(|_, l| !l.is_empty());
    for i in 0..4 {
        let k = format!("{prefix}{i}").into_bytes();
        let len = m.get(&k).map_or(0, |l| l.len());
        assert_eq!(s.llen(&k).unwrap(), len);
        assert_eq!(s.key_type(&k), (len > 0).then_some(Kind::List));
    }
}

#[test]
fn random_list_commands_match_the_model_in_four_threads() {
    let s = Store::new(Config {
        shards: 4,
        ..Config::default()
    });
    // The bytes charged for the empty tables: what is charged again once every key is deleted, if each
    // change to a list was charged as it happened.
    let base = s.stats().bytes_used;
    let steps = if cfg!(miri) { 200 } else { 20_000 };
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let s = &s;
            sc.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(0x115_7000 + t);
                let mut m = Model::new();
                let prefix = format!("t{t}:");
                for _ in 0..steps {
                    step(&mut rng, s, &mut m, &prefix);
                }
                // Finally every list reads back whole, and deleting them leaves nothing charged.
                for (k, l) in &m {
                    let got = s.lrange(k, 0, -1).unwrap();
                    assert_eq!(got, l.iter().cloned().collect::<Vec<_>>());
                }
            });
        }
    });
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for t in 0..4 {
        for i in 0..4 {
            keys.push(format!("t{t}:{i}").into_bytes());
        }
        keys.push(format!("t{t}:str").into_bytes());
    }
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    s.del(&refs);
    assert_eq!(s.stats().keys, 0);
    assert_eq!(
        s.stats().bytes_used,
        base,
        "bytes charged for lists that are gone"
    );
}

/// One list all threads use as a queue: each pushes its own numbered elements at the head and pops from
/// the tail (RPOP, LMOVE to a key of its own, LMPOP), so that afterwards every element was popped once
/// or is still there, once, and each popper saw every producer's elements in the order pushed.
#[test]
fn a_shared_queue_loses_and_reorders_nothing() {
    let s = Store::new(Config {
        shards: 4,
        ..Config::default()
    });
    const THREADS: u64 = 4;
    let per = if cfg!(miri) { 100 } else { 10_000 };
    let base = s.stats().bytes_used;
    let popped: Vec<Vec<Vec<u8>>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let s = &s;
                sc.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(t);
                    let mine = format!("mine{t}").into_bytes();
                    let mut got = Vec::new();
                    for i in 0..per {
                        s.list_push(b"queue", End::Left, &[format!("{t}:{i}")], false)
                            .unwrap();
                        match rng.gen_range(0..4) {
                            0 => got.extend(s.list_pop(b"queue", End::Right).unwrap()),
                            1 => {
                                if let Some(e) = s.lmove(b"queue", &mine, End::Right, End::Left).unwrap() {
                                    assert_eq!(s.list_pop(&mine, End::Right).unwrap(), Some(e.clone()));
                                    got.push(e);
                                }
                            }
                            2 => {
                                if let Some((_, v)) =
                                    s.list_pop_first(&[b"none", b"queue"], End::Right, 2).unwrap()
                                {
                                    got.extend(v);
                                }
                            }
                            _ => {}
                        }
                        let len = s.llen(b"queue").unwrap();
                        assert!(len <= (THREADS as usize) * per);
                    }
                    got
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let rest = s.lrange(b"queue", 0, -1).unwrap();
    let parse = |e: &[u8]| -> (u64, usize) {
        let s = std::str::from_utf8(e).unwrap();
        let (t, i) = s.split_once(':').unwrap();
        (t.parse().unwrap(), i.parse().unwrap())
    };
    let mut all: Vec<(u64, usize)> = rest.iter().map(|e| parse(e)).collect();
    // Whatever is left is in queue order: the newest of each producer nearest the head.
    let mut last = [usize::MAX; THREADS as usize];
    for &(t, i) in &all {
        assert!(
            i < last[t as usize],
            "producer {t}'s elements out of order in the queue"
        );
        last[t as usize] = i;
    }
    for got in &popped {
        let mut last = [None; THREADS as usize];
        for e in got {
            let (t, i) = parse(e);
            assert!(
                last[t as usize] < Some(i),
                "a popper saw producer {t}'s {i} after a later one"
            );
            last[t as usize] = Some(i);
            all.push((t, i));
        }
    }
    all.sort_unstable();
    let want: Vec<(u64, usize)> = (0..THREADS).flat_map(|t| (0..per).map(move |i| (t, i))).collect();
    assert_eq!(all, want, "every element popped once or still queued once");
    s.del(&[b"queue"]);
    assert_eq!(s.stats().keys, 0, "the popper's own keys are gone once emptied");
    assert_eq!(
        s.stats().bytes_used,
        base,
        "bytes charged for lists that are gone"
    );
}
