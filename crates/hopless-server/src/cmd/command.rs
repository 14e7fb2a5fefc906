//! What a command is: its row in the command table ([`Command`]: name, arity, flags, key positions,
//! handler), the table of all of them ([`Table`], looked up by name, each row with the [`Spec`] Redis
//! gives it), and what its handler is given ([`Ctx`]) and returns.

use bytes::Bytes;
use hopless_kv::store::parse_i64;

use super::spec::Spec;
use super::specs;
use crate::codec::Reply;
use crate::errors::{CmdError, CmdResult, NOT_INTEGER};
use crate::state::{ConnState, LookupCache, Shared};

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Continue,
    /// Close after writing the replies so far (QUIT, SHUTDOWN).
    Close,
}

/// What the dispatcher needs to know of a command on every call, read once from its flags.
#[derive(Clone, Copy)]
pub struct Traits {
    /// `write`: may change keys, so WATCH and blocked clients hear of its keys.
    pub write: bool,
    /// Keys anywhere in the arguments (`movablekeys`): all of them are taken as possible keys.
    pub movable: bool,
    /// `denyoom`: may grow memory (inside MULTI, EXEC is refused over `maxmemory` if one is queued).
    pub denyoom: bool,
    /// Redis's `may_replicate` ([`Command::may_replicate`]): a read-only script may not call it.
    pub may_replicate: bool,
    /// `no_multi`: refused inside MULTI.
    pub no_multi: bool,
    /// Runs at once even inside MULTI (MULTI EXEC DISCARD WATCH UNWATCH QUIT RESET), without the
    /// loop's gate when it is EXEC.
    pub transaction_control: bool,
    /// EXEC: runs without its loop's gate, holding every loop's.
    pub alone: bool,
    /// Takes every loop's gate itself rather than its own loop's (EXEC, the commands that run a
    /// script, and those that save or load the snapshot).
    pub every_gate: bool,
    /// EVAL and its kin: MONITOR shows them before the commands they run.
    pub runs_script: bool,
    /// `noscript`: refused when a script calls it.
    pub noscript: bool,
    /// `skip_slowlog` (EXEC: the commands it runs are logged, not it).
    pub skip_slowlog: bool,
    /// For a write command: whether, from its arguments and reply, it changed nothing (`DEL` of absent
    /// keys: `:0`; `SET ... NX` refused: a null). Such a write touches no watch and serves no blocked
    /// client, as in Redis, which signals only real changes. Commands whose reply cannot tell (ZADD
    /// updating a score answers 0) always count as a change: a needless abort of an optimistic
    /// transaction is safe, a missed one is not.
    pub unchanged: fn(&[Bytes], &[u8]) -> bool,
}

/// Which write commands can tell from their reply that they changed nothing, and how.
fn unchanged_test(name: &str) -> fn(&[Bytes], &[u8]) -> bool {
    fn never(_: &[Bytes], _: &[u8]) -> bool {
        false
    }
    fn zero(_: &[Bytes], r: &[u8]) -> bool {
        r == b":0\r\n"
    }
    fn zero_or_minus_one(_: &[Bytes], r: &[u8]) -> bool {
        r == b":0\r\n" || r == b":-1\r\n"
    }
    /// A null (RESP2 bulk or array, RESP3) or an empty array: nothing popped.
    fn nothing(_: &[Bytes], r: &[u8]) -> bool {
        matches!(r, b"$-1\r\n" | b"*-1\r\n" | b"_\r\n" | b"*0\r\n")
    }
    /// SET answers a null when NX or XX refused it, unless GET asked for the old value.
    fn set_refused(a: &[Bytes], r: &[u8]) -> bool {
        nothing(a, r) && !a[3..].iter().any(|o| o.eq_ignore_ascii_case(b"get"))
    }
    /// GETEX without an option only reads.
    fn getex_read(a: &[Bytes], _: &[u8]) -> bool {
        a.len() == 2
    }
    /// PFDEBUG's conversion to dense is stored but not signalled, as in Redis.
    fn always(_: &[Bytes], _: &[u8]) -> bool {
        true
    }
    match name {
        "del" | "unlink" | "setnx" | "msetnx" | "hsetnx" | "lpushx" | "rpushx" | "sadd" | "srem" | "hdel"
        | "zrem" | "expire" | "pexpire" | "expireat" | "pexpireat" | "persist" | "renamenx" | "smove"
        | "lrem" | "zremrangebyscore" | "zremrangebyrank" | "zremrangebylex" | "setrange" | "copy"
        | "pfadd" => zero,
        "linsert" => zero_or_minus_one,
        "lpop" | "rpop" | "spop" | "getdel" | "lmove" | "rpoplpush" | "lmpop" | "zmpop" | "zpopmin"
        | "zpopmax" => nothing,
        "set" => set_refused,
        "getex" => getex_read,
        "pfdebug" => always,
        _ => never,
    }
}

