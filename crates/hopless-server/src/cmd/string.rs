//! String commands: GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN GETRANGE SETRANGE INCR
//! DECR INCRBY DECRBY INCRBYFLOAT MGET MSET MSETNX.

use bytes::Bytes;
use hopless_kv::{SetCond, SetOptions, Ttl};

use super::command::{int_arg, Command, Ctx};
use crate::errors::{invalid_expire, wrong_args, CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("get", 2, "readonly fast", get).keys(1, 1, 1).acl("@read @string @fast")
        .doc("string", "1.0.0", "Get the value of a key"),
    Command::new("set", -3, "write denyoom", set).keys(1, 1, 1).acl("@write @string @slow")
        .doc("string", "1.0.0", "Set the string value of a key"),
    Command::new("setnx", 3, "write denyoom fast", setnx).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "1.0.0", "Set the value of a key, only if the key does not exist"),
    Command::new("setex", 4, "write denyoom", setex).keys(1, 1, 1).acl("@write @string @slow")
        .doc("string", "2.0.0", "Set the value and expiration of a key"),
    Command::new("psetex", 4, "write denyoom", psetex).keys(1, 1, 1).acl("@write @string @slow")
        .doc("string", "2.6.0", "Set the value and expiration in milliseconds of a key"),
    Command::new("getset", 3, "write denyoom fast", getset).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "1.0.0", "Set the string value of a key and return its old value"),
    Command::new("getdel", 2, "write fast", getdel).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "6.2.0", "Get the value of a key and delete the key"),
    Command::new("getex", -2, "write fast", getex).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "6.2.0", "Get the value of a key and optionally set its expiration"),
    Command::new("append", 3, "write denyoom fast", append).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "2.0.0", "Append a value to a key"),
    Command::new("strlen", 2, "readonly fast", strlen).keys(1, 1, 1).acl("@read @string @fast")
        .doc("string", "2.2.0", "Get the length of the value stored in a key"),
    Command::new("getrange", 4, "readonly", getrange).keys(1, 1, 1).acl("@read @string @slow")
        .doc("string", "2.4.0", "Get a substring of the string stored at a key"),
    Command::new("substr", 4, "readonly", getrange).keys(1, 1, 1).acl("@read @string @slow")
        .doc("string", "1.0.0", "Get a substring of the string stored at a key"),
    Command::new("setrange", 4, "write denyoom", setrange).keys(1, 1, 1).acl("@write @string @slow")
        .doc("string", "2.2.0", "Overwrite part of a string at key starting at the specified offset"),
    Command::new("incr", 2, "write denyoom fast", incr).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "1.0.0", "Increment the integer value of a key by one"),
    Command::new("decr", 2, "write denyoom fast", decr).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "1.0.0", "Decrement the integer value of a key by one"),
    Command::new("incrby", 3, "write denyoom fast", incrby).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "1.0.0", "Increment the integer value of a key by the given amount"),
    Command::new("decrby", 3, "write denyoom fast", decrby).keys(1, 1, 1).acl("@write @string @fast")
        .doc("string", "1.0.0", "Decrement the integer value of a key by the given number"),
    Command::new("incrbyfloat", 3, "write denyoom fast", incrbyfloat).keys(1, 1, 1)
        .acl("@write @string @fast")
        .doc("string", "2.6.0", "Increment the float value of a key by the given amount"),
    Command::new("mget", -2, "readonly fast", mget).keys(1, -1, 1).acl("@read @string @fast")
        .doc("string", "1.0.0", "Get the values of all the given keys"),
    Command::new("mset", -3, "write denyoom", mset).keys(1, -1, 2).acl("@write @string @slow")
        .doc("string", "1.0.1", "Set multiple keys to multiple values"),
    Command::new("msetnx", -3, "write denyoom", msetnx).keys(1, -1, 2).acl("@write @string @slow")
        .doc("string", "1.0.1", "Set multiple keys to multiple values, only if none of the keys exist"),
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
    let ttl = ttl_of(c, ttl, ttl_arg)?;
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
