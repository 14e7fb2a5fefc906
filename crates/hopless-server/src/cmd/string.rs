//! String commands: GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN GETRANGE SETRANGE INCR
//! DECR INCRBY DECRBY INCRBYFLOAT MGET MSET MSETNX LCS.

use bytes::Bytes;
use hopless_kv::{Kind, SetCond, SetOptions, Ttl};

use super::command::{int_arg, Command, Ctx};
use crate::errors::{invalid_expire, wrong_args, CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("get", 2, "readonly fast", get).keys(1, 1, 1),
    Command::new("set", -3, "write denyoom", set).keys(1, 1, 1),
    Command::new("setnx", 3, "write denyoom fast", setnx).keys(1, 1, 1),
    Command::new("setex", 4, "write denyoom", setex).keys(1, 1, 1),
    Command::new("psetex", 4, "write denyoom", psetex).keys(1, 1, 1),
    Command::new("getset", 3, "write denyoom fast", getset).keys(1, 1, 1),
    Command::new("getdel", 2, "write fast", getdel).keys(1, 1, 1),
    Command::new("getex", -2, "write fast", getex).keys(1, 1, 1),
    Command::new("append", 3, "write denyoom fast", append).keys(1, 1, 1),
    Command::new("strlen", 2, "readonly fast", strlen).keys(1, 1, 1),
    Command::new("getrange", 4, "readonly", getrange).keys(1, 1, 1),
    Command::new("substr", 4, "readonly", getrange).keys(1, 1, 1),
    Command::new("setrange", 4, "write denyoom", setrange).keys(1, 1, 1),
    Command::new("incr", 2, "write denyoom fast", incr).keys(1, 1, 1),
    Command::new("decr", 2, "write denyoom fast", decr).keys(1, 1, 1),
    Command::new("incrby", 3, "write denyoom fast", incrby).keys(1, 1, 1),
    Command::new("decrby", 3, "write denyoom fast", decrby).keys(1, 1, 1),
    Command::new("incrbyfloat", 3, "write denyoom fast", incrbyfloat).keys(1, 1, 1),
    Command::new("mget", -2, "readonly fast", mget).keys(1, -1, 1),
    Command::new("mset", -3, "write denyoom", mset).keys(1, -1, 2),
    Command::new("msetnx", -3, "write denyoom", msetnx).keys(1, -1, 2),
    Command::new("lcs", -3, "readonly", lcs).keys(1, 2, 1),
];

fn get(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match c.shared.store.get(&a[1])? {
        Some(v) => c.out.bulk(&v),
        None => c.out.null(),
    }
    Ok(())
}

/// The TTL options SET and GETEX share (Redis's `parseExtendedStringArgumentsOrReply`): which one was
/// given and its argument, checked after all options parsed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TtlOpt {
    None,
    Ex,
    Px,
    ExAt,
    PxAt,
    Keep,
    Persist,
}

/// Turns a TTL option and its argument into a store [`Ttl`], with Redis's errors: not an integer, or not
/// positive (`invalid expire time in '<cmd>' command`, also for overflow: the store checks that).
fn ttl_of(c: &Ctx<'_>, opt: TtlOpt, arg: Option<&Bytes>) -> Result<Ttl, CmdError> {
    let n = match arg {
        Some(b) => int_arg(b)?,
        None => 0,
    };
    if !matches!(opt, TtlOpt::None | TtlOpt::Keep | TtlOpt::Persist) && n <= 0 {
        return Err(invalid_expire(c.name));
    }
    let n = n as u64;
    Ok(match opt {
        TtlOpt::None => Ttl::None,
        TtlOpt::Ex => Ttl::Ex(n),
        TtlOpt::Px => Ttl::Px(n),
        TtlOpt::ExAt => Ttl::ExAt(n),
        TtlOpt::PxAt => Ttl::PxAt(n),
        TtlOpt::Keep => Ttl::Keep,
        TtlOpt::Persist => Ttl::Persist,
    })
}

