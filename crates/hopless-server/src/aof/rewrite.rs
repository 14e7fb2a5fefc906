//! The log's life: the set opened at start, turned on and off at run time (CONFIG SET appendonly),
//! and rewritten in the background (BGREWRITEAOF, or `auto-aof-rewrite-*`) as Redis 7.0 rewrites it:
//! at the fork a new increment opens and takes every record from then on; the child writes the
//! dataset as of the fork as the new base; when it ends well the manifest names the new base and the
//! increments since the fork, and the files it replaced are removed. A crash at any point leaves a
//! manifest whose files hold every record.

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::base::write_commands;
use super::files::{len_of, make_dir, open_incr, persist_manifest, remove_history};
use super::manifest::{Kind, Manifest, Names, Part};
use super::{Aof, RewriteChild};
use crate::snapshot::save::{extras, format, kill_and_reap, reap};
use crate::snapshot::write::{save_to, Extras, Format};
use crate::state::Shared;
use hopless_kv::store::Frozen;
use hopless_kv::Limits;

pub const IN_PROGRESS: &str = "ERR Background append only file rewriting already in progress";

/// The temporary file a rewrite's child writes the new base to.
fn temp_name(pid: i32) -> String {
    format!("temp-rewriteaof-bg-{pid}.aof")
}

/// The dataset at `path` as a base (the caller holds every gate): a snapshot, or commands.
fn write_base(shared: &Shared, path: &Path, rdb: bool) -> io::Result<()> {
    let s = shared.persistence.settings();
    let extras = Extras {
        aof_base: true,
        ..extras(shared)
    };
    let frozen = shared.store.freeze();
    write_frozen(path, &frozen, &extras, &shared.store.limits(), format(&s), rdb)
}

/// A base of `frozen` at `path`: a snapshot (`aof-use-rdb-preamble yes`), or commands.
fn write_frozen(
    path: &Path,
    frozen: &Frozen<'_, hopless::Hopless>,
    extras: &Extras,
    limits: &Limits,
    fmt: Format,
    rdb: bool,
) -> io::Result<()> {
    if rdb {
        save_to(path, frozen, extras, limits, fmt)
    } else {
        write_commands(path, frozen, extras, limits, fmt.compress)
    }
}

/// Opens the set at start, once what it holds is loaded, and starts recording: an empty set gets a base
/// (the dataset now, as Redis 7.0 makes one), a set with no increment gets one, the manifest is written
/// if it changed.
pub fn open_at_start(shared: &Shared) -> io::Result<()> {
    let aof = &shared.aof;
    let s = aof.settings();
    let names = Names(&s.filename);
    let mut log = aof.log();
    make_dir(&log.dir)?;
    let dir = log.dir.clone();
    let mut m = log.manifest.clone();
    let before = m.clone();
    // A base is made only for an empty set: one made over increments would hold what they hold, and a
    // load would apply them twice (Redis makes one in the same case only).
    if m.base.is_none() && m.incrs.is_empty() {
        let seq = m.next_base_seq();
        let name = names.base(seq, s.rdb_preamble);
        write_base(shared, &dir.join(&name), s.rdb_preamble)?;
        tracing::info!("Creating AOF base file {name} on server start");
        m.base = Some(Part {
            name,
            seq,
            kind: Kind::Base,
        });
    }
    if m.incrs.is_empty() {
        let seq = m.next_incr_seq();
        let name = names.incr(seq);
        tracing::info!("Creating AOF incr file {name} on server start");
        m.incrs.push(Part {
            name,
            seq,
            kind: Kind::Incr,
        });
    }
    let last = m.incrs.last().map(|p| p.name.clone()).unwrap_or_default();
    let (file, len) = open_incr(&dir, &last, false)?;
    if m != before {
        persist_manifest(&dir, &names, &m)?;
    }
    if !m.history.is_empty() {
        remove_history(&dir, &mut m);
        persist_manifest(&dir, &names, &m)?;
    }
    log.size = set_size(&dir, &m);
    log.base_size = log.size;
    log.manifest = m;
    log.file = Some(file);
    log.incr_len = len;
    drop(log);
    aof.resume();
    Ok(())
}

