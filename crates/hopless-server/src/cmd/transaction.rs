//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! MULTI starts queuing (the dispatcher queues each command after the checks Redis makes at queue time:
//! a refused one marks the transaction failed, and EXEC then answers EXECABORT and runs nothing). EXEC
//! takes every event loop's gate (`exec_gate`), checks the watches, runs the queue, hands the keys its
//! writes touched to the blocked clients, and only then lets other commands run: no other client sees
//! the transaction half done, and none runs a command between two of its commands.
//!
//! WATCH registers the keys (`watch`) and notes which existed; EXEC aborts (a null reply) if a write
//! touched one since, or one that existed no longer does (expired, evicted or flushed).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::command::{Action, Command, Ctx};
use crate::errors::{CmdError, CmdResult};
use crate::state::{ConnState, Multi, Shared, Watched};

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("multi", 1, "noscript loading stale fast allow_busy", multi),
    Command::new("exec", 1, "noscript loading stale skip_slowlog", exec),
    Command::new("discard", 1, "noscript loading stale fast allow_busy", discard),
    Command::new("watch", -2, "noscript loading stale fast allow_busy", watch).keys(1, -1, 1),
    Command::new("unwatch", 1, "noscript loading stale fast allow_busy", unwatch),
];

const NESTED: CmdError = CmdError::Static("ERR MULTI calls can not be nested");
const EXEC_WITHOUT: CmdError = CmdError::Static("ERR EXEC without MULTI");
const DISCARD_WITHOUT: CmdError = CmdError::Static("ERR DISCARD without MULTI");
const WATCH_IN_MULTI: CmdError = CmdError::Static("ERR WATCH inside MULTI is not allowed");
const EXECABORT: CmdError = CmdError::Static("EXECABORT Transaction discarded because of previous errors.");
/// Queue-time refusal of a `no_multi` command (SHUTDOWN).
pub(super) const NOT_IN_MULTI: &str = "ERR Command not allowed inside a transaction";

/// Queues a command of a transaction (its checks passed) and answers QUEUED; `denyoom`: the command
/// may grow memory (EXEC is then refused while the store is over `maxmemory`).
pub(super) fn queue(
    conn: &mut ConnState,
    out: &mut crate::codec::Reply,
    i: usize,
    args: &[Bytes],
    denyoom: bool,
) {
    if let Some(m) = conn.multi.as_mut() {
        m.denyoom |= denyoom;
        m.queued.push((i, args.to_vec()));
        conn.entry.multi.store(m.queued.len() as i64, Ordering::Relaxed);
    }
    out.simple("QUEUED");
}

/// EXEC refused before it ran (RESP2's subscribed mode, OOM with a `denyoom` command queued): the
/// refusal just written becomes Redis's `EXECABORT Transaction discarded because of: <reason>` (the
/// reason without its `ERR ` code, as Redis words it), and the transaction is discarded.
pub(super) fn abort_refused_exec(shared: &Shared, conn: &mut ConnState, out: &mut crate::codec::Reply) {
    let body = &out.buf[..out.buf.len().saturating_sub(2)];
    let at = body.iter().rposition(|&b| b == b'\n').map_or(0, |nl| nl + 1);
    if out.buf.get(at) == Some(&b'-') {
        let mut reason = out.buf.split_off(at + 1);
        if reason.starts_with(b"ERR ") {
            let _ = reason.split_to(4);
        }
        out.buf.truncate(at);
        out.buf
            .extend_from_slice(b"-EXECABORT Transaction discarded because of: ");
        out.buf.extend_from_slice(&reason);
    }
    end(shared, conn);
}

/// Marks the transaction being queued, if any, as failed (a command was refused at queue time).
pub(super) fn fail(conn: &mut ConnState) {
    if let Some(m) = conn.multi.as_mut() {
        m.failed = true;
    }
}

