//! Running a command: the command table, put together from the families' tables, and dispatch: look the
//! name up (case-insensitive), check arity and AUTH as Redis does (in that order), queue it inside
//! MULTI, else run the handler under the loop's gate (`exec_gate`), count it for INFO commandstats, and
//! after a write tell the watchers and the blocked clients of its keys.
//!
//! Each family's file holds its handlers and, above them, its part of the table (one [`Command`] a
//! command); `command.rs` is what they all build on.
//!
//! | file | commands |
//! |---|---|
//! | `string.rs` | GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND STRLEN GETRANGE SUBSTR SETRANGE INCR DECR INCRBY DECRBY INCRBYFLOAT MGET MSET MSETNX LCS |
//! | `blocking.rs` | BLPOP BRPOP BRPOPLPUSH BLMOVE BLMPOP BZPOPMIN BZPOPMAX BZMPOP |
//! | `bit.rs` | SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO |
//! | `hll.rs` | PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST |
//! | `keys.rs` | DEL UNLINK EXISTS TOUCH EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME PERSIST TYPE KEYS SCAN RANDOMKEY RENAME RENAMENX COPY DBSIZE FLUSHDB FLUSHALL |
//! | `hash.rs` | the hash commands |
//! | `list.rs` | the list commands |
//! | `set.rs` | the set commands |
//! | `zset.rs` | the sorted-set commands |
//! | `sort.rs` | SORT SORT_RO |
//! | `geo.rs` | GEOADD GEODIST GEOHASH GEOPOS, and the searches' rows |
//! | `geo_search.rs` | GEORADIUS GEORADIUS_RO GEORADIUSBYMEMBER GEORADIUSBYMEMBER_RO GEOSEARCH GEOSEARCHSTORE |
//! | `stream.rs` | XADD XTRIM XDEL XLEN XRANGE XREVRANGE XSETID XREAD |
//! | `stream_group.rs` | XGROUP XACK XPENDING |
//! | `stream_read_group.rs` | XREADGROUP |
//! | `stream_claim.rs` | XCLAIM XAUTOCLAIM |
//! | `stream_info.rs` | XINFO |
//! | `connection.rs` | PING ECHO SELECT QUIT RESET HELLO AUTH |
//! | `transaction.rs` | MULTI EXEC DISCARD WATCH UNWATCH (the dispatcher queues inside MULTI) |
//! | `client.rs` | CLIENT (and the CLIENT LIST line) |
//! | `client_tracking.rs` | CLIENT TRACKING CACHING GETREDIR TRACKINGINFO |
//! | `info.rs` | INFO |
//! | `config.rs` | CONFIG |
//! | `introspection.rs` | COMMAND |
//! | `key_args.rs` | which arguments of a request are keys, and how each is used (COMMAND GETKEYS) |
//! | `memory.rs` | MEMORY |
//! | `object.rs` | OBJECT |
//! | `admin.rs` | SHUTDOWN DEBUG TIME |
//! | `cluster.rs` | CLUSTER (cluster support disabled, as Redis without `cluster-enabled`) |
//! | `pubsub.rs` | SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB, and subscribed mode's rules |
//! | `function.rs` | FCALL FCALL_RO FUNCTION |
//! | `scripting.rs` | EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT, and the checks and run of a script's commands |
//! | `notify.rs` | no command: the keyspace events of a command that ran |
//! | `track.rs` | no command: client-side caching's remembered reads and invalidated writes |
//! | `command.rs` | no command: [`Command`], the [`Table`], a handler's [`Ctx`] |
//! | `spec.rs` | no command: what Redis says of a command (`Spec`: key specs, flags, docs) |
//! | `specs/` | no command: every command's `Spec`, generated from Redis 7.0.15's JSON |

use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

use bytes::Bytes;

use self::command::{Command, Ctx, Table};
use crate::codec::Reply;
use crate::errors::{unknown_command, wrong_args, MISCONF, NOAUTH, NOREPLICAS};
use crate::exec_gate::Held;
use crate::state::{ConnState, Shared};
use crate::words::eq;

