//! Connection commands: PING ECHO SELECT QUIT RESET HELLO AUTH CLIENT.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{int_arg, Action, CmdError, CmdResult, Ctx, NOT_INTEGER, SYNTAX};
use crate::codec::Proto;
use crate::util::eq;

const WRONGPASS: CmdError = CmdError::Static("WRONGPASS invalid username-password pair or user is disabled.");

pub fn ping(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match a.len() {
        1 => c.out.simple("PONG"),
        2 => c.out.bulk(&a[1]),
        _ => return Err(super::wrong_args(c.name)),
    }
    Ok(())
}

pub fn echo(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    c.out.bulk(&a[1]);
    Ok(())
}

pub fn select(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match int_arg(&a[1]) {
        Ok(0) => {
            c.out.ok();
            Ok(())
        }
        Ok(_) => Err(CmdError::Static("ERR DB index is out of range")),
        Err(_) => Err(NOT_INTEGER),
    }
}

pub fn quit(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    c.out.ok();
    c.action = Action::Close;
    Ok(())
}

fn set_proto(c: &mut Ctx<'_>, p: Proto) {
    c.out.proto = p;
    let v = if p == Proto::Resp3 { 3 } else { 2 };
    c.conn.entry.resp.store(v, Ordering::Relaxed);
}

pub fn reset(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    set_proto(c, Proto::Resp2);
    c.conn
        .entry
        .name
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    c.conn.authenticated = c.shared.settings().requirepass.is_none();
    c.out.simple("RESET");
    Ok(())
}

/// Checks a user and password as Redis's default user does (`requirepass`, or no password at all).
fn check_auth(c: &mut Ctx<'_>, user: Option<&[u8]>, pass: &[u8]) -> CmdResult {
    if user.is_some_and(|u| u != b"default") {
        return Err(WRONGPASS);
    }
    match c.shared.settings().requirepass {
        Some(p) if p == pass => {}
        Some(_) => return Err(WRONGPASS),
        None if user.is_none() => {
            return Err(CmdError::Static(
                "ERR AUTH <password> called without any password configured for the default user. Are you \
                 sure your configuration is correct?",
            ))
        }
        None => {}
    }
    c.conn.authenticated = true;
    Ok(())
}

pub fn auth(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match a.len() {
        2 => check_auth(c, None, &a[1])?,
        3 => check_auth(c, Some(&a[1]), &a[2])?,
        _ => return Err(SYNTAX),
    }
    c.out.ok();
    Ok(())
}

fn valid_name(n: &[u8]) -> bool {
    n.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

const BAD_NAME: CmdError =
    CmdError::Static("ERR Client names cannot contain spaces, newlines or special characters.");

pub fn hello(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut proto = c.out.proto;
    let mut i = 1;
    if a.len() >= 2 {
        let v = int_arg(&a[1])
            .map_err(|_| CmdError::Static("ERR Protocol version is not an integer or out of range"))?;
        proto = match v {
            2 => Proto::Resp2,
            3 => Proto::Resp3,
            _ => return Err(CmdError::Static("NOPROTO unsupported protocol version")),
        };
        i = 2;
    }
    let (mut auth, mut name) = (None, None);
    while i < a.len() {
        let more = a.len() - i - 1;
        if eq(&a[i], "auth") && more >= 2 {
            auth = Some((&a[i + 1], &a[i + 2]));
            i += 3;
        } else if eq(&a[i], "setname") && more >= 1 {
            name = Some(&a[i + 1]);
            i += 2;
        } else {
            return Err(CmdError::Msg(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&a[i])
            )));
        }
    }
    if let Some((u, p)) = auth {
        check_auth(c, Some(u), p)?;
    }
    if !c.conn.authenticated {
        return Err(CmdError::Static(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> \
             AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol \
             version at the same time",
        ));
    }
    if let Some(n) = name {
        if !valid_name(n) {
            return Err(BAD_NAME);
        }
        *c.conn.entry.name.lock().unwrap_or_else(|e| e.into_inner()) = n.to_vec();
    }
    set_proto(c, proto);
    let o = &mut *c.out;
    o.map(7);
    o.bulk(b"server");
    o.bulk(b"hopless");
    o.bulk(b"version");
    o.bulk(crate::REDIS_VERSION.as_bytes());
    o.bulk(b"proto");
    o.int(if proto == Proto::Resp3 { 3 } else { 2 });
    o.bulk(b"id");
    o.int(c.conn.id() as i64);
    o.bulk(b"mode");
    o.bulk(b"standalone");
    o.bulk(b"role");
    o.bulk(b"master");
    o.bulk(b"modules");
    o.array(0);
    Ok(())
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
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
    "HELP",
    "    Print this help.",
];

fn sub_args(c: &Ctx<'_>, sub: &str) -> CmdError {
    CmdError::Msg(format!(
        "ERR wrong number of arguments for '{}|{sub}' command",
        c.name
    ))
}

pub fn client(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
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
            if !valid_name(&a[2]) {
                return Err(BAD_NAME);
            }
            *c.conn.entry.name.lock().unwrap_or_else(|e| e.into_inner()) = a[2].to_vec();
            c.out.ok();
        }
        "info" if n == 2 => {
            let line = c.conn.entry.describe(Some(c.conn.qbuf)) + "\n";
            c.out.verbatim(line.as_bytes());
        }
        "list" => {
            let mut ids = None;
            let mut i = 2;
            while i < n {
                if eq(&a[i], "type") && i + 1 < n {
                    if !eq(&a[i + 1], "normal") {
                        if ["master", "replica", "slave", "pubsub"]
                            .iter()
                            .any(|t| eq(&a[i + 1], t))
                        {
                            ids = Some(Vec::new());
                        } else {
                            return Err(CmdError::Msg(format!(
                                "ERR Unknown client type '{}'",
                                String::from_utf8_lossy(&a[i + 1])
                            )));
                        }
                    }
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
                if ids.as_ref().is_some_and(|v| !v.contains(&e.id)) {
                    continue;
                }
                let qbuf = (e.id == c.conn.id()).then_some(c.conn.qbuf);
                text.push_str(&e.describe(qbuf));
                text.push('\n');
            }
            c.out.verbatim(text.as_bytes());
        }
        "kill" if n >= 3 => client_kill(c, a)?,
        "setinfo" if n == 4 => c.out.ok(),
        "no-evict" | "no-touch" | "reply" if n == 3 => c.out.ok(),
        "help" if n == 2 => c.out.bulks(CLIENT_HELP.iter().map(|s| s.as_bytes())),
        "id" | "getname" | "setname" | "info" | "kill" | "setinfo" | "no-evict" | "no-touch" | "reply"
        | "help" => return Err(sub_args(c, &sub)),
        _ => {
            return Err(CmdError::Msg(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&a[1])
            )))
        }
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
    let (mut id, mut addr, mut laddr, mut skipme) = (None, None, None, true);
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
        } else if eq(&a[i], "type") || eq(&a[i], "user") || eq(&a[i], "maxage") {
            // Every client is a normal one of the default user.
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
        {
            continue;
        }
        e.kill();
        killed += 1;
    }
    c.out.int(killed);
    Ok(())
}
