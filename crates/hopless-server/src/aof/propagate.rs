//! What a command that changed the dataset leaves in the append-only file: most commands as they came,
//! and as Redis 7.0 rewrites them those whose effect depends on when or how they ran, so that loading
//! the file later (or in Redis) makes the same dataset:
//!
//! - times made absolute: EXPIRE, PEXPIRE, EXPIREAT, SETEX, PSETEX, SET EX/PX/EXAT, GETEX and RESTORE
//!   record the key's deadline (`PEXPIREAT`, `SET ... PXAT`, `RESTORE ... ABSTTL`), or `DEL` where the
//!   deadline had passed and the key went;
//! - results recorded: INCRBYFLOAT and HINCRBYFLOAT the value they left (`SET ... KEEPTTL`, `HSET`),
//!   SPOP the members it took (`SREM`), XADD the id it gave and XADD/XTRIM the length they trimmed to
//!   (`MAXLEN =`, which trims exactly where `~` trimmed);
//! - MIGRATE the keys it moved away (`DEL`), and nothing with COPY;
//! - the state itself where a rewrite would take more than the state (XREADGROUP, XCLAIM and
//!   XAUTOCLAIM, whose delivery times and counts move; SORT ... STORE, whose order may follow a set's):
//!   `RESTORE key ... REPLACE ABSTTL` of the key as it is now, or `DEL`.
//!
//! The blocking pops record the pop they made where they make it (`cmd::blocking`), as Redis records
//! BLPOP as LPOP; a transaction and a script record their commands one by one, and the dispatcher wraps
//! them in MULTI ... EXEC.

use bytes::Bytes;
use hopless_kv::Store;

use super::stage::record;
use crate::words::eq;

/// Records what `args` (a command named `name` in the table, which changed the dataset and answered
/// `reply`) leaves in the log.
pub fn changed(store: &Store, name: &str, args: &[Bytes], reply: &[u8]) {
    match name {
        "expire" | "pexpire" | "expireat" | "pexpireat" => deadline_of(store, &args[1]),
        "getex" if args[2..].iter().any(|a| eq(a, "persist")) => record(&[&b"PERSIST"[..], &args[1]]),
        "getex" => deadline_of(store, &args[1]),
        "setex" | "psetex" => set_with_deadline(store, &args[1], &args[3]),
        "set"
            if args[3..]
                .iter()
                .any(|a| ["ex", "px", "exat", "pxat"].iter().any(|w| eq(a, w))) =>
        {
            // NX or XX with GET answers the old value whether or not it set: the key as it is now.
            if args[3..].iter().any(|a| eq(a, "nx") || eq(a, "xx")) {
                state_of(store, &args[1])
            } else {
                set_with_deadline(store, &args[1], &args[2])
            }
        }
        "incrbyfloat" => match bulk(reply) {
            Some(v) => record(&[&b"SET"[..], &args[1], v, b"KEEPTTL"]),
            None => state_of(store, &args[1]),
        },
        "hincrbyfloat" => match bulk(reply) {
            Some(v) => record(&[&b"HSET"[..], &args[1], &args[2], v]),
            None => state_of(store, &args[1]),
        },
        "spop" => {
            let members = bulks(reply);
            if !members.is_empty() {
                let mut cmd: Vec<&[u8]> = vec![b"SREM", &args[1]];
                cmd.extend(members);
                record(&cmd);
            }
        }
        "xadd" => xadd(store, args, reply),
        "xtrim" => match store.xlen(&args[1]) {
            Ok(len) => record(&[
                &b"XTRIM"[..],
                &args[1],
                b"MAXLEN",
                b"=",
                len.to_string().as_bytes(),
            ]),
            Err(_) => state_of(store, &args[1]),
        },
        "restore" => state_of(store, &args[1]),
        "migrate" => migrated(args),
        "xclaim" | "xautoclaim" => state_of(store, &args[1]),
        "xreadgroup" => {
            if let Some(at) = args.iter().position(|a| eq(a, "streams")) {
                let keys = &args[at + 1..];
                for k in &keys[..keys.len() / 2] {
                    state_of(store, k);
                }
            }
        }
        "sort" => match args.iter().position(|a| eq(a, "store")) {
            Some(at) if at + 1 < args.len() => state_of(store, &args[at + 1]),
            _ => {}
        },
        // Their pops are recorded where they are made.
        "blpop" | "brpop" | "brpoplpush" | "blmove" | "blmpop" | "bzpopmin" | "bzpopmax" | "bzmpop" => {}
        _ => record(args),
    }
}

/// A key's deadline after a command set it: `PEXPIREAT`, `DEL` if it went, nothing if it has none.
fn deadline_of(store: &Store, key: &[u8]) {
    match store.pexpiretime(key) {
        -2 => record(&[&b"DEL"[..], key]),
        -1 => record(&[&b"PERSIST"[..], key]),
        d => record(&[&b"PEXPIREAT"[..], key, d.to_string().as_bytes()]),
    }
}

