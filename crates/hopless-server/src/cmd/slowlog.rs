//! SLOWLOG: GET, LEN, RESET and HELP over the server's slow log (`slowlog.rs`), with Redis 7.0's replies
//! and errors. What goes in is decided where commands run (`cmd/mod.rs`).

use bytes::Bytes;
use hopless_kv::store::parse_i64;

use super::command::{help, subcommand, Command, Ctx};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("slowlog", -2, "", slowlog)
        .subs(&["get", "help", "len", "reset"]),
];

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

const BAD_COUNT: CmdError = CmdError::Static("ERR count should be greater than or equal to -1");

fn slowlog(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    let log = &c.shared.slowlog;
    match (sub.as_str(), a.len()) {
        ("help", 2) => help(c, SLOWLOG_HELP),
        ("len", 2) => c.out.int(log.len() as i64),
        ("reset", 2) => {
            log.reset();
            c.out.ok();
        }
        ("get", 2 | 3) => {
            let count = match a.get(2) {
                None => 10,
                Some(n) => match parse_i64(n) {
                    Some(-1) => usize::MAX,
                    Some(n) if n >= 0 => n as usize,
                    _ => return Err(BAD_COUNT),
                },
            };
            let entries = log.newest(count);
            c.out.array(entries.len());
            for e in &entries {
                c.out.array(6);
                c.out.int(e.id as i64);
                c.out.int(e.time);
                c.out.int(e.micros as i64);
                c.out.bulks(e.args.iter().map(|b| &b[..]));
                c.out.bulk(e.peer.as_bytes());
                c.out.bulk(&e.name);
            }
        }
        // GET takes any number of arguments past the table's arity check, and refuses more than one
        // as a syntax error; the others have a fixed arity, checked as a subcommand's.
        ("get", _) => {
            return Err(CmdError::Msg(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
                String::from_utf8_lossy(&a[1])
            )))
        }
        ("help" | "len" | "reset", _) => return Err(wrong_sub_args(c.name, &a[1])),
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}
