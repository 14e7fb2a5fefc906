//! CLIENT: a connection's id and name, the list of clients (CLIENT LIST and INFO, in Redis 7's format),
//! and killing them.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::client_tracking;
use super::command::{int_arg, subcommand, Command, Ctx};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult, SYNTAX};
use crate::state::ClientEntry;
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("client", -2, "noscript loading stale", client)
        .subs(&["caching", "getname", "getredir", "help", "id", "info", "kill", "list", "no-evict", "no-touch",
                "pause", "reply", "setinfo", "setname", "tracking", "trackinginfo", "unblock", "unpause"]),
];

const BAD_NAME: CmdError =
    CmdError::Static("ERR Client names cannot contain spaces, newlines or special characters.");

/// Names the connection (CLIENT SETNAME, HELLO ... SETNAME): printable ASCII without spaces, as Redis
/// allows.
pub(super) fn set_name(c: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    if !name.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        return Err(BAD_NAME);
    }
    *c.conn.entry.name.lock().unwrap_or_else(|e| e.into_inner()) = name.to_vec();
    Ok(())
}

/// One line of CLIENT LIST / CLIENT INFO, in Redis 7's field order. `qbuf`: the query buffer's bytes
/// and free capacity, known for the client running the command (others are between commands: Redis
/// shows an idle client's buffer as `qbuf=0 qbuf-free=0` once it has shrunk it).
fn describe(c: &Ctx<'_>, e: &ClientEntry, qbuf: Option<(usize, usize)>) -> String {
    let age = e.created.elapsed();
    let idle = age.as_millis() as u64 - e.last_ms.load(Ordering::Relaxed).min(age.as_millis() as u64);
    let cmd = c.table.last_cmd_name(e.last_cmd.load(Ordering::Relaxed));
    let (qbuf, qbuf_free) = qbuf.unwrap_or((0, 0));
    let [sub, psub, ssub] = c.shared.pubsub.counts(e.id); // pub/sub: its counts, flag P
    let tracking = c
        .shared
        .tracking
        .active()
        .then(|| c.shared.tracking.info(e.id))
        .flatten();
    let redir = tracking.as_ref().map_or(-1, |t| t.redirect as i64);
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db=0 sub={sub} psub={psub} ssub={ssub} \
         multi={} qbuf={qbuf} qbuf-free={qbuf_free} argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 \
         tot-mem=0 events=r cmd={cmd} user=default redir={redir} resp={}",
        e.id,
        e.addr,
        e.laddr,
        e.fd,
        String::from_utf8_lossy(&e.name.lock().unwrap_or_else(|e| e.into_inner())),
        age.as_secs(),
        idle / 1000,
        flags(e, sub + psub > 0, tracking.as_ref()),
        e.multi.load(Ordering::Relaxed),
        e.resp.load(Ordering::Relaxed),
    )
}

/// CLIENT LIST's flags, in Redis's order: `P` subscribed, `x` in MULTI, `b` blocked, `t` tracking (`R`
/// its redirect target gone, `B` in BCAST mode), else `N`.
fn flags(e: &ClientEntry, subscribed: bool, tracking: Option<&crate::tracking::Info>) -> String {
    let mut f = String::new();
    if subscribed {
        f.push('P');
    }
    if e.multi.load(Ordering::Relaxed) >= 0 {
        f.push('x');
    }
    if e.blocked.load(Ordering::Relaxed) {
        f.push('b');
    }
    if let Some(t) = tracking {
        f.push('t');
        if t.broken {
            f.push('R');
        }
        if t.options.bcast {
            f.push('B');
        }
    }
    if f.is_empty() {
        f.push('N');
    }
    f
}

/// A client's type as CLIENT LIST and KILL filter on it: `pubsub` while it has a subscription, else
/// `normal` (there are no masters or replicas).
fn client_type(c: &Ctx<'_>, e: &ClientEntry) -> &'static str {
    match c.shared.pubsub.counts(e.id) {
        [0, 0, 0] => "normal",
        _ => "pubsub",
    }
}

/// A TYPE argument: `normal`, `master`, `replica` (or `slave`), `pubsub`.
fn client_type_arg(t: &[u8]) -> Result<&'static str, CmdError> {
    ["normal", "master", "replica", "pubsub"]
        .into_iter()
        .find(|n| eq(t, n))
        .or_else(|| eq(t, "slave").then_some("replica"))
        .ok_or_else(|| {
            CmdError::Msg(format!(
                "ERR Unknown client type '{}'",
                String::from_utf8_lossy(t)
            ))
        })
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "ID",
    "    Return the ID of the current connection.",
    "GETNAME",
    "    Return the name of the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "LIST [TYPE normal] [ID <id> [<id> ...]]",
    "    Return information about client connections.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port> | KILL [ID <id>] [ADDR <ip:port>] [LADDR <ip:port>] [SKIPME yes|no]",
    "    Kill connections.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "HELP",
    "    Print this help.",
];

