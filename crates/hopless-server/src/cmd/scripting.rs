//! Lua scripts: EVAL EVALSHA EVAL_RO EVALSHA_RO and SCRIPT (LOAD EXISTS FLUSH KILL HELP; DEBUG refused).
//!
//! A script runs with every event loop's gate held, as EXEC runs a transaction: no other client's
//! command runs between two of its commands. Its `redis.call`s go through [`ScriptHost`], which makes
//! Redis's checks of a command called from a script (known, arity, not `noscript`, no writes from a
//! read-only script, none that grow memory past `maxmemory`) and runs it as EXEC runs its queue. The
//! clients blocked on keys the script pushed to are served once it is done.
//!
//! A script that runs past `busy-reply-threshold` is busy: the other loops answer BUSY to everything
//! but SCRIPT KILL, which stops it at its next check unless it wrote already (UNKILLABLE). The
//! connections of the script's own loop wait for it, as that loop runs it.

use bytes::Bytes;

use super::command::{help, int_arg, subcommand, Command, Ctx, Runner, Table};
use crate::codec::{Proto, Reply};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};
use crate::exec_gate::Exclusive;
use crate::script::{Body, Host, Kill, Refusal, RunError};
use crate::state::{ConnState, Shared};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("eval", -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", eval),
    Command::new("evalsha", -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", evalsha),
    Command::new("eval_ro", -3, "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", eval),
    Command::new("evalsha_ro", -3, "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", evalsha),
    Command::new("script", -2, "", script)
        .subs(&["debug", "exists", "flush", "help", "kill", "load"]),
];

pub(super) const NOT_BUSY: CmdError = CmdError::Static("NOTBUSY No scripts in execution right now.");
pub(super) const UNKILLABLE: CmdError = CmdError::Static(
    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either \
     wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
);
const NO_SCRIPT: CmdError = CmdError::Static("NOSCRIPT No matching script. Please use EVAL.");
const NEGATIVE_KEYS: CmdError = CmdError::Static("ERR Number of keys can't be negative");
const TOO_MANY_KEYS: CmdError = CmdError::Static("ERR Number of keys can't be greater than number of args");

/// `ASYNC` or `SYNC` (a flush is immediate either way).
pub(super) fn flush_mode(arg: &[u8]) -> bool {
    eq(arg, "async") || eq(arg, "sync")
}

fn eval(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    run(c, a, Body::Text(&a[1]))
}

fn evalsha(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    run(c, a, Body::Sha(&a[1]))
}

/// EVAL and EVALSHA (and their `_RO` forms): numkeys checked, the script run alone.
fn run(c: &mut Ctx<'_>, a: &[Bytes], body: Body<'_>) -> CmdResult {
    let numkeys = int_arg(&a[2])?;
    if numkeys < 0 {
        return Err(NEGATIVE_KEYS);
    }
    let numkeys = numkeys as usize;
    if numkeys > a.len() - 3 {
        return Err(TOO_MANY_KEYS);
    }
    let (keys, args) = a[3..].split_at(numkeys);
    let _alone = take_gates(c)?;
    let mut scripts = c.shared.scripts.lock().unwrap_or_else(|e| e.into_inner());
    let (sha, flags) = scripts.prepare(body).map_err(run_error)?;
    let declared = Prepared {
        declared: flags.declared,
        no_writes: flags.no_writes,
        allow_oom: flags.allow_oom,
    };
    let modes = checks(c, &declared)?;
    let errors = c.out.errors.clone();
    let mut host = ScriptHost::new(c.shared, &mut *c.conn, c.run, c.table, modes, errors);
    let ran = scripts.run(&sha, keys, args, &mut host, c.out);
    drop(scripts);
    host.serve_blocked();
    drop(host);
    after_run(c);
    ran.map_err(run_error)
}

/// After a script or function of `c` ran, still alone (every gate held, so the flag is this script's):
/// if it let its event loop go, the connection yields to that loop before its next request.
pub(super) fn after_run(c: &mut Ctx<'_>) {
    if c.shared.running.take_let_go() {
        c.conn.yield_loop = true;
    }
    // Its commands go into the append-only file before another command may run (inside EXEC, with the
    // transaction's).
    if !c.in_exec {
        c.shared.aof.commit(crate::aof::stage::take());
    }
}

/// What a script or function declares, for the checks before it runs.
pub(super) struct Prepared {
    /// It has flags (a shebang line; every function has): Redis then checks memory before it starts.
    pub declared: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
}

/// Redis's checks of what a script or function about to run for `c` declares (EVAL, FCALL, or their
/// `_RO` forms): a `_RO` call of one that declares it may write is refused, and so is one that declares
/// it may write and grow memory over `maxmemory`. Whether it runs read-only, and may grow memory.
pub(super) fn checks(c: &Ctx<'_>, declared: &Prepared) -> Result<(bool, bool), CmdError> {
    let ro = c.name.ends_with("_ro");
    if ro && declared.declared && !declared.no_writes {
        return Err(CmdError::Static(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    let read_only = ro || declared.no_writes;
    if declared.declared && !read_only && !declared.allow_oom && c.shared.store.refuses_growth() {
        return Err(CmdError::Msg(hopless_kv::Error::OutOfMemory.to_string()));
    }
    if declared.declared && !read_only && c.shared.min_replicas.refuse_writes() {
        return Err(CmdError::Static(crate::errors::NOREPLICAS));
    }
    Ok((read_only, declared.allow_oom))
}

/// Every loop's gate, for a script to run alone (none inside EXEC, which holds them already); BUSY
/// while another script is busy.
pub(super) fn take_gates<'a>(c: &Ctx<'a>) -> Result<Option<Exclusive<'a>>, CmdError> {
    if c.in_exec {
        return Ok(None);
    }
    let shared = c.shared;
    shared
        .gate
        .exclusive_unless(|| shared.running.busy())
        .map(Some)
        .ok_or_else(|| busy_error(&shared.running))
}

/// The BUSY answer for the script running now: a function's names FUNCTION KILL, EVAL's SCRIPT KILL.
pub(super) fn busy_error(running: &crate::script::Running) -> CmdError {
    if running.is_function() {
        crate::errors::BUSY_FUNCTION
    } else {
        crate::errors::BUSY
    }
}

/// Redis's reply to a script that did not run.
fn run_error(e: RunError) -> CmdError {
    match e {
        RunError::NoScript => NO_SCRIPT,
        RunError::Compile(msg) => CmdError::Msg(format!("ERR {msg}")),
        RunError::Shebang(text) => CmdError::Msg(text),
    }
}

/// Runs a script's commands: the checks Redis makes of a command called from a script, then the
/// dispatcher's run of it (every gate is held).
pub(super) struct ScriptHost<'a> {
    shared: &'a Shared,
    conn: &'a mut ConnState,
    run: Runner,
    table: &'static Table,
    read_only: bool,
    allow_oom: bool,
    /// The write commands run (table index and arguments), whose keys may wake blocked clients.
    writes: Vec<(usize, Vec<Bytes>)>,
    errors: Option<std::sync::Arc<crate::error_stats::ErrorStats>>,
    /// The reply buffer of the script's commands, one after another.
    reply: bytes::BytesMut,
}

impl ScriptHost<'_> {
    /// Whether a script may run `args` (command `i` of the table, when known): its table index, or
    /// why not, in Redis's words and order.
    fn admit(&self, i: Option<usize>, args: &[Bytes]) -> Result<usize, Refusal> {
        let Some(i) = i else {
            return Err(Refusal::Text("Unknown Redis command called from script"));
        };
        let cmd = &self.table.commands()[i];
        if !cmd.arity_allows(args.len()) {
            return Err(Refusal::Text(
                "Wrong number of args calling Redis command from script",
            ));
        }
        let traits = self.table.traits(i);
        if traits.noscript {
            return Err(Refusal::Text("This Redis command is not allowed from script"));
        }
        if let Some(why) = cmd.script_refusal.and_then(|check| check(args)) {
            return Err(Refusal::Text(why));
        }
        if (traits.write || traits.may_replicate) && self.read_only {
            return Err(Refusal::Text(
                "Write commands are not allowed from read-only scripts.",
            ));
        }
        // The server's state refuses no write once the script has written: it must not stop half done.
        if traits.write && self.shared.min_replicas.refuse_writes() && !self.shared.running.has_written() {
            return Err(Refusal::Reply(crate::errors::NOREPLICAS));
        }
        if traits.denyoom && !self.allow_oom && self.shared.store.refuses_growth() {
            return Err(Refusal::Reply(hopless_kv::Error::OutOfMemory.text()));
        }
        Ok(i)
    }
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, args: &[Bytes], resp3: bool) -> Result<&[u8], Refusal> {
        let found = self.table.lookup(&args[0]);
        let i = match self.admit(found, args) {
            Ok(i) => i,
            Err(refusal) => {
                // Counted here, as Redis counts a refused call of a script's: the error (the script's
                // own error reply, when it ends in this one, is not counted again) and the command's
                // rejected call.
                if let Some(errors) = &self.errors {
                    match &refusal {
                        Refusal::Text(text) => errors.count(format!("ERR {text}").as_bytes()),
                        Refusal::Reply(text) => errors.count(text.as_bytes()),
                    }
                }
                if let Some(i) = found {
                    self.shared.stats.of(self.conn.loop_index).commands[i]
                        .rejected
                        .add(1);
                }
                return Err(refusal);
            }
        };
        let traits = self.table.traits(i);
        if traits.write {
            self.shared.running.wrote();
        }
        let mut buf = std::mem::take(&mut self.reply);
        buf.clear();
        let mut out = Reply {
            buf,
            proto: if resp3 { Proto::Resp3 } else { Proto::Resp2 },
            errors: self.errors.clone(),
        };
        self.conn.in_script = true;
        (self.run)(self.shared, self.conn, &mut out, i, args);
        self.conn.in_script = false;
        if traits.write && self.shared.blocked.active() {
            self.writes.push((i, args.to_vec()));
        }
        self.reply = out.buf;
        Ok(&self.reply)
    }
}

