//! The append-only file (`appendonly yes`), as Redis 7.0 keeps it: a directory (`appenddirname`) of a
//! base (a snapshot, written by a rewrite), increments (the commands that changed the dataset since,
//! as RESP arrays) and a manifest naming them; loaded at start, rewritten in the background by a
//! forked child (BGREWRITEAOF, or when it has grown past `auto-aof-rewrite-*`), and flushed to disk
//! as `appendfsync` says: `always` before any reply goes out, `everysec` once a second, `no` when the
//! kernel likes.
//!
//! The order of the records is the order of the changes: with the log on, a command that writes holds
//! every gate (no other command, on any loop, and no active-expiry pass runs beside it), while reads
//! (whose only change is a lazily expired key) run beside each other under their loop's gate. A
//! command's records are gathered on its thread ([`stage`]) and go into the log's buffer
//! ([`Aof::commit`]) before it lets its gates go; the buffer reaches the file before the next reply is
//! written ([`Aof::flush`]).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Aof`]: the settings, the buffer, the open increment, fsync, INFO's counts |
//! | `stage.rs` | a command's records, gathered on its thread |
//! | `base.rs` | a base of commands (`aof-use-rdb-preamble no`): a RESTORE a key |
//! | `propagate.rs` | what a command that changed the dataset leaves in the log (relative times made absolute...) |
//! | `manifest.rs` | the manifest's lines and the files' names |
//! | `files.rs` | the set on disk: opening an increment, replacing the manifest safely, removing history |
//! | `rewrite.rs` | turning the log on and off, BGREWRITEAOF's child and its end, the start-up set |
//! | `load.rs` | loading the set (base, increments) at start and for DEBUG LOADAOF |

pub mod base;
pub mod files;
pub mod load;
pub mod manifest;
pub mod propagate;
pub mod rewrite;
pub mod stage;

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use hopless_kv::clock::Clock;
use hopless_kv::{Gone, KeyGone};

use self::manifest::Manifest;
use self::stage::Staged;
use crate::exec_gate::SideGate;

/// `appendfsync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    Always,
    EverySec,
    No,
}

impl Fsync {
    pub fn parse(s: &str) -> Option<Fsync> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Some(Fsync::Always),
            "everysec" => Some(Fsync::EverySec),
            "no" => Some(Fsync::No),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }
}

/// The append-only file's settings, with Redis's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AofSettings {
    /// `appendonly`.
    pub enabled: bool,
    pub fsync: Fsync,
    /// `appenddirname`, under `dir`.
    pub dirname: String,
    /// `appendfilename`: the prefix of the set's file names.
    pub filename: String,
    /// `aof-use-rdb-preamble`: the base is a snapshot (else commands).
    pub rdb_preamble: bool,
    /// `aof-load-truncated`: a last command cut short is dropped (else the start fails).
    pub load_truncated: bool,
    /// `auto-aof-rewrite-percentage` (0: off) and `auto-aof-rewrite-min-size`.
    pub rewrite_percentage: u64,
    pub rewrite_min_size: u64,
    /// `no-appendfsync-on-rewrite`: no fsync while a rewrite's child writes.
    pub no_fsync_on_rewrite: bool,
}

impl Default for AofSettings {
    fn default() -> Self {
        AofSettings {
            enabled: false,
            fsync: Fsync::EverySec,
            dirname: "appendonlydir".into(),
            filename: "appendonly.aof".into(),
            rdb_preamble: true,
            load_truncated: true,
            rewrite_percentage: 100,
            rewrite_min_size: 64 << 20,
            no_fsync_on_rewrite: false,
        }
    }
}

/// The set's files as they stand, and the increment being appended to.
pub struct Log {
    /// `dir/appenddirname`.
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// The last increment, open for appending (None while the log is off), and its length.
    pub file: Option<File>,
    pub incr_len: u64,
    /// The bytes of the base and the increments (`aof_current_size`).
    pub size: u64,
    /// Their bytes after the last rewrite or start (`aof_base_size`), which auto-rewrite grows from.
    pub base_size: u64,
    last_fsync: Option<Instant>,
    /// Offset of the bytes written to the file that an fsync covered.
    synced: u64,
}

/// A rewrite in flight: the forked child writing the new base.
#[derive(Clone, Copy, Debug)]
pub struct RewriteChild {
    pub pid: i32,
    pub started: Instant,
    /// The increment opened when it forked: it and the ones after stay with the new base.
    pub first_incr: u64,
    /// It turns the log on (CONFIG SET appendonly yes): the manifest is written when it ends well, and
    /// the log goes off again if it fails.
    pub turning_on: bool,
    /// The base it writes is a snapshot (else commands).
    pub rdb_base: bool,
}

