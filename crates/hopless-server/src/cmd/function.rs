//! Functions: FCALL FCALL_RO and FUNCTION (LOAD [REPLACE], DELETE, LIST [LIBRARYNAME] [WITHCODE], FLUSH,
//! DUMP, RESTORE [FLUSH|APPEND|REPLACE], STATS, KILL, HELP), over the libraries of `script::functions`.
//! A function runs as a script does (`scripting.rs`): alone across the event loops, its commands
//! checked as Redis checks a script's, its flags (`no-writes`, `allow-oom`) honoured before it starts.

use bytes::Bytes;

use super::command::{help, subcommand, Command, Ctx};
use super::scripting::{after_run, checks, flush_mode, take_gates, Prepared, ScriptHost, NOT_BUSY};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};
use crate::script::{FunctionCall, Kill};
use crate::words::eq;
use hopless_kv::store::glob_match;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("fcall", -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", fcall),
    Command::new("fcall_ro", -3, "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", fcall),
    Command::new("function", -2, "", function)
        .subs(&["delete", "dump", "flush", "help", "kill", "list", "load", "restore", "stats"]),
];

const NOT_FOUND: CmdError = CmdError::Static("ERR Function not found");
const BAD_NUMKEYS: CmdError = CmdError::Static("ERR Bad number of keys provided");
const NEGATIVE_KEYS: CmdError = CmdError::Static("ERR Number of keys can't be negative");
const TOO_MANY_KEYS: CmdError = CmdError::Static("ERR Number of keys can't be greater than number of args");

fn fcall(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let _alone = take_gates(c)?;
    let shared = c.shared;
    let mut functions = shared.functions.lock().unwrap_or_else(|e| e.into_inner());
    let flags = functions.flags(&a[1]).ok_or(NOT_FOUND)?.to_vec();
    let numkeys = hopless_kv::store::parse_i64(&a[2]).ok_or(BAD_NUMKEYS)?;
    if numkeys > a.len() as i64 - 3 {
        return Err(TOO_MANY_KEYS);
    }
    if numkeys < 0 {
        return Err(NEGATIVE_KEYS);
    }
    let (keys, args) = a[3..].split_at(numkeys as usize);
    let declared = Prepared {
        declared: true,
        no_writes: flags.contains(&"no-writes"),
        allow_oom: flags.contains(&"allow-oom"),
    };
    let modes = checks(c, &declared)?;
    shared.running.set_call(FunctionCall {
        name: a[1].clone(),
        command: a.to_vec(),
        libraries: functions.libraries().count(),
        functions: functions.function_count(),
    });
    let errors = c.out.errors.clone();
    let mut host = ScriptHost::new(shared, &mut *c.conn, c.run, c.table, modes, errors);
    functions.call(&a[1], keys, args, &mut host, c.out);
    drop(functions);
    host.serve_blocked();
    drop(host);
    after_run(c);
    Ok(())
}

