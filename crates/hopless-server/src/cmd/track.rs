//! Client-side caching's part in running a command (the table itself is `crate::tracking`): after a
//! read, a tracking client's keys are remembered; after a write, its keys are invalidated; after
//! FLUSHALL or FLUSHDB, everything is.
//!
//! A read's keys are remembered for a tracking client that is not in BCAST mode (nor OPTIN without
//! CLIENT CACHING YES, nor OPTOUT after CLIENT CACHING NO), as Redis's `call()` does for the commands
//! it flags `readonly`. A script's read commands remember the script's declared keys instead, once it
//! returns (EVAL_RO and its kin themselves remember nothing).

use bytes::Bytes;

use super::command::Table;
use super::key_args::key_positions;
use crate::state::{ConnState, Shared};
use crate::words::eq;

/// Before a command runs: a script starts with no read seen.
pub(super) fn before(conn: &mut ConnState, table: &Table, i: usize) {
    if let Some(t) = &mut conn.tracking {
        if table.traits(i).runs_script && !conn.in_script {
            t.script_read = false;
        }
    }
}

/// After command `i` ran for a tracking connection: the keys it read are remembered.
pub(super) fn after_read(shared: &Shared, conn: &mut ConnState, table: &Table, i: usize, args: &[Bytes]) {
    let Some(t) = &mut conn.tracking else {
        return;
    };
    let cmd = &table.commands()[i];
    let traits = table.traits(i);
    let read = if traits.runs_script {
        !conn.in_script && std::mem::take(&mut t.script_read)
    } else if cmd.has_flag("readonly") && !cmd.has_flag("pubsub") {
        if conn.in_script {
            t.script_read = true;
            false
        } else {
            true
        }
    } else {
        false
    };
    if !read || !t.remembers() {
        return;
    }
    if let Ok(at) = key_positions(table, i, args) {
        let id = conn.entry.id;
        shared
            .tracking
            .remember(id, at.iter().filter_map(|&j| args.get(j)).map(|k| &k[..]));
    }
}

/// After a write that changed something: its changed keys (those at `changed`, else all of its keys)
/// and `served` (what the clients it unblocked wrote) are invalidated; `writer`'s own, in NOLOOP mode,
/// are not sent to it.
pub(super) fn after_write(
    shared: &Shared,
    table: &Table,
    i: usize,
    args: &[Bytes],
    changed: Option<&[usize]>,
    served: &[Bytes],
    writer: u64,
) {
    if is_flush(&args[0]) {
        return;
    }
    let at = match changed {
        Some(at) => at.to_vec(),
        None => key_positions(table, i, args).unwrap_or_default(),
    };
    let keys = at.iter().filter_map(|&j| args.get(j)).chain(served.iter());
    shared.tracking.invalidate(Some(writer), keys.map(|k| &k[..]));
}

/// After a write command, EXEC or a script ran (changed or not), while some client tracks: FLUSHALL and
/// FLUSHDB invalidate every key; at the `top` level (not inside EXEC or a script), the BCAST clients get
/// what was written.
pub(super) fn after_command(shared: &Shared, ok: bool, top: bool, args: &[Bytes]) {
    if ok && is_flush(&args[0]) {
        shared.tracking.flush_all();
    }
    if top {
        shared.tracking.flush();
    }
}

fn is_flush(name: &[u8]) -> bool {
    eq(name, "flushall") || eq(name, "flushdb")
}

/// After a request (run or queued): CLIENT CACHING's word holds for the next command or transaction
/// only.
pub(super) fn after_request(conn: &mut ConnState, args: &[Bytes]) {
    if let Some(t) = &mut conn.tracking {
        if conn.multi.is_none() && !eq(&args[0], "client") {
            t.caching = false;
        }
    }
}
