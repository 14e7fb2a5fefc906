//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS
//! LMOVE RPOPLPUSH LMPOP, with Redis 7.0's replies, error texts and the order in which it checks
//! arguments and keys (the store's methods in `hopless_kv::store::list` do the work).

use bytes::Bytes;
use hopless_kv::store::parse_i64;
use hopless_kv::types::list::End;
use hopless_kv::{Error, Kind};

use super::command::{int_arg, Command, Ctx};
use crate::errors::{wrong_args, CmdError, CmdResult, NOT_INTEGER, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("lpush", -3, "write denyoom fast", lpush).keys(1, 1, 1),
    Command::new("rpush", -3, "write denyoom fast", rpush).keys(1, 1, 1),
    Command::new("lpushx", -3, "write denyoom fast", lpushx).keys(1, 1, 1),
    Command::new("rpushx", -3, "write denyoom fast", rpushx).keys(1, 1, 1),
    Command::new("lpop", -2, "write fast", lpop).keys(1, 1, 1),
    Command::new("rpop", -2, "write fast", rpop).keys(1, 1, 1),
    Command::new("llen", 2, "readonly fast", llen).keys(1, 1, 1),
    Command::new("lrange", 4, "readonly", lrange).keys(1, 1, 1),
    Command::new("lindex", 3, "readonly", lindex).keys(1, 1, 1),
    Command::new("lset", 4, "write denyoom", lset).keys(1, 1, 1),
    Command::new("linsert", 5, "write denyoom", linsert).keys(1, 1, 1),
    Command::new("lrem", 4, "write", lrem).keys(1, 1, 1),
    Command::new("ltrim", 4, "write", ltrim).keys(1, 1, 1),
    Command::new("lpos", -3, "readonly", lpos).keys(1, 1, 1),
    Command::new("lmove", 5, "write denyoom", lmove).keys(1, 2, 1),
    Command::new("rpoplpush", 3, "write denyoom", rpoplpush).keys(1, 2, 1),
    Command::new("lmpop", -4, "write movablekeys", lmpop).keys(0, 0, 0),
];

const RANK_ZERO: CmdError = CmdError::Static(
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use \
     negative to start from the end of the list",
);

/// LEFT or RIGHT (any case), else a syntax error (Redis's `getListPositionFromObjectOrReply`).
pub(super) fn end_arg(b: &[u8]) -> Result<End, CmdError> {
    if eq(b, "left") {
        Ok(End::Left)
    } else if eq(b, "right") {
        Ok(End::Right)
    } else {
        Err(SYNTAX)
    }
}

/// A count that must be an integer of at least `min`; `err` for anything else (Redis replies the same
/// text for "not a number" and "out of range" here).
fn count_arg(b: &[u8], min: i64, err: &'static str) -> Result<usize, CmdError> {
    match parse_i64(b) {
        Some(n) if n >= min => Ok(n as usize),
        _ => Err(CmdError::Static(err)),
    }
}

/// For commands where Redis looks the key up before it reads a bad integer argument (LINDEX, LSET):
/// WRONGTYPE if the key holds another kind, `missing` if there is no key, else the integer error.
fn key_before_int(c: &Ctx<'_>, key: &[u8], missing: Option<CmdError>) -> CmdResult {
    match c.shared.store.key_type(key) {
        None => missing.map_or(Ok(()), Err),
        Some(Kind::List) => Err(NOT_INTEGER),
        Some(_) => Err(Error::WrongType.into()),
    }
}

fn push(c: &mut Ctx<'_>, a: &[Bytes], end: End, existing_only: bool) -> CmdResult {
    let n = c.shared.store.list_push(&a[1], end, &a[2..], existing_only)?;
    c.out.int(n as i64);
    Ok(())
}

fn lpush(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push(c, a, End::Left, false)
}

fn rpush(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push(c, a, End::Right, false)
}

fn lpushx(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push(c, a, End::Left, true)
}

fn rpushx(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    push(c, a, End::Right, true)
}

/// Popped elements as an array.
fn reply_elems(c: &mut Ctx<'_>, v: &[Vec<u8>]) {
    c.out.bulks(v.iter().map(|e| &e[..]));
}

/// LPOP / RPOP: without a count one element (or null), with one an array (a null array without a key).
fn pop(c: &mut Ctx<'_>, a: &[Bytes], end: End) -> CmdResult {
    match a.len() {
        2 => {
            let out = &mut *c.out;
            if c.shared
                .store
                .list_pop_with(&a[1], end, |e| out.bulk(e))?
                .is_none()
            {
                c.out.null();
            }
        }
        3 => {
            let n = count_arg(&a[2], 0, "ERR value is out of range, must be positive")?;
            match c.shared.store.list_pop_many(&a[1], end, n)? {
                Some(v) => reply_elems(c, &v),
                None => c.out.null_array(),
            }
        }
        _ => return Err(wrong_args(c.name)),
    }
    Ok(())
}

fn lpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop(c, a, End::Left)
}

fn rpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop(c, a, End::Right)
}

fn llen(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.llen(&a[1])?;
    c.out.int(n as i64);
    Ok(())
}

