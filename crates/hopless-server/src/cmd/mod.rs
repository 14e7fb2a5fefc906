//! The command table and dispatch: look the name up (case-insensitive), check arity and AUTH as Redis
//! does (in that order), run the handler, count it for INFO commandstats.
//!
//! | file | commands |
//! |---|---|
//! | `string.rs` | GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN GETRANGE SETRANGE INCR DECR INCRBY DECRBY INCRBYFLOAT MGET MSET MSETNX |
//! | `keys.rs` | DEL UNLINK EXISTS EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME PERSIST TYPE KEYS SCAN RANDOMKEY RENAME RENAMENX DBSIZE FLUSHDB FLUSHALL |
//! | `connection.rs` | PING ECHO SELECT QUIT RESET HELLO AUTH CLIENT |
//! | `server.rs` | INFO CONFIG COMMAND MEMORY OBJECT SHUTDOWN DEBUG |

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

use bytes::Bytes;
use hopless_kv::store::parse_i64;
use hopless_kv::Policy;

use crate::codec::Reply;
use crate::conn::ConnState;
use crate::state::Shared;

mod connection;
mod keys;
mod server;
mod string;

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Continue,
    /// Close after writing the replies so far (QUIT, SHUTDOWN).
    Close,
}

/// A command's error reply.
#[derive(Debug)]
pub enum CmdError {
    Msg(String),
    Static(&'static str),
    Kv(hopless_kv::Error),
}

impl From<hopless_kv::Error> for CmdError {
    fn from(e: hopless_kv::Error) -> Self {
        CmdError::Kv(e)
    }
}

pub type CmdResult = Result<(), CmdError>;

pub const NOT_INTEGER: CmdError = CmdError::Static("ERR value is not an integer or out of range");
pub const SYNTAX: CmdError = CmdError::Static("ERR syntax error");

/// What a handler works with.
pub struct Ctx<'a> {
    pub shared: &'a Shared,
    pub conn: &'a mut ConnState,
    pub out: &'a mut Reply,
    /// The command's name as the table spells it (for error messages).
    pub name: &'static str,
    pub action: Action,
}

type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// One command: what COMMAND INFO reports, and its handler.
pub struct Command {
    pub name: &'static str,
    /// Redis's arity: N exactly, or -N at least N (the name counts).
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub acl: &'static [&'static str],
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub handler: Handler,
}

macro_rules! command {
    ($name:literal, $arity:expr, [$($flag:literal),*], $fk:expr, $lk:expr, $st:expr, [$($acl:literal),*], $group:literal, $since:literal, $summary:literal, $h:path) => {
        Command {
            name: $name,
            arity: $arity,
            flags: &[$($flag),*],
            first_key: $fk,
            last_key: $lk,
            step: $st,
            acl: &[$($acl),*],
            group: $group,
            since: $since,
            summary: $summary,
            handler: $h,
        }
    };
}

