//! Keyspace commands: DEL UNLINK EXISTS TOUCH EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME
//! PERSIST TYPE KEYS SCAN RANDOMKEY RENAME RENAMENX DBSIZE FLUSHDB FLUSHALL.
//!
//! Every value is a string, so TYPE says `string` or `none`, and SCAN's `TYPE` option keeps all keys or
//! none.

use bytes::Bytes;
use hopless_kv::ExpireCond;

use super::command::{int_arg, Command, Ctx};
use super::scan_args;
use crate::errors::{invalid_expire, CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("del", -2, "write", del).keys(1, -1, 1),
    Command::new("unlink", -2, "write fast", del).keys(1, -1, 1),
    Command::new("exists", -2, "readonly fast", exists).keys(1, -1, 1),
    Command::new("touch", -2, "readonly fast", touch).keys(1, -1, 1),
    Command::new("expire", -3, "write fast", expire).keys(1, 1, 1),
    Command::new("pexpire", -3, "write fast", pexpire).keys(1, 1, 1),
    Command::new("expireat", -3, "write fast", expireat).keys(1, 1, 1),
    Command::new("pexpireat", -3, "write fast", pexpireat).keys(1, 1, 1),
    Command::new("ttl", 2, "readonly fast", ttl).keys(1, 1, 1),
    Command::new("pttl", 2, "readonly fast", pttl).keys(1, 1, 1),
    Command::new("expiretime", 2, "readonly fast", expiretime).keys(1, 1, 1),
    Command::new("pexpiretime", 2, "readonly fast", pexpiretime).keys(1, 1, 1),
    Command::new("persist", 2, "write fast", persist).keys(1, 1, 1),
    Command::new("type", 2, "readonly fast", type_).keys(1, 1, 1),
    Command::new("keys", 2, "readonly", keys),
    Command::new("scan", -2, "readonly", scan),
    Command::new("randomkey", 1, "readonly", randomkey),
    Command::new("rename", 3, "write", rename).keys(1, 2, 1),
    Command::new("renamenx", 3, "write fast", renamenx).keys(1, 2, 1),
    Command::new("copy", -3, "write denyoom", copy).keys(1, 2, 1),
    Command::new("dbsize", 1, "readonly fast", dbsize),
    Command::new("flushdb", -1, "write", flush),
    Command::new("flushall", -1, "write", flush),
];

fn key_list(a: &[Bytes]) -> Vec<&[u8]> {
    a[1..].iter().map(|k| &k[..]).collect()
}

fn del(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.del(&key_list(a));
    c.out.int(n as i64);
    Ok(())
}

fn exists(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.exists(&key_list(a));
    c.out.int(n as i64);
    Ok(())
}

/// TOUCH: EXISTS that counts as an access for the LRU.
fn touch(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.touch(&key_list(a));
    c.out.int(n as i64);
    Ok(())
}

