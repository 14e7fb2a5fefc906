//! The range commands: ZRANGE (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES), ZRANGESTORE, the legacy
//! ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX and ZREVRANGEBYLEX, all read by one parser
//! as Redis's `zrangeGenericCommand` reads them; and ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX.

use bytes::Bytes;
use hopless_kv::types::zset::{RangeBy, RangeSpec};

use super::super::command::{int_arg, Ctx};
use super::reply::{lex_range, score_range, scored};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// How a command fixes the range's kind (the legacy commands do; ZRANGE leaves it to BYSCORE/BYLEX).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// Parses `a[src..]` (`src min max options...`) and runs the range; `dst` for ZRANGESTORE.
fn range_generic(
    c: &mut Ctx<'_>,
    a: &[Bytes],
    src: usize,
    dst: Option<&[u8]>,
    mut kind: Kind,
    dir: Option<bool>,
) -> CmdResult {
    let store = dst.is_some();
    let (mut with_scores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut rev = dir;
    let mut j = src + 3;
    while j < a.len() {
        let left = a.len() - j - 1;
        let o = &a[j];
        if !store && eq(o, "withscores") {
            with_scores = true;
        } else if eq(o, "limit") && left >= 2 {
            offset = int_arg(&a[j + 1])?;
            limit = int_arg(&a[j + 2])?;
            j += 2;
        } else if rev.is_none() && eq(o, "rev") {
            rev = Some(true);
        } else if kind == Kind::Auto && eq(o, "bylex") {
            kind = Kind::Lex;
        } else if kind == Kind::Auto && eq(o, "byscore") {
            kind = Kind::Score;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if kind == Kind::Auto {
        kind = Kind::Rank;
    }
    if limit != -1 && kind == Kind::Rank {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && kind == Kind::Lex {
        return Err(CmdError::Static(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut min, mut max) = (&a[src + 1][..], &a[src + 2][..]);
    if rev && kind != Kind::Rank {
        core::mem::swap(&mut min, &mut max);
    }
    let by = match kind {
        Kind::Score => score_range(min, max)?,
        Kind::Lex => lex_range(min, max)?,
        _ => RangeBy::Rank(int_arg(min)?, int_arg(max)?),
    };
    let spec = RangeSpec {
        by,
        rev,
        offset,
        count: limit,
    };
    match dst {
        Some(dst) => {
            let n = c.shared.store.zrangestore(dst, &a[src], &spec)?;
            c.out.int(n as i64);
        }
        None => {
            let pairs = c.shared.store.zrange(&a[src], &spec)?;
            scored(c.out, &pairs, with_scores);
        }
    }
    Ok(())
}

pub(super) fn zrange(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(c, a, 1, None, Kind::Auto, None)
}

pub(super) fn zrangestore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(c, a, 2, Some(&a[1]), Kind::Auto, None)
}

pub(super) fn zrevrange(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(c, a, 1, None, Kind::Rank, Some(true))
}

pub(super) fn zrangebyscore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(c, a, 1, None, Kind::Score, Some(false))
}

pub(super) fn zrevrangebyscore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(c, a, 1, None, Kind::Score, Some(true))
}

pub(super) fn zrangebylex(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(c, a, 1, None, Kind::Lex, Some(false))
}

pub(super) fn zrevrangebylex(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range_generic(c, a, 1, None, Kind::Lex, Some(true))
}

fn remrange(c: &mut Ctx<'_>, a: &[Bytes], by: RangeBy) -> CmdResult {
    let n = c.shared.store.zremrange(&a[1], &by)?;
    c.out.int(n as i64);
    Ok(())
}

pub(super) fn zremrangebyrank(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = RangeBy::Rank(int_arg(&a[2])?, int_arg(&a[3])?);
    remrange(c, a, by)
}

pub(super) fn zremrangebyscore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = score_range(&a[2], &a[3])?;
    remrange(c, a, by)
}

pub(super) fn zremrangebylex(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = lex_range(&a[2], &a[3])?;
    remrange(c, a, by)
}
