//! The keyspace events of a command that ran, as Redis 7.0 publishes them: worked out from the command,
//! its arguments, its reply and what its keys were before and are after, so that the handlers stay as
//! they are and a server with no class on pays one relaxed load a command.
//!
//! [`before`] notes what a command's keys were (present, with a TTL; a ZADD's members' scores, a
//! stream's length) while events are on; [`after`] turns the outcome into Redis's events in Redis's
//! order: the command's own (`set`, `lpush`, `rename_from`...), `del` for a key a pop or removal left
//! empty, `new` before the first event of a key the command created, `keymiss` for a read of a missing
//! key. A key that expires or is evicted is told by the store (`keyspace_events.rs`), when it happens.

use bytes::Bytes;

use super::command::Table;
use super::key_args::key_positions;
use crate::keyspace_events::{KeyspaceEvents, GENERIC, HASH, KEY_MISS, LIST, NEW, SET, STREAM, STRING, ZSET};
use crate::state::Shared;
use crate::words::eq;

/// A command's keys before it ran.
#[derive(Default)]
pub struct Before {
    /// Each key's argument index, whether it existed and whether it had a TTL.
    keys: Vec<(usize, bool, bool)>,
    /// ZADD's (and GEOADD's) members' scores.
    scores: Vec<Option<f64>>,
    /// XADD's stream length.
    xlen: usize,
    /// For the commands that create or delete a consumer (XREADGROUP, XCLAIM, XAUTOCLAIM, XGROUP
    /// DELCONSUMER): each stream key's index, and whether the consumer was there.
    consumers: Vec<(usize, bool)>,
}

impl Before {
    fn key(&self, at: usize) -> (bool, bool) {
        self.keys
            .iter()
            .find(|k| k.0 == at)
            .map_or((false, false), |k| (k.1, k.2))
    }

    fn existed(&self, at: usize) -> bool {
        self.key(at).0
    }
}

/// What command `i`'s keys are, if keyspace events are on (None: off, nothing to do after).
pub fn before(shared: &Shared, table: &Table, i: usize, args: &[Bytes]) -> Option<Before> {
    let ev = &shared.events;
    if !ev.active() {
        return None;
    }
    let store = &shared.store;
    let mut b = Before::default();
    for at in key_positions(table, i, args).unwrap_or_default() {
        let ttl = store.pttl(&args[at]);
        b.keys.push((at, ttl != -2, ttl >= 0));
    }
    let name = table.commands()[i].name;
    if (name == "zadd" || name == "geoadd") && ev.wants(ZSET) {
        b.scores = scored_members(name, args)
            .iter()
            .map(|m| store.zscore(&args[1], m).ok().flatten())
            .collect();
    }
    if name == "xadd" && ev.wants(STREAM) {
        b.xlen = store.xlen(&args[1]).unwrap_or(0);
    }
    if let Some((group, consumer)) = consumer_args(name, args).filter(|_| ev.wants(STREAM)) {
        let at: Vec<usize> = match name {
            "xreadgroup" => b.keys.iter().map(|k| k.0).collect(),
            "xgroup" => vec![2],
            _ => vec![1],
        };
        b.consumers = at
            .into_iter()
            .map(|k| (k, consumer_exists(shared, &args[k], group, consumer)))
            .collect();
    }
    Some(b)
}

/// The group and consumer a command names, for those that create a consumer when it is missing
/// (XREADGROUP, XCLAIM, XAUTOCLAIM) or delete one (XGROUP DELCONSUMER).
fn consumer_args<'a>(name: &str, a: &'a [Bytes]) -> Option<(&'a [u8], &'a [u8])> {
    match name {
        "xreadgroup" => {
            let g = a.iter().position(|x| eq(x, "group"))?;
            Some((a.get(g + 1)?, a.get(g + 2)?))
        }
        "xclaim" | "xautoclaim" => Some((a.get(2)?, a.get(3)?)),
        "xgroup" if a.len() == 5 && eq(&a[1], "delconsumer") => Some((&a[3], &a[4])),
        _ => None,
    }
}