/// A string set with a deadline: `SET key value PXAT ms` (`DEL` if it is already gone).
fn set_with_deadline(store: &Store, key: &[u8], value: &[u8]) {
    match store.pexpiretime(key) {
        -2 => record(&[&b"DEL"[..], key]),
        -1 => record(&[&b"SET"[..], key, value]),
        d => record(&[&b"SET"[..], key, value, b"PXAT", d.to_string().as_bytes()]),
    }
}

/// XADD with the id it gave and the length it trimmed to.
fn xadd(store: &Store, args: &[Bytes], reply: &[u8]) {
    let Some(id) = bulk(reply) else {
        // NOMKSTREAM on a missing key: nothing was added.
        return;
    };
    // The options before the id: NOMKSTREAM, MAXLEN|MINID [=|~] threshold, LIMIT count.
    let mut i = 2;
    let mut trims = false;
    while i < args.len() {
        let a = &args[i];
        if eq(a, "nomkstream") {
            i += 1;
        } else if eq(a, "maxlen") || eq(a, "minid") {
            trims = true;
            i += if args.get(i + 1).is_some_and(|b| &b[..] == b"=" || &b[..] == b"~") {
                3
            } else {
                2
            };
        } else if eq(a, "limit") {
            i += 2;
        } else {
            break;
        }
    }
    let fields = &args[(i + 1).min(args.len())..];
    let len = trims
        .then(|| store.xlen(&args[1]).ok())
        .flatten()
        .map(|n| n.to_string());
    let mut cmd: Vec<&[u8]> = vec![b"XADD", &args[1]];
    if let Some(len) = &len {
        cmd.extend([&b"MAXLEN"[..], b"=", len.as_bytes()]);
    }
    cmd.push(id);
    cmd.extend(fields.iter().map(|f| &f[..]));
    record(&cmd);
}

/// MIGRATE without COPY deletes what it moved: `DEL` of its key or its KEYS.
fn migrated(args: &[Bytes]) {
    if args.iter().skip(6).any(|a| eq(a, "copy")) {
        return;
    }
    let keys: Vec<&[u8]> = match args.iter().position(|a| eq(a, "keys")) {
        Some(at) if args[3].is_empty() => args[at + 1..].iter().map(|k| &k[..]).collect(),
        _ => vec![&args[3][..]],
    };
    let mut cmd: Vec<&[u8]> = vec![b"DEL"];
    cmd.extend(keys);
    record(&cmd);
}

/// A key as it is now: `RESTORE key deadline payload REPLACE ABSTTL`, or `DEL key` if it is gone.
pub fn state_of(store: &Store, key: &[u8]) {
    match store.state_of(key, true) {
        None => record(&[&b"DEL"[..], key]),
        Some((payload, deadline)) => {
            let d = deadline.unwrap_or(0).to_string();
            record(&[
                &b"RESTORE"[..],
                key,
                d.as_bytes(),
                &payload,
                b"REPLACE",
                b"ABSTTL",
            ]);
        }
    }
}

/// The string of a bulk reply (`$n\r\n...\r\n`), if it is one.
fn bulk(reply: &[u8]) -> Option<&[u8]> {
    let mut at = 0;
    let v = next_bulk(reply, &mut at)?;
    (at == reply.len()).then_some(v)
}

/// The strings of a bulk reply or of an array or set of bulks (RESP2 or RESP3).
fn bulks(reply: &[u8]) -> Vec<&[u8]> {
    match reply.first() {
        Some(b'$') => bulk(reply).into_iter().collect(),
        Some(b'*' | b'~') => {
            let Some(end) = reply.windows(2).position(|w| w == b"\r\n") else {
                return Vec::new();
            };
            let n: usize = std::str::from_utf8(&reply[1..end])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let mut at = end + 2;
            (0..n).map_while(|_| next_bulk(reply, &mut at)).collect()
        }
        _ => Vec::new(),
    }
}

/// The bulk string at `*at`, moving past it.
fn next_bulk<'a>(reply: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let rest = reply.get(*at..)?;
    if rest.first() != Some(&b'$') {
        return None;
    }
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    let n: usize = std::str::from_utf8(&rest[1..end]).ok()?.parse().ok()?;
    let v = rest.get(end + 2..end + 2 + n)?;
    *at += end + 2 + n + 2;
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_replies_it_records_from() {
        assert_eq!(bulk(b"$3\r\n1.5\r\n"), Some(&b"1.5"[..]));
        assert_eq!(bulk(b"$-1\r\n"), None);
        assert_eq!(bulks(b"*2\r\n$1\r\na\r\n$2\r\nbc\r\n"), vec![&b"a"[..], b"bc"]);
        assert_eq!(bulks(b"~1\r\n$1\r\na\r\n"), vec![&b"a"[..]]);
        assert_eq!(bulks(b"$1\r\nz\r\n"), vec![&b"z"[..]]);
        assert!(bulks(b"*0\r\n").is_empty());
        assert!(bulks(b"_\r\n").is_empty());
    }
}
