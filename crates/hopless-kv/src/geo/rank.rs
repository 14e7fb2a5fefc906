//! The order GEOSEARCH and GEORADIUS reply their hits in: by distance, through the same sorts Redis
//! runs, so ties (points at the same distance) come out in Redis's order too.
//!
//! Redis sorts the whole list with glibc's `qsort`, which is a merge sort (stable: ties keep the
//! order they were found in), and a list that COUNT cuts with its own `pqsort`, a Bentley-McIlroy
//! quicksort that only finishes the part that is returned (not stable: which of several tied hits
//! make the cut, and their order, follow its partitioning). Both are ported here step for step, with
//! Redis's comparison (`sort_gp_asc`), which calls NaN neither greater nor equal.

use std::cmp::Ordering;

/// ASC / DESC, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    None,
    Asc,
    Desc,
}

/// `sort_gp_asc`: 1 when `a > b`, 0 when equal, -1 otherwise (NaN included).
fn cmp_asc(a: f64, b: f64) -> Ordering {
    if a > b {
        Ordering::Greater
    } else if a == b {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// Orders the hits of a search, `dist` giving each one's distance, as Redis orders them before it
/// replies, and returns how many it replies (or stores).
///
/// `count` is COUNT's argument, 0 without one; `any` is COUNT's ANY. COUNT without ANY and without
/// ASC or DESC sorts ascending. When every hit is returned, the whole list is merge sorted; when
/// COUNT cuts it, only its first `count` places are sorted (`pqsort`) and the rest is left in an
/// order nobody reads. Without a sort the hits stay in the order the scan found them.
pub fn rank<T>(items: &mut [T], sort: Sort, count: usize, any: bool, dist: impl Fn(&T) -> f64) -> usize {
    let sort = if count != 0 && sort == Sort::None && !any {
        Sort::Asc
    } else {
        sort
    };
    let returned = if count == 0 || items.len() < count {
        items.len()
    } else {
        count
    };
    let cmp = |a: &T, b: &T| {
        let o = cmp_asc(dist(a), dist(b));
        if sort == Sort::Desc {
            o.reverse()
        } else {
            o
        }
    };
    match sort {
        Sort::None => {}
        _ if returned == items.len() => merge_sort(items, &cmp),
        _ => pqsort(items, &cmp, 0, returned - 1),
    }
    returned
}

/// glibc's `msort_with_tmp`: halves (the first `n / 2` long), each sorted, merged taking from the left
/// half while `cmp(left, right) <= 0`.
pub(crate) fn merge_sort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let mut order: Vec<usize> = (0..n).collect();
    let mut tmp = vec![0usize; n];
    merge_sort_indices(&mut order, &mut tmp, &|a: &usize, b: &usize| cmp(&v[*a], &v[*b]));
    apply_permutation(v, order);
}

fn merge_sort_indices(v: &mut [usize], tmp: &mut [usize], cmp: &impl Fn(&usize, &usize) -> Ordering) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    merge_sort_indices(&mut v[..n1], tmp, cmp);
    merge_sort_indices(&mut v[n1..], tmp, cmp);
    let (mut i, mut j, mut k) = (0, n1, 0);
    while i < n1 && j < n {
        if cmp(&v[i], &v[j]) != Ordering::Greater {
            tmp[k] = v[i];
            i += 1;
        } else {
            tmp[k] = v[j];
            j += 1;
        }
        k += 1;
    }
    while i < n1 {
        tmp[k] = v[i];
        i += 1;
        k += 1;
    }
    // What is left of the right half is already in place.
    v[..k].copy_from_slice(&tmp[..k]);
}

/// Puts `v[order[i]]` at place `i`, by swaps.
fn apply_permutation<T>(v: &mut [T], mut order: Vec<usize>) {
    for i in 0..v.len() {
        let mut cur = i;
        while order[cur] != i {
            let next = order[cur];
            v.swap(cur, next);
            order[cur] = cur;
            cur = next;
        }
        order[cur] = cur;
    }
}

/// Redis's `med3`: the index of the median of three, by `cmp`'s verdicts in Redis's order.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    if cmp(&v[a], &v[b]) == Ordering::Less {
        if cmp(&v[b], &v[c]) == Ordering::Less {
            b
        } else if cmp(&v[a], &v[c]) == Ordering::Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Ordering::Greater {
        b
    } else if cmp(&v[a], &v[c]) == Ordering::Less {
        a
    } else {
        c
    }
}