/// What a handler works with.
pub struct Ctx<'a> {
    pub shared: &'a Shared,
    pub conn: &'a mut ConnState,
    pub out: &'a mut Reply,
    /// The command's name as the table spells it (for error messages).
    pub name: &'static str,
    /// Every command (for COMMAND, INFO commandstats and CLIENT LIST, which name them).
    pub table: &'static Table,
    pub action: Action,
    /// Whether this command runs inside EXEC (a blocking command then does not block).
    pub in_exec: bool,
    /// Runs one more command for this connection, without the loop's gate (EXEC's queue, under the
    /// exclusive hold): the dispatcher's, handed down so that no family imports the dispatcher.
    pub run: Runner,
    /// Set by a write that knows it changed only some of its keys (SMOVE to a set that already held the
    /// member changes only the source): the positions in the arguments of those it changed. `None`:
    /// every key, unless the command's `unchanged` test says none.
    pub changed_keys: Option<&'static [usize]>,
}

/// Runs the command at table index `i` with `args` for a connection inside EXEC.
pub type Runner = fn(&Shared, &mut ConnState, &mut Reply, usize, &[Bytes]) -> Action;

type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// Runs a command read from the append-only file for its loader's client, as Redis's loader runs one:
/// none of a client's checks (password, memory, refused writes), every command through `run` as inside
/// EXEC (nothing blocks, a script takes no gate), the reply dropped. MULTI and EXEC are passed over:
/// nothing else runs during a load, and a transaction cut short at the end is the loader's to drop.
/// Err: a command this server does not know, or with the wrong number of arguments.
pub fn replay(
    table: &Table,
    shared: &Shared,
    conn: &mut ConnState,
    args: &[Bytes],
    run: Runner,
) -> Result<(), String> {
    let Some(i) = table.lookup(&args[0]) else {
        return Err(format!("Unknown command '{}'", String::from_utf8_lossy(&args[0])));
    };
    let cmd = &table.commands()[i];
    if !cmd.arity_allows(args.len()) {
        return Err(format!("Wrong number of arguments for '{}'", cmd.name));
    }
    if matches!(cmd.name, "multi" | "exec") {
        return Ok(());
    }
    let mut out = Reply::new(crate::codec::Proto::Resp2);
    run(shared, conn, &mut out, i, args);
    Ok(())
}

/// Why a script may not call a command with these arguments, in Redis's words (`None`: it may).
type ScriptRefusal = fn(&[Bytes]) -> Option<&'static str>;

/// One command: how it is dispatched (arity, flags, key positions, subcommands) and its handler. Built
/// with [`Command::new`] and the setters after it, so that a family's table reads one command a row.
/// What COMMAND reports of it (ACL categories, key specs, docs) is its [`Spec`], Redis's own.
#[derive(Clone, Copy)]
pub struct Command {
    pub name: &'static str,
    /// Redis's arity: N exactly, or -N at least N (the name counts).
    pub arity: i32,
    /// Space-separated, in the order COMMAND lists them (Redis's own order, which is not alphabetical).
    pub flags: &'static str,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    /// A container's subcommands (CLIENT's `list`, `kill`...), lower-case: CLIENT LIST names the last
    /// command run as Redis 7 does, `client|list`.
    pub subs: &'static [&'static str],
    /// For a container whose subcommands scripts meet differently (CLUSTER RESET is `noscript`, the
    /// rest are not): why a script may not call it with these arguments, in Redis's words.
    pub script_refusal: Option<ScriptRefusal>,
    /// Redis's `may_replicate` flag, which COMMAND hides: a command that is not a write but may change
    /// a value (PFCOUNT's cache), refused in a read-only script as a write is.
    pub may_replicate: bool,
    pub handler: Handler,
}

