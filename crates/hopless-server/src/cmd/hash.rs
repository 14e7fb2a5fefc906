//! The hash commands: HSET HSETNX HGET HMGET HMSET HDEL HLEN HSTRLEN HEXISTS HKEYS HVALS HGETALL HINCRBY
//! HINCRBYFLOAT HRANDFIELD HSCAN, with Redis 7.0's replies (RESP3: HGETALL a map, HRANDFIELD WITHVALUES
//! pairs) and its errors, checked in Redis's order (an argument error before WRONGTYPE wherever Redis
//! parses the argument before it looks the key up).
//!
//! Reads reply straight from the hash under its shard's read lock ([`hopless_kv::Store::read_hash`]):
//! no copy of the fields.

use bytes::Bytes;

use super::command::{int_arg, Command, Ctx};
use super::scan_args;
use crate::errors::{wrong_args, CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("hset", -4, "write denyoom fast", hset).keys(1, 1, 1),
    Command::new("hsetnx", 4, "write denyoom fast", hsetnx).keys(1, 1, 1),
    Command::new("hget", 3, "readonly fast", hget).keys(1, 1, 1),
    Command::new("hmget", -3, "readonly fast", hmget).keys(1, 1, 1),
    Command::new("hmset", -4, "write denyoom fast", hmset).keys(1, 1, 1),
    Command::new("hdel", -3, "write fast", hdel).keys(1, 1, 1),
    Command::new("hlen", 2, "readonly fast", hlen).keys(1, 1, 1),
    Command::new("hstrlen", 3, "readonly fast", hstrlen).keys(1, 1, 1),
    Command::new("hexists", 3, "readonly fast", hexists).keys(1, 1, 1),
    Command::new("hkeys", 2, "readonly", hkeys).keys(1, 1, 1),
    Command::new("hvals", 2, "readonly", hvals).keys(1, 1, 1),
    Command::new("hgetall", 2, "readonly", hgetall).keys(1, 1, 1),
    Command::new("hincrby", 4, "write denyoom fast", hincrby).keys(1, 1, 1),
    Command::new("hincrbyfloat", 4, "write denyoom fast", hincrbyfloat).keys(1, 1, 1),
    Command::new("hrandfield", -2, "readonly", hrandfield).keys(1, 1, 1),
    Command::new("hscan", -3, "readonly", hscan).keys(1, 1, 1),
];

/// HRANDFIELD with a negative count makes that many picks; past this many it refuses (Redis would try
/// to build the reply, gigabytes of it).
const MAX_RANDOM_PICKS: u64 = 1 << 24;

/// A field and its value, borrowed from the arguments.
type Pair<'a> = (&'a [u8], &'a [u8]);

/// The field, value pairs of HSET and HMSET (an odd count is Redis's arity error).
fn pairs<'a>(c: &Ctx<'_>, a: &'a [Bytes]) -> Result<Vec<Pair<'a>>, CmdError> {
    if a.len() % 2 == 1 {
        return Err(wrong_args(c.name));
    }
    Ok(a[2..].chunks(2).map(|p| (&p[0][..], &p[1][..])).collect())
}

fn hset(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.hset(&a[1], &pairs(c, a)?)?;
    c.out.int(n as i64);
    Ok(())
}

fn hmset(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    c.shared.store.hset(&a[1], &pairs(c, a)?)?;
    c.out.ok();
    Ok(())
}

fn hsetnx(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let set = c.shared.store.hsetnx(&a[1], &a[2], &a[3])?;
    c.out.int(set as i64);
    Ok(())
}

fn hget(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let out = &mut *c.out;
    let found = c.shared.store.read_hash(&a[1], |h| match h.get(&a[2]) {
        Some(v) => out.bulk(v),
        None => out.null(),
    })?;
    if found.is_none() {
        c.out.null();
    }
    Ok(())
}

fn hmget(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let out = &mut *c.out;
    let fields = &a[2..];
    let found = c.shared.store.read_hash(&a[1], |h| {
        out.array(fields.len());
        for f in fields {
            match h.get(f) {
                Some(v) => out.bulk(v),
                None => out.null(),
            }
        }
    })?;
    if found.is_none() {
        c.out.array(fields.len());
        for _ in fields {
            c.out.null();
        }
    }
    Ok(())
}

fn hdel(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let fields: Vec<&[u8]> = a[2..].iter().map(|f| &f[..]).collect();
    let n = c.shared.store.hdel(&a[1], &fields)?;
    c.out.int(n as i64);
    Ok(())
}