/// The EXPIRE family's flags, checked as Redis 7 does (before the time argument).
fn expire_flags(a: &[Bytes]) -> Result<(bool, bool, bool, bool), CmdError> {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for f in &a[3..] {
        if eq(f, "nx") {
            nx = true;
        } else if eq(f, "xx") {
            xx = true;
        } else if eq(f, "gt") {
            gt = true;
        } else if eq(f, "lt") {
            lt = true;
        } else {
            return Err(CmdError::Msg(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(f)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CmdError::Static(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CmdError::Static(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok((nx, xx, gt, lt))
}

/// `unit_ms`: 1000 for seconds; `absolute`: EXPIREAT/PEXPIREAT.
fn expire_generic(c: &mut Ctx<'_>, a: &[Bytes], unit_ms: i64, absolute: bool) -> CmdResult {
    let (nx, xx, gt, lt) = expire_flags(a)?;
    let when = int_arg(&a[2])?;
    let invalid = || invalid_expire(c.name);
    let ms = when.checked_mul(unit_ms).ok_or_else(invalid)?;
    let store = &c.shared.store;
    let deadline = if absolute {
        ms
    } else {
        let now = store.config().clock.now_ms() as i64;
        ms.checked_add(now).ok_or_else(invalid)?
    };
    let cond = match (nx, xx, gt, lt) {
        (true, ..) => ExpireCond::Nx,
        (_, _, true, _) => ExpireCond::Gt, // GT already needs a TTL: XX adds nothing.
        (_, true, _, true) => {
            // XX LT: LT alone takes "no TTL" as infinite and sets one; XX refuses that.
            if store.pttl(&a[1]) == -1 {
                c.out.int(0);
                return Ok(());
            }
            ExpireCond::Lt
        }
        (_, _, _, true) => ExpireCond::Lt,
        (_, true, ..) => ExpireCond::Xx,
        _ => ExpireCond::Always,
    };
    let set = store.pexpire_at(&a[1], deadline, cond)?;
    c.out.int(set as i64);
    Ok(())
}

fn expire(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1000, false)
}

fn pexpire(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1, false)
}

fn expireat(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1000, true)
}

fn pexpireat(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1, true)
}

fn ttl(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.ttl(&a[1]);
    c.out.int(t);
    Ok(())
}

fn pttl(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.pttl(&a[1]);
    c.out.int(t);
    Ok(())
}

fn expiretime(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.expiretime(&a[1]);
    c.out.int(t);
    Ok(())
}

fn pexpiretime(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.pexpiretime(&a[1]);
    c.out.int(t);
    Ok(())
}

fn persist(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let p = c.shared.store.persist(&a[1]);
    c.out.int(p as i64);
    Ok(())
}

fn type_(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.key_type(&a[1]).map_or("none", |k| k.name());
    c.out.simple(t);
    Ok(())
}

fn keys(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let k = c.shared.store.keys(&a[1]);
    c.out.bulks(k.iter().map(|k| &k[..]));
    Ok(())
}

fn scan(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let s = scan_args::parse_keyspace(a)?;
    // TYPE: a kind, or (a name Redis 7.0 does not know either) a filter nothing passes.
    let kind = s.type_name.map(hopless_kv::Kind::from_name);
    let (next, mut keys) = c
        .shared
        .store
        .scan_type(s.cursor, s.count, s.pattern, kind.flatten());
    if kind == Some(None) {
        keys.clear();
    }
    scan_args::reply(c.out, next, keys.iter().map(|k| &k[..]))
}

fn randomkey(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    match c.shared.store.random_key() {
        Some(k) => c.out.bulk(&k),
        None => c.out.null(),
    }
    Ok(())
}

fn rename(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    c.shared.store.rename(&a[1], &a[2], false)?;
    c.out.ok();
    Ok(())
}

fn renamenx(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let moved = c.shared.store.rename(&a[1], &a[2], true)?;
    c.out.int(moved as i64);
    Ok(())
}

/// COPY source destination [DB db] [REPLACE]: one database, so DB must name it (0).
fn copy(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut replace = false;
    let mut i = 3;
    while i < a.len() {
        if eq(&a[i], "replace") {
            replace = true;
        } else if eq(&a[i], "db") && i + 1 < a.len() {
            let db = int_arg(&a[i + 1])?;
            if db != 0 {
                return Err(CmdError::Static("ERR DB index is out of range"));
            }
            i += 1;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    if a[1] == a[2] {
        return Err(CmdError::Static(
            "ERR source and destination objects are the same",
        ));
    }
    let done = c.shared.store.copy(&a[1], &a[2], replace)?;
    c.out.int(done as i64);
    Ok(())
}

fn dbsize(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.dbsize();
    c.out.int(n as i64);
    Ok(())
}

/// FLUSHDB and FLUSHALL (one database): `ASYNC` and `SYNC` both flush before replying.
fn flush(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match a.len() {
        1 => {}
        2 if eq(&a[1], "async") || eq(&a[1], "sync") => {}
        _ => return Err(SYNTAX),
    }
    c.shared.store.flush();
    // A reader blocked on a consumer group learns that its group is gone (the other blocked commands
    // wait on).
    if c.shared.blocked.active() {
        let keys = c.shared.blocked.waiting_keys();
        c.shared
            .blocked
            .serve(&c.shared.store, &c.shared.events, keys.iter().map(|k| &k[..]));
    }
    c.out.ok();
    Ok(())
}
