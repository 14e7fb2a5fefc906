//! XINFO: a stream's counters, first and last entries (or, with FULL, its entries and every group's
//! pending entries and consumers), its groups and a group's consumers, as Redis 7.0 answers them.

use bytes::Bytes;
use hopless_kv::types::stream::{Group, Stream, StreamId};
use hopless_kv::KvAlloc;

use super::command::{help, int_arg, subcommand, Command, Ctx};
use super::stream::{entry_reply, id_bulk, now_ms, range_reply};
use super::stream_group::{no_group, sub_syntax};
use crate::codec::Reply;
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("xinfo", -2, "", xinfo)
        .subs(&["consumers", "groups", "help", "stream"]),
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
                    read_and_lag(out, s, g);
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

/// A group's `entries-read` and `lag` fields (null where not known).
fn read_and_lag<A: KvAlloc>(out: &mut Reply, s: &Stream<A>, g: &Group<A>) {
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
        read_and_lag(out, s, g);
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