impl Command {
    /// A command without keys or subcommands (the setters below add them).
    pub const fn new(name: &'static str, arity: i32, flags: &'static str, handler: Handler) -> Self {
        Command {
            name,
            arity,
            flags,
            first_key: 0,
            last_key: 0,
            step: 0,
            subs: &[],
            script_refusal: None,
            may_replicate: false,
            handler,
        }
    }

    pub const fn subs(self, subs: &'static [&'static str]) -> Self {
        Command { subs, ..self }
    }

    pub const fn script_refusal(self, check: ScriptRefusal) -> Self {
        Command {
            script_refusal: Some(check),
            ..self
        }
    }

    /// Marks the command `may_replicate` (see [`Command::may_replicate`]).
    pub const fn may_replicate(self) -> Self {
        Command {
            may_replicate: true,
            ..self
        }
    }

    /// What a client's `last_cmd` records of this command (table index `i`) run with `args`: the index
    /// plus one, and for a container's known subcommand its index plus one above bit 16
    /// ([`Table::last_cmd_name`] reads it back).
    pub fn last_cmd_code(&self, i: usize, args: &[Bytes]) -> usize {
        let sub = match args.get(1) {
            Some(a) if !self.subs.is_empty() => self
                .subs
                .iter()
                .position(|s| a.eq_ignore_ascii_case(s.as_bytes()))
                .map_or(0, |j| j + 1),
            _ => 0,
        };
        (i + 1) | (sub << 16)
    }

    /// Where the keys are: the first and last argument that is one (-1: the last argument), and the step.
    pub const fn keys(self, first_key: i32, last_key: i32, step: i32) -> Self {
        Command {
            first_key,
            last_key,
            step,
            ..self
        }
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.split_ascii_whitespace().any(|f| f == flag)
    }

    /// Whether `argc` arguments (the name included) are what the arity allows.
    pub fn arity_allows(&self, argc: usize) -> bool {
        let argc = argc as i32;
        !((self.arity > 0 && argc != self.arity) || argc < -self.arity)
    }
}

/// Every command, in the order COMMAND lists them, and an index by name.
pub struct Table {
    commands: Vec<Command>,
    traits: Vec<Traits>,
    /// Each command's spec (one made from its row for a command Redis 7.0.15 lacks).
    specs: Vec<&'static Spec>,
    /// Name to index, hashed with foldhash (hashbrown's default): SipHash costs a command more than its
    /// lookup needs, and the names are ours, not a client's.
    index: hashbrown::HashMap<&'static [u8], usize>,
}

impl Table {
    /// The families' tables one after another.
    pub fn new(families: &[&[Command]]) -> Self {
        let commands: Vec<Command> = families.concat();
        let index = commands
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect();
        let traits = commands
            .iter()
            .map(|c| Traits {
                write: c.has_flag("write"),
                movable: c.has_flag("movablekeys"),
                denyoom: c.has_flag("denyoom"),
                may_replicate: c.may_replicate,
                no_multi: c.has_flag("no_multi"),
                transaction_control: matches!(
                    c.name,
                    "multi" | "exec" | "discard" | "watch" | "unwatch" | "quit" | "reset"
                ),
                alone: c.name == "exec",
                // The commands that take every loop's gate themselves: transactions, scripts, and what
                // saves or loads the snapshot (SAVE, BGSAVE's fork, SHUTDOWN's save, DEBUG RELOAD).
                every_gate: matches!(
                    c.name,
                    "exec"
                        | "eval"
                        | "evalsha"
                        | "eval_ro"
                        | "evalsha_ro"
                        | "fcall"
                        | "fcall_ro"
                        | "save"
                        | "bgsave"
                        | "bgrewriteaof"
                        | "config"
                        | "shutdown"
                        | "debug"
                        | "sync"
                        | "psync"
                ),
                noscript: c.has_flag("noscript"),
                runs_script: matches!(
                    c.name,
                    "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
                ),
                skip_slowlog: c.has_flag("skip_slowlog"),
                unchanged: unchanged_test(c.name),
            })
            .collect();
        let by_name: hashbrown::HashMap<&str, &'static Spec> = specs::GROUPS
            .iter()
            .flat_map(|g| g.iter())
            .map(|s| (s.name, s))
            .collect();
        let specs = commands
            .iter()
            .map(|c| match by_name.get(c.name) {
                Some(s) => *s,
                // Made once, when the table is: it lives as long as the process.
                None => &*Box::leak(Box::new(Spec {
                    name: c.name,
                    arity: c.arity,
                    flags: c.flags,
                    range: (c.first_key, c.last_key, c.step),
                    ..Spec::NONE
                })),
            })
            .collect();
        Table {
            commands,
            traits,
            specs,
            index,
        }
    }

