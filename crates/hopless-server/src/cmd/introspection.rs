//! COMMAND: what the server tells a client about its commands (all of them, COUNT, LIST, INFO and DOCS
//! of some, and GETKEYS: the keys of a request), from the command table.

use bytes::Bytes;

use super::command::{subcommand, Command, Ctx};
use super::key_args::{key_positions, KeysError};
use crate::codec::Reply;
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("command", -1, "loading stale", command).acl("@slow @connection")
        .subs(&["count", "docs", "getkeys", "getkeysandflags", "help", "info", "list"])
        .doc("server", "2.8.13", "Get array of Redis command details"),
];

/// One command's COMMAND INFO entry: Redis 7's ten fields (the last three, tips, key specs and
/// subcommands, empty).
fn command_info(c: &mut Ctx<'_>, cmd: &Command) {
    let o = &mut *c.out;
    o.array(10);
    o.bulk(cmd.name.as_bytes());
    o.int(cmd.arity as i64);
    simple_set(o, cmd.flags);
    o.int(cmd.first_key as i64);
    o.int(cmd.last_key as i64);
    o.int(cmd.step as i64);
    simple_set(o, cmd.acl);
    o.array(0);
    o.array(0);
    o.array(0);
}

/// Space-separated words as a set of simple strings, in their order.
fn simple_set(o: &mut Reply, words: &str) {
    o.set(words.split_ascii_whitespace().count());
    for w in words.split_ascii_whitespace() {
        o.simple(w);
    }
}

fn command_docs(c: &mut Ctx<'_>, cmd: &Command) {
    let o = &mut *c.out;
    o.bulk(cmd.name.as_bytes());
    o.map(3);
    o.bulk(b"summary");
    o.bulk(cmd.summary.as_bytes());
    o.bulk(b"since");
    o.bulk(cmd.since.as_bytes());
    o.bulk(b"group");
    o.bulk(cmd.group.as_bytes());
}

fn info_of_all(c: &mut Ctx<'_>) {
    let all = c.table.commands();
    c.out.array(all.len());
    for cmd in all {
        command_info(c, cmd);
    }
}

fn command(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() == 1 {
        info_of_all(c);
        return Ok(());
    }
    let table = c.table;
    let sub = subcommand(a);
    match sub.as_str() {
        "count" if a.len() == 2 => c.out.int(table.len() as i64),
        "list" => c
            .out
            .bulks(table.commands().iter().map(|cmd| cmd.name.as_bytes())),
        "info" if a.len() == 2 => info_of_all(c),
        "info" => {
            c.out.array(a.len() - 2);
            for name in &a[2..] {
                match table.find(name) {
                    Some(cmd) => command_info(c, cmd),
                    None => c.out.null_array(),
                }
            }
        }
        "docs" => {
            let found: Vec<&Command> = if a.len() == 2 {
                table.commands().iter().collect()
            } else {
                a[2..].iter().filter_map(|n| table.find(n)).collect()
            };
            c.out.map(found.len());
            for cmd in found {
                command_docs(c, cmd);
            }
        }
        "help" if a.len() == 2 => c.out.bulks(
            [
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "    Return details about all commands.",
                "COUNT",
                "    Return the total number of commands.",
                "DOCS [<command-name> ...]",
                "    Return documentary information about commands.",
                "GETKEYS <full-command>",
                "    Return the keys from a full Redis command.",
                "INFO [<command-name> ...]",
                "    Return details about the given commands, or all of them.",
                "LIST",
                "    Return a list of all commands.",
            ]
            .iter()
            .map(|s| s.as_bytes()),
        ),
        "getkeys" if a.len() >= 4 => getkeys(c, &a[2..])?,
        "count" | "help" | "getkeys" => return Err(wrong_sub_args(c.name, &a[1])),
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}

/// COMMAND GETKEYS: the keys of the request `req` (a command and its arguments), as Redis finds them.
fn getkeys(c: &mut Ctx<'_>, req: &[Bytes]) -> CmdResult {
    const INVALID: CmdError = CmdError::Static("ERR Invalid command specified");
    let table = c.table;
    let i = table.lookup(&req[0]).ok_or(INVALID)?;
    let cmd = &table.commands()[i];
    if req.len() >= 2 && !cmd.subs.is_empty() && !cmd.subs.iter().any(|s| eq(&req[1], s)) {
        return Err(INVALID);
    }
    let arity_error = CmdError::Static("ERR Invalid number of arguments specified for command");
    // Redis checks that the command has keys at all before its arity.
    let keys = match key_positions(table, i, req) {
        Err(KeysError::NoKeys) => return Err(CmdError::Static("ERR The command has no key arguments")),
        _ if !cmd.arity_allows(req.len()) => return Err(arity_error),
        Err(KeysError::BadArity) => return Err(arity_error),
        Err(KeysError::BadArgs) => {
            return Err(CmdError::Static("ERR Invalid arguments specified for command"))
        }
        Ok(keys) => keys,
    };
    c.out.bulks(keys.iter().map(|&k| &req[k][..]));
    Ok(())
}
