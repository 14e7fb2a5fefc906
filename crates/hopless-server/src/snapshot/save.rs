//! Saving and loading the snapshot with the server around it: SAVE (in the foreground, every event loop
//! stopped), BGSAVE (a forked child writes while the loops go on), the save timer (save points, a
//! scheduled BGSAVE, reaping the child), the load at start and DEBUG RELOAD.
//!
//! A background save forks with every loop's gate and every shard's read lock held, so the child's copy
//! of the store is a point in time no command was halfway through; the parent lets go as soon as the
//! fork returns and goes on serving, while the kernel's copy-on-write keeps the child's view.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::load::load_file;
use super::state::{unix_secs, Child, SnapshotSettings};
use super::write::{save_to, write_rdb, Extras, Format};
use crate::footprint::Footprint;
use crate::state::Shared;

/// A save point retries this long after a failed background save (Redis's `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_SECS: u64 = 5;

pub const IN_PROGRESS: &str = "ERR Background save already in progress";

pub fn format(s: &SnapshotSettings) -> Format {
    Format {
        compress: s.compression,
        checksum: s.checksum,
    }
}

pub fn extras(shared: &Shared) -> Extras {
    let functions = shared.functions.lock().unwrap_or_else(|e| e.into_inner());
    Extras {
        aof_base: false,
        libraries: functions.libraries().map(|l| l.code.clone()).collect(),
        used_memory: Footprint::measure(shared).used,
        now_secs: unix_secs(),
    }
}

/// SAVE: writes the snapshot now. The caller holds every loop's gate.
pub fn save_now(shared: &Shared) -> Result<(), String> {
    let p = &shared.persistence;
    if p.child().is_some() {
        return Err(IN_PROGRESS.into());
    }
    let s = p.settings();
    let changes = shared.stats.changes();
    let extras = extras(shared);
    let written = {
        let frozen = shared.store.freeze();
        save_to(&s.path(), &frozen, &extras, &shared.store.limits(), format(&s))
    };
    p.saved(written.is_ok(), changes, None);
    match written {
        Ok(()) => {
            tracing::info!("DB saved on disk");
            Ok(())
        }
        Err(e) => {
            tracing::warn!("failed saving the DB to {}: {e}", s.path().display());
            Err("ERR".into())
        }
    }
}

/// The whole snapshot as bytes (SYNC's payload). The caller holds every loop's gate.
pub fn snapshot_bytes(shared: &Shared) -> io::Result<Vec<u8>> {
    let s = shared.persistence.settings();
    let extras = extras(shared);
    let frozen = shared.store.freeze();
    write_rdb(Vec::new(), &frozen, &extras, &shared.store.limits(), format(&s))
}

/// BGSAVE: forks a child that writes the snapshot. The caller holds every loop's gate.
pub fn bgsave(shared: &Shared) -> Result<(), String> {
    let p = &shared.persistence;
    if p.child().is_some() {
        return Err(IN_PROGRESS.into());
    }
    let s = p.settings();
    let changes = shared.stats.changes();
    let extras = extras(shared);
    let limits = shared.store.limits();
    let frozen = shared.store.freeze();
    let fork_started = Instant::now();
    // SAFETY: the child runs only `save_to` over memory it has its own copy of (the frozen store, whose
    // shard locks this thread holds in both processes, and `extras`), allocating through hopless, whose
    // fork handlers leave its locks free in the child; it takes no other lock, writes no log and leaves
    // with `_exit`, running no destructor or exit handler of the parent's.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let ok = save_to(&s.path(), &frozen, &extras, &limits, format(&s)).is_ok();
        // SAFETY: ends the child at once; nothing of the parent's runs in it.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    drop(frozen);
    p.last_fork_usec
        .store(fork_started.elapsed().as_micros() as u64, Ordering::Relaxed);
    if pid < 0 {
        let e = io::Error::last_os_error();
        p.fork_failed();
        tracing::warn!("can't save in the background: fork: {e}");
        return Err(format!("ERR Background save failed to start: fork: {e}"));
    }
    p.forks.fetch_add(1, Ordering::Relaxed);
    p.set_child(Some(Child {
        pid,
        started: Instant::now(),
        changes_at_fork: changes,
    }));
    tracing::info!(pid, "background saving started");
    Ok(())
}