fn consumer_exists(shared: &Shared, key: &[u8], group: &[u8], consumer: &[u8]) -> bool {
    shared
        .store
        .read_stream(key, |s| {
            s.group(group).is_some_and(|g| g.consumer(consumer).is_some())
        })
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// The events to publish, in order: (class, event, key).
type Events<'a> = Vec<(u32, &'static str, &'a [u8])>;

/// Publishes the events of command `i`, which ran with `args` and replied `reply`.
pub fn after(
    shared: &Shared,
    table: &Table,
    i: usize,
    args: &[Bytes],
    reply: &[u8],
    before: &Before,
    changed: Option<&[usize]>,
) {
    let ev: &KeyspaceEvents = &shared.events;
    let cmd = &table.commands()[i];
    // A failed command changed nothing; a command that blocked has not run yet (its pop's events go
    // out when it is served, from `blocked.rs`).
    if reply.first() == Some(&b'-') {
        return;
    }
    // XREADGROUP makes its consumer before it blocks.
    if let Some((group, consumer)) = consumer_args(cmd.name, args).filter(|_| cmd.name != "xgroup") {
        for &(k, was) in &before.consumers {
            if !was && consumer_exists(shared, &args[k], group, consumer) {
                ev.notify(STREAM, "xgroup-createconsumer", &args[k]);
            }
        }
    }
    if reply.is_empty() {
        return;
    }
    let exists = |k: &[u8]| shared.store.key_type(k).is_some();
    let mut out: Events<'_> = Vec::new();
    own_events(shared, cmd.name, args, reply, before, changed, &exists, &mut out);
    if ev.wants(KEY_MISS) && cmd.has_flag("readonly") {
        for &(at, _, _) in &before.keys {
            if !exists(&args[at]) {
                out.push((KEY_MISS, "keymiss", &args[at]));
            }
        }
    }
    let mut created: Vec<&[u8]> = Vec::new();
    if ev.wants(NEW) {
        created = before
            .keys
            .iter()
            .filter(|k| !k.1 && exists(&args[k.0]))
            .map(|k| &args[k.0][..])
            .collect();
    }
    // A key created without an event of its own here (its class off) still has its `new`.
    let own: Vec<&[u8]> = out.iter().map(|e| e.2).collect();
    created.retain(|k| {
        let alone = !own.contains(k);
        if alone {
            ev.notify(NEW, "new", k);
        }
        !alone
    });
    for (class, event, key) in out {
        if let Some(p) = created.iter().position(|k| *k == key) {
            ev.notify(NEW, "new", key);
            created.remove(p);
        }
        ev.notify(class, event, key);
    }
}

/// Whether `r` is a null or an empty array: nothing popped.
fn nothing(r: &[u8]) -> bool {
    matches!(r, b"$-1\r\n" | b"*-1\r\n" | b"_\r\n" | b"*0\r\n")
}

/// An integer reply's value.
fn int(r: &[u8]) -> Option<i64> {
    let body = r.strip_prefix(b":")?.strip_suffix(b"\r\n")?;
    std::str::from_utf8(body).ok()?.parse().ok()
}

fn ok(r: &[u8]) -> bool {
    r == b"+OK\r\n"
}

/// The first bulk string of an array reply (the key of BLPOP's, LMPOP's, BZPOPMIN's).
fn first_bulk(r: &[u8]) -> Option<&[u8]> {
    let rest = r.strip_prefix(b"*")?;
    let nl = rest.iter().position(|&c| c == b'\n')?;
    let rest = rest[nl + 1..].strip_prefix(b"$")?;
    let nl = rest.iter().position(|&c| c == b'\n')?;
    let len: usize = std::str::from_utf8(&rest[..nl - 1]).ok()?.parse().ok()?;
    rest.get(nl + 1..nl + 1 + len)
}

/// ZADD's members (after its options, every other argument) or GEOADD's (every third).
fn scored_members<'a>(name: &str, args: &'a [Bytes]) -> Vec<&'a [u8]> {
    const OPTIONS: [&str; 6] = ["nx", "xx", "gt", "lt", "ch", "incr"];
    let first = 2 + args[2..]
        .iter()
        .take_while(|a| OPTIONS.iter().any(|o| eq(a, o)))
        .count();
    let (skip, step) = if name == "geoadd" { (2, 3) } else { (1, 2) };
    args[first..]
        .iter()
        .skip(skip)
        .step_by(step)
        .map(|m| &m[..])
        .collect()
}