/// Leaves MULTI (EXEC, DISCARD, RESET) and drops every watch.
pub(super) fn end(shared: &Shared, conn: &mut ConnState) {
    conn.multi = None;
    conn.entry.multi.store(-1, Ordering::Relaxed);
    unwatch_all(shared, conn);
}

/// Drops every key the connection watches (UNWATCH, EXEC, DISCARD, RESET, disconnect).
pub(super) fn unwatch_all(shared: &Shared, conn: &mut ConnState) {
    if conn.watched.is_empty() {
        return;
    }
    shared
        .watches
        .unwatch(conn.watched.iter().map(|w| &w.key), conn.id());
    conn.watched.clear();
    // After the registrations are gone: a touch that still found one has set it already.
    conn.watch_dirty.store(false, Ordering::Release);
}

fn multi(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    if c.conn.multi.is_some() {
        return Err(NESTED);
    }
    c.conn.multi = Some(Multi::default());
    c.conn.entry.multi.store(0, Ordering::Relaxed);
    c.out.ok();
    Ok(())
}

fn discard(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    if c.conn.multi.is_none() {
        return Err(DISCARD_WITHOUT);
    }
    end(c.shared, c.conn);
    c.out.ok();
    Ok(())
}

fn watch(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if c.conn.multi.is_some() {
        return Err(WATCH_IN_MULTI);
    }
    for key in &a[1..] {
        if c.conn.watched.iter().any(|w| w.key == *key) {
            continue;
        }
        // Registered before the existence check: a write this check does not see, touches the key.
        c.shared.watches.watch(key, c.conn.id(), &c.conn.watch_dirty);
        let existed = c.shared.store.exists(&[&key[..]]) == 1;
        c.conn.watched.push(Watched {
            key: key.clone(),
            existed,
        });
    }
    c.out.ok();
    Ok(())
}

fn unwatch(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    unwatch_all(c.shared, c.conn);
    c.out.ok();
    Ok(())
}

/// Whether a watched key changed since WATCH (checked with every loop's gate held).
fn watch_broken(shared: &Shared, conn: &ConnState) -> bool {
    conn.watch_dirty.load(Ordering::Acquire)
        || conn
            .watched
            .iter()
            .any(|w| w.existed && shared.store.exists(&[&w.key[..]]) == 0)
}

fn exec(c: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let Some(multi) = c.conn.multi.take() else {
        return Err(EXEC_WITHOUT);
    };
    if multi.failed {
        end(c.shared, c.conn);
        return Err(EXECABORT);
    }
    let Some(alone) = c.shared.gate.exclusive_unless(|| c.shared.running.busy()) else {
        end(c.shared, c.conn);
        return Err(super::scripting::busy_error(&c.shared.running));
    };
    let broken = watch_broken(c.shared, c.conn);
    end(c.shared, c.conn);
    if broken {
        c.out.null_array();
        return Ok(());
    }
    c.out.array(multi.queued.len());
    for (i, args) in &multi.queued {
        if (c.run)(c.shared, c.conn, c.out, *i, args) == Action::Close {
            c.action = Action::Close;
        }
    }
    // Clients blocked on keys the transaction pushed to are served now, before anybody else runs.
    if c.shared.blocked.active() {
        for (i, args) in &multi.queued {
            if c.table.traits(*i).write {
                let served =
                    c.shared
                        .blocked
                        .serve(&c.shared.store, &c.shared.events, c.table.keys(*i, args));
                if c.shared.watches.active() {
                    c.shared.watches.touch(served.iter().map(|k| &k[..]));
                }
            }
        }
    }
    // Into the append-only file before another command may run.
    c.shared.aof.commit(crate::aof::stage::take());
    drop(alone);
    // CLIENT LIST names EXEC as the last command, not the last one it ran.
    if let Some(i) = c.table.lookup(b"exec") {
        c.conn.entry.last_cmd.store(i + 1, Ordering::Relaxed);
    }
    Ok(())
}