mod admin;
mod bit;
mod blocking;
mod client;
mod client_tracking;
mod cluster;
mod command;
mod config;
mod connection;
mod function;
mod geo;
mod geo_search;
mod hash;
mod hll;
mod info;
mod introspection;
mod key_args;
mod keys;
mod list;
mod memory;
mod migrate;
mod monitor;
mod notify;
mod object;
mod persist;
mod pubsub;
mod scan_args;
mod scripting;
mod set;
mod slowlog;
mod sort;
mod spec;
mod specs;
mod stream;
mod stream_claim;
mod stream_group;
mod stream_info;
mod stream_read_group;
mod string;
mod track;
mod transaction;
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
            blocking::COMMANDS,
            list::COMMANDS,
            set::COMMANDS,
            zset::COMMANDS,
            sort::COMMANDS,
            geo::COMMANDS,
            hll::COMMANDS,
            stream::COMMANDS,
            stream_group::COMMANDS,
            stream_read_group::COMMANDS,
            stream_claim::COMMANDS,
            stream_info::COMMANDS,
            connection::COMMANDS,
            transaction::COMMANDS,
            client::COMMANDS,
            info::COMMANDS,
            config::COMMANDS,
            introspection::COMMANDS,
            memory::COMMANDS,
            object::COMMANDS,
            pubsub::COMMANDS,
            admin::COMMANDS,
            persist::COMMANDS,
            migrate::COMMANDS,
            cluster::COMMANDS,
            monitor::COMMANDS,
            scripting::COMMANDS,
            function::COMMANDS,
            slowlog::COMMANDS,
        ])
    })
}

/// Runs one request (a non-empty argument list), or queues it inside MULTI; under CLIENT REPLY OFF or
/// SKIP its reply is dropped, as Redis drops it (errors too), but not pub/sub frames: a subscriber's
/// queued messages, and the (un)subscribe confirmations, which Redis sends as pushes whatever the mode.
pub fn execute<'s>(
    shared: &'s Shared,
    conn: &mut ConnState,
    out: &mut Reply,
    args: &[Bytes],
    gate: &mut Held<'s>,
) -> Action {
    if let Some(subs) = &conn.pubsub {
        subs.outbox().drain(out, usize::MAX);
    }
    if let Some(m) = &conn.monitor {
        m.drain(out, usize::MAX);
    }
    if conn.tracking.is_some() {
        conn.entry.pushes.drain(out, usize::MAX);
    }
    let at = out.buf.len();
    let before = conn.replies.silenced();
    let action = execute_request(shared, conn, out, args, gate);
    // CLIENT REPLY ON and RESET clear the mode before they answer, so their reply goes out.
    if before && conn.replies.silenced() && !pubsub::pushes_only(args) {
        out.buf.truncate(at);
        if let Some(wait) = &mut conn.block {
            wait.silenced = true;
        }
    }
    conn.replies.next_command();
    track::after_request(conn, args);
    action
}

