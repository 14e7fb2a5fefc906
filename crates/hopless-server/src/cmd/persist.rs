//! The snapshot's commands: SAVE, BGSAVE (SCHEDULE), BGREWRITEAOF, LASTSAVE, SHUTDOWN (which saves
//! first, and syncs the append-only file), SYNC and
//! PSYNC (the snapshot sent to the client), and DUMP and RESTORE of one key in Redis's payload format.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use hopless_kv::persist::LoadError;

use super::command::{Action, Command, Ctx};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::snapshot::save::{bgsave, kill_child, save_now, snapshot_bytes, IN_PROGRESS};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("shutdown", -1, "admin noscript loading stale no_multi allow_busy", shutdown),
    Command::new("save", 1, "admin noscript no_async_loading no_multi", save),
    Command::new("bgsave", -1, "admin noscript no_async_loading", bgsave_cmd),
    Command::new("bgrewriteaof", 1, "admin noscript no_async_loading", bgrewriteaof),
    Command::new("lastsave", 1, "loading stale fast", lastsave),
    Command::new("dump", 2, "readonly", dump).keys(1, 1, 1),
    Command::new("restore", -4, "write denyoom", restore).keys(1, 1, 1),
    Command::new("sync", 1, "admin noscript no_async_loading no_multi", sync),
    Command::new("psync", -3, "admin noscript no_async_loading no_multi", sync),
    Command::new("replconf", -1, "admin noscript loading stale allow_busy", replconf),
];

/// Runs `f` alone: with every loop's gate, taken here unless EXEC holds them already.
pub(super) fn alone<R>(c: &mut Ctx<'_>, f: impl FnOnce(&Ctx<'_>) -> R) -> Result<R, CmdError> {
    if c.in_exec {
        return Ok(f(c));
    }
    let shared = c.shared;
    let Some(_all) = shared.gate.exclusive_unless(|| shared.running.busy()) else {
        return Err(CmdError::Static("BUSY Redis is busy running a script."));
    };
    Ok(f(c))
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: stops a background save, saves the snapshot when save
/// points are set or SAVE asks (not under NOSAVE), and stops the server; a failed save keeps it running
/// unless FORCE.
fn shutdown(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut nosave, mut save, mut force) = (false, false, false);
    for o in &a[1..] {
        if eq(o, "abort") {
            return Err(CmdError::Static("ERR No shutdown in progress."));
        } else if eq(o, "nosave") {
            nosave = true;
        } else if eq(o, "save") {
            save = true;
        } else if eq(o, "force") {
            force = true;
        } else if !eq(o, "now") {
            return Err(SYNTAX);
        }
    }
    if c.shared.running.busy() {
        // SHUTDOWN NOSAVE during a busy script (nothing else gets here then): the script stops too.
        c.shared.running.force_kill();
    }
    kill_child(c.shared);
    crate::aof::rewrite::kill_child(c.shared);
    c.shared.aof.sync_all();
    let points = !c.shared.persistence.settings().save.is_empty();
    if (points || save) && !nosave {
        let saved = alone(c, |c| save_now(c.shared))?;
        if saved.is_err() && !force {
            tracing::warn!("error trying to save the DB, can't exit");
            return Err(CmdError::Static("ERR Errors trying to SHUTDOWN. Check logs."));
        }
    }
    tracing::info!(client = c.conn.id(), "SHUTDOWN: closing");
    c.shared.request_shutdown();
    c.action = Action::Close;
    Ok(())
}

fn save(c: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    alone(c, |c| save_now(c.shared))?.map_err(CmdError::Msg)?;
    c.out.ok();
    Ok(())
}

fn bgsave_cmd(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let schedule = match a.len() {
        1 => false,
        2 if eq(&a[1], "schedule") => true,
        _ => return Err(SYNTAX),
    };
    let p = &c.shared.persistence;
    if p.child().is_some() {
        return Err(CmdError::Static(IN_PROGRESS));
    }
    if c.shared.aof.child().is_some() || c.in_exec {
        if schedule || c.in_exec {
            p.scheduled.store(true, Ordering::Relaxed);
            c.out.simple("Background saving scheduled");
            return Ok(());
        }
        return Err(CmdError::Static(
            "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in \
             order to schedule a BGSAVE whenever possible.",
        ));
    }
    alone(c, |c| bgsave(c.shared))?.map_err(|_| CmdError::Static("ERR"))?;
    c.out.simple("Background saving started");
    Ok(())
}

/// BGREWRITEAOF: a forked child writes the dataset as the append-only file's new base (scheduled
/// while a background save runs, or inside EXEC).
fn bgrewriteaof(c: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    let aof = &c.shared.aof;
    if aof.child().is_some() {
        return Err(CmdError::Static(crate::aof::rewrite::IN_PROGRESS));
    }
    if c.shared.persistence.child().is_some() || c.in_exec {
        aof.rewrite_failures.store(0, Ordering::Relaxed);
        aof.rewrite_scheduled.store(true, Ordering::Relaxed);
        c.out.simple("Background append only file rewriting scheduled");
        return Ok(());
    }
    alone(c, |c| crate::aof::rewrite::start(c.shared, false))?.map_err(|e| {
        tracing::warn!("BGREWRITEAOF: {e}");
        CmdError::Static(
            "ERR Can't execute an AOF background rewriting. Please check the server logs for more \
             information.",
        )
    })?;
    c.out.simple("Background append only file rewriting started");
    Ok(())
}