fn hlen(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.hlen(&a[1])?;
    c.out.int(n as i64);
    Ok(())
}

fn hstrlen(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.hstrlen(&a[1], &a[2])?;
    c.out.int(n as i64);
    Ok(())
}

fn hexists(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.hexists(&a[1], &a[2])?;
    c.out.int(n as i64);
    Ok(())
}

/// What HKEYS, HVALS and HGETALL send of each field.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fields,
    Values,
    Both,
}

fn getall(c: &mut Ctx<'_>, key: &[u8], part: Part) -> CmdResult {
    let out = &mut *c.out;
    let header = |out: &mut crate::codec::Reply, n: usize| match part {
        Part::Both => out.map(n),
        _ => out.array(n),
    };
    let found = c.shared.store.read_hash(key, |h| {
        header(out, h.len());
        for (f, v) in h.iter() {
            if part != Part::Values {
                out.bulk(f);
            }
            if part != Part::Fields {
                out.bulk(v);
            }
        }
    })?;
    if found.is_none() {
        header(c.out, 0);
    }
    Ok(())
}

fn hkeys(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    getall(c, &a[1], Part::Fields)
}

fn hvals(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    getall(c, &a[1], Part::Values)
}

fn hgetall(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    getall(c, &a[1], Part::Both)
}

fn hincrby(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let d = int_arg(&a[3])?;
    let n = c.shared.store.hincrby(&a[1], &a[2], d)?;
    c.out.int(n);
    Ok(())
}

fn hincrbyfloat(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let v = c.shared.store.hincrbyfloat(&a[1], &a[2], &a[3])?;
    c.out.bulk(&v);
    Ok(())
}

fn hrandfield(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() == 2 {
        let out = &mut *c.out;
        let found = c
            .shared
            .store
            .read_hash(&a[1], |h| match h.random_pairs(1).first() {
                Some((f, _)) => out.bulk(f),
                None => out.null(),
            })?;
        if found.is_none() {
            c.out.null();
        }
        return Ok(());
    }
    let count = int_arg(&a[2])?;
    if count == i64::MIN {
        return Err(CmdError::Static(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    if a.len() > 4 || (a.len() == 4 && !eq(&a[3], "withvalues")) {
        return Err(SYNTAX);
    }
    let with_values = a.len() == 4;
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(CmdError::Static("ERR value is out of range"));
    }
    if count < 0 && count.unsigned_abs() > MAX_RANDOM_PICKS {
        return Err(CmdError::Static("ERR value is out of range"));
    }
    let out = &mut *c.out;
    let found = c.shared.store.read_hash(&a[1], |h| {
        let resp3 = out.resp3();
        let header = |out: &mut crate::codec::Reply, n: usize| {
            out.array(if with_values && !resp3 { n * 2 } else { n })
        };
        let send = |out: &mut crate::codec::Reply, f: &[u8], v: &[u8]| {
            if with_values && resp3 {
                out.array(2);
            }
            out.bulk(f);
            if with_values {
                out.bulk(v);
            }
        };
        if count < 0 && !h.is_empty() {
            // Picks with repeats go out as they are made.
            let n = count.unsigned_abs();
            header(out, n as usize);
            h.random_picks(n, |f, v| send(out, f, v));
        } else {
            let picks = h.random_pairs(count);
            header(out, picks.len());
            for (f, v) in picks {
                send(out, f, v);
            }
        }
    })?;
    if found.is_none() {
        c.out.array(0);
    }
    Ok(())
}

fn hscan(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    // Redis reads the cursor, then looks the key up, then reads the options: a bad option on a missing
    // key is no error.
    scan_args::parse(&a[..3], 2)?;
    let args = scan_args::parse(a, 2);
    let out = &mut *c.out;
    let found = c.shared.store.read_hash(&a[1], |h| -> CmdResult {
        let s = args?;
        let mut elems: Vec<&[u8]> = Vec::new();
        let next = h.scan(s.cursor, s.count, |f, v| {
            if s.pattern.is_none_or(|p| hopless_kv::store::glob_match(p, f)) {
                elems.push(f);
                elems.push(v);
            }
        });
        scan_args::reply(out, next, elems.into_iter())
    })?;
    match found {
        Some(r) => r,
        None => scan_args::reply(c.out, 0, std::iter::empty()),
    }
}