/// Swaps `v[a..a + n]` with `v[b..b + n]` (the two never overlap).
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Redis's `pqsort(a, n, es, cmp, lrange, rrange)`: sorts enough of `v` that places `lrange..=rrange`
/// hold what a full sort would put there (`lrange <= rrange < v.len()`).
pub(crate) fn pqsort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering, lrange: usize, rrange: usize) {
    pqsort_part(v, cmp, 0, v.len(), lrange, rrange);
}

/// `_pqsort` on the `n` elements from `lo`: partitions around a median, then goes on with the lower
/// and the upper part, each only where it holds a wanted place. Redis recurses into the lower part
/// and loops on the upper one; the parts are disjoint and each one's sorting depends on its own
/// elements alone, so a work list gives the same result without a deep stack on adversarial input.
fn pqsort_part<T>(
    v: &mut [T],
    cmp: &impl Fn(&T, &T) -> Ordering,
    lo: usize,
    n: usize,
    lrange: usize,
    rrange: usize,
) {
    // Whether the elements lo..lo + n hold any of the wanted places.
    let wanted = |lo: usize, n: usize| !(rrange < lo || lrange >= lo + n);
    let mut work = vec![(lo, n)];
    while let Some((lo, n)) = work.pop() {
        if n < 7 {
            for pm in lo + 1..lo + n {
                let mut pl = pm;
                while pl > lo && cmp(&v[pl - 1], &v[pl]) == Ordering::Greater {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            continue;
        }
        let mut pm = lo + n / 2;
        if n > 7 {
            let mut pl = lo;
            let mut pn = lo + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(lo, pm);
        let (mut pa, mut pb) = (lo + 1, lo + 1);
        let (mut pc, mut pd) = (lo + n - 1, lo + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[lo]);
                if c == Ordering::Greater {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[lo]);
                if c == Ordering::Less {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = lo + n;
        let r = (pa - lo).min(pb - pa);
        vecswap(v, lo, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && wanted(lo, r) {
            work.push((lo, r));
        }
        let r = pd - pc;
        if r > 1 && wanted(pn - r, r) {
            work.push((pn - r, r));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn merge_sort_is_stable() {
        let mut v: Vec<(f64, usize)> = (0..200).map(|i| (((i * 37) % 11) as f64, i)).collect();
        let mut w = v.clone();
        merge_sort(&mut v, &|a: &(f64, usize), b: &(f64, usize)| cmp_asc(a.0, b.0));
        w.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        assert_eq!(v, w);
    }

    #[test]
    fn pqsort_puts_the_wanted_places_right() {
        let mut seed = 7;
        for n in [1usize, 2, 6, 7, 8, 40, 41, 100, 1000] {
            for k in [1usize, 2, 5, 50, 999] {
                if k > n {
                    continue;
                }
                let v: Vec<f64> = (0..n).map(|_| (lcg(&mut seed) % 50) as f64).collect();
                let mut sorted = v.clone();
                sorted.sort_by(f64::total_cmp);
                let mut p = v.clone();
                pqsort(&mut p, &|a: &f64, b: &f64| cmp_asc(*a, *b), 0, k - 1);
                assert_eq!(p[..k], sorted[..k], "n {n} k {k}");
            }
        }
    }

    #[test]
    fn rank_applies_counts_and_orders() {
        let mut v = vec![3.0, 1.0, 2.0, 4.0, 0.5];
        assert_eq!(rank(&mut v, Sort::None, 0, false, |x| *x), 5);
        assert_eq!(v[0], 3.0);
        assert_eq!(rank(&mut v, Sort::None, 2, false, |x| *x), 2);
        assert_eq!(v[..2], [0.5, 1.0]);
        // NaN is neither greater nor equal: the insertion sort stops at it, as Redis's does.
        let mut v = vec![3.0, 1.0, 2.0, f64::NAN, 0.5];
        assert_eq!(rank(&mut v, Sort::None, 2, false, |x| *x), 2);
        assert_eq!(v[..3], [1.0, 2.0, 3.0]);
        assert_eq!(v[4], 0.5);
        let mut v = vec![3.0, 1.0, 2.0];
        assert_eq!(rank(&mut v, Sort::Desc, 0, false, |x| *x), 3);
        assert_eq!(v, [3.0, 2.0, 1.0]);
        let mut v = vec![3.0, 1.0, 2.0];
        assert_eq!(rank(&mut v, Sort::None, 2, true, |x| *x), 2);
        assert_eq!(v, [3.0, 1.0, 2.0]);
        assert_eq!(rank(&mut v, Sort::Asc, 10, false, |x| *x), 3);
        let mut e: Vec<f64> = vec![];
        assert_eq!(rank(&mut e, Sort::Asc, 1, false, |x| *x), 0);
    }
}