/// Every command, in the order COMMAND lists them.
pub static COMMANDS: &[Command] = &[
    // Strings.
    command!(
        "get",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        ["@read", "@string", "@fast"],
        "string",
        "1.0.0",
        "Get the value of a key",
        string::get
    ),
    command!(
        "set",
        -3,
        ["write", "denyoom"],
        1,
        1,
        1,
        ["@write", "@string", "@slow"],
        "string",
        "1.0.0",
        "Set the string value of a key",
        string::set
    ),
    command!(
        "setnx",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "1.0.0",
        "Set the value of a key, only if the key does not exist",
        string::setnx
    ),
    command!(
        "setex",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        ["@write", "@string", "@slow"],
        "string",
        "2.0.0",
        "Set the value and expiration of a key",
        string::setex
    ),
    command!(
        "psetex",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        ["@write", "@string", "@slow"],
        "string",
        "2.6.0",
        "Set the value and expiration in milliseconds of a key",
        string::psetex
    ),
    command!(
        "getset",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "1.0.0",
        "Set the string value of a key and return its old value",
        string::getset
    ),
    command!(
        "getdel",
        2,
        ["write", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "6.2.0",
        "Get the value of a key and delete the key",
        string::getdel
    ),
    command!(
        "getex",
        -2,
        ["write", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "6.2.0",
        "Get the value of a key and optionally set its expiration",
        string::getex
    ),
    command!(
        "append",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "2.0.0",
        "Append a value to a key",
        string::append
    ),
    command!(
        "strlen",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        ["@read", "@string", "@fast"],
        "string",
        "2.2.0",
        "Get the length of the value stored in a key",
        string::strlen
    ),
    command!(
        "getrange",
        4,
        ["readonly"],
        1,
        1,
        1,
        ["@read", "@string", "@slow"],
        "string",
        "2.4.0",
        "Get a substring of the string stored at a key",
        string::getrange
    ),
    command!(
        "substr",
        4,
        ["readonly"],
        1,
        1,
        1,
        ["@read", "@string", "@slow"],
        "string",
        "1.0.0",
        "Get a substring of the string stored at a key",
        string::getrange
    ),
    command!(
        "setrange",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        ["@write", "@string", "@slow"],
        "string",
        "2.2.0",
        "Overwrite part of a string at key starting at the specified offset",
        string::setrange
    ),
    command!(
        "incr",
        2,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "1.0.0",
        "Increment the integer value of a key by one",
        string::incr
    ),
    command!(
        "decr",
        2,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "1.0.0",
        "Decrement the integer value of a key by one",
        string::decr
    ),
    command!(
        "incrby",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "1.0.0",
        "Increment the integer value of a key by the given amount",
        string::incrby
    ),
    command!(
        "decrby",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "1.0.0",
        "Decrement the integer value of a key by the given number",
        string::decrby
    ),
    command!(
        "incrbyfloat",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        ["@write", "@string", "@fast"],
        "string",
        "2.6.0",
        "Increment the float value of a key by the given amount",
        string::incrbyfloat
    ),
    command!(
        "mget",
        -2,
        ["readonly", "fast"],
        1,
        -1,
        1,
        ["@read", "@string", "@fast"],
        "string",
        "1.0.0",
        "Get the values of all the given keys",
        string::mget
    ),
    command!(
        "mset",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        2,
        ["@write", "@string", "@slow"],
        "string",
        "1.0.1",
        "Set multiple keys to multiple values",
        string::mset
    ),
    command!(
        "msetnx",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        2,
        ["@write", "@string", "@slow"],
        "string",
        "1.0.1",
        "Set multiple keys to multiple values, only if none of the keys exist",
        string::msetnx
    ),
    // Keys.
    command!(
        "del",
        -2,
        ["write"],
        1,
        -1,
        1,
        ["@keyspace", "@write", "@slow"],
        "generic",
        "1.0.0",
        "Delete a key",
        keys::del
    ),
    command!(
        "unlink",
        -2,
        ["write", "fast"],
        1,
        -1,
        1,
        ["@keyspace", "@write", "@fast"],
        "generic",
        "4.0.0",
        "Delete a key asynchronously in another thread",
        keys::del
    ),
    command!(
        "exists",
        -2,
        ["readonly", "fast"],
        1,
        -1,
        1,
        ["@keyspace", "@read", "@fast"],
        "generic",
        "1.0.0",
        "Determine if a key exists",
        keys::exists
    ),
    command!(
        "expire",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@write", "@fast"],
        "generic",
        "1.0.0",
        "Set a key's time to live in seconds",
        keys::expire
    ),
    command!(
        "pexpire",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@write", "@fast"],
        "generic",
        "2.6.0",
        "Set a key's time to live in milliseconds",
        keys::pexpire
    ),
    command!(
        "expireat",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@write", "@fast"],
        "generic",
        "1.2.0",
        "Set the expiration for a key as a UNIX timestamp",
        keys::expireat
    ),
    command!(
        "pexpireat",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@write", "@fast"],
        "generic",
        "2.6.0",
        "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
        keys::pexpireat
    ),
    command!(
        "ttl",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@read", "@fast"],
        "generic",
        "1.0.0",
        "Get the time to live for a key in seconds",
        keys::ttl
    ),
    command!(
        "pttl",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@read", "@fast"],
        "generic",
        "2.6.0",
        "Get the time to live for a key in milliseconds",
        keys::pttl
    ),
    command!(
        "expiretime",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@read", "@fast"],
        "generic",
        "7.0.0",
        "Get the expiration Unix timestamp for a key",
        keys::expiretime
    ),
    command!(
        "pexpiretime",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@read", "@fast"],
        "generic",
        "7.0.0",
        "Get the expiration Unix timestamp for a key in milliseconds",
        keys::pexpiretime
    ),
    command!(
        "persist",
        2,
        ["write", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@write", "@fast"],
        "generic",
        "2.2.0",
        "Remove the expiration from a key",
        keys::persist
    ),
    command!(
        "type",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        ["@keyspace", "@read", "@fast"],
        "generic",
        "1.0.0",
        "Determine the type stored at key",
        keys::type_
    ),
    command!(
        "keys",
        2,
        ["readonly"],
        0,
        0,
        0,
        ["@keyspace", "@read", "@slow", "@dangerous"],
        "generic",
        "1.0.0",
        "Find all keys matching the given pattern",
        keys::keys
    ),
    command!(
        "scan",
        -2,
        ["readonly"],
        0,
        0,
        0,
        ["@keyspace", "@read", "@slow"],
        "generic",
        "2.8.0",
        "Incrementally iterate the keys space",
        keys::scan
    ),
    command!(
        "randomkey",
        1,
        ["readonly"],
        0,
        0,
        0,
        ["@keyspace", "@read", "@slow"],
        "generic",
        "1.0.0",
        "Return a random key from the keyspace",
        keys::randomkey
    ),
    command!(
        "rename",
        3,
        ["write"],
        1,
        2,
        1,
        ["@keyspace", "@write", "@slow"],
        "generic",
        "1.0.0",
        "Rename a key",
        keys::rename
    ),
    command!(
        "renamenx",
        3,
        ["write", "fast"],
        1,
        2,
        1,
        ["@keyspace", "@write", "@fast"],
        "generic",
        "1.0.0",
        "Rename a key, only if the new key does not exist",
        keys::renamenx
    ),
    command!(
        "dbsize",
        1,
        ["readonly", "fast"],
        0,
        0,
        0,
        ["@keyspace", "@read", "@fast"],
        "server",
        "1.0.0",
        "Return the number of keys in the selected database",
        keys::dbsize
    ),
    command!(
        "flushdb",
        -1,
        ["write"],
        0,
        0,
        0,
        ["@keyspace", "@write", "@slow", "@dangerous"],
        "server",
        "1.0.0",
        "Remove all keys from the current database",
        keys::flush
    ),
    command!(
        "flushall",
        -1,
        ["write"],
        0,
        0,
        0,
        ["@keyspace", "@write", "@slow", "@dangerous"],
        "server",
        "1.0.0",
        "Remove all keys from all databases",
        keys::flush
    ),
    // Connection.
    command!(
        "ping",
        -1,
        ["fast"],
        0,
        0,
        0,
        ["@fast", "@connection"],
        "connection",
        "1.0.0",
        "Ping the server",
        connection::ping
    ),
    command!(
        "echo",
        2,
        ["fast"],
        0,
        0,
        0,
        ["@fast", "@connection"],
        "connection",
        "1.0.0",
        "Echo the given string",
        connection::echo
    ),
    command!(
        "select",
        2,
        ["loading", "stale", "fast"],
        0,
        0,
        0,
        ["@keyspace", "@fast"],
        "connection",
        "1.0.0",
        "Change the selected database for the current connection",
        connection::select
    ),
    command!(
        "quit",
        -1,
        ["allow_busy", "noscript", "loading", "stale", "fast", "no_auth"],
        0,
        0,
        0,
        ["@fast", "@connection"],
        "connection",
        "1.0.0",
        "Close the connection",
        connection::quit
    ),
    command!(
        "reset",
        1,
        ["noscript", "loading", "stale", "fast", "no_auth"],
        0,
        0,
        0,
        ["@fast", "@connection"],
        "connection",
        "6.2.0",
        "Reset the connection",
        connection::reset
    ),
    command!(
        "hello",
        -1,
        ["noscript", "loading", "stale", "fast", "no_auth"],
        0,
        0,
        0,
        ["@fast", "@connection"],
        "connection",
        "6.0.0",
        "Handshake with Redis",
        connection::hello
    ),
    command!(
        "auth",
        -2,
        ["noscript", "loading", "stale", "fast", "no_auth"],
        0,
        0,
        0,
        ["@fast", "@connection"],
        "connection",
        "1.0.0",
        "Authenticate to the server",
        connection::auth
    ),
    command!(
        "client",
        -2,
        ["noscript", "loading", "stale"],
        0,
        0,
        0,
        ["@slow", "@connection"],
        "connection",
        "2.4.0",
        "A container for client connection commands",
        connection::client
    ),
    // Server.
    command!(
        "info",
        -1,
        ["loading", "stale"],
        0,
        0,
        0,
        ["@slow", "@dangerous"],
        "server",
        "1.0.0",
        "Get information and statistics about the server",
        server::info
    ),
    command!(
        "config",
        -2,
        ["noscript", "loading", "stale"],
        0,
        0,
        0,
        ["@admin", "@slow", "@dangerous"],
        "server",
        "2.0.0",
        "A container for server configuration commands",
        server::config
    ),
    command!(
        "command",
        -1,
        ["loading", "stale"],
        0,
        0,
        0,
        ["@slow", "@connection"],
        "server",
        "2.8.13",
        "Get array of Redis command details",
        server::command
    ),
    command!(
        "memory",
        -2,
        [],
        0,
        0,
        0,
        ["@slow"],
        "server",
        "4.0.0",
        "A container for memory diagnostics commands",
        server::memory
    ),
    command!(
        "object",
        -2,
        [],
        0,
        0,
        0,
        ["@slow"],
        "generic",
        "2.2.3",
        "A container for object introspection commands",
        server::object
    ),
    command!(
        "shutdown",
        -1,
        ["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"],
        0,
        0,
        0,
        ["@admin", "@slow", "@dangerous"],
        "server",
        "1.0.0",
        "Synchronously save the dataset to disk and then shut down the server",
        server::shutdown
    ),
    command!(
        "debug",
        -2,
        ["admin", "noscript", "loading", "stale"],
        0,
        0,
        0,
        ["@admin", "@slow", "@dangerous"],
        "server",
        "1.0.0",
        "A container for debugging commands",
        server::debug
    ),
];

fn index() -> &'static HashMap<&'static [u8], usize> {
    static INDEX: OnceLock<HashMap<&'static [u8], usize>> = OnceLock::new();
    INDEX.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect()
    })
}

/// The table index of a command name, any case.
pub fn lookup(name: &[u8]) -> Option<usize> {
    let mut lower = [0u8; 16];
    let l = lower.get_mut(..name.len())?;
    for (d, s) in l.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    index().get(&*l).copied()
}

/// Redis's reply to an unknown command: the name (128 bytes at most), then the arguments quoted while
/// their text is under 128 bytes.
fn unknown_command(args: &[Bytes]) -> String {
    let show = |b: &[u8], max: usize| String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned();
    let mut rest = String::new();
    for a in &args[1..] {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        rest.push_str(&format!("'{}' ", show(a, room)));
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {rest}",
        show(&args[0], 128)
    )
}

pub fn wrong_args(name: &str) -> CmdError {
    CmdError::Msg(format!("ERR wrong number of arguments for '{name}' command"))
}

/// Runs one request (a non-empty argument list).
pub fn execute(shared: &Shared, conn: &mut ConnState, out: &mut Reply, args: &[Bytes]) -> Action {
    let Some(i) = lookup(&args[0]) else {
        shared.counters.unknown_commands.fetch_add(1, Ordering::Relaxed);
        out.error(&unknown_command(args));
        return Action::Continue;
    };
    let cmd = &COMMANDS[i];
    let stat = &shared.cmdstats[i];
    let argc = args.len() as i32;
    if (cmd.arity > 0 && argc != cmd.arity) || argc < -cmd.arity {
        stat.rejected.fetch_add(1, Ordering::Relaxed);
        out.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.name
        ));
        return Action::Continue;
    }
    if !conn.authenticated && !cmd.flags.contains(&"no_auth") {
        stat.rejected.fetch_add(1, Ordering::Relaxed);
        out.error("NOAUTH Authentication required.");
        return Action::Continue;
    }
    conn.entry.last_cmd.store(i + 1, Ordering::Relaxed);
    let start = Instant::now();
    let mut ctx = Ctx {
        shared,
        conn,
        out,
        name: cmd.name,
        action: Action::Continue,
    };
    let r = (cmd.handler)(&mut ctx, args);
    let action = ctx.action;
    if let Err(e) = r {
        stat.failed.fetch_add(1, Ordering::Relaxed);
        let msg = match e {
            CmdError::Msg(m) => m,
            CmdError::Static(s) => s.to_string(),
            CmdError::Kv(hopless_kv::Error::InvalidExpire) => {
                format!("ERR invalid expire time in '{}' command", cmd.name)
            }
            CmdError::Kv(e) => e.to_string(),
        };
        ctx.out.error(&msg);
    }
    stat.calls.fetch_add(1, Ordering::Relaxed);
    stat.usec
        .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
    shared.counters.commands_processed.fetch_add(1, Ordering::Relaxed);
    let e = &conn.entry;
    e.last_ms
        .store(e.created.elapsed().as_millis() as u64, Ordering::Relaxed);
    action
}

