//! The stream consumer groups' own commands: XGROUP (CREATE SETID DESTROY CREATECONSUMER DELCONSUMER
//! HELP), XACK and XPENDING, with Redis 7.0's argument rules, replies and error texts; reading through a
//! group is `stream_read_group.rs`, claiming `stream_claim.rs`, XINFO `stream_info.rs` (`cmd::stream`
//! has the entries' replies and id arguments they all share).

use bytes::Bytes;
use hopless_kv::types::stream::{Group, Nack, StreamId};
use hopless_kv::KvAlloc;

use super::command::{help, int_arg, subcommand, Command, Ctx};
use super::stream::{bound, id_arg, id_bulk, now_ms};
use crate::codec::Reply;
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("xgroup", -2, "", xgroup)
        .subs(&["create", "createconsumer", "delconsumer", "destroy", "help", "setid"]),
    Command::new("xack", -4, "write fast", xack).keys(1, 1, 1),
    Command::new("xpending", -3, "readonly", xpending).keys(1, 1, 1),
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

/// A blocked XREADGROUP's answer when its group went away.
pub(super) const NO_LONGER: &str = "NOGROUP the consumer group this client was blocked on no longer exists";

/// Redis's `addReplySubcommandSyntaxError`.
pub(super) fn sub_syntax(a: &[Bytes]) -> CmdError {
    CmdError::Msg(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(&a[1]),
        String::from_utf8_lossy(&a[0]).to_ascii_uppercase()
    ))
}

pub(super) fn no_group(group: &[u8], key: &[u8]) -> CmdError {
    CmdError::Msg(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    ))
}

pub(super) fn no_key_or_group(key: &[u8], group: &[u8]) -> CmdError {
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
        c.shared
            .blocked
            .serve(&c.shared.store, &c.shared.events, std::iter::once(&key[..]));
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