    /// What Redis says of command `i`: COMMAND's data, and where its keys are.
    pub fn spec(&self, i: usize) -> &'static Spec {
        self.specs[i]
    }

    pub fn traits(&self, i: usize) -> Traits {
        self.traits[i]
    }

    /// The arguments of `args` (a call of command `i`) that are keys: by the command's key positions,
    /// or every argument after the name when they move (LMPOP's numkeys...) or it declares none.
    pub fn keys<'a>(&self, i: usize, args: &'a [Bytes]) -> impl Iterator<Item = &'a [u8]> {
        let c = &self.commands[i];
        let n = args.len() as i32;
        let (first, last, step) = if self.traits[i].movable || c.first_key <= 0 {
            (1, n - 1, 1)
        } else {
            let last = if c.last_key < 0 {
                n + c.last_key
            } else {
                c.last_key
            };
            (c.first_key, last.min(n - 1), c.step.max(1))
        };
        (first..=last)
            .step_by(step as usize)
            .filter_map(move |j| args.get(j as usize).map(|b| &b[..]))
    }

    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// The index of a command name, any case.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        // Longer than any command (GEORADIUSBYMEMBER_RO, 20 bytes, is the longest): not one (and no
        // allocation for the lower-case copy).
        let mut lower = [0u8; 24];
        let l = lower.get_mut(..name.len())?;
        for (d, s) in l.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        self.index.get(&*l).copied()
    }

    /// [`Table::lookup`] through a connection's one-entry cache: a pipeline mostly repeats one
    /// command, spelled the same way, and a byte compare is cheaper than a lower-cased hash lookup.
    pub fn lookup_cached(&self, name: &[u8], cache: &mut LookupCache) -> Option<usize> {
        if usize::from(cache.len) == name.len() && cache.name.get(..name.len()) == Some(name) {
            return Some(cache.index);
        }
        let i = self.lookup(name)?;
        if let Some(keep) = cache.name.get_mut(..name.len()) {
            keep.copy_from_slice(name);
            cache.len = name.len() as u8;
            cache.index = i;
        }
        Some(i)
    }

    /// CLIENT LIST's `cmd=` for a [`Command::last_cmd_code`] (0: none yet, `NULL`).
    pub fn last_cmd_name(&self, code: usize) -> String {
        let Some(c) = (code & 0xffff).checked_sub(1).and_then(|i| self.commands.get(i)) else {
            return "NULL".to_string();
        };
        match (code >> 16).checked_sub(1).and_then(|j| c.subs.get(j)) {
            Some(sub) => format!("{}|{sub}", c.name),
            None => c.name.to_string(),
        }
    }
}

/// A container command's subcommand (CONFIG GET, CLIENT LIST...), lower-cased to match on.
pub fn subcommand(a: &[Bytes]) -> String {
    String::from_utf8_lossy(&a[1]).to_ascii_lowercase()
}

/// A HELP reply as Redis's `addReplyHelp` sends it: an array of simple strings.
pub fn help(c: &mut Ctx<'_>, lines: &[&str]) {
    c.out.array(lines.len());
    for l in lines {
        c.out.simple(l);
    }
}

/// Argument positions, for naming the one key a command changed (`Ctx::changed_keys` takes a static
/// slice).
static POSITIONS: [usize; 64] = {
    let mut a = [0; 64];
    let mut i = 0;
    while i < a.len() {
        a[i] = i;
        i += 1;
    }
    a
};

/// [`Ctx::changed_keys`] for a command that changed only the key at argument `at` (a STORE's
/// destination); None, every key counted as changed, for one further out than the table reaches.
pub fn key_at(at: usize) -> Option<&'static [usize]> {
    POSITIONS.get(at).map(std::slice::from_ref)
}

/// An integer argument, as Redis's `getLongLongFromObjectOrReply`.
pub fn int_arg(b: &[u8]) -> Result<i64, CmdError> {
    parse_i64(b).ok_or(NOT_INTEGER)
}
