//! The stream consumer-group commands: XGROUP XREADGROUP (BLOCK too) XACK XPENDING XCLAIM XAUTOCLAIM,
//! and XINFO, with Redis 7.0's argument rules, replies and error texts (`cmd::stream` has the entries'
//! replies and id arguments they share).
//!
//! XREADGROUP BLOCK waits as XREAD BLOCK does: an XADD to a key it waits on serves it the entries after
//! its group's last delivered id, if any are left when its turn comes (a reader of the same group
//! before it may have taken them); a group destroyed meanwhile answers it with Redis's NOGROUP error.

use std::time::Duration;

use bytes::Bytes;
use hopless_kv::types::stream::{Claim, Claimed, Group, Nack, Stream, StreamId};
use hopless_kv::{Kind, KvAlloc, Store};

use super::command::{help, int_arg, subcommand, Command, Ctx};
use super::stream::{
    block_arg, bound, entry_reply, id_arg, id_bulk, now_ms, range_reply, BLOCKED_DEFAULT_COUNT, INVALID_ID,
};
use crate::blocked::{BlockedOp, Tried};
use crate::codec::{Proto, Reply};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult, SYNTAX};
use crate::state::BlockWait;
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("xgroup", -2, "", xgroup).acl("@slow")
        .subs(&["create", "createconsumer", "delconsumer", "destroy", "help", "setid"])
        .doc("stream", "5.0.0", "A container for consumer groups commands"),
    Command::new("xreadgroup", -7, "write blocking movablekeys", xreadgroup).keys(0, 0, 0)
        .acl("@write @stream @slow @blocking")
        .doc("stream", "5.0.0", "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block."),
    Command::new("xack", -4, "write fast", xack).keys(1, 1, 1).acl("@write @stream @fast")
        .doc("stream", "5.0.0", "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL."),
    Command::new("xpending", -3, "readonly", xpending).keys(1, 1, 1).acl("@read @stream @slow")
        .doc("stream", "5.0.0", "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged."),
    Command::new("xclaim", -6, "write fast", xclaim).keys(1, 1, 1).acl("@write @stream @fast")
        .doc("stream", "5.0.0", "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer."),
    Command::new("xautoclaim", -6, "write fast", xautoclaim).keys(1, 1, 1).acl("@write @stream @fast")
        .doc("stream", "6.2.0", "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer."),
    Command::new("xinfo", -2, "", xinfo).acl("@slow")
        .subs(&["consumers", "groups", "help", "stream"])
        .doc("stream", "5.0.0", "A container for stream introspection commands"),
];

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

/// A blocked XREADGROUP's answer when its group went away.
const NO_LONGER: &str = "NOGROUP the consumer group this client was blocked on no longer exists";

/// Redis's `addReplySubcommandSyntaxError`.
fn sub_syntax(a: &[Bytes]) -> CmdError {
    CmdError::Msg(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(&a[1]),
        String::from_utf8_lossy(&a[0]).to_ascii_uppercase()
    ))
}

fn no_group(group: &[u8], key: &[u8]) -> CmdError {
    CmdError::Msg(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    ))
}