/// [`execute`]'s request, whatever CLIENT REPLY says.
fn execute_request<'s>(
    shared: &'s Shared,
    conn: &mut ConnState,
    out: &mut Reply,
    args: &[Bytes],
    gate: &mut Held<'s>,
) -> Action {
    let table = table();
    let Some(i) = table.lookup_cached(&args[0], &mut conn.lookup) else {
        shared.counters.unknown_commands.fetch_add(1, Ordering::Relaxed);
        out.error(&unknown_command(args));
        transaction::fail(conn);
        return Action::Continue;
    };
    let cmd: &Command = &table.commands()[i];
    let stat = &shared.stats.of(conn.loop_index).commands[i];
    if !cmd.arity_allows(args.len()) {
        stat.rejected.add(1);
        out.error(&wrong_args(cmd.name).into_text(cmd.name));
        transaction::fail(conn);
        return Action::Continue;
    }
    if !conn.authenticated && !cmd.has_flag("no_auth") {
        stat.rejected.add(1);
        out.error(NOAUTH);
        transaction::fail(conn);
        return Action::Continue;
    }
    // Inside MULTI, over `maxmemory` under `noeviction`, Redis refuses to queue anything (a queue may grow
    // without bound) but DISCARD, QUIT and RESET, and EXEC too if a queued command may grow memory.
    let oom_refused = |conn: &ConnState| match (cmd.name, &conn.multi) {
        (_, None) | ("discard" | "quit" | "reset", _) => false,
        ("exec", Some(m)) => m.denyoom && shared.store.refuses_growth(),
        _ => shared.store.refuses_growth(),
    };
    if oom_refused(conn) {
        stat.rejected.add(1);
        out.error(&hopless_kv::Error::OutOfMemory.to_string());
        transaction::fail(conn);
        if table.traits(i).alone {
            transaction::abort_refused_exec(shared, conn, out);
        }
        return Action::Continue;
    }
    // A failed background save with `stop-writes-on-bgsave-error` refuses writes (and PING, as Redis
    // does) until a save succeeds.
    if shared.persistence.refuses_writes() && (table.traits(i).write || cmd.name == "ping") {
        stat.rejected.add(1);
        out.error(MISCONF);
        transaction::fail(conn);
        return Action::Continue;
    }
    // A failed write to the append-only file refuses writes until one succeeds, as Redis refuses them.
    if table.traits(i).write && shared.aof.write_failed() {
        stat.rejected.add(1);
        out.error("MISCONF Errors writing to the AOF file");
        transaction::fail(conn);
        return Action::Continue;
    }
    // `min-replicas-to-write` asks for replicas hopless never has: every write is refused, after the
    // memory check, as Redis orders them (inside MULTI that fails the transaction).
    if table.traits(i).write && shared.min_replicas.refuse_writes() {
        stat.rejected.add(1);
        out.error(NOREPLICAS);
        transaction::fail(conn);
        return Action::Continue;
    }
    let traits = table.traits(i);
    // Pub/sub: a subscriber's queued messages go out before this reply; RESP2's subscribed
    // mode refuses most commands (inside MULTI that fails the transaction; a refused EXEC is worded as
    // Redis's EXECABORT, and discards any).
    if conn.pubsub.is_some() && !pubsub::admit(conn, out, table.spec(i), args) {
        stat.rejected.add(1);
        transaction::fail(conn);
        if table.traits(i).alone {
            transaction::abort_refused_exec(shared, conn, out);
        }
        return Action::Continue;
    }
    if shared.running.busy() && !allowed_while_busy(args) {
        stat.rejected.add(1);
        out.error(&scripting::busy_error(&shared.running).into_text(cmd.name));
        transaction::fail(conn);
        if traits.alone {
            transaction::abort_refused_exec(shared, conn, out);
        }
        return Action::Continue;
    }
    if conn.multi.is_some() && !traits.transaction_control {
        if traits.no_multi {
            stat.rejected.add(1);
            out.error(transaction::NOT_IN_MULTI);
            transaction::fail(conn);
        } else {
            transaction::queue(conn, out, i, args, traits.denyoom);
        }
        return Action::Continue;
    }
    // This loop's gate, held across the batch; not for EXEC or a script (they take every gate), nor for
    // SCRIPT KILL and the like while a script is busy. With the append-only file on, a write takes every
    // gate, so that the file records the changes in the order they are made.
    let busy = || shared.running.busy();
    let logged = shared.aof.is_on();
    let mut alone = None;
    if traits.every_gate || (busy() && allowed_while_busy(args)) {
        gate.release();
    } else if logged && traits.write {
        gate.release();
        alone = shared.gate.exclusive_unless(busy);
        if alone.is_none() {
            stat.rejected.add(1);
            out.error(&scripting::busy_error(&shared.running).into_text(cmd.name));
            return Action::Continue;
        }
    } else if !shared.gate.hold(conn.loop_index, busy, gate) && !allowed_while_busy(args) {
        stat.rejected.add(1);
        out.error(&scripting::busy_error(&shared.running).into_text(cmd.name));
        return Action::Continue;
    }
    if !logged {
        return run(shared, conn, out, i, args, false);
    }
    crate::aof::stage::arm();
    let action = run(shared, conn, out, i, args, false);
    // Into the log while the gates this command ran under are still held.
    shared.aof.commit(crate::aof::stage::take());
    drop(alone);
    action
}