/// The append-only file: its settings, the records not yet written, the open increment, INFO's counts.
pub struct Aof {
    /// Whether commands are recorded now.
    on: AtomicBool,
    settings: Mutex<AofSettings>,
    /// Records committed and not yet written to the file.
    pending: Mutex<Vec<u8>>,
    /// Bytes committed since start, and of those written (and, under `always`, fsynced) to the file.
    appended: AtomicU64,
    written: AtomicU64,
    log: Mutex<Log>,
    pub child: Mutex<Option<RewriteChild>>,
    /// BGREWRITEAOF waits for a background save to end.
    pub rewrite_scheduled: AtomicBool,
    pub rewrites: AtomicU64,
    pub rewrite_failures: AtomicU64,
    pub last_rewrite_ok: AtomicBool,
    /// Seconds the last rewrite took (-1: none yet).
    pub last_rewrite_secs: AtomicI64,
    /// The last write to the file failed (`aof_last_write_status:err`): writes are refused meanwhile.
    write_failed: AtomicBool,
    pub delayed_fsync: AtomicU64,
    /// The set is being loaded: the store's clock reads 0 meanwhile ([`LoadClock`]).
    pub loading: Arc<AtomicBool>,
    /// The gate the active expiry's passes hold (every command that writes, with the log on, holds it
    /// exclusively with every loop's gate).
    pub side: Arc<SideGate>,
}

impl Aof {
    pub fn new(settings: AofSettings, dir: PathBuf) -> Aof {
        Aof {
            on: AtomicBool::new(false),
            log: Mutex::new(Log {
                dir: dir.join(&settings.dirname),
                manifest: Manifest::default(),
                file: None,
                incr_len: 0,
                size: 0,
                base_size: 0,
                last_fsync: None,
                synced: 0,
            }),
            settings: Mutex::new(settings),
            pending: Mutex::new(Vec::new()),
            appended: AtomicU64::new(0),
            written: AtomicU64::new(0),
            child: Mutex::new(None),
            rewrite_scheduled: AtomicBool::new(false),
            rewrites: AtomicU64::new(0),
            rewrite_failures: AtomicU64::new(0),
            last_rewrite_ok: AtomicBool::new(true),
            last_rewrite_secs: AtomicI64::new(-1),
            write_failed: AtomicBool::new(false),
            delayed_fsync: AtomicU64::new(0),
            loading: Arc::default(),
            side: Arc::default(),
        }
    }

    /// Whether commands are recorded now: one relaxed load, paid by every command.
    #[inline]
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub fn settings(&self) -> AofSettings {
        lock(&self.settings).clone()
    }

    pub fn with_settings<R>(&self, f: impl FnOnce(&mut AofSettings) -> R) -> R {
        f(&mut lock(&self.settings))
    }

