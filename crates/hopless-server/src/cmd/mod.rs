//! Running a command: the command table, put together from the families' tables, and dispatch: look the
//! name up (case-insensitive), check arity and AUTH as Redis does (in that order), run the handler,
//! count it for INFO commandstats.
//!
//! Each family's file holds its handlers and, above them, its part of the table (one [`Command`] a
//! command); `command.rs` is what they all build on.
//!
//! | file | commands |
//! |---|---|
//! | `string.rs` | GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN GETRANGE SUBSTR SETRANGE INCR DECR INCRBY DECRBY INCRBYFLOAT MGET MSET MSETNX LCS |
//! | `bit.rs` | SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO |
//! | `keys.rs` | DEL UNLINK EXISTS TOUCH EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME PERSIST TYPE KEYS SCAN RANDOMKEY RENAME RENAMENX COPY DBSIZE FLUSHDB FLUSHALL |
//! | `hash.rs` | the hash commands |
//! | `list.rs` | the list commands |
//! | `set.rs` | the set commands |
//! | `zset.rs` | the sorted-set commands |
//! | `connection.rs` | PING ECHO SELECT QUIT RESET HELLO AUTH |
//! | `client.rs` | CLIENT (and the CLIENT LIST line) |
//! | `info.rs` | INFO |
//! | `config.rs` | CONFIG |
//! | `introspection.rs` | COMMAND |
//! | `memory.rs` | MEMORY |
//! | `object.rs` | OBJECT |
//! | `admin.rs` | SHUTDOWN DEBUG TIME |
//! | `scripting.rs` | EVAL EVALSHA EVAL_RO EVALSHA_RO FCALL FCALL_RO (refused) FUNCTION SCRIPT |
//! | `command.rs` | no command: [`Command`], the [`Table`], a handler's [`Ctx`] |

use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

use bytes::Bytes;

use self::command::{Command, Ctx, Table};
use crate::codec::Reply;
use crate::errors::{unknown_command, wrong_args, NOAUTH};
use crate::state::{ConnState, Shared};

mod admin;
mod bit;
mod client;
mod command;
mod config;
mod connection;
mod hash;
mod info;
mod introspection;
mod keys;
mod list;
mod memory;
mod object;
mod scan_args;
mod scripting;
mod set;
mod string;
mod zset;

pub use self::command::Action;

/// Every command, in the order COMMAND lists them.
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        Table::new(&[
            string::COMMANDS,
            bit::COMMANDS,
            keys::COMMANDS,
            hash::COMMANDS,
            list::COMMANDS,
            set::COMMANDS,
            zset::COMMANDS,
            connection::COMMANDS,
            client::COMMANDS,
            info::COMMANDS,
            config::COMMANDS,
            introspection::COMMANDS,
            memory::COMMANDS,
            object::COMMANDS,
            admin::COMMANDS,
            scripting::COMMANDS,
        ])
    })
}

/// Runs one request (a non-empty argument list).
pub fn execute(shared: &Shared, conn: &mut ConnState, out: &mut Reply, args: &[Bytes]) -> Action {
    let table = table();
    let Some(i) = table.lookup(&args[0]) else {
        shared.counters.unknown_commands.fetch_add(1, Ordering::Relaxed);
        out.error(&unknown_command(args));
        return Action::Continue;
    };
    let cmd: &Command = &table.commands()[i];
    let stat = &shared.cmdstats[i];
    if !cmd.arity_allows(args.len()) {
        stat.rejected.fetch_add(1, Ordering::Relaxed);
        out.error(&wrong_args(cmd.name).into_text(cmd.name));
        return Action::Continue;
    }
    if !conn.authenticated && !cmd.has_flag("no_auth") {
        stat.rejected.fetch_add(1, Ordering::Relaxed);
        out.error(NOAUTH);
        return Action::Continue;
    }
    conn.entry
        .last_cmd
        .store(cmd.last_cmd_code(i, args), Ordering::Relaxed);
    let start = Instant::now();
    let mut ctx = Ctx {
        shared,
        conn,
        out,
        name: cmd.name,
        table,
        action: Action::Continue,
    };
    let r = (cmd.handler)(&mut ctx, args);
    let action = ctx.action;
    if let Err(e) = r {
        stat.failed.fetch_add(1, Ordering::Relaxed);
        ctx.out.error(&e.into_text(cmd.name));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_found_in_any_case() {
        let t = table();
        for (i, c) in t.commands().iter().enumerate() {
            assert_eq!(t.lookup(c.name.as_bytes()), Some(i));
            assert_eq!(t.lookup(c.name.to_ascii_uppercase().as_bytes()), Some(i));
        }
        assert_eq!(t.lookup(b"nosuchcommandwithalongname"), None);
    }

    #[test]
    fn no_two_families_define_a_command() {
        let t = table();
        let mut names: Vec<&str> = t.commands().iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), t.len());
    }
}
