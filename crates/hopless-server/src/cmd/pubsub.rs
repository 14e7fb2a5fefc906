//! Pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH, the shard channels' SSUBSCRIBE
//! SUNSUBSCRIBE SPUBLISH (a namespace of their own, as on one Redis cluster node that holds every slot),
//! PUBSUB, and subscribed mode: a RESP2 connection with subscriptions may send only (P|S)(UN)SUBSCRIBE,
//! PING, QUIT and RESET; a RESP3
//! one anything, its messages arriving as push frames between replies. The registry, the outboxes and
//! the output limit are `crate::pubsub`'s.

use bytes::Bytes;

use super::command::{subcommand, Command, Ctx};
use super::spec::Spec;
use crate::codec::Reply;
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};
use crate::pubsub::{ClientSubs, Kind};
use crate::state::ConnState;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("subscribe", -2, "pubsub noscript loading stale", subscribe),
    Command::new("unsubscribe", -1, "pubsub noscript loading stale", unsubscribe),
    Command::new("psubscribe", -2, "pubsub noscript loading stale", psubscribe),
    Command::new("punsubscribe", -1, "pubsub noscript loading stale", punsubscribe),
    Command::new("publish", 3, "pubsub loading stale fast", publish),
    Command::new("ssubscribe", -2, "pubsub noscript loading stale", ssubscribe).keys(1, -1, 1),
    Command::new("sunsubscribe", -1, "pubsub noscript loading stale", sunsubscribe).keys(1, -1, 1),
    Command::new("spublish", 3, "pubsub loading stale fast", spublish).keys(1, 1, 1),
    Command::new("pubsub", -2, "", pubsub)
        .subs(&["channels", "help", "numpat", "numsub", "shardchannels", "shardnumsub"]),
];

/// The commands RESP2's subscribed mode allows (Redis's `processCommand`).
const ALLOWED_SUBSCRIBED: &[&str] = &[
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ssubscribe",
    "sunsubscribe",
    "ping",
    "quit",
    "reset",
];

/// Before a subscribed connection's command runs: writes the messages queued for it (so that a reply
/// never overtakes a message published before its command ran), then, in RESP2, refuses what
/// subscribed mode does not allow (writing Redis's error; false).
pub(super) fn admit(conn: &ConnState, out: &mut Reply, cmd: &Spec, args: &[Bytes]) -> bool {
    let Some(subs) = &conn.pubsub else {
        return true;
    };
    subs.outbox().drain(out, usize::MAX);
    if out.resp3() || ALLOWED_SUBSCRIBED.contains(&cmd.name) {
        return true;
    }
    // A container's subcommand is named with it, `config|get`, as Redis names it.
    let name = match args.get(1) {
        Some(sub) if !cmd.subs.is_empty() => {
            format!(
                "{}|{}",
                cmd.name,
                String::from_utf8_lossy(sub).to_ascii_lowercase()
            )
        }
        _ => cmd.name.to_string(),
    };
    out.error(&format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are \
         allowed in this context"
    ));
    false
}

/// Whether the request is one whose whole answer is pub/sub frames ((P)(UN)SUBSCRIBE), which CLIENT
/// REPLY OFF and SKIP do not silence.
pub(super) fn pushes_only(args: &[Bytes]) -> bool {
    [
        "subscribe",
        "psubscribe",
        "unsubscribe",
        "punsubscribe",
        "ssubscribe",
        "sunsubscribe",
    ]
    .iter()
    .any(|w| args[0].eq_ignore_ascii_case(w.as_bytes()))
}

/// A (un)subscribe confirmation: `[kind, name or nil, the connection's channels + patterns]`, a push
/// frame in RESP3.
fn confirm(out: &mut Reply, kind: &str, name: Option<&[u8]>, count: usize) {
    if out.resp3() {
        out.push(3);
    } else {
        out.array(3);
    }
    out.bulk(kind.as_bytes());
    match name {
        Some(n) => out.bulk(n),
        None => out.null(),
    }
    out.int(count as i64);
}

fn subscribe(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    add(c, Kind::Channel, &a[1..])
}

fn psubscribe(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    add(c, Kind::Pattern, &a[1..])
}

fn ssubscribe(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    add(c, Kind::Shard, &a[1..])
}

fn sunsubscribe(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    drop_names(c, Kind::Shard, &a[1..]);
    Ok(())
}

fn spublish(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.pubsub.publish_shard(&a[1], &a[2]);
    if let Some(subs) = &c.conn.pubsub {
        subs.outbox().drain(c.out, usize::MAX);
    }
    c.out.int(n as i64);
    Ok(())
}

