//! MIGRATE: keys moved (or copied) to another Redis-protocol server, as Redis 7.0 moves them: the keys'
//! DUMP payloads sent as RESTOREs (with their remaining TTLs, REPLACE if asked) after AUTH and SELECT,
//! in one write; the replies read line by line within the timeout; each key the target took deleted
//! here unless COPY. Like Redis, the command blocks its event loop while it talks to the target.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::Bytes;

use super::command::{Command, Ctx};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table: laid out by hand (rustfmt would spread them).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("migrate", -6, "write movablekeys", migrate).keys(3, 3, 1),
];

const INT: &str = "ERR value is not an integer or out of range";

/// `RESP` of one command.
fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn long_arg(b: &[u8]) -> Result<i64, CmdError> {
    hopless_kv::store::parse_i64(b).ok_or(CmdError::Static(INT))
}

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
/// [AUTH2 username password] [KEYS key ...].
fn migrate(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut copy, mut replace) = (false, false);
    let mut auth: Option<(Option<&Bytes>, &Bytes)> = None;
    let (mut first, mut count) = (3, 1);
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if eq(&a[j], "copy") {
            copy = true;
        } else if eq(&a[j], "replace") {
            replace = true;
        } else if eq(&a[j], "auth") {
            if more == 0 {
                return Err(SYNTAX);
            }
            auth = Some((None, &a[j + 1]));
            j += 1;
        } else if eq(&a[j], "auth2") {
            if more < 2 {
                return Err(SYNTAX);
            }
            auth = Some((Some(&a[j + 1]), &a[j + 2]));
            j += 2;
        } else if eq(&a[j], "keys") {
            if !a[3].is_empty() {
                return Err(CmdError::Static(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            first = j + 1;
            count = a.len() - j - 1;
            break;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let timeout = long_arg(&a[5])?;
    let db = long_arg(&a[4])?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let store = &c.shared.store;
    let keys: Vec<&Bytes> = a[first..first + count]
        .iter()
        .filter(|k| store.exists(&[&k[..]]) > 0)
        .collect();
    if keys.is_empty() {
        c.out.simple("NOKEY");
        return Ok(());
    }
    let mut req = Vec::new();
    if let Some((user, pass)) = auth {
        match user {
            Some(u) => encode(&mut req, &[b"AUTH", u, pass]),
            None => encode(&mut req, &[b"AUTH", pass]),
        }
    }
    encode(&mut req, &[b"SELECT", db.to_string().as_bytes()]);
    let compress = c.shared.persistence.settings().compression;
    let mut sent = Vec::new();
    for k in keys {
        let ttl = match store.pttl(k) {
            -2 => continue,
            -1 => 0,
            t => t.max(1),
        };
        let Some(payload) = store.dump(k, compress) else {
            continue;
        };
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", k, ttl.as_bytes(), &payload];
        if replace {
            args.push(b"REPLACE");
        }
        encode(&mut req, &args);
        sent.push(k);
    }
    // Connect, write, and read AUTH's, SELECT's and each RESTORE's reply line.
    let write_err = || CmdError::Static("IOERR error or timeout writing to target instance");
    let mut sock = match connect(&a[1], &a[2], timeout) {
        Ok(s) => s,
        // Redis connects without blocking and sees a refusal only when it writes.
        Err(Some(std::io::ErrorKind::ConnectionRefused)) => return Err(write_err()),
        Err(_) => {
            return Err(CmdError::Static(
                "IOERR error or timeout connecting to the client",
            ))
        }
    };
    if sock.write_all(&req).is_err() {
        return Err(write_err());
    }
    let mut r = BufReader::new(&mut sock);
    let mut line = || -> Option<String> {
        let mut l = String::new();
        (r.read_line(&mut l).ok()? > 0).then_some(l)
    };
    let read_err = || CmdError::Static("IOERR error or timeout reading to target instance");
    let auth_reply = match auth {
        Some(_) => Some(line().ok_or_else(read_err)?),
        None => None,
    };
    let select_reply = line().ok_or_else(read_err)?;
    let mut error: Option<String> = None;
    let mut moved = Vec::new();
    for k in &sent {
        let Some(reply) = line() else {
            if moved.is_empty() && error.is_none() {
                return Err(read_err());
            }
            break;
        };
        let failed = [auth_reply.as_deref(), Some(&select_reply), Some(&reply)]
            .into_iter()
            .flatten()
            .find(|l| l.starts_with('-'));
        match failed {
            Some(e) if error.is_none() => error = Some(e[1..].trim_end().to_string()),
            Some(_) => {}
            None => moved.push(&k[..]),
        }
    }
    if !copy && !moved.is_empty() {
        store.del(&moved);
    }
    if let Some(e) = error {
        return Err(CmdError::Msg(format!(
            "ERR Target instance replied with error: {e}"
        )));
    }
    c.out.ok();
    Ok(())
}

/// A connection to `host:port` within `timeout`, with reads and writes bounded by it too; the error's
/// kind when the connection failed (None: no such address).
fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<TcpStream, Option<std::io::ErrorKind>> {
    let host = std::str::from_utf8(host).map_err(|_| None)?;
    let port: u16 = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse().ok())
        .ok_or(None)?;
    let addr = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or(None)?;
    let s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| Some(e.kind()))?;
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    let _ = s.set_nodelay(true);
    Ok(s)
}
