//! Keyspace commands: DEL UNLINK EXISTS EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME
//! PERSIST TYPE KEYS SCAN RANDOMKEY RENAME RENAMENX DBSIZE FLUSHDB FLUSHALL.
//!
//! Every value is a string, so TYPE says `string` or `none`, and SCAN's `TYPE` option keeps all keys or
//! none.

use bytes::Bytes;
use hopless_kv::ExpireCond;

use super::{int_arg, CmdError, CmdResult, Ctx, SYNTAX};
use crate::util::eq;

fn key_list(a: &[Bytes]) -> Vec<&[u8]> {
    a[1..].iter().map(|k| &k[..]).collect()
}

pub fn del(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.del(&key_list(a));
    c.out.int(n as i64);
    Ok(())
}

pub fn exists(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.exists(&key_list(a));
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
    let invalid = || CmdError::Msg(format!("ERR invalid expire time in '{}' command", c.name));
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

pub fn expire(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1000, false)
}

pub fn pexpire(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1, false)
}

pub fn expireat(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1000, true)
}

pub fn pexpireat(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    expire_generic(c, a, 1, true)
}

pub fn ttl(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.ttl(&a[1]);
    c.out.int(t);
    Ok(())
}

pub fn pttl(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.pttl(&a[1]);
    c.out.int(t);
    Ok(())
}

pub fn expiretime(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.expiretime(&a[1]);
    c.out.int(t);
    Ok(())
}

pub fn pexpiretime(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = c.shared.store.pexpiretime(&a[1]);
    c.out.int(t);
    Ok(())
}

pub fn persist(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let p = c.shared.store.persist(&a[1]);
    c.out.int(p as i64);
    Ok(())
}

pub fn type_(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let t = if c.shared.store.exists(&[&a[1]]) > 0 {
        "string"
    } else {
        "none"
    };
    c.out.simple(t);
    Ok(())
}

pub fn keys(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let k = c.shared.store.keys(&a[1]);
    c.out.bulks(k.iter().map(|k| &k[..]));
    Ok(())
}

pub fn scan(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let cursor = core::str::from_utf8(&a[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or(CmdError::Static("ERR invalid cursor"))?;
    let (mut pattern, mut count, mut strings) = (None, 10usize, true);
    let mut i = 2;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return Err(SYNTAX);
        };
        if eq(&a[i], "count") {
            let n = int_arg(v)?;
            if n < 1 {
                return Err(SYNTAX);
            }
            count = n.min(1 << 20) as usize;
        } else if eq(&a[i], "match") {
            pattern = Some(&v[..]).filter(|p| *p != b"*");
        } else if eq(&a[i], "type") {
            strings = eq(v, "string");
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    let (next, mut keys) = c.shared.store.scan(cursor, count, pattern);
    if !strings {
        keys.clear();
    }
    c.out.array(2);
    c.out.bulk(next.to_string().as_bytes());
    c.out.bulks(keys.iter().map(|k| &k[..]));
    Ok(())
}

pub fn randomkey(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    match c.shared.store.random_key() {
        Some(k) => c.out.bulk(&k),
        None => c.out.null(),
    }
    Ok(())
}

pub fn rename(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    c.shared.store.rename(&a[1], &a[2], false)?;
    c.out.ok();
    Ok(())
}

pub fn renamenx(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let moved = c.shared.store.rename(&a[1], &a[2], true)?;
    c.out.int(moved as i64);
    Ok(())
}

pub fn dbsize(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.dbsize();
    c.out.int(n as i64);
    Ok(())
}

/// FLUSHDB and FLUSHALL (one database): `ASYNC` and `SYNC` both flush before replying.
pub fn flush(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match a.len() {
        1 => {}
        2 if eq(&a[1], "async") || eq(&a[1], "sync") => {}
        _ => return Err(SYNTAX),
    }
    c.shared.store.flush();
    c.out.ok();
    Ok(())
}
