//! The list against a `VecDeque` model, under several node sizes (so that nodes fill, split, join and
//! empty often), checking the contents both ways, the node invariants and the byte count after each step.

use std::collections::VecDeque;
use std::vec::Vec as StdVec;

use allocator_api2::alloc::Global;

use super::*;

fn limits(list_node: i64) -> Limits {
    Limits {
        list_node,
        ..Limits::default()
    }
}

fn check(l: &List<Global>, m: &VecDeque<StdVec<u8>>, fill: Fill) {
    assert_eq!(l.len(), m.len());
    let fwd: StdVec<&[u8]> = l.iter_from(0).collect();
    let want: StdVec<&[u8]> = m.iter().map(|v| &v[..]).collect();
    assert_eq!(fwd, want);
    let back: StdVec<&[u8]> = l.rev_from(l.len()).collect();
    assert_eq!(back, want.iter().rev().copied().collect::<StdVec<_>>());
    let mut bytes = 0;
    for n in 0..l.nodes.len() {
        let node = l.nodes.get(n);
        assert!(!node.is_empty(), "no empty node");
        assert!(
            node.len() == 1 || (node.len() <= fill.entries && node.used() <= fill.bytes),
            "node {n} over its fill: {} entries, {} bytes",
            node.len(),
            node.used()
        );
        bytes += node.bytes();
    }
    assert_eq!(l.node_bytes, bytes);
}

fn elem(rnd: &mut impl FnMut(usize) -> usize, step: usize) -> StdVec<u8> {
    let len = [0, 1, 3, 8, 20, 130, 700][rnd(7)];
    let mut v: StdVec<u8> = (0..len).map(|k| b'a' + ((k + step) % 3) as u8).collect();
    if rnd(3) == 0 {
        v = format!("{}", rnd(4)).into_bytes();
    }
    v
}

#[test]
fn list_matches_a_deque_under_every_node_size() {
    for list_node in [1, 3, 16, -1, -2, 0] {
        let lim = limits(list_node);
        let fill = Fill::of(&lim);
        let mut l = List::new_in(Global);
        let mut m: VecDeque<StdVec<u8>> = VecDeque::new();
        let mut seed = 0x1234_5678_u64 ^ list_node as u64;
        let mut rnd = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let steps = if cfg!(miri) { 150 } else { 4000 };
        for step in 0..steps {
            let e = elem(&mut rnd, step);
            match rnd(14) {
                0..=2 => {
                    l.push(End::Right, &e, &lim);
                    m.push_back(e);
                }
                3..=4 => {
                    l.push(End::Left, &e, &lim);
                    m.push_front(e);
                }
                5 => assert_eq!(l.pop(End::Left), m.pop_front()),
                6 => assert_eq!(l.pop(End::Right), m.pop_back()),
                7 => {
                    let i = rnd(m.len() + 1);
                    l.insert_at(i, &e, &lim);
                    m.insert(i, e);
                }
                8 if !m.is_empty() => {
                    let i = rnd(m.len());
                    assert!(l.set(i, &e, &lim));
                    m[i] = e;
                }
                9 => {
                    let count = rnd(5) as i64 - 2;
                    let target = elem(&mut rnd, step);
                    let got = l.remove_matching(&target, count, &lim);
                    let mut want = 0;
                    let max = if count == 0 {
                        usize::MAX
                    } else {
                        count.unsigned_abs() as usize
                    };
                    if count >= 0 {
                        let mut i = 0;
                        while i < m.len() {
                            if m[i] == target && want < max {
                                m.remove(i);
                                want += 1;
                            } else {
                                i += 1;
                            }
                        }
                    } else {
                        let mut i = m.len();
                        while i > 0 && want < max {
                            i -= 1;
                            if m[i] == target {
                                m.remove(i);
                                want += 1;
                            }
                        }
                    }
                    assert_eq!(got, want);
                }
                10 if rnd(8) == 0 => {
                    let (s, t) = (rnd(12) as i64 - 6, rnd(12) as i64 - 6);
                    let keep: StdVec<StdVec<u8>> = match l.range_of(s, t) {
                        Some((a, n)) => m.iter().skip(a).take(n).cloned().collect(),
                        None => StdVec::new(),
                    };
                    l.trim(s, t);
                    m = keep.into();
                }
                11 => {
                    let n = rnd(6);
                    let end = if rnd(2) == 0 { End::Left } else { End::Right };
                    let got = l.pop_many(end, n);
                    let want: StdVec<StdVec<u8>> = (0..n)
                        .map_while(|_| {
                            if end == End::Left {
                                m.pop_front()
                            } else {
                                m.pop_back()
                            }
                        })
                        .collect();
                    assert_eq!(got, want);
                }
                12 if !m.is_empty() => {
                    let i = rnd(m.len());
                    assert_eq!(l.get(i), Some(&m[i][..]));
                    let tail: StdVec<&[u8]> = l.iter_from(i).collect();
                    assert_eq!(tail.len(), m.len() - i);
                    let head: StdVec<&[u8]> = l.rev_from(i).collect();
                    assert_eq!(head.len(), i);
                }
                13 => {
                    let pivot = elem(&mut rnd, step);
                    let after = rnd(2) == 1;
                    let at = m.iter().position(|x| *x == pivot);
                    assert_eq!(l.insert_by_pivot(&pivot, after, &e, &lim), at.is_some());
                    if let Some(i) = at {
                        m.insert(i + after as usize, e);
                    }
                }
                _ => {}
            }
            check(&l, &m, fill);
        }
        let c = l.try_clone().unwrap();
        check(&c, &m, fill);
        assert_eq!(c.bytes() > 0, !m.is_empty());
    }
}