/// Runs a command read from the append-only file for its loader's client (see
/// [`command::replay`]).
pub fn replay(shared: &Shared, conn: &mut ConnState, args: &[Bytes]) -> Result<(), String> {
    command::replay(table(), shared, conn, args, run_in_exec)
}

/// Whether Redis flags the command (or its subcommand) `admin`, which keeps it from MONITOR: our table
/// flags containers, and CONFIG's and some of CLIENT's subcommands are admin in Redis.
fn administrative(cmd: &Command, args: &[Bytes]) -> bool {
    const CLIENT_ADMIN: [&str; 6] = ["kill", "list", "pause", "unpause", "no-evict", "unblock"];
    cmd.has_flag("admin")
        || cmd.name == "config"
        || (cmd.name == "client" && args.get(1).is_some_and(|s| CLIENT_ADMIN.iter().any(|w| eq(s, w))))
}

/// Whether a command runs while a script is busy (without its loop's gate, which the script holds):
/// those Redis flags `allow_busy` (the transaction commands but EXEC, so that a pipelined transaction is
/// refused whole rather than half run; AUTH, HELLO, QUIT, RESET), SCRIPT KILL, FUNCTION KILL, FUNCTION
/// STATS and SHUTDOWN NOSAVE.
fn allowed_while_busy(args: &[Bytes]) -> bool {
    const ALLOW_BUSY: [&str; 8] = [
        "multi", "discard", "watch", "unwatch", "quit", "reset", "auth", "hello",
    ];
    ALLOW_BUSY.iter().any(|w| eq(&args[0], w))
        || (args.len() == 2
            && (eq(&args[0], "script") || eq(&args[0], "function"))
            && (eq(&args[1], "kill") || (eq(&args[0], "function") && eq(&args[1], "stats"))))
        || (eq(&args[0], "shutdown") && args[1..].iter().any(|a| eq(a, "nosave")))
}

/// Runs a command of EXEC's queue (every loop's gate is held already).
fn run_in_exec(shared: &Shared, conn: &mut ConnState, out: &mut Reply, i: usize, args: &[Bytes]) -> Action {
    run(shared, conn, out, i, args, true)
}