/// What a (un)subscribe reply counts: a shard channel's the connection's shard channels, the others its
/// channels and patterns (Redis 7.0 counts them apart).
fn counted(subs: &ClientSubs, kind: Kind) -> usize {
    match kind {
        Kind::Shard => subs.shard_count(),
        _ => subs.count(),
    }
}

fn unsubscribe(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    drop_names(c, Kind::Channel, &a[1..]);
    Ok(())
}

fn punsubscribe(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    drop_names(c, Kind::Pattern, &a[1..]);
    Ok(())
}

/// (P)SUBSCRIBE: one confirmation a name, repeated names included, as Redis replies.
fn add(c: &mut Ctx<'_>, kind: Kind, names: &[Bytes]) -> CmdResult {
    let reply = match kind {
        Kind::Channel => "subscribe",
        Kind::Pattern => "psubscribe",
        Kind::Shard => "ssubscribe",
    };
    let subs = c.conn.pubsub.get_or_insert_with(|| {
        let entry = c.conn.entry.clone();
        Box::new(ClientSubs::new(
            c.shared.pubsub.clone(),
            entry.id,
            Box::new(move || entry.kill()),
        ))
    });
    for n in names {
        subs.subscribe(kind, n);
        confirm(c.out, reply, Some(n), counted(subs, kind));
    }
    Ok(())
}

/// (P)UNSUBSCRIBE: the names given, or every one the connection has (a single confirmation with a nil
/// name when it has none). Messages published before a name was dropped are written before its
/// confirmation. With nothing left, the connection leaves subscribed mode.
fn drop_names(c: &mut Ctx<'_>, kind: Kind, names: &[Bytes]) {
    let reply = match kind {
        Kind::Channel => "unsubscribe",
        Kind::Pattern => "punsubscribe",
        Kind::Shard => "sunsubscribe",
    };
    let Some(subs) = c.conn.pubsub.as_mut() else {
        if names.is_empty() {
            confirm(c.out, reply, None, 0);
        }
        for n in names {
            confirm(c.out, reply, Some(n), 0);
        }
        return;
    };
    let all;
    let names = if names.is_empty() {
        all = subs.names(kind);
        if all.is_empty() {
            confirm(c.out, reply, None, counted(subs, kind));
        }
        &all[..]
    } else {
        names
    };
    for n in names {
        subs.unsubscribe(kind, n);
        subs.outbox().drain(c.out, usize::MAX);
        confirm(c.out, reply, Some(n), counted(subs, kind));
    }
    if subs.total() == 0 {
        c.conn.pubsub = None;
    }
}

fn publish(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.pubsub.publish(&a[1], &a[2]);
    // To itself too: its own message comes before the reply, as in Redis.
    if let Some(subs) = &c.conn.pubsub {
        subs.outbox().drain(c.out, usize::MAX);
    }
    c.out.int(n as i64);
    Ok(())
}

/// PUBSUB HELP's lines, Redis's (sent as simple strings, as Redis sends help).
const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

/// PUBSUB CHANNELS NUMSUB NUMPAT HELP, and the shard channels' SHARDCHANNELS SHARDNUMSUB.
fn pubsub(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    let n = a.len();
    let kind = if sub.starts_with("shard") {
        Kind::Shard
    } else {
        Kind::Channel
    };
    match sub.as_str() {
        "channels" | "shardchannels" if n <= 3 => {
            let found = c.shared.pubsub.channels(kind, a.get(2).map(|p| &p[..]));
            c.out.bulks(found.iter().map(|b| &b[..]));
        }
        "channels" | "shardchannels" => {
            return Err(CmdError::Msg(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(&a[1])
            )))
        }
        "numsub" | "shardnumsub" => {
            // An array of pairs in RESP3 too, as Redis 7.0 sends it.
            c.out.array(2 * (n - 2));
            for ch in &a[2..] {
                c.out.bulk(ch);
                c.out.int(c.shared.pubsub.numsub(kind, ch) as i64);
            }
        }
        "numpat" if n == 2 => c.out.int(c.shared.pubsub.names(Kind::Pattern) as i64),
        "help" if n == 2 => {
            c.out.array(PUBSUB_HELP.len());
            for line in PUBSUB_HELP {
                c.out.simple(line);
            }
        }
        "numpat" | "help" => return Err(wrong_sub_args(c.name, &a[1])),
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}
