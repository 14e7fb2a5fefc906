//! ZUNION, ZINTER, ZDIFF (and their STORE forms) and ZINTERCARD over several sets, with Redis's
//! `zunionInterDiffGenericCommand` arithmetic: each score times its set's weight (a NaN product, 0·inf,
//! becomes 0), combined by SUM (inf + -inf becomes 0), MIN or MAX, sets taken smallest first for union
//! and intersection (the order matters to a sum's rounding, so it is Redis's).
//!
//! The inputs are anything [`Scored`]: a sorted set, and (as in Redis, where a plain set's members
//! all score 1) a plain set once it implements the trait.

use std::collections::HashMap;

use super::sorted_set::ZSet;
use super::tree::cmp_key;
use crate::alloc::KvAlloc;
use crate::types::set::Set;

/// How scores of one member in several sets combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aggregate {
    #[default]
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, target: &mut f64, v: f64) {
        match self {
            Aggregate::Sum => {
                *target += v;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => {
                if v < *target {
                    *target = v;
                }
            }
            Aggregate::Max => {
                if v > *target {
                    *target = v;
                }
            }
        }
    }
}

/// An input of the set operations: members with scores.
pub trait Scored {
    /// Members.
    fn card(&self) -> usize;
    /// `member`'s score, None if absent.
    fn score_of(&self, member: &[u8]) -> Option<f64>;
    /// Every member with its score, in the set's own order.
    fn each(&self, f: &mut dyn FnMut(&[u8], f64));
}

impl<A: KvAlloc> Scored for ZSet<A> {
    fn card(&self) -> usize {
        self.len()
    }

    fn score_of(&self, member: &[u8]) -> Option<f64> {
        self.score(member)
    }

    fn each(&self, f: &mut dyn FnMut(&[u8], f64)) {
        for (m, s) in self.iter() {
            f(m, s);
        }
    }
}

/// A plain set joins the set operations as Redis lets it: every member with score 1.
impl<A: KvAlloc> Scored for Set<A> {
    fn card(&self) -> usize {
        self.len()
    }

    fn score_of(&self, member: &[u8]) -> Option<f64> {
        self.contains(member).then_some(1.0)
    }

    fn each(&self, f: &mut dyn FnMut(&[u8], f64)) {
        self.for_each(|m| f(m, 1.0));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Inter,
    Diff,
}

/// An input: None for a missing key (an empty set).
pub type Source<'a> = Option<&'a dyn Scored>;

/// The sets with their weights, smallest first, ties in argument order.
fn by_size<'a>(srcs: &[Source<'a>], weights: &[f64]) -> Vec<(Source<'a>, f64)> {
    let mut v: Vec<(Source<'a>, f64)> = srcs
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, weights.get(i).copied().unwrap_or(1.0)))
        .collect();
    v.sort_by_key(|(s, _)| s.map_or(0, |z| z.card()));
    v
}

fn weighted(w: f64, s: f64) -> f64 {
    let v = w * s;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// The result of `op`, sorted by (score, member).
pub fn combine(srcs: &[Source<'_>], weights: &[f64], agg: Aggregate, op: SetOp) -> Vec<(Vec<u8>, f64)> {
    let mut out: Vec<(Vec<u8>, f64)> = Vec::new();
    match op {
        SetOp::Union => {
            let mut acc: HashMap<Vec<u8>, usize> = HashMap::new();
            for (z, w) in by_size(srcs, weights) {
                let Some(z) = z else { continue };
                z.each(&mut |m, s| {
                    let v = weighted(w, s);
                    match acc.get(m) {
                        Some(&i) => agg.apply(&mut out[i].1, v),
                        None => {
                            acc.insert(m.to_vec(), out.len());
                            out.push((m.to_vec(), v));
                        }
                    }
                });
            }
        }
        SetOp::Inter => {
            let sets = by_size(srcs, weights);
            if let Some(&(Some(first), w0)) = sets.first() {
                if sets.iter().all(|(z, _)| z.is_some()) {
                    first.each(&mut |m, s| {
                        let mut score = weighted(w0, s);
                        for &(z, w) in &sets[1..] {
                            match z.and_then(|z| z.score_of(m)) {
                                Some(v) => agg.apply(&mut score, v * w),
                                None => return,
                            }
                        }
                        out.push((m.to_vec(), score));
                    });
                }
            }
        }
        SetOp::Diff => {
            if let Some(Some(first)) = srcs.first() {
                first.each(&mut |m, s| {
                    if !srcs[1..]
                        .iter()
                        .any(|z| z.is_some_and(|z| z.score_of(m).is_some()))
                    {
                        out.push((m.to_vec(), s));
                    }
                });
            }
        }
    }
    out.sort_by(|a, b| cmp_key(a.1, &a.0, b.1, &b.0));
    out
}

/// ZINTERCARD: how many members are in every set, counting up to `limit` (0: no limit).
pub fn inter_card(srcs: &[Source<'_>], limit: usize) -> usize {
    let sets = by_size(srcs, &[]);
    let Some(&(Some(first), _)) = sets.first() else {
        return 0;
    };
    if sets.iter().any(|(z, _)| z.is_none()) {
        return 0;
    }
    let mut n = 0;
    first.each(&mut |m, _| {
        if (limit == 0 || n < limit)
            && sets[1..]
                .iter()
                .all(|(z, _)| z.is_some_and(|z| z.score_of(m).is_some()))
        {
            n += 1;
        }
    });
    n
}