/// Runs the command at table index `i` (under this loop's gate, or every gate inside EXEC and scripts, or
/// none for EXEC and scripts themselves, which take every gate).
fn run(
    shared: &Shared,
    conn: &mut ConnState,
    out: &mut Reply,
    i: usize,
    args: &[Bytes],
    in_exec: bool,
) -> Action {
    let table = table();
    let cmd = &table.commands()[i];
    let traits = table.traits(i);
    let stats = shared.stats.of(conn.loop_index);
    let stat = &stats.commands[i];
    conn.entry
        .last_cmd
        .store(cmd.last_cmd_code(i, args), Ordering::Relaxed);
    // A script's commands are timed alone, not with the Lua that ran before them.
    let start = if conn.in_script {
        Instant::now()
    } else {
        conn.clock
    };
    let reply_at = out.buf.len();
    let mut ctx = Ctx {
        shared,
        conn,
        out,
        name: cmd.name,
        table,
        action: Action::Continue,
        in_exec,
        run: run_in_exec,
        changed_keys: None,
    };
    // MONITOR sees what ran (failed or not), as Redis feeds its monitors after the call; not the
    // administrative commands. A script is shown before the commands it runs, which show `lua` as
    // their client.
    let monitored = shared.monitors.active() && !administrative(cmd, args);
    if monitored && traits.runs_script {
        shared.monitors.feed(&ctx.conn.entry.addr.to_string(), args);
    }
    let before = notify::before(shared, table, i, args);
    track::before(ctx.conn, table, i);
    let r = (cmd.handler)(&mut ctx, args);
    if monitored && !traits.runs_script {
        let client = if ctx.conn.in_script {
            "lua".to_string()
        } else {
            ctx.conn.entry.addr.to_string()
        };
        shared.monitors.feed(&client, args);
    }
    let action = ctx.action;
    let changed_keys = ctx.changed_keys;
    if ctx.conn.tracking.is_some() {
        track::after_read(shared, ctx.conn, table, i, args);
    }
    if let (Some(b), Ok(())) = (&before, &r) {
        notify::after(shared, table, i, args, &ctx.out.buf[reply_at..], b, changed_keys);
    }
    // A handler may write its error itself (a script's error, EVAL's and FCALL's): a failed call too,
    // as Redis counts any call that replied an error.
    if r.is_ok() && ctx.out.buf.get(reply_at) == Some(&b'-') {
        stat.failed.add(1);
    }
    let ok = r.is_ok();
    match r {
        Err(e) => {
            stat.failed.add(1);
            ctx.out.error(&e.into_text(cmd.name));
        }
        Ok(()) if traits.write && !(traits.unchanged)(args, &ctx.out.buf[reply_at..]) => {
            stats.changes.add(1);
            if shared.aof.is_on() && crate::aof::stage::armed() {
                crate::aof::propagate::changed(&shared.store, cmd.name, args, &ctx.out.buf[reply_at..]);
            }
            after_write(shared, i, args, changed_keys, in_exec, ctx.conn.id())
        }
        Ok(()) => {}
    }
    if (traits.write || traits.every_gate) && shared.tracking.active() {
        // BCAST clients hear of a transaction's or a script's keys once it is done.
        let top = !in_exec && !ctx.conn.in_script;
        track::after_command(shared, ok, top, args);
    }
    let end = Instant::now();
    let took = end.saturating_duration_since(start);
    let micros = took.as_micros() as u64;
    stat.calls.add(1);
    stat.nanos.add(took.as_nanos() as u64);
    if !traits.skip_slowlog {
        match ctx.conn.block.as_mut() {
            // A blocked command goes in once it is served or times out (`conn.rs`), as in Redis.
            Some(wait) => wait.slow = Some((args.to_vec(), micros)),
            // A script's commands go in as the script's client's: no address, no name.
            None if ctx.conn.in_script => log_slow_as(shared, "?:0".into(), Bytes::new(), micros, args),
            None => log_slow(shared, &ctx.conn.entry, micros, args),
        }
    }
    stats.processed.add(1);
    conn.clock = end;
    let e = &conn.entry;
    e.last_ms.store(
        end.saturating_duration_since(e.created).as_millis() as u64,
        Ordering::Relaxed,
    );
    action
}

/// Puts a command that ran `micros` in the slow log if it is as slow as `slowlog-log-slower-than`, with
/// its passwords redacted (AUTH, HELLO's AUTH, CONFIG SET requirepass) and its client's address and name.
pub fn log_slow(shared: &Shared, client: &crate::state::ClientEntry, micros: u64, args: &[Bytes]) {
    if !shared.slowlog.wants(micros) {
        return;
    }
    let hidden = crate::redact::redacted(args);
    let name = Bytes::from(client.name.lock().unwrap_or_else(|e| e.into_inner()).clone());
    shared.slowlog.push(
        micros,
        hidden.as_deref().unwrap_or(args),
        client.addr.to_string(),
        name,
    );
}

/// [`log_slow`] for a client given by its address and name.
fn log_slow_as(shared: &Shared, addr: String, name: Bytes, micros: u64, args: &[Bytes]) {
    if !shared.slowlog.wants(micros) {
        return;
    }
    let hidden = crate::redact::redacted(args);
    shared
        .slowlog
        .push(micros, hidden.as_deref().unwrap_or(args), addr, name);
}

