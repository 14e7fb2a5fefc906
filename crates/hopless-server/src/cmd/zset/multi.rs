//! The sorted-set commands that pop, sample, scan or span several keys: ZPOPMIN ZPOPMAX ZMPOP
//! ZRANDMEMBER ZSCAN, and ZUNION ZINTER ZDIFF (and their STORE forms) ZINTERCARD, parsed as Redis's
//! `zunionInterDiffGenericCommand` parses them (the source keys' types are checked before the options).

use bytes::Bytes;
use hopless_kv::types::zset::{format_score, parse_score, Aggregate, SetOp};
use hopless_kv::{Error, Kind};

use super::super::command::{int_arg, Ctx};
use super::super::scan_args;
use super::reply::{pairs_reply, scored};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// An integer of at least `min`, as Redis's `getRangeLongFromObjectOrReply` with a message: `msg` for
/// anything else.
fn long_at_least(b: &[u8], min: i64, msg: &'static str) -> Result<i64, CmdError> {
    match hopless_kv::store::parse_i64(b) {
        Some(v) if v >= min => Ok(v),
        _ => Err(CmdError::Static(msg)),
    }
}

/// WRONGTYPE if `key` holds something other than a sorted set.
fn check_zset(c: &Ctx<'_>, key: &[u8]) -> CmdResult {
    match c.shared.store.key_type(key) {
        Some(k) if k != Kind::ZSet => Err(Error::WrongType.into()),
        _ => Ok(()),
    }
}

fn pop_generic(c: &mut Ctx<'_>, a: &[Bytes], max: bool) -> CmdResult {
    if a.len() > 3 {
        return Err(SYNTAX);
    }
    let count = match a.get(2) {
        Some(b) => Some(long_at_least(b, 0, "ERR value is out of range, must be positive")? as usize),
        None => None,
    };
    if count == Some(0) {
        check_zset(c, &a[1])?;
        c.out.array(0);
        return Ok(());
    }
    let pairs = c.shared.store.zpop(&a[1], count.unwrap_or(1), max)?;
    let nested = c.out.resp3() && count.is_some();
    pairs_reply(c.out, &pairs, nested);
    Ok(())
}

pub(super) fn zpopmin(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop_generic(c, a, false)
}

pub(super) fn zpopmax(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop_generic(c, a, true)
}