/// An `EX|PX|EXAT|PXAT n` option at `a[i]` (SET and GETEX share them): records it in `ttl` and `arg` and
/// returns true (the caller skips `n`); false when `a[i]` is not one or has no argument. A second time
/// option of another kind is a syntax error, as in Redis.
fn time_option<'a>(
    a: &'a [Bytes],
    i: usize,
    ttl: &mut TtlOpt,
    arg: &mut Option<&'a Bytes>,
) -> Result<bool, CmdError> {
    let kind = [
        ("ex", TtlOpt::Ex),
        ("px", TtlOpt::Px),
        ("exat", TtlOpt::ExAt),
        ("pxat", TtlOpt::PxAt),
    ]
    .into_iter()
    .find(|(w, _)| eq(&a[i], w))
    .map(|(_, t)| t);
    let (Some(t), Some(n)) = (kind, a.get(i + 1)) else {
        return Ok(false);
    };
    if !(*ttl == TtlOpt::None || *ttl == t) {
        return Err(SYNTAX);
    }
    *ttl = t;
    *arg = Some(n);
    Ok(true)
}

fn set(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut opts = SetOptions::default();
    let (mut ttl, mut ttl_arg) = (TtlOpt::None, None);
    let mut i = 3;
    while i < a.len() {
        let o = &a[i][..];
        if eq(o, "nx") && opts.cond != SetCond::IfPresent {
            opts.cond = SetCond::IfAbsent;
        } else if eq(o, "xx") && opts.cond != SetCond::IfAbsent {
            opts.cond = SetCond::IfPresent;
        } else if eq(o, "get") {
            opts.get = true;
        } else if eq(o, "keepttl") && matches!(ttl, TtlOpt::None | TtlOpt::Keep) {
            ttl = TtlOpt::Keep;
        } else if time_option(a, i, &mut ttl, &mut ttl_arg)? {
            i += 1;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    opts.ttl = ttl_of(c, ttl, ttl_arg)?;
    let (wrote, old) = c.shared.store.set(&a[1], &a[2], opts)?;
    if opts.get {
        match old {
            Some(v) => c.out.bulk(&v),
            None => c.out.null(),
        }
    } else if wrote {
        c.out.ok();
    } else {
        c.out.null();
    }
    Ok(())
}

fn setnx(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let opts = SetOptions {
        cond: SetCond::IfAbsent,
        ..Default::default()
    };
    let (wrote, _) = c.shared.store.set(&a[1], &a[2], opts)?;
    c.out.int(wrote as i64);
    Ok(())
}

fn set_with_ttl(c: &mut Ctx<'_>, a: &[Bytes], opt: TtlOpt) -> CmdResult {
    let ttl = ttl_of(c, opt, Some(&a[2]))?;
    c.shared.store.set(
        &a[1],
        &a[3],
        SetOptions {
            ttl,
            ..Default::default()
        },
    )?;
    c.out.ok();
    Ok(())
}

fn setex(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    set_with_ttl(c, a, TtlOpt::Ex)
}

fn psetex(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    set_with_ttl(c, a, TtlOpt::Px)
}

fn getset(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let opts = SetOptions {
        get: true,
        ..Default::default()
    };
    match c.shared.store.set(&a[1], &a[2], opts)?.1 {
        Some(v) => c.out.bulk(&v),
        None => c.out.null(),
    }
    Ok(())
}

fn getdel(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match c.shared.store.getdel(&a[1])? {
        Some(v) => c.out.bulk(&v),
        None => c.out.null(),
    }
    Ok(())
}

fn getex(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut ttl, mut ttl_arg) = (TtlOpt::None, None);
    let mut i = 2;
    while i < a.len() {
        let o = &a[i][..];
        if eq(o, "persist") && matches!(ttl, TtlOpt::None | TtlOpt::Persist) {
            ttl = TtlOpt::Persist;
        } else if time_option(a, i, &mut ttl, &mut ttl_arg)? {
            i += 1;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    let ttl = match ttl_of(c, ttl, ttl_arg) {
        Ok(t) => t,
        // Redis looks the key up before it reads the time: a missing key is nil and another kind
        // WRONGTYPE, whatever the time says; only a string's GETEX reports a bad one.
        Err(e) => {
            return match c.shared.store.key_type(&a[1]) {
                None => {
                    c.out.null();
                    Ok(())
                }
                Some(Kind::String) => Err(e),
                Some(_) => Err(hopless_kv::Error::WrongType.into()),
            };
        }
    };
    match c.shared.store.getex(&a[1], ttl)? {
        Some(v) => c.out.bulk(&v),
        None => c.out.null(),
    }
    Ok(())
}

fn append(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.append(&a[1], &a[2])?;
    c.out.int(n as i64);
    Ok(())
}

fn strlen(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.strlen(&a[1])?;
    c.out.int(n as i64);
    Ok(())
}

fn getrange(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (s, e) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let v = c.shared.store.getrange(&a[1], s, e)?;
    c.out.bulk(&v);
    Ok(())
}

fn setrange(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let off = int_arg(&a[2])?;
    if off < 0 {
        return Err(CmdError::Static("ERR offset is out of range"));
    }
    let n = c.shared.store.setrange(&a[1], off as usize, &a[3])?;
    c.out.int(n as i64);
    Ok(())
}

fn incr_by(c: &mut Ctx<'_>, key: &[u8], delta: i64) -> CmdResult {
    let n = c.shared.store.incr_by(key, delta)?;
    c.out.int(n);
    Ok(())
}

fn incr(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    incr_by(c, &a[1], 1)
}

fn decr(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    incr_by(c, &a[1], -1)
}

fn incrby(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let d = int_arg(&a[2])?;
    incr_by(c, &a[1], d)
}

fn decrby(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let d = int_arg(&a[2])?;
    let d = d
        .checked_neg()
        .ok_or(CmdError::Static("ERR decrement would overflow"))?;
    incr_by(c, &a[1], d)
}

fn incrbyfloat(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let v = c.shared.store.incr_by_float_text(&a[1], &a[2])?;
    c.out.bulk(&v);
    Ok(())
}

fn mget(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let keys: Vec<&[u8]> = a[1..].iter().map(|k| &k[..]).collect();
    let vals = c.shared.store.mget(&keys);
    c.out.array(vals.len());
    for v in vals {
        match v {
            Some(v) => c.out.bulk(&v),
            None => c.out.null(),
        }
    }
    Ok(())
}

/// Key-value pairs of MSET and MSETNX.
type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

fn pairs<'a>(c: &Ctx<'_>, a: &'a [Bytes]) -> Result<Pairs<'a>, CmdError> {
    if a.len() % 2 == 0 {
        return Err(wrong_args(c.name));
    }
    Ok(a[1..].chunks_exact(2).map(|p| (&p[0][..], &p[1][..])).collect())
}

fn mset(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let p = pairs(c, a)?;
    c.shared.store.mset(&p)?;
    c.out.ok();
    Ok(())
}

fn msetnx(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let p = pairs(c, a)?;
    let wrote = c.shared.store.msetnx(&p)?;
    c.out.int(wrote as i64);
    Ok(())
}

/// LCS: the longest common subsequence of two strings (missing keys are empty), by Redis's dynamic
/// program, walked back the way Redis walks it so that IDX lists the same ranges in the same order. Its
/// table of `(len(a)+1)·(len(b)+1)` 32-bit cells is refused past `proto-max-bulk-len` bytes, as Redis
/// refuses it.
fn lcs(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let not_strings = || CmdError::Static("ERR The specified keys must contain string values");
    let va = c.shared.store.get(&a[1]).map_err(|_| not_strings())?;
    let vb = c.shared.store.get(&a[2]).map_err(|_| not_strings())?;
    let (x, y): (&[u8], &[u8]) = (va.as_deref().unwrap_or(&[]), vb.as_deref().unwrap_or(&[]));
    let (mut get_len, mut get_idx, mut with_len, mut min_len) = (false, false, false, 0i64);
    let mut j = 3;
    while j < a.len() {
        if eq(&a[j], "idx") {
            get_idx = true;
        } else if eq(&a[j], "len") {
            get_len = true;
        } else if eq(&a[j], "withmatchlen") {
            with_len = true;
        } else if eq(&a[j], "minmatchlen") && j + 1 < a.len() {
            min_len = int_arg(&a[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    if get_idx && get_len {
        return Err(CmdError::Static(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    if x.len() >= u32::MAX as usize - 1 || y.len() >= u32::MAX as usize - 1 {
        return Err(CmdError::Static("ERR String too long for LCS"));
    }
    let (alen, blen) = (x.len(), y.len());
    let cells = (alen + 1) as u64 * (blen + 1) as u64;
    if cells * 4 > c.shared.settings().proto_max_bulk_len as u64 {
        return Err(CmdError::Static(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let mut t: Vec<u32> = Vec::new();
    if t.try_reserve_exact(cells as usize).is_err() {
        return Err(CmdError::Static(
            "ERR Insufficient memory, failed allocating transient memory for LCS",
        ));
    }
    t.resize(cells as usize, 0);
    let w = blen + 1;
    for i in 1..=alen {
        for k in 1..=blen {
            t[i * w + k] = if x[i - 1] == y[k - 1] {
                t[(i - 1) * w + k - 1] + 1
            } else {
                t[(i - 1) * w + k].max(t[i * w + k - 1])
            };
        }
    }
    let total = t[alen * w + blen];
    if get_len {
        c.out.int(total as i64);
        return Ok(());
    }
    // The walk back from the end: the common string, and (IDX) the matching ranges, last first.
    let mut result = vec![0u8; total as usize];
    let mut ranges: Vec<[u32; 4]> = Vec::new();
    let (mut i, mut k, mut idx) = (alen, blen, total as usize);
    // (a start, a end, b start, b end); a start == alen: no range open.
    let (mut a0, mut a1, mut b0, mut b1) = (alen, 0, 0, 0);
    while i > 0 && k > 0 {
        let mut emit = false;
        if x[i - 1] == y[k - 1] {
            result[idx - 1] = x[i - 1];
            if a0 == alen {
                (a0, a1, b0, b1) = (i - 1, i - 1, k - 1, k - 1);
            } else if a0 == i && b0 == k {
                a0 -= 1;
                b0 -= 1;
            } else {
                emit = true;
            }
            if a0 == 0 || b0 == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            k -= 1;
        } else {
            if t[(i - 1) * w + k] > t[i * w + k - 1] {
                i -= 1;
            } else {
                k -= 1;
            }
            if a0 != alen {
                emit = true;
            }
        }
        if emit {
            let len = a1 - a0 + 1;
            if min_len == 0 || len as i64 >= min_len {
                ranges.push([a0 as u32, a1 as u32, b0 as u32, b1 as u32]);
            }
            a0 = alen;
        }
    }
    if !get_idx {
        c.out.bulk(&result);
        return Ok(());
    }
    c.out.map(2);
    c.out.bulk(b"matches");
    c.out.array(ranges.len());
    for [s0, e0, s1, e1] in ranges {
        c.out.array(2 + with_len as usize);
        c.out.array(2);
        c.out.int(s0 as i64);
        c.out.int(e0 as i64);
        c.out.array(2);
        c.out.int(s1 as i64);
        c.out.int(e1 as i64);
        if with_len {
            c.out.int((e0 - s0 + 1) as i64);
        }
    }
    c.out.bulk(b"len");
    c.out.int(total as i64);
    Ok(())
}