/// After a write command to `args`'s keys (still under the loop's gate): serves the clients blocked on
/// them (a transaction serves them once, after its last command), and marks the clients watching them
/// or the keys those pops changed.
fn after_write(
    shared: &Shared,
    i: usize,
    args: &[Bytes],
    changed: Option<&[usize]>,
    in_exec: bool,
    writer: u64,
) {
    crate::watch::Watches::after_write_fence();
    let table = table();
    // The keys it changed: those the handler named, or all of the command's (no allocation either way).
    let keys = || {
        let named = changed.map(|at| at.iter().filter_map(|&j| args.get(j)).map(|k| &k[..]));
        let all = changed.is_none().then(|| table.keys(i, args));
        named.into_iter().flatten().chain(all.into_iter().flatten())
    };
    let served = if !in_exec && shared.blocked.active() {
        shared.blocked.serve(&shared.store, &shared.events, keys())
    } else {
        Vec::new()
    };
    if shared.watches.active() {
        // The served clients' pops and pushes (BRPOPLPUSH's destination) are writes too.
        shared.watches.touch(keys().chain(served.iter().map(|k| &k[..])));
    }
    if shared.tracking.active() {
        track::after_write(shared, table, i, args, changed, &served, writer);
    }
}

/// What a client leaves behind when it goes: its watches and its place in a blocked queue.
pub fn forget(shared: &Shared, conn: &mut ConnState) {
    transaction::end(shared, conn);
    shared.blocked.cancel(conn.id());
    shared.monitors.remove(conn.id());
    if conn.tracking.take().is_some() {
        shared.tracking.disable(conn.id());
    }
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

    /// The cache answers as the table does, whatever came before: the same name, another case, a
    /// prefix, an unknown name, a name too long to keep.
    #[test]
    fn the_lookup_cache_answers_as_the_table() {
        let t = table();
        let mut cache = crate::state::LookupCache::default();
        let names: [&[u8]; 9] = [
            b"get",
            b"get",
            b"GET",
            b"ge",
            b"getx",
            b"get",
            b"",
            b"nosuchcommandwithalongname",
            b"set",
        ];
        for name in names.iter().chain(names.iter().rev()) {
            assert_eq!(t.lookup_cached(name, &mut cache), t.lookup(name), "{name:?}");
        }
    }

    /// Space-separated words, sorted.
    fn words(f: &str) -> Vec<&str> {
        let mut w: Vec<&str> = f.split_ascii_whitespace().collect();
        w.sort_unstable();
        w
    }

    /// Each row dispatches as Redis describes the command: its spec is Redis's own (none is made up
    /// from the row), with the same arity, and for a command that is not a container the same flags
    /// and legacy key range. (A container's row carries what its subcommands need at dispatch.)
    #[test]
    fn every_row_agrees_with_its_redis_spec() {
        let t = table();
        let mut wrong = Vec::new();
        for (i, c) in t.commands().iter().enumerate() {
            let s = t.spec(i);
            if s.group.is_empty() {
                wrong.push(format!(
                    "{}: no spec (rerun scripts/gen/command_specs.py)",
                    c.name
                ));
                continue;
            }
            if c.arity != s.arity {
                wrong.push(format!(
                    "{}: arity {} where Redis has {}",
                    c.name, c.arity, s.arity
                ));
            }
            if s.subs.is_empty() && words(c.flags) != words(s.flags) {
                wrong.push(format!(
                    "{}: flags {:?} where Redis has {:?}",
                    c.name, c.flags, s.flags
                ));
            }
            if s.subs.is_empty() && (c.first_key, c.last_key, c.step) != s.range {
                let row = (c.first_key, c.last_key, c.step);
                wrong.push(format!("{}: keys {row:?} where Redis has {:?}", c.name, s.range));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
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
