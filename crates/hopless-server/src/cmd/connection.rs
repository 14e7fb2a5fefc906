//! Connection commands: PING ECHO SELECT QUIT RESET HELLO AUTH (CLIENT has a file of its own).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::client::set_name;
use super::command::{int_arg, Action, Command, Ctx};
use super::transaction::end as end_transaction;
use crate::codec::Proto;
use crate::errors::{wrong_args, CmdError, CmdResult, NOT_INTEGER, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("ping", -1, "fast", ping),
    Command::new("echo", 2, "loading stale fast", echo),
    Command::new("select", 2, "loading stale fast", select),
    Command::new("quit", -1, "allow_busy noscript loading stale fast no_auth", quit),
    Command::new("reset", 1, "noscript loading stale fast no_auth allow_busy", reset),
    Command::new("hello", -1, "noscript loading stale fast no_auth allow_busy", hello),
    Command::new("auth", -2, "noscript loading stale fast no_auth allow_busy", auth),
];

const WRONGPASS: CmdError = CmdError::Static("WRONGPASS invalid username-password pair or user is disabled.");

fn ping(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    // Pub/sub: in RESP2's subscribed mode, PING answers as a message would: ["pong", text].
    if c.conn.pubsub.is_some() && !c.out.resp3() && a.len() <= 2 {
        c.out.array(2);
        c.out.bulk(b"pong");
        c.out.bulk(a.get(1).map_or(&b""[..], |m| &m[..]));
        return Ok(());
    }
    match a.len() {
        1 => c.out.simple("PONG"),
        2 => c.out.bulk(&a[1]),
        _ => return Err(wrong_args(c.name)),
    }
    Ok(())
}

fn echo(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    c.out.bulk(&a[1]);
    Ok(())
}

fn select(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match int_arg(&a[1]) {
        Ok(0) => {
            c.out.ok();
            Ok(())
        }
        Ok(_) => Err(CmdError::Static("ERR DB index is out of range")),
        Err(_) => Err(NOT_INTEGER),
    }
}

fn quit(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    // Leaves every channel and pattern before the reply, as Redis: a client that reads QUIT's +OK and
    // asks another connection (INFO, PUBSUB NUMSUB) sees it gone.
    c.conn.pubsub = None;
    c.out.ok();
    c.action = Action::Close;
    Ok(())
}

fn set_proto(c: &mut Ctx<'_>, p: Proto) {
    c.out.proto = p;
    let v = if p == Proto::Resp3 { 3 } else { 2 };
    c.conn.entry.resp.store(v, Ordering::Relaxed);
}

fn reset(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    end_transaction(c.shared, c.conn);
    c.conn.pubsub = None; // pub/sub: leaves every channel and pattern, and subscribed mode
    set_proto(c, Proto::Resp2);
    c.conn
        .entry
        .name
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    c.conn.authenticated = c.shared.settings().requirepass.is_none();
    c.conn.replies = Default::default();
    c.conn.monitor = None;
    c.shared.monitors.remove(c.conn.id());
    if c.conn.tracking.take().is_some() {
        c.shared.tracking.disable(c.conn.id());
    }
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

fn auth(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    match a.len() {
        2 => check_auth(c, None, &a[1])?,
        3 => check_auth(c, Some(&a[1]), &a[2])?,
        _ => return Err(SYNTAX),
    }
    c.out.ok();
    Ok(())
}

fn hello(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
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
        set_name(c, n)?;
    }
    set_proto(c, proto);
    let o = &mut *c.out;
    o.map(7);
    o.bulk(b"server");
    o.bulk(b"hopless");
    o.bulk(b"version");
    o.bulk(crate::version::REDIS_VERSION.as_bytes());
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
