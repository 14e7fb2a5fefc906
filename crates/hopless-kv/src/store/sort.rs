//! SORT and SORT_RO over a list, a set or a sorted set, as Redis 7.0's `sortCommandGeneric` does it:
//! the elements (or a LIMIT's window of them, read straight from a list or sorted set when nothing is
//! sorted), weights read from the elements or from the keys a BY pattern names, a stable sort, then each
//! element or the values its GET patterns name, replied or stored as a list.
//!
//! A pattern names a key by putting the element in place of its first `*`; a `->field` after the `*`
//! reads that field of a hash instead of a string. `#` names the element itself. A BY pattern without a
//! `*` sorts nothing: a list and a sorted set keep their order (DESC walks it backwards), a set gives
//! its members as they come (sorted alphabetically when the caller asks for a replica-stable answer:
//! STORE and scripts). Missing keys, keys of another type and missing fields weigh 0 (numeric) or sort
//! first (ALPHA), and read as nil (GET), or as an empty string in a stored list.

use std::cmp::Ordering;

use allocator_api2::boxed::Box;

use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::list::{End, List};
use crate::types::zset::parse_sort_weight;
use crate::types::{Collection, Kind};

/// SORT's error for a weight that is not a number.
const NOT_A_DOUBLE: Error = Error::Msg("ERR One or more scores can't be converted into double");

/// What a SORT asks for, its options as given.
#[derive(Debug, Clone, Default)]
pub struct SortSpec<'a> {
    /// BY's pattern: weights from other keys (or, without a `*`, no sorting at all).
    pub by: Option<&'a [u8]>,
    /// LIMIT's offset and count, as given (clamped as Redis clamps them).
    pub limit: Option<(i64, i64)>,
    /// GET's patterns, in order: each element's output is these values instead of the element.
    pub get: Vec<&'a [u8]>,
    pub desc: bool,
    pub alpha: bool,
    /// Sort a set alphabetically even when BY says not to sort, so every replica gets the same answer
    /// (Redis does this for STORE and for a script's SORT).
    pub stable_set: bool,
}

/// The elements read for sorting, with the window of them the output takes.
struct Loaded {
    elems: Vec<Vec<u8>>,
    /// The output's first and last positions in `elems` (`end < start`: nothing).
    start: i64,
    end: i64,
}

/// One element and what it sorts by.
struct Weighed {
    elem: Vec<u8>,
    score: f64,
    /// ALPHA BY: the value the pattern named (None sorts first).
    cmp: Option<Vec<u8>>,
}

impl<A: KvAlloc> Store<A> {
    /// SORT / SORT_RO without STORE: each element of the window in order, or for each the values of the
    /// GET patterns (None: a missing key or field).
    pub fn sort(&self, key: &[u8], spec: &SortSpec<'_>) -> Result<Vec<Option<Vec<u8>>>> {
        self.sorted_output(key, spec)
    }

    /// SORT ... STORE: the output replaces `dest` (whatever it held, and its TTL) as a list, nils as
    /// empty strings; an empty output deletes `dest`. How many elements were stored.
    pub fn sort_store(&self, key: &[u8], spec: &SortSpec<'_>, dest: &[u8]) -> Result<usize> {
        let out = self.sorted_output(key, spec)?;
        let n = out.len();
        self.with_keys(&[dest], |k| {
            if out.is_empty() {
                k.delete(0);
                return Ok(());
            }
            let alloc = k.alloc().clone();
            let limits = *k.limits();
            let mut list = List::new_in(alloc.clone());
            for e in &out {
                list.push(End::Right, e.as_deref().unwrap_or_default(), &limits);
            }
            k.put(0, Collection::List(Box::new_in(list, alloc)))
        })?;
        Ok(n)
    }