/// An integer argument, as Redis's `getLongLongFromObjectOrReply`.
pub fn int_arg(b: &[u8]) -> Result<i64, CmdError> {
    parse_i64(b).ok_or(NOT_INTEGER)
}

/// The policy names `maxmemory-policy` takes.
pub fn parse_policy(s: &str) -> Option<Policy> {
    match s.to_ascii_lowercase().as_str() {
        "noeviction" => Some(Policy::NoEviction),
        "allkeys-lru" => Some(Policy::SampledLru),
        _ => None,
    }
}

pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::NoEviction => "noeviction",
        Policy::SampledLru => "allkeys-lru",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_reads_as_redis_prints_it() {
        let a: Vec<Bytes> = ["foo", "a", "b"]
            .iter()
            .map(|s| Bytes::from(s.to_string()))
            .collect();
        assert_eq!(
            unknown_command(&a),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        let a = vec![Bytes::from("FOO")];
        assert_eq!(
            unknown_command(&a),
            "ERR unknown command 'FOO', with args beginning with: "
        );
        let mut a = vec![Bytes::from("foo")];
        a.extend((0..40).map(|_| Bytes::from("a")));
        assert_eq!(unknown_command(&a).matches("'a'").count(), 32);
    }

    #[test]
    fn every_command_is_found_in_any_case() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert_eq!(lookup(c.name.as_bytes()), Some(i));
            assert_eq!(lookup(c.name.to_ascii_uppercase().as_bytes()), Some(i));
        }
        assert_eq!(lookup(b"nosuchcommandwithalongname"), None);
    }
}