/// SYNC and PSYNC: the whole dataset as one RDB payload (`$<length>` and the bytes, no line end), as a
/// master sends a new replica its first snapshot, PSYNC with `+FULLRESYNC <replid> 0` before it; then
/// the connection closes, since hopless keeps no replicas. This is what `redis-cli --rdb` takes a backup
/// with. The snapshot is made in the foreground, with every loop stopped.
fn sync(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let bytes = alone(c, |c| snapshot_bytes(c.shared))?.map_err(|e| {
        tracing::warn!("SYNC: {e}");
        CmdError::Static("ERR")
    })?;
    if eq(&a[0], "psync") {
        c.out.simple(&format!("FULLRESYNC {} 0", c.shared.run_id));
    }
    c.out
        .buf
        .extend_from_slice(format!("${}\r\n", bytes.len()).as_bytes());
    c.out.buf.extend_from_slice(&bytes);
    c.action = Action::Close;
    Ok(())
}

/// REPLCONF: what a replica (or `redis-cli --rdb`, `rdb-only`) says of itself before SYNC; taken with
/// +OK, as a master takes it.
fn replconf(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() % 2 == 0 {
        return Err(SYNTAX);
    }
    for pair in a[1..].chunks_exact(2) {
        let (opt, v) = (&pair[0], &pair[1]);
        if eq(opt, "listening-port") {
            int_arg(v)?;
        } else if eq(opt, "rdb-only") {
            if !matches!(&v[..], b"0" | b"1") {
                return Err(CmdError::Static("ERR value is not an integer or out of range"));
            }
        } else if eq(opt, "ack") {
            // A replica's acknowledgement gets no reply.
            return Ok(());
        } else if !["ip-address", "capa", "getack", "rdb-filter-only"]
            .iter()
            .any(|w| eq(opt, w))
        {
            return Err(CmdError::Msg(format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    c.out.ok();
    Ok(())
}

fn lastsave(c: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    c.out.int(c.shared.persistence.last_save() as i64);
    Ok(())
}

fn dump(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let compress = c.shared.persistence.settings().compression;
    match c.shared.store.dump(&a[1], compress) {
        Some(p) => c.out.bulk(&p),
        None => c.out.null(),
    }
    Ok(())
}

/// A whole-argument signed integer, or Redis's integer error.
fn int_arg(b: &[u8]) -> Result<i64, CmdError> {
    hopless_kv::store::parse_i64(b).ok_or(CmdError::Static("ERR value is not an integer or out of range"))
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checked in Redis's order: the
/// options, the key (BUSYKEY), the TTL, the payload's footer, then its value.
fn restore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None, None);
    let mut j = 4;
    while j < a.len() {
        let more = j + 1 < a.len();
        if eq(&a[j], "replace") {
            replace = true;
        } else if eq(&a[j], "absttl") {
            absttl = true;
        } else if eq(&a[j], "idletime") && more && freq.is_none() {
            let v = int_arg(&a[j + 1])?;
            if v < 0 {
                return Err(CmdError::Static("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            j += 1;
        } else if eq(&a[j], "freq") && more && idle.is_none() {
            let v = int_arg(&a[j + 1])?;
            if !(0..=255).contains(&v) {
                return Err(CmdError::Static(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            freq = Some(v);
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let store = &c.shared.store;
    if !replace && store.exists(&[&a[1]]) > 0 {
        return Err(CmdError::Static("BUSYKEY Target key name already exists."));
    }
    let ttl = int_arg(&a[2])?;
    if ttl < 0 {
        return Err(CmdError::Static("ERR Invalid TTL value, must be >= 0"));
    }
    let value = store.read_payload(&a[3]).map_err(|e| match e {
        LoadError::Footer => CmdError::Static("ERR DUMP payload version or checksum are wrong"),
        _ => CmdError::Static("ERR Bad data format"),
    })?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let deadline = match ttl {
        0 => None,
        t if absttl => Some(t),
        t => Some(t.saturating_add(now)),
    };
    if deadline.is_some_and(|d| d <= now) {
        // Already expired: the key goes (under REPLACE) and nothing is created, as in Redis.
        if replace {
            store.del(&[&a[1]]);
        }
        c.out.ok();
        return Ok(());
    }
    // IDLETIME and FREQ are checked and taken: the store keeps an access order, not times or counts.
    let _ = (idle, freq);
    if !store.restore(&a[1], value, deadline.map(|d| d as u64), replace)? {
        return Err(CmdError::Static("BUSYKEY Target key name already exists."));
    }
    c.out.ok();
    Ok(())
}
