//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE SINTER SINTERCARD
//! SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE SSCAN, with Redis 7.0's replies (a RESP3 set where
//! Redis sends one) and its error texts, checked in its order (a count before the key, the key's type
//! before its options).

use bytes::Bytes;
use hopless_kv::store::Moved;

use super::command::{int_arg, Command, Ctx};
use super::scan_args;
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("sadd", -3, "write denyoom fast", sadd).keys(1, 1, 1),
    Command::new("srem", -3, "write fast", srem).keys(1, 1, 1),
    Command::new("smembers", 2, "readonly", smembers).keys(1, 1, 1),
    Command::new("sismember", 3, "readonly fast", sismember).keys(1, 1, 1),
    Command::new("smismember", -3, "readonly fast", smismember).keys(1, 1, 1),
    Command::new("scard", 2, "readonly fast", scard).keys(1, 1, 1),
    Command::new("spop", -2, "write fast", spop).keys(1, 1, 1),
    Command::new("srandmember", -2, "readonly", srandmember).keys(1, 1, 1),
    Command::new("smove", 4, "write fast", smove).keys(1, 2, 1),
    Command::new("sinter", -2, "readonly", sinter).keys(1, -1, 1),
    Command::new("sintercard", -3, "readonly movablekeys", sintercard),
    Command::new("sinterstore", -3, "write denyoom", sinterstore).keys(1, -1, 1),
    Command::new("sunion", -2, "readonly", sunion).keys(1, -1, 1),
    Command::new("sunionstore", -3, "write denyoom", sunionstore).keys(1, -1, 1),
    Command::new("sdiff", -2, "readonly", sdiff).keys(1, -1, 1),
    Command::new("sdiffstore", -3, "write denyoom", sdiffstore).keys(1, -1, 1),
    Command::new("sscan", -3, "readonly", sscan).keys(1, 1, 1),
];

/// SRANDMEMBER's count is read as Redis's `getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)`.
const SRANDMEMBER_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

fn members(a: &[Bytes]) -> Vec<&[u8]> {
    a.iter().map(|b| &b[..]).collect()
}

/// Members as a RESP3 set (RESP2: an array).
fn reply_set(c: &mut Ctx<'_>, m: &[Vec<u8>]) {
    c.out.set(m.len());
    for x in m {
        c.out.bulk(x);
    }
}

fn sadd(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.sadd(&a[1], &members(&a[2..]))?;
    c.out.int(n as i64);
    Ok(())
}

fn srem(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.srem(&a[1], &members(&a[2..]))?;
    c.out.int(n as i64);
    Ok(())
}

fn smembers(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let m = c.shared.store.smembers(&a[1])?;
    reply_set(c, &m);
    Ok(())
}

fn sismember(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let is = c.shared.store.sismember(&a[1], &a[2])?;
    c.out.int(is as i64);
    Ok(())
}

fn smismember(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let v = c.shared.store.smismember(&a[1], &members(&a[2..]))?;
    c.out.array(v.len());
    for is in v {
        c.out.int(is as i64);
    }
    Ok(())
}

fn scard(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.scard(&a[1])?;
    c.out.int(n as i64);
    Ok(())
}

fn spop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match a.len() {
        2 => {
            match c.shared.store.spop(&a[1])? {
                Some(m) => c.out.bulk(&m),
                None => c.out.null(),
            }
            Ok(())
        }
        3 => {
            let count = int_arg(&a[2])
                .ok()
                .filter(|n| *n >= 0)
                .ok_or(CmdError::Static("ERR value is out of range, must be positive"))?;
            let m = c.shared.store.spop_count(&a[1], count as u64)?;
            reply_set(c, &m);
            Ok(())
        }
        _ => Err(SYNTAX),
    }
}

fn srandmember(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match a.len() {
        2 => {
            match c.shared.store.srandmember(&a[1])? {
                Some(m) => c.out.bulk(&m),
                None => c.out.null(),
            }
            Ok(())
        }
        3 => {
            let count = int_arg(&a[2])?;
            if count == i64::MIN {
                return Err(CmdError::Static(SRANDMEMBER_RANGE));
            }
            let m = c.shared.store.srandmember_count(&a[1], count)?;
            c.out.bulks(m.iter().map(|x| &x[..]));
            Ok(())
        }
        _ => Err(SYNTAX),
    }
}

/// SMOVE: as Redis signals it, the source changed when the member moved, the destination only when it
/// did not hold the member already, and nothing when the source is the destination.
fn smove(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let moved = c.shared.store.smove(&a[1], &a[2], &a[3])?;
    c.changed_keys = match moved {
        Moved::Yes { added: true } => None,
        Moved::Yes { added: false } => Some(&[1]),
        Moved::No | Moved::InPlace => Some(&[]),
    };
    c.out.int(i64::from(moved.replied()));
    Ok(())
}

fn sinter(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let m = c.shared.store.sinter(&members(&a[1..]))?;
    reply_set(c, &m);
    Ok(())
}

fn sunion(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let m = c.shared.store.sunion(&members(&a[1..]))?;
    reply_set(c, &m);
    Ok(())
}

fn sdiff(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let m = c.shared.store.sdiff(&members(&a[1..]))?;
    reply_set(c, &m);
    Ok(())
}

fn sinterstore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.sinterstore(&a[1], &members(&a[2..]))?;
    c.out.int(n as i64);
    Ok(())
}

fn sunionstore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.sunionstore(&a[1], &members(&a[2..]))?;
    c.out.int(n as i64);
    Ok(())
}

fn sdiffstore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.sdiffstore(&a[1], &members(&a[2..]))?;
    c.out.int(n as i64);
    Ok(())
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit], read as Redis reads it: numkeys (at least 1, at most the
/// arguments left), then options (LIMIT may repeat; the last counts).
fn sintercard(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let numkeys = int_arg(&a[1])
        .ok()
        .filter(|n| *n >= 1)
        .ok_or(CmdError::Static("ERR numkeys should be greater than 0"))?;
    if numkeys > (a.len() - 2) as i64 {
        return Err(CmdError::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys_end = 2 + numkeys as usize;
    let mut limit = 0usize;
    let mut i = keys_end;
    while i < a.len() {
        if eq(&a[i], "limit") && i + 1 < a.len() {
            let l = int_arg(&a[i + 1])
                .ok()
                .filter(|n| *n >= 0)
                .ok_or(CmdError::Static("ERR LIMIT can't be negative"))?;
            limit = usize::try_from(l).unwrap_or(usize::MAX);
            i += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let n = c.shared.store.sintercard(&members(&a[2..keys_end]), limit)?;
    c.out.int(n as i64);
    Ok(())
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]: the cursor is read first, then the key (a missing one
/// is an empty scan whatever the options say, another kind WRONGTYPE), then the options.
fn sscan(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    scan_args::parse(&a[..3], 2)?;
    if c.shared.store.scard(&a[1])? == 0 {
        return scan_args::reply(c.out, 0, std::iter::empty());
    }
    let s = scan_args::parse(a, 2)?;
    let (next, m) = c.shared.store.sscan(&a[1], s.cursor, s.count, s.pattern)?;
    scan_args::reply(c.out, next, m.iter().map(|x| &x[..]))
}
