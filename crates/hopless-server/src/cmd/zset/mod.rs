//! The sorted-set commands: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT here;
//! the range commands (ZRANGE and its legacy spellings, ZRANGESTORE, ZREMRANGEBY*) in `zset/range.rs`;
//! pops, random members, ZSCAN and the multi-key set operations in `zset/multi.rs`. Scores are parsed
//! and printed as Redis does (`hopless_kv::types::zset::score`); in RESP3 they are doubles, and
//! WITHSCORES replies are [member, score] pairs.

mod multi;
mod range;
mod reply;

use bytes::Bytes;
use hopless_kv::types::zset::{parse_score, AddFlags};

use super::command::{Command, Ctx};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;
use multi::*;
use range::*;
use reply::{lex_range, score_range, NOT_FLOAT};
// What the blocking pops (`cmd::blocking`) share with ZPOPMIN and ZMPOP.
pub(super) use multi::zmpop_args;
pub(super) use reply::{pairs_reply, score};

/// This family's rows of the command table, in COMMAND's order, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("zadd", -4, "write denyoom fast", zadd).keys(1, 1, 1),
    Command::new("zincrby", 4, "write denyoom fast", zincrby).keys(1, 1, 1),
    Command::new("zrem", -3, "write fast", zrem).keys(1, 1, 1),
    Command::new("zcard", 2, "readonly fast", zcard).keys(1, 1, 1),
    Command::new("zscore", 3, "readonly fast", zscore).keys(1, 1, 1),
    Command::new("zmscore", -3, "readonly fast", zmscore).keys(1, 1, 1),
    Command::new("zrank", 3, "readonly fast", zrank).keys(1, 1, 1),
    Command::new("zrevrank", 3, "readonly fast", zrevrank).keys(1, 1, 1),
    Command::new("zcount", 4, "readonly fast", zcount).keys(1, 1, 1),
    Command::new("zlexcount", 4, "readonly fast", zlexcount).keys(1, 1, 1),
    Command::new("zrange", -4, "readonly", zrange).keys(1, 1, 1),
    Command::new("zrangestore", -5, "write denyoom", zrangestore).keys(1, 2, 1),
    Command::new("zrevrange", -4, "readonly", zrevrange).keys(1, 1, 1),
    Command::new("zrangebyscore", -4, "readonly", zrangebyscore).keys(1, 1, 1),
    Command::new("zrevrangebyscore", -4, "readonly", zrevrangebyscore).keys(1, 1, 1),
    Command::new("zrangebylex", -4, "readonly", zrangebylex).keys(1, 1, 1),
    Command::new("zrevrangebylex", -4, "readonly", zrevrangebylex).keys(1, 1, 1),
    Command::new("zpopmin", -2, "write fast", zpopmin).keys(1, 1, 1),
    Command::new("zpopmax", -2, "write fast", zpopmax).keys(1, 1, 1),
    Command::new("zmpop", -4, "write movablekeys", zmpop),
    Command::new("zrandmember", -2, "readonly", zrandmember).keys(1, 1, 1),
    Command::new("zremrangebyrank", 4, "write", zremrangebyrank).keys(1, 1, 1),
    Command::new("zremrangebyscore", 4, "write", zremrangebyscore).keys(1, 1, 1),
    Command::new("zremrangebylex", 4, "write", zremrangebylex).keys(1, 1, 1),
    Command::new("zunion", -3, "readonly movablekeys", zunion),
    Command::new("zinter", -3, "readonly movablekeys", zinter),
    Command::new("zdiff", -3, "readonly movablekeys", zdiff),
    Command::new("zunionstore", -4, "write denyoom movablekeys", zunionstore).keys(1, 1, 1),
    Command::new("zinterstore", -4, "write denyoom movablekeys", zinterstore).keys(1, 1, 1),
    Command::new("zdiffstore", -4, "write denyoom movablekeys", zdiffstore).keys(1, 1, 1),
    Command::new("zintercard", -3, "readonly movablekeys", zintercard),
    Command::new("zscan", -3, "readonly", zscan).keys(1, 1, 1),
];

/// ZADD and ZINCRBY (`incr`): Redis's `zaddGenericCommand`, its checks in its order.
fn zadd_generic(c: &mut Ctx<'_>, a: &[Bytes], mut flags: AddFlags) -> CmdResult {
    let mut ch = false;
    let mut i = 2;
    while i < a.len() {
        let o = &a[i];
        if eq(o, "nx") {
            flags.nx = true;
        } else if eq(o, "xx") {
            flags.xx = true;
        } else if eq(o, "ch") {
            ch = true;
        } else if eq(o, "incr") {
            flags.incr = true;
        } else if eq(o, "gt") {
            flags.gt = true;
        } else if eq(o, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = &a[i..];
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Err(SYNTAX);
    }
    if flags.nx && flags.xx {
        return Err(CmdError::Static(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if [flags.gt, flags.lt, flags.nx].iter().filter(|&&f| f).count() > 1 {
        return Err(CmdError::Static(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && rest.len() > 2 {
        return Err(CmdError::Static(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let pairs = rest
        .chunks(2)
        .map(|p| Ok((parse_score(&p[0]).ok_or(NOT_FLOAT)?, &p[1][..])))
        .collect::<Result<Vec<(f64, &[u8])>, CmdError>>()?;
    let r = c.shared.store.zadd(&a[1], flags, &pairs)?;
    if flags.incr {
        match r.score {
            Some(s) => score(c.out, s),
            None => c.out.null(),
        }
    } else {
        c.out.int((if ch { r.added + r.updated } else { r.added }) as i64);
    }
    Ok(())
}

fn zadd(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    zadd_generic(c, a, AddFlags::default())
}

fn zincrby(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd_generic(c, a, flags)
}

fn zrem(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let members: Vec<&[u8]> = a[2..].iter().map(|m| &m[..]).collect();
    let n = c.shared.store.zrem(&a[1], &members)?;
    c.out.int(n as i64);
    Ok(())
}

fn zcard(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.zcard(&a[1])?;
    c.out.int(n as i64);
    Ok(())
}

fn zscore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match c.shared.store.zscore(&a[1], &a[2])? {
        Some(s) => score(c.out, s),
        None => c.out.null(),
    }
    Ok(())
}

fn zmscore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let members: Vec<&[u8]> = a[2..].iter().map(|m| &m[..]).collect();
    let scores = c.shared.store.zmscore(&a[1], &members)?;
    c.out.array(scores.len());
    for s in scores {
        match s {
            Some(s) => score(c.out, s),
            None => c.out.null(),
        }
    }
    Ok(())
}

fn rank_generic(c: &mut Ctx<'_>, a: &[Bytes], rev: bool) -> CmdResult {
    match c.shared.store.zrank(&a[1], &a[2], rev)? {
        Some(r) => c.out.int(r as i64),
        None => c.out.null(),
    }
    Ok(())
}

fn zrank(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    rank_generic(c, a, false)
}

fn zrevrank(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    rank_generic(c, a, true)
}

fn zcount(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = score_range(&a[2], &a[3])?;
    let n = c.shared.store.zcount(&a[1], &by)?;
    c.out.int(n as i64);
    Ok(())
}

fn zlexcount(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let by = lex_range(&a[2], &a[3])?;
    let n = c.shared.store.zcount(&a[1], &by)?;
    c.out.int(n as i64);
    Ok(())
}