impl Drop for ScriptHost<'_> {
    fn drop(&mut self) {
        if self.allow_oom {
            self.shared.store.set_over_limit(false);
        }
    }
}

impl<'a> ScriptHost<'a> {
    /// The host of a script or function that passed [`checks`], for connection `conn`.
    pub(super) fn new(
        shared: &'a Shared,
        conn: &'a mut ConnState,
        run: Runner,
        table: &'static Table,
        (read_only, allow_oom): (bool, bool),
        errors: Option<std::sync::Arc<crate::error_stats::ErrorStats>>,
    ) -> Self {
        if allow_oom {
            // Its writes may grow memory past `maxmemory`, as Redis lets an `allow-oom` script's (it runs
            // alone: every gate is held); back to refusing when the host is dropped.
            shared.store.set_over_limit(true);
        }
        ScriptHost {
            shared,
            conn,
            run,
            table,
            read_only,
            allow_oom,
            writes: Vec::new(),
            errors,
            reply: bytes::BytesMut::new(),
        }
    }

    /// The clients blocked on keys the script wrote are served now, before anybody else runs (as after
    /// EXEC).
    pub(super) fn serve_blocked(&mut self) {
        for (i, args) in &self.writes {
            let served =
                self.shared
                    .blocked
                    .serve(&self.shared.store, &self.shared.events, self.table.keys(*i, args));
            if self.shared.watches.active() {
                self.shared.watches.touch(served.iter().map(|k| &k[..]));
            }
        }
    }
}

