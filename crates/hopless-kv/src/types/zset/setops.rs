//! ZUNION, ZINTER, ZDIFF (and their STORE forms) and ZINTERCARD over several sets, with Redis's
//! `zunionInterDiffGenericCommand` arithmetic: each score times its set's weight (a NaN product, 0·inf,
//! becomes 0), combined by SUM (inf + -inf becomes 0), MIN or MAX, sets taken smallest first for union
//! and intersection (the order matters to a sum's rounding, so it is Redis's).

use std::collections::HashMap;

use super::tree::cmp_key;
use super::ZSet;
use crate::alloc::KvAlloc;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Inter,
    Diff,
}

/// The sets (None: a missing key, an empty set) with their weights, smallest first, ties in argument
/// order.
fn by_size<'a, A: KvAlloc>(srcs: &[Option<&'a ZSet<A>>], weights: &[f64]) -> Vec<(Option<&'a ZSet<A>>, f64)> {
    let mut v: Vec<(Option<&ZSet<A>>, f64)> = srcs
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, weights.get(i).copied().unwrap_or(1.0)))
        .collect();
    v.sort_by_key(|(s, _)| s.map_or(0, |z| z.len()));
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
pub fn combine<A: KvAlloc>(
    srcs: &[Option<&ZSet<A>>],
    weights: &[f64],
    agg: Aggregate,
    op: SetOp,
) -> Vec<(Vec<u8>, f64)> {
    let mut out: Vec<(Vec<u8>, f64)> = match op {
        SetOp::Union => {
            let mut acc: HashMap<&[u8], f64> = HashMap::new();
            let mut order: Vec<&[u8]> = Vec::new();
            for (z, w) in by_size(srcs, weights) {
                let Some(z) = z else { continue };
                for (m, s) in z.iter() {
                    let v = weighted(w, s);
                    match acc.get_mut(m) {
                        Some(t) => agg.apply(t, v),
                        None => {
                            acc.insert(m, v);
                            order.push(m);
                        }
                    }
                }
            }
            order.into_iter().map(|m| (m.to_vec(), acc[m])).collect()
        }
        SetOp::Inter => {
            let sets = by_size(srcs, weights);
            let mut out = Vec::new();
            if let Some(&(Some(first), w0)) = sets.first() {
                if sets.iter().all(|(z, _)| z.is_some()) {
                    'member: for (m, s) in first.iter() {
                        let mut score = weighted(w0, s);
                        for &(z, w) in &sets[1..] {
                            match z.and_then(|z| z.score(m)) {
                                Some(v) => agg.apply(&mut score, v * w),
                                None => continue 'member,
                            }
                        }
                        out.push((m.to_vec(), score));
                    }
                }
            }
            out
        }
        SetOp::Diff => match srcs.first() {
            Some(Some(first)) => first
                .iter()
                .filter(|(m, _)| !srcs[1..].iter().any(|z| z.is_some_and(|z| z.score(m).is_some())))
                .map(|(m, s)| (m.to_vec(), s))
                .collect(),
            _ => Vec::new(),
        },
    };
    out.sort_by(|a, b| cmp_key(a.1, &a.0, b.1, &b.0));
    out
}

/// ZINTERCARD: how many members are in every set, counting up to `limit` (0: no limit).
pub fn inter_card<A: KvAlloc>(srcs: &[Option<&ZSet<A>>], limit: usize) -> usize {
    let sets = by_size(srcs, &[]);
    let Some(&(Some(first), _)) = sets.first() else {
        return 0;
    };
    if sets.iter().any(|(z, _)| z.is_none()) {
        return 0;
    }
    let mut n = 0;
    for (m, _) in first.iter() {
        if sets[1..]
            .iter()
            .all(|(z, _)| z.is_some_and(|z| z.score(m).is_some()))
        {
            n += 1;
            if limit != 0 && n >= limit {
                break;
            }
        }
    }
    n
}