    /// The output of a SORT: the sorted window, each element or its GET values.
    fn sorted_output(&self, key: &[u8], spec: &SortSpec<'_>) -> Result<Vec<Option<Vec<u8>>>> {
        let mut by = spec.by;
        let mut alpha = spec.alpha;
        let mut dontsort = by.is_some_and(|p| !p.contains(&b'*'));
        let kind = self.key_type(key);
        if dontsort && kind == Some(Kind::Set) && spec.stable_set {
            (dontsort, alpha, by) = (false, true, None);
        }
        let Loaded { elems, start, end } = self.load(key, kind, spec, dontsort)?;
        let mut items: Vec<Weighed> = elems
            .into_iter()
            .map(|elem| Weighed {
                elem,
                score: 0.0,
                cmp: None,
            })
            .collect();
        if !dontsort {
            let mut not_a_number = false;
            for w in &mut items {
                let named;
                let val: &[u8] = match by {
                    Some(p) => match self.by_pattern(p, &w.elem) {
                        Some(v) => {
                            named = v;
                            &named
                        }
                        None => continue,
                    },
                    None => &w.elem,
                };
                if alpha {
                    if by.is_some() {
                        w.cmp = Some(val.to_vec());
                    }
                } else {
                    match parse_sort_weight(val) {
                        Some(s) => w.score = s,
                        None => not_a_number = true,
                    }
                }
            }
            if not_a_number {
                return Err(NOT_A_DOUBLE);
            }
            let by_pattern = by.is_some();
            items.sort_by(|a, b| {
                let o = compare(a, b, alpha, by_pattern);
                if spec.desc {
                    o.reverse()
                } else {
                    o
                }
            });
        }
        if end < start {
            return Ok(Vec::new());
        }
        let window = &items[start as usize..=end as usize];
        let mut out = Vec::with_capacity(window.len() * spec.get.len().max(1));
        for w in window {
            if spec.get.is_empty() {
                out.push(Some(w.elem.clone()));
            }
            for p in &spec.get {
                out.push(self.by_pattern(p, &w.elem));
            }
        }
        Ok(out)
    }

    /// The elements to sort: all of them, or only the window when nothing is sorted and the key keeps
    /// an order (a list, a sorted set), with the window's bounds. A missing key is an empty list.
    fn load(&self, key: &[u8], kind: Option<Kind>, spec: &SortSpec<'_>, dontsort: bool) -> Result<Loaded> {
        let Some(kind) = kind else {
            return Ok(Loaded {
                elems: Vec::new(),
                start: -1,
                end: -2,
            });
        };
        if !matches!(kind, Kind::List | Kind::Set | Kind::ZSet) {
            return Err(Error::WrongType);
        }
        let desc = spec.desc;
        let r = self.read_coll(key, kind, |c| {
            let len = c.len() as i64;
            let (start, end) = window(spec.limit, len);
            let direct = dontsort && !matches!(c, Collection::Set(_));
            if direct {
                let n = if end >= start {
                    (end - start + 1) as usize
                } else {
                    0
                };
                let elems = match c {
                    Collection::List(l) if desc => l
                        .rev_from((len - start).max(0) as usize)
                        .take(n)
                        .map(<[u8]>::to_vec)
                        .collect(),
                    Collection::List(l) => l
                        .iter_from(start.max(0) as usize)
                        .take(n)
                        .map(<[u8]>::to_vec)
                        .collect(),
                    Collection::ZSet(z) if desc => {
                        let from = (len - start - 1).max(0) as usize;
                        z.walk(from, true).take(n).map(|(m, _)| m.to_vec()).collect()
                    }
                    Collection::ZSet(z) => z
                        .walk(start.max(0) as usize, false)
                        .take(n)
                        .map(|(m, _)| m.to_vec())
                        .collect(),
                    _ => Vec::new(),
                };
                return Loaded {
                    start: 0,
                    end: end - start,
                    elems,
                };
            }
            let elems = match c {
                Collection::List(l) => l.iter_from(0).map(<[u8]>::to_vec).collect(),
                Collection::Set(s) => s.members(),
                Collection::ZSet(z) => z.iter().map(|(m, _)| m.to_vec()).collect(),
                _ => Vec::new(),
            };
            Loaded { elems, start, end }
        })?;
        // The key went between the two looks: an empty list, as a missing key.
        Ok(r.unwrap_or(Loaded {
            elems: Vec::new(),
            start: -1,
            end: -2,
        }))
    }