/// The bytes of the files `m` names.
fn set_size(dir: &Path, m: &Manifest) -> u64 {
    m.base.iter().chain(&m.incrs).map(|p| len_of(dir, &p.name)).sum()
}

/// BGREWRITEAOF (and, with `turn_on`, turning the log on): forks a child that writes the dataset as
/// the new base. With the log on (or turning on), a new increment opens and takes every record from the
/// fork on; with it off, the new base is the whole set. The caller holds every gate.
pub fn start(shared: &Shared, turn_on: bool) -> Result<(), String> {
    let aof = &shared.aof;
    if aof.child_pid().is_some() {
        return Err(IN_PROGRESS.into());
    }
    let s = aof.settings();
    let names = Names(&s.filename);
    let on = aof.is_on();
    let turning_on = turn_on && !on;
    let mut log = aof.log();
    let dir = log.dir.clone();
    make_dir(&dir).map_err(|e| format!("ERR Can't create the AOF directory: {e}"))?;
    if !on {
        // The set on disk, if one was left by an earlier run, goes on from its numbers.
        if let Ok(text) = std::fs::read(dir.join(names.manifest())) {
            log.manifest = Manifest::parse(&text).unwrap_or_default();
        }
    }
    aof.rewrites.fetch_add(1, Ordering::Relaxed);
    let mut first_incr = u64::MAX;
    if on || turning_on {
        aof.flush_locked(&mut log);
        if let Some(f) = &log.file {
            let _ = f.sync_data();
        }
        let seq = log.manifest.next_incr_seq();
        let name = names.incr(seq);
        let (file, len) =
            open_incr(&dir, &name, true).map_err(|e| format!("ERR Can't open the AOF increment: {e}"))?;
        let mut m = log.manifest.clone();
        m.incrs.push(Part {
            name,
            seq,
            kind: Kind::Incr,
        });
        // Turning on, the manifest is written when the base is there; else it names the new
        // increment now, so that a crash before the child ends loses nothing.
        if on {
            persist_manifest(&dir, &names, &m)
                .map_err(|e| format!("ERR Can't persist the AOF manifest: {e}"))?;
        }
        log.manifest = m;
        log.file = Some(file);
        log.incr_len = len;
        first_incr = seq;
    }
    let p = &shared.persistence;
    let extras = Extras {
        aof_base: true,
        ..extras(shared)
    };
    let limits = shared.store.limits();
    let fmt = format(&p.settings());
    let frozen = shared.store.freeze();
    let fork_started = Instant::now();
    // SAFETY: as BGSAVE's fork (`snapshot::save::bgsave`): the child runs only `save_to` over memory it
    // has its own copy of, takes no other lock (hopless's fork handlers leave the allocator's free),
    // writes no log and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let rdb = s.rdb_preamble;
        let ok = write_frozen(&dir.join(temp_name(me)), &frozen, &extras, &limits, fmt, rdb).is_ok();
        // SAFETY: ends the child at once; nothing of the parent's runs in it.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    drop(frozen);
    p.last_fork_usec
        .store(fork_started.elapsed().as_micros() as u64, Ordering::Relaxed);
    if pid < 0 {
        let e = io::Error::last_os_error();
        tracing::warn!("can't rewrite the append only file in background: fork: {e}");
        aof.rewrite_failed();
        return Err(format!(
            "ERR Can't rewrite the append only file in background: fork: {e}"
        ));
    }
    p.forks.fetch_add(1, Ordering::Relaxed);
    drop(log);
    aof.set_child(Some(RewriteChild {
        pid,
        started: Instant::now(),
        first_incr,
        turning_on,
        rdb_base: s.rdb_preamble,
    }));
    aof.rewrite_scheduled.store(false, Ordering::Relaxed);
    if turning_on {
        aof.resume();
    }
    tracing::info!(pid, "Background append only file rewriting started");
    Ok(())
}

