//! Functions, which this server does not run: FCALL, FCALL_RO, FUNCTION LOAD and FUNCTION RESTORE are
//! refused with an error that says so, while what clients and tools probe answers as Redis answers with
//! an empty function library (FUNCTION LIST, STATS, FLUSH, DUMP). Redis's own test harness calls
//! FUNCTION FLUSH before every unit, for one.

use bytes::Bytes;

use super::command::{help, subcommand, Command, Ctx};
use super::scripting::{flush_mode, NOT_BUSY};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("fcall", -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", refuse)
        .acl("@slow @scripting").doc("scripting", "7.0.0", "Invoke a function"),
    Command::new("fcall_ro", -3, "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", refuse)
        .acl("@slow @scripting").doc("scripting", "7.0.0", "Invoke a read-only function"),
    Command::new("function", -2, "", function).acl("@slow")
        .subs(&["delete", "dump", "flush", "help", "kill", "list", "load", "restore", "stats"])
        .doc("scripting", "7.0.0", "A container for function commands"),
];

/// The answer to every command that would run a function or load one.
pub const NO_FUNCTIONS: CmdError = CmdError::Static(
    "ERR functions are not supported by this server (no FCALL or FUNCTION LOAD); EVAL scripts are",
);

/// What FUNCTION DUMP gives for an empty library in Redis 7.0: the RDB version (10, two bytes little
/// endian) and the CRC64 of the payload, byte for byte.
const EMPTY_DUMP: &[u8] = b"\x0a\x00\x5d\x9b\x5c\x40\x0f\x7f\xa2\xda";

fn refuse(_: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    Err(NO_FUNCTIONS)
}

/// `ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.`: Redis's reply
/// when a subcommand's own parser finds too many arguments.
fn sub_syntax(c: &Ctx<'_>, sub: &[u8]) -> CmdError {
    CmdError::Msg(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        c.name.to_ascii_uppercase()
    ))
}

fn function(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    let n = a.len();
    match sub.as_str() {
        "list" => {
            let (mut with_code, mut name) = (false, false);
            let mut i = 2;
            while i < n {
                if !with_code && eq(&a[i], "withcode") {
                    with_code = true;
                } else if !name && eq(&a[i], "libraryname") {
                    if i + 1 >= n {
                        return Err(CmdError::Static("ERR library name argument was not given"));
                    }
                    name = true;
                    i += 1;
                } else {
                    return Err(CmdError::Msg(format!(
                        "ERR Unknown argument {}",
                        String::from_utf8_lossy(&a[i])
                    )));
                }
                i += 1;
            }
            c.out.array(0);
        }
        "flush" if n > 3 => return Err(sub_syntax(c, &a[1])),
        "flush" => {
            if n == 3 && !flush_mode(&a[2]) {
                return Err(CmdError::Static(
                    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
                ));
            }
            c.out.ok();
        }
        "stats" if n == 2 => {
            c.out.map(2);
            c.out.bulk(b"running_script");
            c.out.null();
            c.out.bulk(b"engines");
            c.out.map(1);
            c.out.bulk(b"LUA");
            c.out.map(2);
            c.out.bulk(b"libraries_count");
            c.out.int(0);
            c.out.bulk(b"functions_count");
            c.out.int(0);
        }
        "delete" if n == 3 => return Err(CmdError::Static("ERR Library not found")),
        "kill" if n == 2 => return Err(NOT_BUSY),
        "dump" if n == 2 => c.out.bulk(EMPTY_DUMP),
        "load" | "restore" if n >= 3 => return Err(NO_FUNCTIONS),
        "help" if n == 2 => help(c, FUNCTION_HELP),
        "stats" | "delete" | "kill" | "dump" | "load" | "restore" | "help" => {
            return Err(wrong_sub_args(c.name, &a[1]))
        }
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}

const FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION \
     RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];