/// ZMPOP's arguments after its name (`a[1]` is numkeys; BZMPOP passes its own from the timeout on):
/// the index of MIN|MAX (the keys are `a[2..at]`), whether MAX, the count.
pub(crate) fn zmpop_args(a: &[Bytes]) -> Result<(usize, bool, usize), CmdError> {
    let numkeys = long_at_least(&a[1], 1, "ERR numkeys should be greater than 0")?;
    let where_at = (numkeys as u64).saturating_add(2);
    if where_at >= a.len() as u64 {
        return Err(SYNTAX);
    }
    let where_at = where_at as usize;
    let max = if eq(&a[where_at], "min") {
        false
    } else if eq(&a[where_at], "max") {
        true
    } else {
        return Err(SYNTAX);
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && eq(&a[j], "count") && j + 1 < a.len() {
            count = Some(long_at_least(&a[j + 1], 1, "ERR count should be greater than 0")?);
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    Ok((where_at, max, count.unwrap_or(1) as usize))
}

/// ZMPOP numkeys key... MIN|MAX [COUNT count].
pub(super) fn zmpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (where_at, max, count) = zmpop_args(a)?;
    let keys: Vec<&[u8]> = a[2..where_at].iter().map(|k| &k[..]).collect();
    match c.shared.store.zmpop(&keys, count, max)? {
        Some((i, pairs)) => {
            c.out.array(2);
            c.out.bulk(keys[i]);
            pairs_reply(c.out, &pairs, true);
        }
        None => c.out.null_array(),
    }
    Ok(())
}

/// The most picks a negative ZRANDMEMBER count may ask for (a reply of about a gigabyte).
const MAX_PICKS: i64 = 1 << 26;

/// ZRANDMEMBER key [count [WITHSCORES]].
pub(super) fn zrandmember(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() < 3 {
        match c.shared.store.zrandmember(&a[1], 1)? {
            Some(p) if !p.is_empty() => c.out.bulk(&p[0].0),
            _ => c.out.null(),
        }
        return Ok(());
    }
    let count = int_arg(&a[2])?;
    if count == i64::MIN {
        return Err(CmdError::Static(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    if a.len() > 4 || (a.len() == 4 && !eq(&a[3], "withscores")) {
        return Err(SYNTAX);
    }
    let with_scores = a.len() == 4;
    if with_scores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(CmdError::Static("ERR value is out of range"));
    }
    // A negative count asks for that many picks, repeats allowed: Redis starts streaming them and
    // runs out of memory past a few hundred million; we refuse such a count on a sorted set instead.
    if count < -MAX_PICKS {
        check_zset(c, &a[1])?;
        if c.shared.store.key_type(&a[1]).is_some() {
            return Err(CmdError::Static("ERR value is out of range"));
        }
    }
    let pairs = if count == 0 {
        check_zset(c, &a[1])?;
        Vec::new()
    } else {
        // Clamped again: the key may have appeared since the check above.
        c.shared
            .store
            .zrandmember(&a[1], count.max(-MAX_PICKS))?
            .unwrap_or_default()
    };
    scored(c.out, &pairs, with_scores);
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: the cursor first, then the key, then the options.
pub(super) fn zscan(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let cursor = scan_args::parse(&a[..3], 2)?.cursor;
    match c.shared.store.key_type(&a[1]) {
        None => {
            c.out.array(2);
            c.out.bulk(b"0");
            c.out.array(0);
            return Ok(());
        }
        Some(k) if k != Kind::ZSet => return Err(Error::WrongType.into()),
        _ => {}
    }
    let s = scan_args::parse(a, 2)?;
    let (next, pairs) = c.shared.store.zscan(&a[1], cursor, s.count, s.pattern)?;
    let texts: Vec<Vec<u8>> = pairs
        .iter()
        .flat_map(|(m, v)| [m.clone(), format_score(*v).into_bytes()])
        .collect();
    scan_args::reply(c.out, next, texts.iter().map(|t| &t[..]))
}

/// The parsed arguments of ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD.
struct SetOpArgs<'a> {
    keys: Vec<&'a [u8]>,
    weights: Vec<f64>,
    agg: Aggregate,
    with_scores: bool,
    limit: usize,
}

/// Parses from `a[numkeys_at]`: numkeys, the keys, then (after checking the keys' types, as Redis
/// does) the options this command takes.
fn setop_args<'a>(
    c: &Ctx<'_>,
    a: &'a [Bytes],
    numkeys_at: usize,
    op: SetOp,
    store: bool,
    card: bool,
) -> Result<SetOpArgs<'a>, CmdError> {
    let n = int_arg(&a[numkeys_at])?;
    if n < 1 {
        return Err(CmdError::Msg(format!(
            "ERR at least 1 input key is needed for '{}' command",
            c.name
        )));
    }
    if n as u64 > (a.len() - numkeys_at - 1) as u64 {
        return Err(SYNTAX);
    }
    let n = n as usize;
    let keys: Vec<&[u8]> = a[numkeys_at + 1..numkeys_at + 1 + n]
        .iter()
        .map(|k| &k[..])
        .collect();
    for k in &keys {
        match c.shared.store.key_type(k) {
            Some(Kind::ZSet | Kind::Set) | None => {}
            Some(_) => return Err(Error::WrongType.into()),
        }
    }
    let mut args = SetOpArgs {
        keys,
        weights: Vec::new(),
        agg: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    let mut j = numkeys_at + 1 + n;
    while j < a.len() {
        let remaining = a.len() - j;
        let o = &a[j];
        if op != SetOp::Diff && !card && remaining > n && eq(o, "weights") {
            args.weights = a[j + 1..j + 1 + n]
                .iter()
                .map(|w| parse_score(w).ok_or(CmdError::Static("ERR weight value is not a float")))
                .collect::<Result<_, _>>()?;
            j += 1 + n;
        } else if op != SetOp::Diff && !card && remaining >= 2 && eq(o, "aggregate") {
            let v = &a[j + 1];
            args.agg = if eq(v, "sum") {
                Aggregate::Sum
            } else if eq(v, "min") {
                Aggregate::Min
            } else if eq(v, "max") {
                Aggregate::Max
            } else {
                return Err(SYNTAX);
            };
            j += 2;
        } else if !store && !card && eq(o, "withscores") {
            args.with_scores = true;
            j += 1;
        } else if card && remaining >= 2 && eq(o, "limit") {
            args.limit = long_at_least(&a[j + 1], 0, "ERR LIMIT can't be negative")? as usize;
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    Ok(args)
}

fn setop(c: &mut Ctx<'_>, a: &[Bytes], op: SetOp) -> CmdResult {
    let p = setop_args(c, a, 1, op, false, false)?;
    let pairs = c.shared.store.zsetop(op, &p.keys, &p.weights, p.agg)?;
    scored(c.out, &pairs, p.with_scores);
    Ok(())
}

fn setop_store(c: &mut Ctx<'_>, a: &[Bytes], op: SetOp) -> CmdResult {
    let p = setop_args(c, a, 2, op, true, false)?;
    let n = c
        .shared
        .store
        .zsetop_store(op, &a[1], &p.keys, &p.weights, p.agg)?;
    c.out.int(n as i64);
    Ok(())
}

pub(super) fn zunion(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setop(c, a, SetOp::Union)
}

pub(super) fn zinter(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setop(c, a, SetOp::Inter)
}

pub(super) fn zdiff(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setop(c, a, SetOp::Diff)
}

pub(super) fn zunionstore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setop_store(c, a, SetOp::Union)
}

pub(super) fn zinterstore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setop_store(c, a, SetOp::Inter)
}

pub(super) fn zdiffstore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    setop_store(c, a, SetOp::Diff)
}

pub(super) fn zintercard(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let p = setop_args(c, a, 1, SetOp::Inter, false, true)?;
    let n = c.shared.store.zintercard(&p.keys, p.limit)?;
    c.out.int(n as i64);
    Ok(())
}