/// The timer's turn: reaps a finished rewrite and installs its base; starts a scheduled or due one.
pub fn tick(shared: &Shared) {
    let aof = &shared.aof;
    aof.tick();
    if let Some(c) = aof.child() {
        let Some(ok) = reap(c.pid) else {
            return;
        };
        aof.set_child(None);
        match ok.then(|| install(shared, c)) {
            Some(Ok(())) => {
                aof.rewrite_failures.store(0, Ordering::Relaxed);
                aof.last_rewrite_ok.store(true, Ordering::Relaxed);
                tracing::info!("Background AOF rewrite finished successfully");
            }
            failed => {
                if let Some(Err(e)) = failed {
                    tracing::warn!("Background AOF rewrite failed: {e}");
                } else {
                    tracing::warn!("Background AOF rewrite terminated with error");
                }
                let _ = std::fs::remove_file(aof.log().dir.join(temp_name(c.pid)));
                aof.rewrite_failed();
                if c.turning_on {
                    aof.pause();
                }
            }
        }
        aof.last_rewrite_secs
            .store(c.started.elapsed().as_secs() as i64, Ordering::Relaxed);
    }
    // A rewrite asked for while a background save ran, the log turned on meanwhile, or one due.
    let scheduled = aof.rewrite_scheduled.load(Ordering::Relaxed);
    let turn_on = aof.settings().enabled && !aof.is_on();
    let idle = shared.persistence.child().is_none() && aof.child().is_none();
    if idle && (scheduled || turn_on || aof.rewrite_due()) {
        let Some(_all) = shared.gate.exclusive_unless(|| shared.running.busy()) else {
            return;
        };
        if let Err(e) = start(shared, turn_on) {
            tracing::warn!("can't start the background AOF rewrite: {e}");
            if turn_on {
                aof.with_settings(|s| s.enabled = false);
            }
        }
    }
}

/// A finished child's base put in place: renamed, named by the manifest with the increments since its
/// fork; the files it replaces removed.
fn install(shared: &Shared, c: RewriteChild) -> io::Result<()> {
    let aof = &shared.aof;
    let s = aof.settings();
    let names = Names(&s.filename);
    let mut log = aof.log();
    let dir = log.dir.clone();
    let mut m = log.manifest.clone();
    let seq = m.next_base_seq();
    let name = names.base(seq, c.rdb_base);
    std::fs::rename(dir.join(temp_name(c.pid)), dir.join(&name))?;
    let old_base = m.base.replace(Part {
        name,
        seq,
        kind: Kind::Base,
    });
    let (keep, old): (Vec<Part>, Vec<Part>) = m.incrs.drain(..).partition(|p| p.seq >= c.first_incr);
    m.incrs = keep;
    m.history.extend(old_base.into_iter().chain(old).map(|p| Part {
        kind: Kind::History,
        ..p
    }));
    persist_manifest(&dir, &names, &m)?;
    remove_history(&dir, &mut m);
    persist_manifest(&dir, &names, &m)?;
    log.size = set_size(&dir, &m) + aof.buffered() as u64;
    log.base_size = log.size;
    log.manifest = m;
    Ok(())
}

/// Stops a rewrite in flight (its temporary file removed) and waits for its child.
pub fn kill_child(shared: &Shared) {
    let aof = &shared.aof;
    if let Some(c) = aof.child() {
        kill_and_reap(c.pid);
        let _ = std::fs::remove_file(aof.log().dir.join(temp_name(c.pid)));
        aof.set_child(None);
    }
}

/// CONFIG SET appendonly no: the rewrite in flight stopped, what is pending synced, recording stopped.
pub fn turn_off(shared: &Shared) {
    kill_child(shared);
    shared.aof.pause();
}

impl Aof {
    pub fn child(&self) -> Option<RewriteChild> {
        *super::lock(&self.child)
    }

    pub fn child_pid(&self) -> Option<i32> {
        self.child().map(|c| c.pid)
    }

    fn set_child(&self, c: Option<RewriteChild>) {
        *super::lock(&self.child) = c;
    }

    fn rewrite_failed(&self) {
        self.rewrite_failures.fetch_add(1, Ordering::Relaxed);
        self.last_rewrite_ok.store(false, Ordering::Relaxed);
    }

    /// Whether the log has grown enough past its last rewrite for `auto-aof-rewrite-*`.
    fn rewrite_due(&self) -> bool {
        let s = self.settings();
        if !self.is_on() || s.rewrite_percentage == 0 || self.child().is_some() {
            return false;
        }
        let log = self.log();
        let base = log.base_size.max(1);
        log.size >= s.rewrite_min_size && (log.size - base.min(log.size)) * 100 / base >= s.rewrite_percentage
    }
}