    pub fn log(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// Puts a command's records in the buffer, in a MULTI ... EXEC when there are several (a
    /// transaction's, a script's, or a command's with the keys it expired), so that a load applies them
    /// whole or not at all. The caller still holds the gates its command ran under.
    pub fn commit(&self, staged: Staged) {
        if staged.records == 0 || !self.is_on() {
            return;
        }
        let mut pending = lock(&self.pending);
        let before = pending.len();
        if staged.records > 1 {
            stage::encode(&mut pending, &["MULTI"]);
            pending.extend_from_slice(&staged.bytes);
            stage::encode(&mut pending, &["EXEC"]);
        } else {
            pending.extend_from_slice(&staged.bytes);
        }
        let n = (pending.len() - before) as u64;
        self.appended.fetch_add(n, Ordering::Release);
    }

    /// Whether records wait to be written.
    #[inline]
    pub fn has_pending(&self) -> bool {
        self.is_on() && self.appended.load(Ordering::Acquire) != self.written.load(Ordering::Acquire)
    }

    /// Writes the buffer to the open increment, and under `always` fsyncs it, before the replies that
    /// depend on it go out. A failed write keeps the records for the next try and refuses writes
    /// meanwhile, as Redis does; under `always`, where a reply may not go out unsynced, the server
    /// stops, as Redis stops.
    pub fn flush(&self) {
        if !self.has_pending() {
            return;
        }
        let mut log = self.log();
        self.flush_locked(&mut log);
    }

    /// [`Aof::flush`] with the log's lock held by the caller.
    pub fn flush_locked(&self, log: &mut Log) {
        let fsync = lock(&self.settings).fsync;
        let (data, upto) = {
            let mut p = lock(&self.pending);
            (std::mem::take(&mut *p), self.appended.load(Ordering::Acquire))
        };
        if data.is_empty() {
            return;
        }
        let result = log.append(&data, fsync == Fsync::Always);
        match result {
            Ok(()) => {
                if fsync == Fsync::Always {
                    log.synced = upto;
                }
                self.written.store(upto, Ordering::Release);
                if self.write_failed.swap(false, Ordering::Relaxed) {
                    tracing::warn!("AOF write error looks solved, can write again");
                }
            }
            Err(e) => {
                if fsync == Fsync::Always {
                    crate::aof::files::fatal(&format!(
                        "Can't recover from AOF write error when the AOF fsync policy is 'always': {e}. Exiting..."
                    ));
                }
                if !self.write_failed.swap(true, Ordering::Relaxed) {
                    tracing::warn!("error writing to the AOF file: {e}");
                }
                let mut p = lock(&self.pending);
                let later = std::mem::replace(&mut *p, data);
                p.extend_from_slice(&later);
            }
        }
    }

    /// Whether the last write to the file failed (writes are refused with MISCONF's AOF wording).
    pub fn write_failed(&self) -> bool {
        self.write_failed.load(Ordering::Relaxed)
    }

    /// `everysec`'s turn (ten times a second): writes what is pending and fsyncs once a second has
    /// passed since the last. The fsync runs outside the log's lock, on a duplicate of its descriptor.
    pub fn tick(&self) {
        if !self.is_on() {
            return;
        }
        self.flush();
        let s = self.settings();
        if s.fsync != Fsync::EverySec || (s.no_fsync_on_rewrite && lock(&self.child).is_some()) {
            return;
        }
        let (fd, upto) = {
            let mut log = self.log();
            let written = self.written.load(Ordering::Acquire);
            let due = log.last_fsync.is_none_or(|t| t.elapsed().as_millis() >= 1000);
            if log.synced == written || !due {
                return;
            }
            log.last_fsync = Some(Instant::now());
            let Some(fd) = log.file.as_ref().and_then(|f| f.try_clone().ok()) else {
                return;
            };
            (fd, written)
        };
        // SAFETY: fdatasync on a descriptor this function owns (a duplicate, closed when `fd` drops).
        if unsafe { libc::fdatasync(fd.as_raw_fd()) } == 0 {
            let mut log = self.log();
            log.synced = log.synced.max(upto);
        } else {
            self.delayed_fsync.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes and fsyncs everything (SHUTDOWN, a signal, turning the log off).
    pub fn sync_all(&self) {
        if !self.is_on() {
            return;
        }
        self.flush();
        let mut log = self.log();
        if let Some(f) = &log.file {
            let _ = f.sync_data();
        }
        log.synced = self.written.load(Ordering::Acquire);
    }

    /// Starts recording (the caller holds every gate and has opened the log's increment).
    pub fn resume(&self) {
        self.on.store(true, Ordering::Release);
    }

    /// Stops recording: what is pending is written and synced, the increment closed.
    pub fn pause(&self) {
        self.sync_all();
        self.on.store(false, Ordering::Release);
        self.log().file = None;
        lock(&self.pending).clear();
        self.written
            .store(self.appended.load(Ordering::Acquire), Ordering::Release);
    }

    /// `aof_current_size` and `aof_base_size`.
    pub fn sizes(&self) -> (u64, u64) {
        let log = self.log();
        (log.size, log.base_size)
    }

    /// Bytes committed and not yet written (`aof_buffer_length`).
    pub fn buffered(&self) -> usize {
        lock(&self.pending).len()
    }
}

impl Log {
    /// Appends `data` to the open increment (fsynced if `sync`); a short write is cut back off, so the
    /// file never ends in half a record.
    fn append(&mut self, data: &[u8], sync: bool) -> io::Result<()> {
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        // A new increment starts with the SELECT Redis writes before its first record.
        const SELECT: &[u8] = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n";
        let data: std::borrow::Cow<'_, [u8]> = if self.incr_len == 0 {
            [SELECT, data].concat().into()
        } else {
            data.into()
        };
        // The file is open for appending: each write goes at its end, wherever a cut left it.
        if let Err(e) = f.write_all(&data) {
            let _ = f.set_len(self.incr_len);
            return Err(e);
        }
        self.incr_len += data.len() as u64;
        self.size += data.len() as u64;
        if sync {
            f.sync_data()?;
        }
        Ok(())
    }

    /// Whether an fsync covers every byte written (for INFO's `aof_pending_bio_fsync`).
    pub fn pending_fsync(&self, written: u64) -> bool {
        self.synced < written
    }
}

impl Aof {
    /// `aof_pending_bio_fsync`: written bytes no fsync covers yet.
    pub fn pending_fsync(&self) -> bool {
        self.log().pending_fsync(self.written.load(Ordering::Acquire))
    }
}

/// The store's clock, which reads 0 while the set loads, so that nothing expires meanwhile (a record
/// finds each key as the server that wrote it found it).
pub struct LoadClock {
    pub inner: Arc<dyn Clock>,
    pub loading: Arc<AtomicBool>,
}

impl Clock for LoadClock {
    fn now_ms(&self) -> u64 {
        if self.loading.load(Ordering::Relaxed) {
            0
        } else {
            self.inner.now_ms()
        }
    }
}

/// The store's hook for keys that leave on their own: `inner`'s (keyspace events, tracking), and a
/// `DEL` in the log for each, as Redis records an expired or evicted key; the active expiry's passes
/// hold the side gate, so that their `DEL`s are in order with the commands around them.
pub struct LoggedGone<G: KeyGone> {
    pub inner: G,
    pub aof: Arc<Aof>,
}

impl<G: KeyGone> KeyGone for LoggedGone<G> {
    fn gone(&self, why: Gone, key: &[u8]) {
        self.inner.gone(why, key);
        stage::record(&[&b"DEL"[..], key]);
    }

    fn around_pass(&self, pass: &mut dyn FnMut()) {
        self.aof.side.shared(|| {
            let logged = self.aof.is_on();
            if logged {
                stage::arm();
            }
            pass();
            if logged {
                self.aof.commit(stage::take());
            }
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