fn no_key_or_group(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::Msg(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP.
fn xgroup(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    let arity_ok = match sub.as_str() {
        "create" | "setid" => a.len() >= 5,
        "destroy" => a.len() == 4,
        "createconsumer" | "delconsumer" => a.len() == 5,
        "help" => a.len() == 2,
        _ => return Err(unknown_sub(c.name, &a[1])),
    };
    if !arity_ok {
        return Err(wrong_sub_args(c.name, &a[1]));
    }
    if sub == "help" {
        help(c, XGROUP_HELP);
        return Ok(());
    }
    let mut mkstream = false;
    let mut entries_read = -1i64;
    let mut i = 5;
    while i < a.len() {
        if sub == "create" && eq(&a[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (sub == "create" || sub == "setid") && eq(&a[i], "entriesread") && i + 1 < a.len() {
            entries_read = int_arg(&a[i + 1])?;
            if entries_read < -1 {
                return Err(CmdError::Static(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            i += 2;
        } else {
            return Err(sub_syntax(a));
        }
    }
    if (sub == "create" && a.len() > 8) || (sub == "setid" && a.len() != 5 && a.len() != 7) {
        return Err(sub_syntax(a));
    }
    let (key, group) = (&a[2], &a[3]);
    let now = now_ms();
    let r = c.shared.store.write_stream(key, mkstream, |s| {
        let exists = s.group(group).is_some();
        if !exists && matches!(sub.as_str(), "setid" | "createconsumer" | "delconsumer") {
            return Err(hopless_kv::Error::Msg("NOGROUP"));
        }
        let last = |arg: &[u8], strict: bool| -> Result<StreamId, hopless_kv::Error> {
            if arg == b"$" {
                Ok(s.last_id())
            } else {
                StreamId::parse(arg, 0, strict).ok_or(hopless_kv::Error::Msg(
                    "ERR Invalid stream ID specified as stream command argument",
                ))
            }
        };
        Ok(match sub.as_str() {
            "create" => {
                let id = last(&a[4], true)?;
                if !s.create_group(group, id, entries_read) {
                    return Err(hopless_kv::Error::Msg(
                        "BUSYGROUP Consumer Group name already exists",
                    ));
                }
                Reply3::Ok
            }
            "setid" => {
                let id = last(&a[4], false)?;
                let g = s.group_mut(group).expect("checked above");
                g.last_id = id;
                g.entries_read = entries_read;
                Reply3::Ok
            }
            "destroy" => Reply3::Int(i64::from(s.destroy_group(group))),
            "createconsumer" => {
                let g = s.group_mut(group).expect("checked above");
                Reply3::Int(i64::from(g.create_consumer(&a[4], now)))
            }
            _ => {
                let g = s.group_mut(group).expect("checked above");
                Reply3::Int(g.delete_consumer(&a[4]).unwrap_or(0) as i64)
            }
        })
    });
    if sub == "destroy" && matches!(r, Ok(Some(Reply3::Int(1)))) && c.shared.blocked.active() {
        // Its blocked readers learn that it is gone (XGROUP is no write command of its own for the
        // dispatcher to serve them after).
        c.shared.blocked.serve(&c.shared.store, std::iter::once(&key[..]));
    }
    match r {
        Ok(Some(Reply3::Ok)) => c.out.ok(),
        Ok(Some(Reply3::Int(n))) => c.out.int(n),
        Ok(None) => return Err(CmdError::Static(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use \
                 the MKSTREAM option to create an empty stream automatically.",
        )),
        Err(hopless_kv::Error::Msg("NOGROUP")) => return Err(no_group(group, key)),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// XGROUP's two reply shapes.
enum Reply3 {
    Ok,
    Int(i64),
}

/// XACK key group id [id ...]
fn xack(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let store = &c.shared.store;
    // Redis looks the group up before it parses the ids: a missing one answers 0 whatever they are.
    let has_group = store.read_stream(&a[1], |s| s.group(&a[2]).is_some())?;
    if has_group != Some(true) {
        c.out.int(0);
        return Ok(());
    }
    let ids = a[3..]
        .iter()
        .map(|b| id_arg(b, 0, true))
        .collect::<Result<Vec<_>, _>>()?;
    let n = store
        .write_stream(&a[1], false, |s| {
            Ok(s.group_mut(&a[2])
                .map_or(0, |g| ids.iter().filter(|&&id| g.ack(id)).count()))
        })?
        .unwrap_or(0);
    c.out.int(n as i64);
    Ok(())
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
fn xpending(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() != 3 && !(6..=9).contains(&a.len()) {
        return Err(SYNTAX);
    }
    let mut range = None;
    if a.len() >= 6 {
        let mut at = 3;
        let mut min_idle = 0i64;
        if eq(&a[3], "idle") {
            min_idle = int_arg(&a[4])?;
            if a.len() < 8 {
                return Err(SYNTAX);
            }
            at += 2;
        }
        let count = int_arg(&a[at + 2])?.max(0) as usize;
        let (mut start, ex) = bound(&a[at], 0)?;
        if ex {
            start = start
                .next()
                .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?;
        }
        let (mut end, ex) = bound(&a[at + 1], u64::MAX)?;
        if ex {
            end = end
                .prev()
                .ok_or(CmdError::Static("ERR invalid end ID for the interval"))?;
        }
        range = Some((min_idle, start, end, count, a.get(at + 3)));
    }
    let (key, group) = (&a[1], &a[2]);
    let out = &mut *c.out;
    let now = now_ms();
    let found = c.shared.store.read_stream(key, |s| {
        let Some(g) = s.group(group) else {
            return false;
        };
        match range {
            None => pending_summary(out, g),
            Some((min_idle, start, end, count, consumer)) => {
                let idle_enough =
                    |nack: &Nack| min_idle == 0 || now.saturating_sub(nack.delivered_ms) as i64 >= min_idle;
                let picked: Vec<(StreamId, Nack)> = match consumer {
                    Some(name) => g.consumer(name).map_or_else(Vec::new, |cons| {
                        cons.pel_from(start)
                            .iter()
                            .take_while(|&&id| id <= end)
                            .filter_map(|&id| g.pel_from(id).first().copied())
                            .filter(|(_, nack)| idle_enough(nack))
                            .take(count)
                            .collect()
                    }),
                    None => g
                        .pel_from(start)
                        .iter()
                        .take_while(|(id, _)| *id <= end)
                        .filter(|(_, nack)| idle_enough(nack))
                        .take(count)
                        .copied()
                        .collect(),
                };
                out.array(picked.len());
                for (id, nack) in picked {
                    out.array(4);
                    id_bulk(out, id);
                    out.bulk(nack.consumer.map_or(&[][..], |id| g.consumer_name(id)));
                    out.int(now.saturating_sub(nack.delivered_ms) as i64);
                    out.int(nack.deliveries as i64);
                }
            }
        }
        true
    })?;
    if found != Some(true) {
        return Err(no_key_or_group(key, group));
    }
    Ok(())
}

/// XPENDING's summary: the count, the least and greatest ids, and each consumer's count.
fn pending_summary<A: KvAlloc>(out: &mut Reply, g: &Group<A>) {
    out.array(4);
    out.int(g.pel().len() as i64);
    let (Some((first, _)), Some((last, _))) = (g.pel().first(), g.pel().last()) else {
        out.null();
        out.null();
        out.null_array();
        return;
    };
    id_bulk(out, *first);
    id_bulk(out, *last);
    let holders: Vec<_> = g.consumers().iter().filter(|c| c.pending() > 0).collect();
    out.array(holders.len());
    for h in holders {
        out.array(2);
        out.bulk(h.name());
        out.bulk(h.pending().to_string().as_bytes());
    }
}

/// A claimed entry's reply: the entry, or its id alone (JUSTID).
fn claimed_reply<A: KvAlloc>(out: &mut Reply, c: Claimed<'_, A>) {
    match c {
        Claimed::Entry(e) => entry_reply(out, &e),
        Claimed::Id(id) => id_bulk(out, id),
    }
}

/// An integer option of XCLAIM's, with its own error text.
fn claim_int(b: &[u8], what: &'static str) -> Result<i64, CmdError> {
    hopless_kv::store::parse_i64(b).ok_or(CmdError::Static(what))
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms] [RETRYCOUNT count]
/// [FORCE] [JUSTID] [LASTID lastid]
fn xclaim(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (key, group) = (&a[1], &a[2]);
    let store = &c.shared.store;
    if store.read_stream(key, |s| s.group(group).is_some())? != Some(true) {
        return Err(no_key_or_group(key, group));
    }
    let min_idle = claim_int(&a[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0) as u64;
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match StreamId::parse(&a[j], 0, true) {
            Some(id) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = now_ms();
    let (mut delivered, mut retry, mut force, mut justid, mut last_id) = (None, None, false, false, None);
    while j < a.len() {
        let more = a.len() - 1 - j;
        let o = &a[j][..];
        if eq(o, "force") {
            force = true;
        } else if eq(o, "justid") {
            justid = true;
        } else if eq(o, "idle") && more > 0 {
            j += 1;
            let idle = claim_int(&a[j], "ERR Invalid IDLE option argument for XCLAIM")?;
            delivered = Some(now as i64 - idle);
        } else if eq(o, "time") && more > 0 {
            j += 1;
            delivered = Some(claim_int(&a[j], "ERR Invalid TIME option argument for XCLAIM")?);
        } else if eq(o, "retrycount") && more > 0 {
            j += 1;
            retry = Some(claim_int(
                &a[j],
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?);
        } else if eq(o, "lastid") && more > 0 {
            j += 1;
            last_id = Some(id_arg(&a[j], 0, true)?);
        } else {
            return Err(CmdError::Msg(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(o)
            )));
        }
        j += 1;
    }
    let delivered = match delivered {
        Some(d) if d >= 0 && d <= now as i64 => d as u64,
        _ => now,
    };
    let claim = Claim {
        min_idle_ms: min_idle,
        delivered_ms: delivered,
        // A negative count is Redis's "not given".
        retry: retry.and_then(|r| u64::try_from(r).ok()),
        force,
        justid,
        now_ms: now,
    };
    let out = &mut *c.out;
    store.write_stream(key, false, |s| {
        if let (Some(id), Some(g)) = (last_id, s.group_mut(group)) {
            if id > g.last_id {
                g.last_id = id;
            }
        }
        let mut body = Reply::new(out.proto);
        let mut n = 0;
        s.claim(group, &a[3], &ids, &claim, |cl| {
            claimed_reply(&mut body, cl);
            n += 1;
        });
        out.array(n);
        out.buf.extend_from_slice(&body.buf);
        Ok(())
    })?;
    Ok(())
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
fn xautoclaim(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let min_idle = claim_int(&a[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0) as u64;
    let (mut start, ex) = bound(&a[5], 0)?;
    if ex {
        start = start
            .next()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?;
    }
    let mut count = 100usize;
    let mut justid = false;
    let mut j = 6;
    while j < a.len() {
        if eq(&a[j], "count") && j + 1 < a.len() {
            let max = i64::MAX / 16;
            count = match hopless_kv::store::parse_i64(&a[j + 1]) {
                Some(n) if (1..=max).contains(&n) => n as usize,
                _ => return Err(CmdError::Static("ERR COUNT must be > 0")),
            };
            j += 2;
        } else if eq(&a[j], "justid") {
            justid = true;
            j += 1;
        } else {
            return Err(SYNTAX);
        }
    }
    let (key, group) = (&a[1], &a[2]);
    let store = &c.shared.store;
    if store.read_stream(key, |s| s.group(group).is_some())? != Some(true) {
        return Err(no_key_or_group(key, group));
    }
    let out = &mut *c.out;
    let now = now_ms();
    store.write_stream(key, false, |s| {
        let mut body = Reply::new(out.proto);
        let mut n = 0;
        let (next, deleted) = s.autoclaim(group, &a[3], start, min_idle, count, justid, now, |cl| {
            claimed_reply(&mut body, cl);
            n += 1;
        });
        out.array(3);
        id_bulk(out, next);
        out.array(n);
        out.buf.extend_from_slice(&body.buf);
        out.array(deleted.len());
        for id in deleted {
            id_bulk(out, id);
        }
        Ok(())
    })?;
    Ok(())
}

/// What a blocked XREADGROUP waits for: new entries for its group, on any of its keys.
struct ReadGroup {
    group: Bytes,
    consumer: Bytes,
    count: usize,
    noack: bool,
}

impl BlockedOp for ReadGroup {
    fn kind(&self) -> Kind {
        Kind::Stream
    }

    fn serve(&self, store: &Store, key: &[u8], out: &mut Reply) -> Result<bool, hopless_kv::Error> {
        let r = store.write_stream(key, false, |s| {
            let Some(g) = s.group(&self.group) else {
                return Err(hopless_kv::Error::Msg(NO_LONGER));
            };
            if s.is_empty() || s.last_entry_id() <= g.last_id {
                return Ok(false);
            }
            match out.proto {
                Proto::Resp2 => {
                    out.array(1);
                    out.array(2);
                }
                _ => out.map(1),
            }
            out.bulk(key);
            read_new_reply(out, s, &self.group, &self.consumer, self.count, self.noack);
            Ok(true)
        })?;
        Ok(r == Some(true))
    }

    /// A reader of another group may still want what this one read.
    fn consumes(&self) -> bool {
        false
    }

    /// The key deleted or turned into another type takes the group with it.
    fn gone(&self) -> Option<&'static str> {
        Some(NO_LONGER)
    }
}

/// The entries XREADGROUP `>` delivers, as an array.
fn read_new_reply<A: KvAlloc>(
    out: &mut Reply,
    s: &mut Stream<A>,
    group: &[u8],
    consumer: &[u8],
    count: usize,
    noack: bool,
) {
    let mut body = Reply::new(out.proto);
    let mut n = 0;
    s.read_new(group, consumer, count, noack, now_ms(), |e| {
        entry_reply(&mut body, &e);
        n += 1;
    });
    out.array(n);
    out.buf.extend_from_slice(&body.buf);
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key [key ...] id [id ...]
fn xreadgroup(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut block: Option<Option<Duration>> = None;
    let mut count = 0usize;
    let mut streams_at = 0;
    let mut names: Option<(Bytes, Bytes)> = None;
    let mut noack = false;
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let o = &a[i][..];
        if eq(o, "block") && more > 0 {
            if c.conn.in_script {
                return Err(CmdError::Msg(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&a[0])
                )));
            }
            block = Some(block_arg(&a[i + 1])?);
            i += 1;
        } else if eq(o, "count") && more > 0 {
            count = int_arg(&a[i + 1])?.max(0) as usize;
            i += 1;
        } else if eq(o, "streams") && more > 0 {
            streams_at = i + 1;
            if (a.len() - streams_at) % 2 != 0 {
                return Err(CmdError::Static(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            break;
        } else if eq(o, "group") && more >= 2 {
            names = Some((a[i + 1].clone(), a[i + 2].clone()));
            i += 2;
        } else if eq(o, "noack") {
            noack = true;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(SYNTAX);
    }
    let Some((group, consumer)) = names else {
        return Err(CmdError::Static("ERR Missing GROUP option for XREADGROUP"));
    };
    let n = (a.len() - streams_at) / 2;
    let store = &c.shared.store;
    // Per key: None for `>`, else the id the history read starts after.
    let mut reads: Vec<(Bytes, Option<StreamId>)> = Vec::with_capacity(n);
    for k in 0..n {
        let key = &a[streams_at + k];
        let id = &a[streams_at + n + k][..];
        if store.read_stream(key, |s| s.group(&group).is_some())? != Some(true) {
            return Err(CmdError::Msg(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(&group)
            )));
        }
        let after = match id {
            b"$" => return Err(CmdError::Static(
                "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of \
                     this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID \
                     would just return an empty result set.",
            )),
            b">" => None,
            _ => Some(StreamId::parse(id, 0, true).ok_or(INVALID_ID)?),
        };
        reads.push((key.clone(), after));
    }
    let mut body = Reply::new(c.out.proto);
    let mut served = 0;
    let now = now_ms();
    for (key, after) in &reads {
        store.write_stream(key, false, |s| {
            let history = after.is_some();
            let new =
                !history && !s.is_empty() && s.group(&group).is_some_and(|g| s.last_entry_id() > g.last_id);
            if !history && !new {
                return Ok(());
            }
            served += 1;
            if body.proto == Proto::Resp2 {
                body.array(2);
            }
            body.bulk(key);
            match after {
                Some(gt) => history_reply(&mut body, s, &group, &consumer, *gt, count, now),
                None => read_new_reply(&mut body, s, &group, &consumer, count, noack),
            }
            Ok(())
        })?;
    }
    if served > 0 {
        match c.out.proto {
            Proto::Resp2 => c.out.array(served),
            _ => c.out.map(served),
        }
        c.out.buf.extend_from_slice(&body.buf);
        return Ok(());
    }
    let Some(timeout) = block else {
        c.out.null_array();
        return Ok(());
    };
    if c.in_exec {
        c.out.null_array();
        return Ok(());
    }
    let keys: Vec<Bytes> = reads.into_iter().map(|(k, _)| k).collect();
    let op = ReadGroup {
        group,
        consumer,
        count: if count == 0 { BLOCKED_DEFAULT_COUNT } else { count },
        noack,
    };
    let tried = c
        .shared
        .blocked
        .try_or_block(store, c.conn.id(), keys, Box::new(op), c.out)?;
    if let Tried::Blocked(reply) = tried {
        let deadline = timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
        c.conn.block = Some(BlockWait {
            reply,
            deadline,
            silenced: false,
            slow: None,
        });
    }
    Ok(())
}

/// A history read's reply: each pending id from after `gt`, with its entry, or a null array for one
/// deleted since.
fn history_reply<A: KvAlloc>(
    out: &mut Reply,
    s: &mut Stream<A>,
    group: &[u8],
    consumer: &[u8],
    gt: StreamId,
    count: usize,
    now: u64,
) {
    let mut body = Reply::new(out.proto);
    let mut n = 0;
    if let Some(start) = gt.next() {
        s.read_history(group, consumer, start, count, now, |id, e| {
            match e {
                Some(e) => entry_reply(&mut body, &e),
                None => {
                    body.array(2);
                    id_bulk(&mut body, id);
                    body.null_array();
                }
            }
            n += 1;
        });
    }
    out.array(n);
    out.buf.extend_from_slice(&body.buf);
}

/// XINFO STREAM|GROUPS|CONSUMERS|HELP.
fn xinfo(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    match sub.as_str() {
        "help" if a.len() == 2 => {
            help(c, XINFO_HELP);
            return Ok(());
        }
        "help" => return Err(wrong_sub_args(c.name, &a[1])),
        "groups" if a.len() != 3 => return Err(wrong_sub_args(c.name, &a[1])),
        "consumers" if a.len() != 4 => return Err(wrong_sub_args(c.name, &a[1])),
        "stream" if a.len() < 3 => return Err(wrong_sub_args(c.name, &a[1])),
        "groups" | "consumers" | "stream" => {}
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    let key = &a[2];
    let now = now_ms();
    let out = &mut *c.out;
    let r = c.shared.store.read_stream(key, |s| -> Result<(), CmdError> {
        match sub.as_str() {
            "consumers" => {
                let g = s.group(&a[3]).ok_or_else(|| no_group(&a[3], key))?;
                out.array(g.consumers().len());
                for cons in g.consumers() {
                    out.map(3);
                    out.bulk(b"name");
                    out.bulk(cons.name());
                    out.bulk(b"pending");
                    out.int(cons.pending() as i64);
                    out.bulk(b"idle");
                    out.int(now.saturating_sub(cons.seen_ms) as i64);
                }
            }
            "groups" => {
                out.array(s.groups().len());
                for g in s.groups() {
                    out.map(6);
                    out.bulk(b"name");
                    out.bulk(g.name());
                    out.bulk(b"consumers");
                    out.int(g.consumers().len() as i64);
                    out.bulk(b"pending");
                    out.int(g.pel().len() as i64);
                    out.bulk(b"last-delivered-id");
                    id_bulk(out, g.last_id);
                    out.bulk(b"entries-read");
                    match g.entries_read {
                        -1 => out.null(),
                        n => out.int(n),
                    }
                    out.bulk(b"lag");
                    match s.lag(g) {
                        Some(n) => out.int(n),
                        None => out.null(),
                    }
                }
            }
            _ => stream_info(out, s, a)?,
        }
        Ok(())
    })?;
    match r {
        Some(r) => r,
        None => Err(CmdError::Static("ERR no such key")),
    }
}

/// XINFO STREAM key [FULL [COUNT count]] (`a` the whole request).
fn stream_info<A: KvAlloc>(out: &mut Reply, s: &Stream<A>, a: &[Bytes]) -> Result<(), CmdError> {
    let opts = &a[3..];
    let full = match opts.len() {
        0 => None,
        1 | 3 if eq(&opts[0], "full") => Some(match opts.get(1) {
            None => 10,
            Some(w) if eq(w, "count") => match int_arg(&opts[2])? {
                n if n < 0 => 10,
                n => n as usize,
            },
            Some(_) => return Err(sub_syntax(a)),
        }),
        _ => return Err(sub_syntax(a)),
    };
    out.map(if full.is_some() { 9 } else { 10 });
    out.bulk(b"length");
    out.int(s.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(s.nodes() as i64);
    // Redis's radix tree's own node count; the nodes here are a sorted array, so this is the count a
    // radix tree of as many 16-byte keys takes at least (a chain, and a node a key).
    out.bulk(b"radix-tree-nodes");
    out.int(if s.nodes() == 0 {
        1
    } else {
        2 * s.nodes() as i64 + 1
    });
    out.bulk(b"last-generated-id");
    id_bulk(out, s.last_id());
    out.bulk(b"max-deleted-entry-id");
    id_bulk(out, s.max_deleted_id());
    out.bulk(b"entries-added");
    out.int(s.entries_added() as i64);
    out.bulk(b"recorded-first-entry-id");
    id_bulk(out, s.first_id());
    let Some(count) = full else {
        out.bulk(b"groups");
        out.int(s.groups().len() as i64);
        for (name, rev) in [(&b"first-entry"[..], false), (b"last-entry", true)] {
            out.bulk(name);
            let mut found = false;
            s.range(StreamId::MIN, StreamId::MAX, rev, |e| {
                entry_reply(out, &e);
                found = true;
                false
            });
            if !found {
                out.null();
            }
        }
        return Ok(());
    };
    out.bulk(b"entries");
    range_reply(out, s, StreamId::MIN, StreamId::MAX, count, false);
    out.bulk(b"groups");
    out.array(s.groups().len());
    for g in s.groups() {
        out.map(7);
        out.bulk(b"name");
        out.bulk(g.name());
        out.bulk(b"last-delivered-id");
        id_bulk(out, g.last_id);
        out.bulk(b"entries-read");
        match g.entries_read {
            -1 => out.null(),
            n => out.int(n),
        }
        out.bulk(b"lag");
        match s.lag(g) {
            Some(n) => out.int(n),
            None => out.null(),
        }
        out.bulk(b"pel-count");
        out.int(g.pel().len() as i64);
        out.bulk(b"pending");
        let pel = &g.pel()[..if count == 0 {
            g.pel().len()
        } else {
            count.min(g.pel().len())
        }];
        out.array(pel.len());
        for (id, nack) in pel {
            out.array(4);
            id_bulk(out, *id);
            out.bulk(nack.consumer.map_or(&[][..], |c| g.consumer_name(c)));
            out.int(nack.delivered_ms as i64);
            out.int(nack.deliveries as i64);
        }
        out.bulk(b"consumers");
        out.array(g.consumers().len());
        for cons in g.consumers() {
            out.map(4);
            out.bulk(b"name");
            out.bulk(cons.name());
            out.bulk(b"seen-time");
            out.int(cons.seen_ms as i64);
            out.bulk(b"pel-count");
            out.int(cons.pending() as i64);
            out.bulk(b"pending");
            let ids = cons.pel_from(StreamId::MIN);
            let ids = &ids[..if count == 0 {
                ids.len()
            } else {
                count.min(ids.len())
            }];
            out.array(ids.len());
            for id in ids {
                let nack = g.pel_from(*id).first().map(|(_, n)| *n);
                out.array(3);
                id_bulk(out, *id);
                out.int(nack.map_or(0, |n| n.delivered_ms) as i64);
                out.int(nack.map_or(0, |n| n.deliveries) as i64);
            }
        }
    }
    Ok(())
}
