//! The values against redis-server 7.0.15's bytes (`reference.rs`), the estimate against the true
//! cardinality, and arbitrary bytes through every entry point.

use super::reference::*;
use super::*;

const MAX: usize = HLL_SPARSE_MAX_BYTES;

/// The inverse of `x ^= x >> 47` (it is its own inverse: 2 * 47 > 64).
fn unshift(x: u64) -> u64 {
    x ^ (x >> 47)
}

/// The 8-byte element whose hash is `hash` (MurmurHash64A is a bijection on 8-byte keys).
fn element_for_hash(hash: u64) -> [u8; 8] {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    // Newton's iteration for the inverse of an odd number modulo 2^64.
    let mut mi: u64 = M;
    for _ in 0..6 {
        mi = mi.wrapping_mul(2u64.wrapping_sub(M.wrapping_mul(mi)));
    }
    let mut h = unshift(hash);
    h = h.wrapping_mul(mi);
    h = unshift(h);
    h = h.wrapping_mul(mi);
    let h0 = u64::from(HASH_SEED) ^ 8u64.wrapping_mul(M);
    let mut k = h ^ h0;
    k = k.wrapping_mul(mi);
    k = unshift(k);
    k = k.wrapping_mul(mi);
    k.to_le_bytes()
}

/// An element that sets register `index` to `count` (1 to 51).
pub(super) fn element_for(index: usize, count: u8) -> [u8; 8] {
    let run = if count <= 50 {
        (1u64 << (count - 1)) << HLL_P
    } else {
        0
    };
    let e = element_for_hash(index as u64 | run);
    assert_eq!(pattern_len(&e), (index, count));
    e
}

fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[track_caller]
fn check(got: &[u8], want: &Bytes, what: &str) {
    match *want {
        Hex(h) => assert_eq!(got, &unhex(h)[..], "{what}: got {}", hexof(got)),
        Fnv(len, h) => assert_eq!((got.len(), fnv(got)), (len, h), "{what}"),
    }
}