    /// The value a pattern names for `elem`: the element itself for `#`; else the string at the key the
    /// pattern makes by putting `elem` in place of its first `*`, or with `->field` after the `*` that
    /// field of the hash there. None where there is no `*`, no such key or field, or a key of another
    /// type.
    fn by_pattern(&self, pattern: &[u8], elem: &[u8]) -> Option<Vec<u8>> {
        if pattern == b"#" {
            return Some(elem.to_vec());
        }
        let star = pattern.iter().position(|&c| c == b'*')?;
        let after = &pattern[star + 1..];
        let (postfix, field) = match after.windows(2).position(|w| w == b"->") {
            Some(f) if f + 2 < after.len() => (&after[..f], Some(&after[f + 2..])),
            _ => (after, None),
        };
        let mut key = Vec::with_capacity(star + elem.len() + postfix.len());
        key.extend_from_slice(&pattern[..star]);
        key.extend_from_slice(elem);
        key.extend_from_slice(postfix);
        match field {
            Some(f) => self.hget(&key, f).ok().flatten(),
            None => self.get(&key).ok().flatten().map(|v| v.to_vec()),
        }
    }
}

/// LIMIT's window over `len` elements, clamped as Redis clamps it: the first and last positions
/// (`end < start`: none).
fn window(limit: Option<(i64, i64)>, len: i64) -> (i64, i64) {
    let (offset, count) = limit.unwrap_or((0, -1));
    let mut start = offset.max(0).min(len);
    let count = count.max(-1).min(len);
    let mut end = if count < 0 { len - 1 } else { start + count - 1 };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

/// Redis's `sortCompare` before DESC: by weight then by element (numeric); by the BY values, a missing
/// one first (ALPHA BY); by element (ALPHA, byte order as in the C locale).
fn compare(a: &Weighed, b: &Weighed, alpha: bool, by_pattern: bool) -> Ordering {
    if !alpha {
        return a
            .score
            .partial_cmp(&b.score)
            .filter(|o| o.is_ne())
            .unwrap_or_else(|| a.elem.cmp(&b.elem));
    }
    if by_pattern {
        return match (&a.cmp, &b.cmp) {
            (Some(x), Some(y)) => x.cmp(y),
            (x, y) => x.is_some().cmp(&y.is_some()),
        };
    }
    a.elem.cmp(&b.elem)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use allocator_api2::alloc::Global;

    use super::*;
    use crate::clock::ManualClock;
    use crate::store::Config;

    fn store() -> Store<Global> {
        let cfg = Config {
            shards: 4,
            active_expiry: false,
            clock: Arc::new(ManualClock::new(1_700_000_000_000)),
            ..Config::default()
        };
        Store::with_allocator(cfg, Global)
    }

    fn strs(v: Vec<Option<Vec<u8>>>) -> Vec<String> {
        v.into_iter()
            .map(|e| e.map_or("(nil)".into(), |b| String::from_utf8(b).unwrap()))
            .collect()
    }

    fn push(s: &Store<Global>, key: &[u8], elems: &[&[u8]]) {
        s.list_push(key, End::Right, elems, false).unwrap();
    }

    #[test]
    fn numbers_sort_by_value_then_by_element() {
        let s = store();
        push(&s, b"l", &[b"10", b"2", b"-1.5", b"2", b"0x10", b" 3"]);
        let out = s.sort(b"l", &SortSpec::default()).unwrap();
        assert_eq!(strs(out), ["-1.5", "2", "2", " 3", "10", "0x10"]);
        let desc = SortSpec {
            desc: true,
            limit: Some((1, 2)),
            ..SortSpec::default()
        };
        assert_eq!(strs(s.sort(b"l", &desc).unwrap()), ["10", " 3"]);
        push(&s, b"bad", &[b"1", b"x"]);
        assert_eq!(s.sort(b"bad", &SortSpec::default()), Err(NOT_A_DOUBLE));
        let alpha = SortSpec {
            alpha: true,
            ..SortSpec::default()
        };
        assert_eq!(strs(s.sort(b"bad", &alpha).unwrap()), ["1", "x"]);
    }

    #[test]
    fn by_and_get_patterns_read_strings_and_hash_fields() {
        let s = store();
        push(&s, b"ids", &[b"1", b"2", b"3"]);
        for (id, w) in [("1", "30"), ("2", "10"), ("3", "20")] {
            s.set_simple(format!("w_{id}").as_bytes(), w.as_bytes()).unwrap();
            let name = format!("n{id}");
            s.hset(format!("h_{id}").as_bytes(), &[(b"name", name.as_bytes())])
                .unwrap();
        }
        let spec = SortSpec {
            by: Some(b"w_*"),
            get: vec![b"#", b"h_*->name", b"nostar", b"w_*"],
            ..SortSpec::default()
        };
        assert_eq!(
            strs(s.sort(b"ids", &spec).unwrap()),
            ["2", "n2", "(nil)", "10", "3", "n3", "(nil)", "20", "1", "n1", "(nil)", "30"]
        );
        let by_field = SortSpec {
            by: Some(b"h_*->name"),
            alpha: true,
            desc: true,
            ..SortSpec::default()
        };
        assert_eq!(strs(s.sort(b"ids", &by_field).unwrap()), ["3", "2", "1"]);
    }

    #[test]
    fn a_constant_by_keeps_the_order_and_store_writes_a_list() {
        let s = store();
        push(&s, b"l", &[b"c", b"a", b"b"]);
        let nosort = SortSpec {
            by: Some(b"nosort"),
            desc: true,
            limit: Some((1, 5)),
            ..SortSpec::default()
        };
        assert_eq!(strs(s.sort(b"l", &nosort).unwrap()), ["a", "c"]);
        s.sadd(b"s", &[b"b", b"c", b"a"]).unwrap();
        let stable = SortSpec {
            by: Some(b"nosort"),
            stable_set: true,
            ..SortSpec::default()
        };
        assert_eq!(s.sort_store(b"s", &stable, b"dst").unwrap(), 3);
        assert_eq!(
            s.lrange(b"dst", 0, -1).unwrap(),
            [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(s.sort_store(b"missing", &stable, b"dst").unwrap(), 0);
        assert_eq!(
            s.key_type(b"dst"),
            None,
            "an empty output deletes the destination"
        );
        s.hset(b"h", &[(b"f", b"v")]).unwrap();
        assert_eq!(s.sort(b"h", &SortSpec::default()), Err(Error::WrongType));
        for (m, sc) in [("x", 3.0), ("y", 1.0), ("z", 2.0)] {
            s.zadd(b"z", Default::default(), &[(sc, m.as_bytes())]).unwrap();
        }
        let window = |desc| SortSpec {
            by: Some(b"nosort"),
            desc,
            limit: Some((1, 1)),
            ..SortSpec::default()
        };
        assert_eq!(strs(s.sort(b"z", &window(false)).unwrap()), ["z"]);
        assert_eq!(strs(s.sort(b"z", &window(true)).unwrap()), ["z"]);
        assert_eq!(s.sort(b"z", &SortSpec::default()), Err(NOT_A_DOUBLE));
    }

    #[test]
    fn the_window_is_clamped_as_redis_clamps_it() {
        assert_eq!(window(None, 5), (0, 4));
        assert_eq!(window(Some((-3, 2)), 5), (0, 1));
        assert_eq!(window(Some((4, 100)), 5), (4, 4));
        assert_eq!(window(Some((5, 1)), 5), (4, 3));
        assert_eq!(window(Some((0, 0)), 5), (0, -1));
        assert_eq!(window(Some((i64::MAX, i64::MIN)), 5), (4, 3));
        assert_eq!(window(None, 0), (-1, -2));
    }
}