/// Whether a save point is due: enough changes, old enough, and not right after a failure.
fn save_point_due(shared: &Shared) -> bool {
    let p = &shared.persistence;
    let s = p.settings();
    let now = unix_secs();
    let changes = shared.stats.changes().saturating_sub(p.saved_changes());
    let since = now.saturating_sub(p.last_save());
    let may_retry = p.last_ok() || now.saturating_sub(p.last_failure()) > RETRY_SECS;
    may_retry && s.save.iter().any(|sp| changes >= sp.changes && since >= sp.secs)
}

/// The save timer's turn: reaps a finished child, then starts a scheduled or due background save.
pub fn tick(shared: &Shared) {
    let p = &shared.persistence;
    if let Some(c) = p.child() {
        let Some(ok) = reap(c.pid) else {
            return;
        };
        p.saved(ok, c.changes_at_fork, Some(c.started));
        p.set_child(None);
        if ok {
            tracing::info!("background saving terminated with success");
        } else {
            tracing::warn!("background saving error");
        }
    }
    let scheduled = p.scheduled.load(Ordering::Relaxed);
    // One child at a time: a save waits for the append-only file's rewrite.
    if (scheduled || save_point_due(shared)) && shared.aof.child().is_none() {
        let Some(_all) = shared.gate.exclusive_unless(|| shared.running.busy()) else {
            return;
        };
        p.scheduled.store(false, Ordering::Relaxed);
        let _ = bgsave(shared);
    }
}

/// Whether our forked child `pid` has ended: None while it runs, else whether it exited with 0.
pub fn reap(pid: i32) -> Option<bool> {
    let mut status = 0;
    // SAFETY: waits without blocking for our own child, writing its status into a local.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    (r != 0).then(|| r == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0)
}

/// Stops our forked child `pid` and waits for it.
pub fn kill_and_reap(pid: i32) {
    // SAFETY: signals and reaps our own child, writing its status into a local.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}

/// Stops a background save in flight (its file is left unwritten) and waits for the child.
pub fn kill_child(shared: &Shared) {
    let p = &shared.persistence;
    if let Some(c) = p.child() {
        kill_and_reap(c.pid);
        let s = p.settings();
        let _ = std::fs::remove_file(s.dir.join(format!("temp-{}.rdb", c.pid)));
        p.set_child(None);
    }
}

/// Loads the snapshot file, if there is one, into the (empty) store and the function libraries.
pub fn load_at_start(shared: &Shared) -> io::Result<()> {
    let path = shared.persistence.settings().path();
    if !path.exists() {
        return Ok(());
    }
    let started = Instant::now();
    load(shared)?;
    tracing::info!(
        keys = shared.persistence.loaded_keys.load(Ordering::Relaxed),
        secs = started.elapsed().as_secs_f64(),
        "DB loaded from disk"
    );
    Ok(())
}

/// Loads the snapshot file into the store and the function libraries (DEBUG RELOAD empties both first).
pub fn load(shared: &Shared) -> io::Result<()> {
    let p = &shared.persistence;
    let path = p.settings().path();
    p.loading.store(true, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let loaded = load_file(&path, &shared.store, now);
    p.loading.store(false, Ordering::Relaxed);
    let loaded = loaded.map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("can't load the snapshot {}: {e}", path.display()),
        )
    })?;
    load_libraries(shared, &loaded.libraries)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{e} ({})", path.display())))?;
    tracing::info!(
        rdb_version = loaded.rdb_version,
        expired = loaded.expired,
        empty = loaded.empty,
        "snapshot read"
    );
    p.loaded_keys.store(loaded.keys, Ordering::Relaxed);
    p.loaded_expired.store(loaded.expired, Ordering::Relaxed);
    Ok(())
}

/// Loads a snapshot's function libraries, in order.
pub fn load_libraries(shared: &Shared, libraries: &[Vec<u8>]) -> Result<(), String> {
    let mut functions = shared.functions.lock().unwrap_or_else(|e| e.into_inner());
    for code in libraries {
        functions
            .load(code, false)
            .map_err(|e| format!("can't load a function library: {e}"))?;
    }
    Ok(())
}

/// DEBUG RELOAD: saves (unless `save` is off), empties the dataset and the function libraries (unless
/// `flush` is off) and loads the file back. The caller holds every loop's gate.
pub fn reload(shared: &Shared, save: bool, flush: bool) -> Result<(), &'static str> {
    if save {
        save_now(shared).map_err(|_| "ERR")?;
    }
    if flush {
        shared.store.flush();
        shared.functions.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }
    load(shared).map_err(|e| {
        tracing::warn!("DEBUG RELOAD: {e}");
        "ERR Error trying to load the RDB dump, check server logs."
    })
}