/// FUNCTION STATS: the function running now (its name, its FCALL, for how long) and what is loaded.
fn stats(c: &mut Ctx<'_>, running: Option<(&FunctionCall, u64)>, libraries: usize, functions: usize) {
    c.out.map(2);
    c.out.bulk(b"running_script");
    match running {
        None => c.out.null(),
        Some((call, ms)) => {
            c.out.map(3);
            c.out.bulk(b"name");
            c.out.bulk(&call.name);
            c.out.bulk(b"command");
            c.out.bulks(call.command.iter().map(|a| &a[..]));
            c.out.bulk(b"duration_ms");
            c.out.int(ms as i64);
        }
    }
    c.out.bulk(b"engines");
    c.out.map(1);
    c.out.bulk(b"LUA");
    c.out.map(2);
    c.out.bulk(b"libraries_count");
    c.out.int(libraries as i64);
    c.out.bulk(b"functions_count");
    c.out.int(functions as i64);
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
    // Before the libraries' lock, which the function to kill holds while it runs.
    if sub == "kill" && n == 2 {
        return match c.shared.running.kill(true) {
            Kill::Asked => {
                c.out.ok();
                Ok(())
            }
            Kill::NotBusy => Err(NOT_BUSY),
            Kill::Unkillable => Err(super::scripting::UNKILLABLE),
            // EVAL's script runs: SCRIPT KILL stops it.
            Kill::OtherKind => Err(crate::errors::BUSY),
        };
    }
    // STATS too, while a function runs (it holds the lock) or EVAL's script does (Redis's BUSY).
    if sub == "stats" && n == 2 {
        if let Some((call, ms)) = c.shared.running.function_call() {
            stats(c, Some((&call, ms)), call.libraries, call.functions);
            return Ok(());
        }
        if c.shared.running.eval_running() {
            return Err(crate::errors::BUSY);
        }
    }
    // LOAD and RESTORE are `denyoom` in Redis: refused over `maxmemory` under `noeviction`.
    if (sub == "load" || sub == "restore") && n >= 3 && c.shared.store.refuses_growth() {
        return Err(CmdError::Msg(hopless_kv::Error::OutOfMemory.to_string()));
    }
    let mut functions = c.shared.functions.lock().unwrap_or_else(|e| e.into_inner());
    match sub.as_str() {
        "load" if n >= 3 => {
            if let Some(bad) = a[2..n - 1].iter().find(|o| !eq(o, "replace")) {
                return Err(CmdError::Msg(format!(
                    "ERR Unknown option given: {}",
                    String::from_utf8_lossy(bad)
                )));
            }
            let name = functions.load(&a[n - 1], n > 3).map_err(CmdError::Msg)?;
            c.out.bulk(name.as_bytes());
        }
        "list" => {
            let (mut with_code, mut pattern) = (false, None);
            let mut i = 2;
            while i < n {
                if !with_code && eq(&a[i], "withcode") {
                    with_code = true;
                } else if pattern.is_none() && eq(&a[i], "libraryname") {
                    if i + 1 >= n {
                        return Err(CmdError::Static("ERR library name argument was not given"));
                    }
                    pattern = Some(a[i + 1].clone());
                    i += 1;
                } else {
                    return Err(CmdError::Msg(format!(
                        "ERR Unknown argument {}",
                        String::from_utf8_lossy(&a[i])
                    )));
                }
                i += 1;
            }
            let libs: Vec<_> = functions
                .libraries()
                .filter(|l| pattern.as_ref().is_none_or(|p| glob_match(p, l.name.as_bytes())))
                .collect();
            c.out.array(libs.len());
            for lib in libs {
                c.out.map(if with_code { 4 } else { 3 });
                c.out.bulk(b"library_name");
                c.out.bulk(lib.name.as_bytes());
                c.out.bulk(b"engine");
                c.out.bulk(b"LUA");
                c.out.bulk(b"functions");
                c.out.array(lib.functions.len());
                for f in &lib.functions {
                    c.out.map(3);
                    c.out.bulk(b"name");
                    c.out.bulk(f.name.as_bytes());
                    c.out.bulk(b"description");
                    match &f.description {
                        Some(d) => c.out.bulk(d),
                        None => c.out.null(),
                    }
                    c.out.bulk(b"flags");
                    c.out.set(f.flags.len());
                    for flag in &f.flags {
                        c.out.simple(flag);
                    }
                }
                if with_code {
                    c.out.bulk(b"library_code");
                    c.out.bulk(&lib.code);
                }
            }
        }
        "flush" if n > 3 => return Err(sub_syntax(c, &a[1])),
        "flush" => {
            if n == 3 && !flush_mode(&a[2]) {
                return Err(CmdError::Static(
                    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
                ));
            }
            functions.flush();
            c.out.ok();
        }
        "stats" if n == 2 => {
            let (libraries, count) = (functions.libraries().count(), functions.function_count());
            stats(c, None, libraries, count);
        }
        "delete" if n == 3 => {
            if !functions.delete(&a[2]) {
                return Err(CmdError::Static("ERR Library not found"));
            }
            c.out.ok();
        }
        "dump" if n == 2 => c.out.bulk(&functions.dump()),
        "restore" if n == 3 || n == 4 => {
            let policy = if n == 4 {
                let p = String::from_utf8_lossy(&a[3]).to_ascii_lowercase();
                if !matches!(p.as_str(), "flush" | "append" | "replace") {
                    return Err(CmdError::Static(
                        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
                    ));
                }
                p
            } else {
                "append".to_string()
            };
            functions.restore(&a[2], &policy).map_err(CmdError::Msg)?;
            c.out.ok();
        }
        "help" if n == 2 => help(c, FUNCTION_HELP),
        // Past its arity (-3), RESTORE's own parser finds too many arguments.
        "restore" if n > 4 => return Err(sub_syntax(c, &a[1])),
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