#[test]
fn lpos_ranks_counts_and_maxlen() {
    let lim = limits(2);
    let mut l = List::new_in(Global);
    for e in ["a", "b", "c", "1", "2", "3", "c", "c"] {
        l.push(End::Right, e.as_bytes(), &lim);
    }
    assert_eq!(l.positions(b"c", 1, 1, 0), [2]);
    assert_eq!(l.positions(b"c", 1, 0, 0), [2, 6, 7]);
    assert_eq!(l.positions(b"c", 2, 0, 0), [6, 7]);
    assert_eq!(l.positions(b"c", -1, 0, 0), [7, 6, 2]);
    assert_eq!(l.positions(b"c", -2, 1, 0), [6]);
    assert_eq!(l.positions(b"c", 1, 0, 3), [2]);
    assert_eq!(l.positions(b"c", -1, 0, 2), [7, 6]);
    assert!(l.positions(b"x", 1, 0, 0).is_empty());
    assert_eq!(l.index(-1), Some(7));
    assert_eq!(l.index(-9), None);
    assert_eq!(l.index(8), None);
    assert_eq!(l.index(i64::MIN), None);
    assert_eq!(l.range_of(0, -1), Some((0, 8)));
    assert_eq!(l.range_of(-100, 2), Some((0, 3)));
    assert_eq!(l.range_of(5, 100), Some((5, 3)));
    assert_eq!(l.range_of(8, 9), None);
    assert_eq!(l.range_of(3, 2), None);
    assert_eq!(l.range_of(i64::MIN, i64::MAX), Some((0, 8)));
}

#[test]
fn long_list_pushes_and_pops_in_bounded_nodes() {
    let lim = limits(-2);
    let mut l = List::new_in(Global);
    let n = if cfg!(miri) { 300 } else { 100_000 };
    for i in 0..n {
        l.push(End::Left, format!("element:{i}").as_bytes(), &lim);
    }
    assert!(l.nodes.len() > 1 || cfg!(miri));
    assert_eq!(l.get(0), Some(format!("element:{}", n - 1).as_bytes()));
    assert_eq!(l.get(n - 1), Some(&b"element:0"[..]));
    for i in 0..n {
        assert_eq!(l.pop(End::Right), Some(format!("element:{i}").into_bytes()));
    }
    assert!(l.is_empty());
    assert_eq!(l.bytes(), l.nodes.bytes());
}