fn script(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    let n = a.len();
    match sub.as_str() {
        "exists" if n >= 3 => {
            let scripts = c.shared.scripts.lock().unwrap_or_else(|e| e.into_inner());
            c.out.array(n - 2);
            for sha in &a[2..] {
                c.out.int(i64::from(scripts.exists(sha)));
            }
        }
        "flush" => {
            if n > 3 || (n == 3 && !flush_mode(&a[2])) {
                return Err(CmdError::Static(
                    "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
                ));
            }
            c.shared.scripts.lock().unwrap_or_else(|e| e.into_inner()).flush();
            c.out.ok();
        }
        "kill" if n == 2 => match c.shared.running.kill(false) {
            Kill::Asked => c.out.ok(),
            Kill::NotBusy => return Err(NOT_BUSY),
            Kill::Unkillable => return Err(UNKILLABLE),
            // A function runs: FUNCTION KILL stops it.
            Kill::OtherKind => return Err(crate::errors::BUSY_FUNCTION),
        },
        "load" if n == 3 => {
            let mut scripts = c.shared.scripts.lock().unwrap_or_else(|e| e.into_inner());
            let sha = scripts.load(&a[2]).map_err(run_error)?;
            c.out.bulk(sha.as_bytes());
        }
        "debug" if n == 3 => {
            return Err(CmdError::Static(
                "ERR SCRIPT DEBUG is not supported by this server (no Lua debugger)",
            ))
        }
        "help" if n == 2 => help(c, SCRIPT_HELP),
        "exists" | "kill" | "load" | "debug" | "help" => return Err(wrong_sub_args(c.name, &a[1])),
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];