fn lrange(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (start, stop) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let out = &mut *c.out;
    let found = c
        .shared
        .store
        .read_list(&a[1], |l| match l.range_of(start, stop) {
            Some((s, n)) => out.bulks(l.iter_from(s).take(n)),
            None => out.array(0),
        })?;
    if found.is_none() {
        c.out.array(0);
    }
    Ok(())
}

fn lindex(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Ok(i) = int_arg(&a[2]) else {
        key_before_int(c, &a[1], None)?;
        c.out.null();
        return Ok(());
    };
    match c.shared.store.lindex(&a[1], i)? {
        Some(e) => c.out.bulk(&e),
        None => c.out.null(),
    }
    Ok(())
}

fn lset(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Ok(i) = int_arg(&a[2]) else {
        return key_before_int(c, &a[1], Some(Error::NoSuchKey.into()));
    };
    c.shared.store.lset(&a[1], i, &a[3])?;
    c.out.ok();
    Ok(())
}

fn linsert(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let after = if eq(&a[2], "after") {
        true
    } else if eq(&a[2], "before") {
        false
    } else {
        return Err(SYNTAX);
    };
    let n = c.shared.store.linsert(&a[1], after, &a[3], &a[4])?;
    c.out.int(n);
    Ok(())
}

fn lrem(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let count = int_arg(&a[2])?;
    let n = c.shared.store.lrem(&a[1], count, &a[3])?;
    c.out.int(n as i64);
    Ok(())
}

fn ltrim(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (start, stop) = (int_arg(&a[2])?, int_arg(&a[3])?);
    c.shared.store.ltrim(&a[1], start, stop)?;
    c.out.ok();
    Ok(())
}

fn lpos(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        if eq(&a[j], "rank") && more {
            rank = int_arg(&a[j + 1])?;
            if rank == 0 {
                return Err(RANK_ZERO);
            }
        } else if eq(&a[j], "count") && more {
            count = Some(count_arg(&a[j + 1], 0, "ERR COUNT can't be negative")?);
        } else if eq(&a[j], "maxlen") && more {
            maxlen = count_arg(&a[j + 1], 0, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(SYNTAX);
        }
        j += 2;
    }
    // Redis negates RANK in a C long, where the lowest one stays itself: it then searches from the tail,
    // takes the first match, and its COUNT test overflows so that every match is returned.
    let (rank, limit) = match rank {
        i64::MIN => (-1, 0),
        r => (r, count.unwrap_or(1)),
    };
    let found = c.shared.store.lpos(&a[1], &a[2], rank, limit, maxlen)?;
    match (count, found) {
        (Some(_), found) => {
            let v = found.unwrap_or_default();
            c.out.array(v.len());
            for i in v {
                c.out.int(i as i64);
            }
        }
        (None, found) => match found.and_then(|v| v.first().copied()) {
            Some(i) => c.out.int(i as i64),
            None => c.out.null(),
        },
    }
    Ok(())
}

fn move_reply(c: &mut Ctx<'_>, a: &[Bytes], from: End, to: End) -> CmdResult {
    match c.shared.store.lmove(&a[1], &a[2], from, to)? {
        Some(e) => c.out.bulk(&e),
        None => c.out.null(),
    }
    Ok(())
}

fn lmove(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (from, to) = (end_arg(&a[3])?, end_arg(&a[4])?);
    move_reply(c, a, from, to)
}

fn rpoplpush(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    move_reply(c, a, End::Right, End::Left)
}

/// LMPOP's arguments after its name (`a[1]` is numkeys; BLMPOP passes its own from the timeout on):
/// the index of LEFT|RIGHT (the keys are `a[2..at]`), the end, the count.
pub(super) fn lmpop_args(a: &[Bytes]) -> Result<(usize, End, usize), CmdError> {
    let numkeys = count_arg(&a[1], 1, "ERR numkeys should be greater than 0")?;
    // The LEFT|RIGHT argument's index; a numkeys reaching past the arguments is a syntax error.
    let at = match numkeys.checked_add(2) {
        Some(at) if at < a.len() => at,
        _ => return Err(SYNTAX),
    };
    let end = end_arg(&a[at])?;
    let mut count = None;
    let mut j = at + 1;
    while j < a.len() {
        if count.is_none() && eq(&a[j], "count") && j + 1 < a.len() {
            count = Some(count_arg(&a[j + 1], 1, "ERR count should be greater than 0")?);
        } else {
            return Err(SYNTAX);
        }
        j += 2;
    }
    Ok((at, end, count.unwrap_or(1)))
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: `[key, [elements]]` from the first key that
/// holds a list, or a null array.
fn lmpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (at, end, count) = lmpop_args(a)?;
    let keys: Vec<&[u8]> = a[2..at].iter().map(|k| &k[..]).collect();
    match c.shared.store.list_pop_first(&keys, end, count)? {
        Some((i, v)) => {
            c.out.array(2);
            c.out.bulk(keys[i]);
            reply_elems(c, &v);
        }
        None => c.out.null_array(),
    }
    Ok(())
}