fn client(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    let n = a.len();
    match sub.as_str() {
        "id" if n == 2 => c.out.int(c.conn.id() as i64),
        "getname" if n == 2 => {
            let name = c
                .conn
                .entry
                .name
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if name.is_empty() {
                c.out.null();
            } else {
                c.out.bulk(&name);
            }
        }
        "setname" if n == 3 => {
            set_name(c, &a[2])?;
            c.out.ok();
        }
        "info" if n == 2 => {
            let line = describe(c, &c.conn.entry, Some((c.conn.qbuf, c.conn.qbuf_free))) + "\n";
            c.out.verbatim(line.as_bytes());
        }
        "list" => {
            let (mut ids, mut ty) = (None, None);
            let mut i = 2;
            while i < n {
                if eq(&a[i], "type") && i + 1 < n {
                    ty = Some(client_type_arg(&a[i + 1])?);
                    i += 2;
                } else if eq(&a[i], "id") && i + 1 < n {
                    let mut v = Vec::new();
                    for id in &a[i + 1..] {
                        match int_arg(id) {
                            Ok(x) if x > 0 => v.push(x as u64),
                            _ => return Err(CmdError::Static("ERR Invalid client ID")),
                        }
                    }
                    ids = Some(v);
                    i = n;
                } else {
                    return Err(SYNTAX);
                }
            }
            let clients: Vec<_> = c.shared.clients().values().cloned().collect();
            let mut text = String::new();
            for e in clients {
                if ids.as_ref().is_some_and(|v| !v.contains(&e.id))
                    || ty.is_some_and(|t| t != client_type(c, &e))
                {
                    continue;
                }
                let qbuf = (e.id == c.conn.id()).then_some((c.conn.qbuf, c.conn.qbuf_free));
                text.push_str(&describe(c, &e, qbuf));
                text.push('\n');
            }
            c.out.verbatim(text.as_bytes());
        }
        "kill" if n >= 3 => client_kill(c, a)?,
        "unblock" if n == 3 || n == 4 => client_unblock(c, a)?,
        "setinfo" if n == 4 => c.out.ok(),
        "reply" if n == 3 => {
            let r = &mut c.conn.replies;
            if eq(&a[2], "on") {
                (r.off, r.skip_current, r.skip_next) = (false, false, false);
                c.out.ok();
            } else if eq(&a[2], "off") {
                r.off = true;
            } else if eq(&a[2], "skip") {
                r.skip_next = !r.off;
            } else {
                return Err(SYNTAX);
            }
        }
        "no-evict" | "no-touch" if n == 3 => c.out.ok(),
        "tracking" if n >= 3 => client_tracking::tracking(c, a)?,
        "caching" if n == 3 => client_tracking::caching(c, a)?,
        "getredir" if n == 2 => client_tracking::getredir(c),
        "trackinginfo" if n == 2 => client_tracking::trackinginfo(c),
        "help" if n == 2 => c.out.bulks(CLIENT_HELP.iter().map(|s| s.as_bytes())),
        "id" | "getname" | "setname" | "info" | "kill" | "unblock" | "setinfo" | "no-evict" | "no-touch"
        | "reply" | "help" | "tracking" | "caching" | "getredir" | "trackinginfo" => {
            return Err(wrong_sub_args(c.name, &a[1]))
        }
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}

fn client_kill(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let clients: Vec<_> = c.shared.clients().values().cloned().collect();
    if a.len() == 3 {
        // The old form: CLIENT KILL ip:port.
        let addr = String::from_utf8_lossy(&a[2]).into_owned();
        let Some(e) = clients.iter().find(|e| e.addr.to_string() == addr) else {
            return Err(CmdError::Static("ERR No such client"));
        };
        e.kill();
        c.out.ok();
        return Ok(());
    }
    let (mut id, mut addr, mut laddr, mut skipme, mut ty) = (None, None, None, true, None);
    let mut i = 2;
    while i + 1 < a.len() {
        let v = &a[i + 1];
        if eq(&a[i], "id") {
            match int_arg(v) {
                Ok(x) if x > 0 => id = Some(x as u64),
                _ => return Err(CmdError::Static("ERR client-id should be greater than 0")),
            }
        } else if eq(&a[i], "addr") {
            addr = Some(String::from_utf8_lossy(v).into_owned());
        } else if eq(&a[i], "laddr") {
            laddr = Some(String::from_utf8_lossy(v).into_owned());
        } else if eq(&a[i], "skipme") {
            skipme = if eq(v, "yes") {
                true
            } else if eq(v, "no") {
                false
            } else {
                return Err(SYNTAX);
            };
        } else if eq(&a[i], "type") {
            ty = Some(client_type_arg(v)?);
        } else if eq(&a[i], "user") {
            // Every client is the default user's, the only user there is.
            if &v[..] != b"default" {
                return Err(CmdError::Msg(format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(v)
                )));
            }
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    if i != a.len() {
        return Err(SYNTAX);
    }
    let mut killed = 0;
    for e in clients {
        let me = e.id == c.conn.id();
        if (skipme && me)
            || id.is_some_and(|x| x != e.id)
            || addr.as_ref().is_some_and(|x| *x != e.addr.to_string())
            || laddr.as_ref().is_some_and(|x| *x != e.laddr.to_string())
            || ty.is_some_and(|t| t != client_type(c, &e))
        {
            continue;
        }
        e.kill();
        killed += 1;
    }
    c.out.int(killed);
    Ok(())
}

/// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]: 1 if that client was blocked (it gets a timeout's reply
/// or an UNBLOCKED error), else 0.
fn client_unblock(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let id = int_arg(&a[2])?;
    let error = match a.get(3) {
        None => false,
        Some(r) if eq(r, "timeout") => false,
        Some(r) if eq(r, "error") => true,
        Some(_) => {
            return Err(CmdError::Static(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    // The unblocked client's error counts in INFO errorstats when it reaches it (`conn.rs`).
    let unblocked = u64::try_from(id).is_ok_and(|id| {
        c.shared.blocked.unblock(id, |out| {
            if error {
                out.error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
            } else {
                out.null_array();
            }
        })
    });
    c.out.int(unblocked as i64);
    Ok(())
}