fn hexof(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// PFCOUNT as Redis runs it on a key: the reply, the cache stored back.
fn pfcount(v: &mut [u8]) -> Result<i64, HllError> {
    let c = count(v)?;
    c.store_cache(v);
    Ok(c.cardinality)
}

fn elements(prefix: &str, range: std::ops::Range<u64>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

#[test]
fn new_values_and_a_few_elements_match_redis() {
    assert_eq!(new_sparse(), unhex("48594c4c0100000000000000000000007fff"));
    assert_eq!(add_new::<[&[u8]; 0]>([], MAX), unhex(EMPTY_AFTER_PFADD));
    let mut v = add_new([&b"a"[..], b"b", b"c"], MAX);
    assert_eq!(v, unhex(ABC));
    assert_eq!(decode(&v).unwrap(), ABC_DECODE);
    assert_eq!(pfcount(&mut v), Ok(ABC_COUNT));
    assert_eq!(v, unhex(ABC_AFTER_COUNT));
    // The cache stays valid when nothing changes, and is marked invalid when something does.
    assert_eq!(add(&mut v, [&b"a"[..], b"b", b"c"], MAX), Ok(false));
    assert_eq!(v[15], 0);
    assert_eq!(add(&mut v, [&b"1"[..], b"2", b"3"], MAX), Ok(true));
    assert_eq!(v[15], 0x80);
}

#[test]
fn elements_hash_to_redis_registers() {
    for &(e, index, run) in PATTERNS {
        assert_eq!(pattern_len(e), (index, run), "{e:?}");
    }
}

#[test]
fn one_element_per_pfadd_matches_redis_counts_and_bytes() {
    let mut v = add_new::<[&[u8]; 0]>([], MAX);
    let mut n = 0;
    let mut first_dense = None;
    for &(upto, card, enc, ref want) in SEQUENCE {
        while n < upto {
            add(&mut v, [format!("e{n}")], MAX).unwrap();
            n += 1;
            if first_dense.is_none() && encoding(&v) == Ok(Encoding::Dense) {
                first_dense = Some(n);
            }
        }
        assert_eq!(pfcount(&mut v), Ok(card), "after {n}");
        assert_eq!(encoding(&v).unwrap().as_str(), enc, "after {n}");
        check(&v, want, &format!("after {n}"));
    }
    assert_eq!(first_dense, Some(SEQUENCE_FIRST_DENSE));
}

#[test]
fn sparse_turns_dense_where_redis_does() {
    for &(max, n_dense, ref last) in PROMOTIONS {
        let mut v = add_new::<[&[u8]; 0]>([], max);
        let mut prev = v.clone();
        let mut n = 0;
        loop {
            add(&mut v, [format!("e{n}")], max).unwrap();
            n += 1;
            if encoding(&v) == Ok(Encoding::Dense) {
                break;
            }
            prev = v.clone();
        }
        assert_eq!(n, n_dense, "max {max}");
        check(&prev, last, &format!("last sparse under {max}"));
        // The promotion keeps the registers: as if the value had stayed sparse.
        let mut sparse = prev.clone();
        add(&mut sparse, [format!("e{}", n - 1)], usize::MAX).unwrap();
        assert_eq!(encoding(&sparse), Ok(Encoding::Sparse));
        assert_eq!(getreg(&v).unwrap().registers, getreg(&sparse).unwrap().registers);
    }
}

#[test]
fn many_elements_in_one_pfadd_match_redis() {
    for &(cnt, reply, ref want) in ONE_PFADD {
        let v = add_new(elements("x", 0..cnt), MAX);
        assert_eq!(reply, 1);
        check(&v, want, &format!("{cnt} elements"));
    }
}

#[test]
fn a_register_above_32_turns_the_value_dense() {
    let mut v = add_new([&b"a"[..], b"b", b"c"], MAX);
    pfcount(&mut v).unwrap();
    let (reply, want, header) = ABOVE_32;
    assert_eq!(add(&mut v, [element_for(5, 40)], MAX), Ok(reply == 1));
    check(&v, &want, "dense");
    assert_eq!(hexof(&v[..16]), header);
    assert_eq!(getreg(&v).unwrap().registers[5], 40);
}

fn named(name: &str) -> Vec<u8> {
    let v = match name {
        "s1" => add_new([&b"a"[..], b"b", b"c"], MAX),
        "s2" => add_new([&b"b"[..], b"c", b"d"], MAX),
        "s3" => add_new([&b"c"[..], b"d", b"e"], MAX),
        "big" => add_new(elements("big", 0..5000), MAX),
        "m1" => add_new(elements("m1-", 0..1400), MAX),
        "m2" => add_new(elements("m2-", 0..1400), MAX),
        "hi" => {
            let v = add_new([element_for(77, 45)], MAX);
            todense(&v).unwrap().unwrap_or(v)
        }
        "x" => {
            let mut v = add_new([&b"x"[..], b"y"], MAX);
            pfcount(&mut v).unwrap();
            v
        }
        _ => unreachable!("{name}"),
    };
    let want = NAMED.iter().find(|(n, _)| *n == name).unwrap();
    check(&v, &want.1, name);
    v
}

#[test]
fn pfmerge_matches_redis() {
    for &(dest, sources, card, ref want) in MERGES {
        let d = dest.map(named);
        let s: Vec<Vec<u8>> = sources.iter().map(|n| named(n)).collect();
        let mut v = merge(d.as_deref(), &s, MAX).unwrap();
        let what = format!("PFMERGE {dest:?} {sources:?}");
        check(&v, want, &what);
        assert_eq!(pfcount(&mut v), Ok(card), "{what}");
    }
}

#[test]
fn pfcount_of_several_keys_matches_redis() {
    for &(names, card) in UNIONS {
        let vals: Vec<Vec<u8>> = names.iter().map(|n| named(n)).collect();
        assert_eq!(count_union(&vals), Ok(card), "{names:?}");
    }
}

fn build(recipe: &[(&str, usize)]) -> Vec<u8> {
    recipe.iter().flat_map(|&(h, n)| unhex(h).repeat(n)).collect()
}

fn reply<T>(r: Result<T, HllError>, ok: impl FnOnce(T) -> R) -> R {
    match r {
        Ok(x) => ok(x),
        Err(e) => R::Err(e.text()),
    }
}

#[test]
fn scenarios_match_redis_on_odd_and_corrupt_values() {
    let abc = add_new([&b"a"[..], b"b", b"c"], MAX);
    for &(name, recipe, cmds) in SCENARIOS {
        let before = build(recipe);
        for (cmd, want, after) in cmds {
            let mut v = before.clone();
            let got = match *cmd {
                Cmd::Count => reply(pfcount(&mut v), R::Int),
                Cmd::Decode => reply(decode(&v), |s| {
                    if s.len() > 200 {
                        R::TextFnv(s.len(), fnv(s.as_bytes()))
                    } else {
                        R::Text(Box::leak(s.into_boxed_str()))
                    }
                }),
                Cmd::Encoding => reply(encoding(&v), |e| R::Text(e.as_str())),
                Cmd::ToDense => reply(todense(&before), |d| {
                    let conv = d.is_some();
                    if let Some(d) = d {
                        v = d;
                    }
                    R::Int(conv as i64)
                }),
                Cmd::GetReg => reply(getreg(&before), |g| {
                    if let Some(d) = g.converted {
                        v = d;
                    }
                    R::Regs(fnv(&g.registers))
                }),
                Cmd::MergeNew => reply(merge(None, [&before], MAX), |m| {
                    v = m;
                    R::Text("OK")
                }),
                Cmd::Union => reply(count_union([&before, &abc]), R::Int),
                Cmd::Add(els) => {
                    let els: Vec<[u8; 8]> = els.iter().map(|&(i, c)| element_for(i, c)).collect();
                    reply(add(&mut v, &els, MAX), |c| R::Int(c as i64))
                }
            };
            let what = format!("{name}: {cmd:?}");
            assert_eq!(got, *want, "{what}");
            match after {
                Some(a) => check(&v, a, &what),
                None if matches!(cmd, Cmd::MergeNew) => {}
                None => assert_eq!(v, before, "{what}: changed"),
            }
        }
    }
}

fn run_value(run: usize) -> Vec<u8> {
    let (max, batches, last, len, h) = RUNS[run];
    let mut v = add_new::<[&[u8]; 0]>([], max);
    let mut n = 0u64;
    let mut first = true;
    let mut card = 0;
    for &(b, counted) in batches {
        let els = elements(&format!("t{run}-"), n..n + u64::from(b));
        if first {
            v = add_new(&els, max);
            first = false;
        } else {
            add(&mut v, &els, max).unwrap();
        }
        n += u64::from(b);
        if counted {
            card = pfcount(&mut v).unwrap();
        }
    }
    assert_eq!(card, last, "run {run}");
    assert_eq!((v.len(), fnv(&v)), (len, h), "run {run}");
    v
}

#[test]
fn random_runs_and_merges_match_redis() {
    let values: Vec<Vec<u8>> = (0..RUNS.len()).map(run_value).collect();
    for &(max, dest, sources, len, h) in RUN_MERGES {
        let s: Vec<&Vec<u8>> = sources.iter().map(|&i| &values[i]).collect();
        let v = merge(dest.map(|d| &values[d][..]), s, max).unwrap();
        assert_eq!(
            (v.len(), fnv(&v)),
            (len, h),
            "PFMERGE {dest:?} {sources:?} under {max}"
        );
    }
}

#[test]
fn a_million_elements_count_as_redis_counts_them() {
    let mut v = add_new::<[&[u8]; 0]>([], MAX);
    for i in (0..1_000_000).step_by(1000) {
        add(&mut v, elements("e", i..i + 1000), MAX).unwrap();
    }
    let (card, len, h) = MILLION;
    assert_eq!(pfcount(&mut v), Ok(card));
    assert_eq!((v.len(), fnv(&v)), (len, h));
}

#[test]
fn counts_stay_within_the_error_bounds() {
    // Six standard errors (1.04 / sqrt(16384)), as PFSELFTEST allows; sparse and dense agree throughout.
    let relerr = 1.04 / (HLL_REGISTERS as f64).sqrt();
    let mut sparse = add_new::<[&[u8]; 0]>([], MAX);
    let mut dense = todense(&sparse).unwrap().unwrap();
    let mut n = 0u64;
    for checkpoint in [
        1u64, 3, 10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000, 300_000,
    ] {
        let els = elements("acc", n..checkpoint);
        add(&mut sparse, &els, MAX).unwrap();
        add(&mut dense, &els, MAX).unwrap();
        n = checkpoint;
        let card = pfcount(&mut dense).unwrap();
        assert_eq!(pfcount(&mut sparse), Ok(card), "{n}");
        let maxerr = (relerr * 6.0 * n as f64).ceil();
        assert!((card - n as i64).abs() as f64 <= maxerr, "{n} counted {card}");
    }
}

#[test]
fn promotion_as_the_redis_test_suite_checks_it() {
    // hyperloglog.tcl: 100 elements per PFADD, then PFCOUNT within 5%; sparse below 1000, dense above 10000.
    let mut v = add_new::<[&[u8]; 0]>([], MAX);
    let mut n = 0u64;
    while n < 100_000 {
        add(&mut v, elements("p", n..n + 100), MAX).unwrap();
        n += 100;
        let card = pfcount(&mut v).unwrap();
        assert!(
            ((card - n as i64).abs() as f64) < card as f64 / 100.0 * 5.0,
            "{n}: {card}"
        );
        let enc = encoding(&v).unwrap();
        if n < 1000 {
            assert_eq!(enc, Encoding::Sparse);
        } else if n > 10_000 {
            assert_eq!(enc, Encoding::Dense);
        }
    }
}

#[test]
fn sparse_and_dense_count_alike_and_merge_alike() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    for round in 0..300 {
        let n = rng.gen_range(0..100);
        let els: Vec<Vec<u8>> = (0..n)
            .map(|_| rng.gen::<u64>().to_string().into_bytes())
            .collect();
        let mut sparse = add_new(&els, MAX);
        let mut dense = todense(&add_new::<[&[u8]; 0]>([], MAX)).unwrap().unwrap();
        add(&mut dense, &els, MAX).unwrap();
        assert_eq!(encoding(&sparse), Ok(Encoding::Sparse));
        assert_eq!(pfcount(&mut sparse), pfcount(&mut dense), "round {round}");
        // Merged either way round, into either, the registers are the union.
        let other = add_new(elements("o", 0..rng.gen_range(0..3000)), MAX);
        let want: Vec<u8> = {
            let (a, b) = (
                getreg(&sparse).unwrap().registers,
                getreg(&other).unwrap().registers,
            );
            a.iter().zip(&b).map(|(x, y)| *x.max(y)).collect()
        };
        for (d, s) in [(&sparse, &dense), (&dense, &sparse)] {
            let m = merge(Some(d), [s, &other], MAX).unwrap();
            assert_eq!(getreg(&m).unwrap().registers, want);
            assert_eq!(count_union([s, &other]), Ok(pfcount(&mut m.clone()).unwrap()));
        }
    }
}

#[test]
fn self_test_passes_and_fails_as_redis_does() {
    for seed in [1, 0xdead_beef] {
        assert_eq!(self_test(seed, MAX), Ok(()));
    }
    assert_eq!(selftest::run(5, 0, 10, 100_000), Ok(()));
    assert_eq!(selftest::run(5, 100_000, 10, 100_000), Ok(()));
    // Redis with hll-sparse-max-bytes 40: the value is dense by 10 elements.
    assert_eq!(
        selftest::run(5, 40, 1, 100),
        Err("ERR TESTFAILED sparse encoding not used".into())
    );
}

/// The opcodes of a sparse value end exactly at its end (no XZERO cut short by it).
fn ends_cleanly(v: &[u8]) -> bool {
    let mut p = HLL_HDR_SIZE;
    while p < v.len() {
        p += if v[p] & 0xc0 == 0x40 { 2 } else { 1 };
    }
    p == v.len()
}

fn mutate(rng: &mut impl rand::Rng, v: &mut Vec<u8>) {
    let len = v.len();
    // Mostly past the header, so the value still passes as an HLL and the decoding is what is tried.
    let pos = |rng: &mut dyn rand::RngCore| {
        use rand::Rng;
        if len == 0 {
            0
        } else if rng.gen_bool(0.1) {
            rng.gen_range(0..len)
        } else {
            rng.gen_range(HLL_HDR_SIZE.min(len - 1)..len)
        }
    };
    match rng.gen_range(0..7) {
        0 if len > 0 => {
            let p = pos(rng);
            v[p] ^= 1 << rng.gen_range(0..8);
        }
        1 if len > 0 => {
            let p = pos(rng);
            v[p] = rng.gen();
        }
        2 => v.truncate(rng.gen_range(0..=len)),
        3 => {
            for _ in 0..rng.gen_range(1..8) {
                v.push(rng.gen());
            }
        }
        4 => {
            let p = pos(rng).min(v.len());
            v.insert(p, rng.gen());
        }
        5 if len > 0 => {
            let p = pos(rng);
            v.remove(p);
        }
        _ => {
            let p = pos(rng).min(v.len());
            let op = [0x7f, 0xff, 0x40, 0x00, 0x3f, 0x80, 0xfc, 0x83][rng.gen_range(0..8)];
            v.insert(p, op);
        }
    }
}

#[test]
fn arbitrary_bytes_never_panic_and_sound_values_keep_their_registers() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
    let abc = add_new([&b"a"[..], b"b", b"c"], MAX);
    let mut random_dense = vec![0u8; HLL_DENSE_SIZE];
    rng.fill(&mut random_dense[..]);
    random_dense[..5].copy_from_slice(b"HYLL\0");
    let starts = [
        new_sparse(),
        abc.clone(),
        add_new(elements("f", 0..300), MAX),
        add_new(elements("g", 0..1200), 10_000),
        build(&[("48594c4c010000000000000000000080", 1), ("83", 4096)]),
        build(&[("48594c4c010000000000000000000080", 1), ("3f", 256)]),
        add_new(elements("h", 0..5000), MAX),
        random_dense,
        b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80".to_vec(),
        Vec::new(),
    ];
    for round in 0..6000 {
        let mut v = starts[round % starts.len()].clone();
        for _ in 0..rng.gen_range(1..6) {
            mutate(&mut rng, &mut v);
        }
        if rng.gen_bool(0.05) {
            v = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
            if rng.gen_bool(0.7) {
                let n = v.len().min(5);
                v[..n].copy_from_slice(&b"HYLL\x01"[..n]);
            }
        }
        let max = [0, 20, 300, MAX][rng.gen_range(0..4)];
        let els: Vec<Vec<u8>> = (0..rng.gen_range(0..20))
            .map(|_| {
                if rng.gen_bool(0.5) {
                    element_for(rng.gen_range(0..HLL_REGISTERS), rng.gen_range(1..=51)).to_vec()
                } else {
                    rng.gen::<u32>().to_string().into_bytes()
                }
            })
            .collect();

        let _ = validate(&v);
        let _ = encoding(&v);
        let _ = decode(&v);
        let _ = count(&v);
        let _ = count_union([&v, &abc]);
        let _ = count_union([&abc, &v]);
        let _ = merge(None, [&v, &starts[6]], max);
        let _ = merge(Some(&abc), [&v], max);
        // Sound: the opcodes cover the registers exactly, and end with the value.
        let mut invalid = v.clone();
        if let Some(b) = invalid.get_mut(15) {
            *b |= 0x80;
        }
        let sound = todense(&v).is_ok() && count(&invalid).is_ok() && ends_cleanly(&v);
        let merged = merge(Some(&v), [&abc], max);
        let mut added = v.clone();
        let result = add(&mut added, &els, max);

        if !sound {
            continue;
        }
        // A sound value: every operation succeeds and keeps the registers' meaning.
        let regs = getreg(&v).unwrap().registers;
        let mut want = regs.clone();
        for e in &els {
            let (i, c) = pattern_len(e);
            want[i] = want[i].max(c);
        }
        assert_eq!(result, Ok(want != regs), "round {round}");
        assert_eq!(getreg(&added).unwrap().registers, want, "round {round}");
        let abc_regs = getreg(&abc).unwrap().registers;
        let union: Vec<u8> = regs.iter().zip(&abc_regs).map(|(a, b)| *a.max(b)).collect();
        assert_eq!(
            getreg(&merged.unwrap()).unwrap().registers,
            union,
            "round {round}"
        );
        let dense = todense(&invalid).unwrap().unwrap_or(invalid.clone());
        assert_eq!(
            count(&invalid).map(|c| c.cardinality),
            count(&dense).map(|c| c.cardinality)
        );
    }
}

#[test]
fn a_val_past_the_covered_registers_is_corrupt() {
    // XZERO of all 16384 registers, then a VAL of 1: every reader refuses it, as redis-server does.
    let mut v = new_sparse();
    v.push(0x80);
    let mut invalid = v.clone();
    invalid[15] |= 0x80;
    assert_eq!(count(&invalid), Err(HllError::Corrupt));
    assert_eq!(todense(&v), Err(HllError::Corrupt));
    assert_eq!(getreg(&v), Err(HllError::Corrupt));
    assert_eq!(count_union([&v]), Err(HllError::Corrupt));
    assert_eq!(merge(None, [&v], MAX), Err(HllError::Corrupt));
    assert_eq!(decode(&v).as_deref(), Ok("Z:16384 v:1,1"));
}