/// The events of the command itself (and the `del` of a key it emptied), in Redis's order.
#[allow(clippy::too_many_arguments)]
fn own_events<'a>(
    shared: &Shared,
    name: &str,
    a: &'a [Bytes],
    reply: &[u8],
    before: &Before,
    changed: Option<&[usize]>,
    exists: &dyn Fn(&[u8]) -> bool,
    out: &mut Events<'a>,
) {
    let key: &'a [u8] = a.get(1).map_or(&[], |k| &k[..]);
    let has = |w: &str| a[1..].iter().any(|x| eq(x, w));
    // The event, then `del` if the key is gone.
    let emptied = |class: u32, event: &'static str, k: &'a [u8], out: &mut Events<'a>| {
        out.push((class, event, k));
        if !exists(k) {
            out.push((GENERIC, "del", k));
        }
    };
    // A store command's destination: its event, or `del` of what was there when the result is empty.
    let stored = |class: u32, event: &'static str, at: usize, out: &mut Events<'a>| match int(reply) {
        Some(n) if n > 0 => out.push((class, event, &a[at])),
        _ if before.existed(at) => out.push((GENERIC, "del", &a[at])),
        _ => {}
    };
    match name {
        "set" => {
            let happened = if has("nx") {
                !before.existed(1)
            } else if has("xx") {
                before.existed(1)
            } else {
                true
            };
            if happened {
                out.push((STRING, "set", key));
                if ["ex", "px", "exat", "pxat"].iter().any(|w| has(w)) {
                    out.push((GENERIC, "expire", key));
                }
            }
        }
        "setnx" if int(reply) == Some(1) => out.push((STRING, "set", key)),
        "setex" | "psetex" => {
            out.push((STRING, "set", key));
            out.push((GENERIC, "expire", key));
        }
        "getset" => out.push((STRING, "set", key)),
        "mset" => out.extend(a[1..].iter().step_by(2).map(|k| (STRING, "set", &k[..]))),
        "msetnx" if int(reply) == Some(1) => {
            out.extend(a[1..].iter().step_by(2).map(|k| (STRING, "set", &k[..])))
        }
        "getdel" if !nothing(reply) => out.push((GENERIC, "del", key)),
        "getex" if !nothing(reply) => {
            if ["ex", "px", "exat", "pxat"].iter().any(|w| has(w)) {
                let e = if exists(key) { "expire" } else { "del" };
                out.push((GENERIC, e, key));
            } else if has("persist") && before.key(1).1 {
                out.push((GENERIC, "persist", key));
            }
        }
        "append" => out.push((STRING, "append", key)),
        "setrange" if a.get(3).is_some_and(|v| !v.is_empty()) => out.push((STRING, "setrange", key)),
        "incr" | "decr" | "incrby" | "decrby" => out.push((STRING, "incrby", key)),
        "incrbyfloat" => out.push((STRING, "incrbyfloat", key)),
        "setbit" => out.push((STRING, "setbit", key)),
        "bitfield" if has("set") || has("incrby") => out.push((STRING, "setbit", key)),
        "bitop" => stored(STRING, "set", 2, out),
        "pfadd" if int(reply) == Some(1) => out.push((STRING, "pfadd", key)),
        "pfmerge" => out.push((STRING, "pfadd", key)),
        "del" | "unlink" => {
            for (j, k) in a.iter().enumerate().skip(1) {
                let first = a[1..j].iter().all(|o| o != k);
                if first && before.existed(j) {
                    out.push((GENERIC, "del", k));
                }
            }
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" if int(reply) == Some(1) => {
            let e = if exists(key) { "expire" } else { "del" };
            out.push((GENERIC, e, key));
        }
        "persist" if int(reply) == Some(1) => out.push((GENERIC, "persist", key)),
        "rename" | "renamenx" if (ok(reply) || int(reply) == Some(1)) && a[1] != a[2] => {
            out.push((GENERIC, "rename_from", key));
            out.push((GENERIC, "rename_to", &a[2]));
        }
        "copy" if int(reply) == Some(1) => out.push((GENERIC, "copy_to", &a[2])),
        // A RESTORE whose TTL had passed created nothing, and deleted the key under REPLACE.
        "restore" if ok(reply) && exists(&a[1]) => out.push((GENERIC, "restore", &a[1])),
        "restore" if ok(reply) && before.existed(1) => out.push((GENERIC, "del", &a[1])),
        "sort" => {
            if let Some(&(at, _, _)) = before.keys.iter().find(|k| k.0 != 1) {
                stored(LIST, "sortstore", at, out);
            }
        }
        "lpush" | "rpush" | "lpushx" | "rpushx" if int(reply).is_some_and(|n| n > 0) => {
            out.push((LIST, if name.starts_with('l') { "lpush" } else { "rpush" }, key))
        }
        "linsert" if int(reply).is_some_and(|n| n > 0) => out.push((LIST, "linsert", key)),
        "lset" => out.push((LIST, "lset", key)),
        "lpop" | "rpop" if !nothing(reply) => {
            emptied(LIST, if name == "lpop" { "lpop" } else { "rpop" }, key, out)
        }
        "lrem" if int(reply).is_some_and(|n| n > 0) => emptied(LIST, "lrem", key, out),
        "ltrim" if before.existed(1) => emptied(LIST, "ltrim", key, out),
        "lmove" | "blmove" | "rpoplpush" | "brpoplpush" if !nothing(reply) => {
            let (from, to) = match name {
                "lmove" | "blmove" => (eq(&a[3], "left"), eq(&a[4], "left")),
                _ => (false, true),
            };
            out.push((LIST, if to { "lpush" } else { "rpush" }, &a[2]));
            emptied(LIST, if from { "lpop" } else { "rpop" }, key, out);
        }
        "blpop" | "brpop" | "lmpop" | "blmpop" if !nothing(reply) => {
            if let Some(k) = first_bulk(reply).and_then(|k| a.iter().find(|x| x[..] == *k)) {
                let left = name == "blpop" || (name.ends_with("mpop") && has("left"));
                emptied(LIST, if left { "lpop" } else { "rpop" }, k, out);
            }
        }
        "hset" | "hmset" => out.push((HASH, "hset", key)),
        "hsetnx" if int(reply) == Some(1) => out.push((HASH, "hset", key)),
        "hdel" if int(reply).is_some_and(|n| n > 0) => emptied(HASH, "hdel", key, out),
        "hincrby" => out.push((HASH, "hincrby", key)),
        "hincrbyfloat" => out.push((HASH, "hincrbyfloat", key)),
        "sadd" if int(reply).is_some_and(|n| n > 0) => out.push((SET, "sadd", key)),
        "srem" if int(reply).is_some_and(|n| n > 0) => emptied(SET, "srem", key, out),
        "spop" if !nothing(reply) => emptied(SET, "spop", key, out),
        "smove" if int(reply) == Some(1) && a[1] != a[2] => {
            emptied(SET, "srem", key, out);
            if changed.is_none_or(|c| c.contains(&2)) {
                out.push((SET, "sadd", &a[2]));
            }
        }
        "sinterstore" | "sunionstore" | "sdiffstore" => {
            let e = match name {
                "sinterstore" => "sinterstore",
                "sunionstore" => "sunionstore",
                _ => "sdiffstore",
            };
            stored(SET, e, 1, out)
        }
        "zadd" | "geoadd" => {
            if has("incr") {
                if !nothing(reply) {
                    out.push((ZSET, "zincr", key));
                }
            } else {
                let store = &shared.store;
                let changed = scored_members(name, a).iter().zip(&before.scores).any(|(m, s)| {
                    store.zscore(key, m).ok().flatten().map(f64::to_bits) != s.map(f64::to_bits)
                });
                if changed {
                    out.push((ZSET, "zadd", key));
                }
            }
        }
        "zincrby" => out.push((ZSET, "zincr", key)),
        "zrem" if int(reply).is_some_and(|n| n > 0) => emptied(ZSET, "zrem", key, out),
        "zremrangebyscore" | "zremrangebyrank" | "zremrangebylex" if int(reply).is_some_and(|n| n > 0) => {
            let e = match name {
                "zremrangebyscore" => "zremrangebyscore",
                "zremrangebyrank" => "zremrangebyrank",
                _ => "zremrangebylex",
            };
            emptied(ZSET, e, key, out)
        }
        "zpopmin" | "zpopmax" if !nothing(reply) => emptied(
            ZSET,
            if name == "zpopmin" { "zpopmin" } else { "zpopmax" },
            key,
            out,
        ),
        "bzpopmin" | "bzpopmax" | "zmpop" | "bzmpop" if !nothing(reply) => {
            if let Some(k) = first_bulk(reply).and_then(|k| a.iter().find(|x| x[..] == *k)) {
                let min = name == "bzpopmin" || (name.ends_with("mpop") && has("min"));
                emptied(ZSET, if min { "zpopmin" } else { "zpopmax" }, k, out);
            }
        }
        "zunionstore" => stored(ZSET, "zunionstore", 1, out),
        "zinterstore" => stored(ZSET, "zinterstore", 1, out),
        "zdiffstore" => stored(ZSET, "zdiffstore", 1, out),
        "zrangestore" => stored(ZSET, "zrangestore", 1, out),
        "geosearchstore" => stored(ZSET, "geosearchstore", 1, out),
        "georadius" | "georadiusbymember" => {
            if let Some(&(at, _, _)) = before.keys.iter().find(|k| k.0 != 1) {
                stored(ZSET, "georadiusstore", at, out);
            }
        }
        "xadd" if !nothing(reply) => {
            out.push((STREAM, "xadd", key));
            let now = shared.store.xlen(key).unwrap_or(0);
            if now < before.xlen + 1 {
                out.push((STREAM, "xtrim", key));
            }
        }
        "xtrim" if int(reply).is_some_and(|n| n > 0) => out.push((STREAM, "xtrim", key)),
        "xdel" if int(reply).is_some_and(|n| n > 0) => out.push((STREAM, "xdel", key)),
        "xsetid" => out.push((STREAM, "xsetid", key)),
        "xgroup" if a.len() > 2 => {
            let sub = &a[1];
            let k: &[u8] = &a[2];
            if eq(sub, "create") {
                out.push((STREAM, "xgroup-create", k));
            } else if eq(sub, "setid") {
                out.push((STREAM, "xgroup-setid", k));
            } else if eq(sub, "destroy") && int(reply) == Some(1) {
                out.push((STREAM, "xgroup-destroy", k));
            } else if eq(sub, "createconsumer") && int(reply) == Some(1) {
                out.push((STREAM, "xgroup-createconsumer", k));
            } else if eq(sub, "delconsumer") && before.consumers.first().is_some_and(|c| c.1) {
                out.push((STREAM, "xgroup-delconsumer", k));
            }
        }
        _ => {}
    }
}
