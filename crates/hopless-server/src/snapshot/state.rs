//! The snapshot's settings and what INFO persistence reports: where the file goes (`dir`,
//! `dbfilename`), the save points, `rdbcompression`, `rdbchecksum`, `stop-writes-on-bgsave-error`; when
//! the last save ended and how, the background save in flight, and the changes a save covers.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// `save <seconds> <changes>`: a background save once this many changes are this old.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavePoint {
    pub secs: u64,
    pub changes: u64,
}

/// Redis's save points when it is given no configuration.
pub const DEFAULT_SAVE: &str = "3600 1 300 100 60 10000";

/// Reads `save`'s value: pairs of seconds and changes, space-separated; `""` for none.
pub fn parse_save(s: &str) -> Result<Vec<SavePoint>, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.len() % 2 != 0 {
        return Err("Invalid save parameters".into());
    }
    words
        .chunks_exact(2)
        .map(|p| match (p[0].parse::<u64>(), p[1].parse::<u64>()) {
            (Ok(secs), Ok(changes)) => Ok(SavePoint { secs, changes }),
            _ => Err("Invalid save parameters".into()),
        })
        .collect()
}

/// `save`'s value as CONFIG GET shows it.
pub fn format_save(points: &[SavePoint]) -> String {
    points
        .iter()
        .map(|p| format!("{} {}", p.secs, p.changes))
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Clone, Debug)]
pub struct SnapshotSettings {
    pub dir: PathBuf,
    pub dbfilename: String,
    pub save: Vec<SavePoint>,
    pub compression: bool,
    pub checksum: bool,
    pub stop_writes_on_error: bool,
}

impl Default for SnapshotSettings {
    /// Redis's defaults, but no save points (an embedded server writes no file unless told to).
    fn default() -> Self {
        SnapshotSettings {
            dir: PathBuf::from("."),
            dbfilename: "dump.rdb".into(),
            save: Vec::new(),
            compression: true,
            checksum: true,
            stop_writes_on_error: true,
        }
    }
}

impl SnapshotSettings {
    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.dbfilename)
    }
}

/// A background save in flight: the child writing it.
#[derive(Clone, Copy, Debug)]
pub struct Child {
    pub pid: i32,
    pub started: Instant,
    /// The change count when it forked: what it covers once it succeeds.
    pub changes_at_fork: u64,
}

pub fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The state a snapshot's commands, INFO and the save timer share.
pub struct Persistence {
    settings: Mutex<SnapshotSettings>,
    /// [`Persistence::refuses_writes`], kept up to date by every change of what it depends on (it is
    /// read by every write).
    refusing: AtomicBool,
    /// The change count the last successful save covered.
    saved_changes: AtomicU64,
    /// When the last successful save ended (the start time before the first), Unix seconds.
    last_save: AtomicU64,
    last_ok: AtomicBool,
    /// When a background save last failed to start or ended in an error, Unix seconds (a save point
    /// retries only 5 s later, as Redis waits).
    last_failure: AtomicU64,
    child: Mutex<Option<Child>>,
    /// BGSAVE SCHEDULE asked while a save was in flight.
    pub scheduled: AtomicBool,
    last_bgsave_secs: AtomicI64,
    saves: AtomicU64,
    /// A snapshot is being loaded (INFO's `loading`).
    pub loading: AtomicBool,
    /// The last load's keys loaded and keys left out as expired.
    pub loaded_keys: AtomicU64,
    pub loaded_expired: AtomicU64,
    /// Forks made (INFO's `total_forks`), and how long the last one took, µs (`latest_fork_usec`).
    pub forks: AtomicU64,
    pub last_fork_usec: AtomicU64,
}

impl Persistence {
    pub fn new(settings: SnapshotSettings) -> Self {
        Persistence {
            settings: Mutex::new(settings),
            refusing: AtomicBool::new(false),
            saved_changes: AtomicU64::new(0),
            last_save: AtomicU64::new(unix_secs()),
            last_ok: AtomicBool::new(true),
            last_failure: AtomicU64::new(0),
            child: Mutex::new(None),
            scheduled: AtomicBool::new(false),
            last_bgsave_secs: AtomicI64::new(-1),
            saves: AtomicU64::new(0),
            loading: AtomicBool::new(false),
            loaded_keys: AtomicU64::new(0),
            loaded_expired: AtomicU64::new(0),
            forks: AtomicU64::new(0),
            last_fork_usec: AtomicU64::new(0),
        }
    }

    pub fn settings(&self) -> SnapshotSettings {
        self.settings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Changes the settings (CONFIG SET).
    pub fn change(&self, f: impl FnOnce(&mut SnapshotSettings)) {
        f(&mut self.settings.lock().unwrap_or_else(|e| e.into_inner()));
        self.recheck();
    }

    fn recheck(&self) {
        let s = self.settings.lock().unwrap_or_else(|e| e.into_inner());
        let refusing = !self.last_ok() && s.stop_writes_on_error && !s.save.is_empty();
        self.refusing.store(refusing, Ordering::Relaxed);
    }

    pub fn child(&self) -> Option<Child> {
        *self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_child(&self, c: Option<Child>) {
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = c;
    }

    /// A save that covers the changes up to `changes` ended: well or not.
    pub fn saved(&self, ok: bool, changes: u64, background: Option<Instant>) {
        if ok {
            self.saved_changes.store(changes, Ordering::Relaxed);
            self.last_save.store(unix_secs(), Ordering::Relaxed);
            self.saves.fetch_add(1, Ordering::Relaxed);
        } else {
            self.last_failure.store(unix_secs(), Ordering::Relaxed);
        }
        if let Some(started) = background {
            self.last_ok.store(ok, Ordering::Relaxed);
            self.last_bgsave_secs
                .store(started.elapsed().as_secs() as i64, Ordering::Relaxed);
        } else if ok {
            // A foreground save that succeeds clears a background one's error, as in Redis.
            self.last_ok.store(true, Ordering::Relaxed);
        }
        self.recheck();
    }

    /// A background save could not start.
    pub fn fork_failed(&self) {
        self.last_ok.store(false, Ordering::Relaxed);
        self.last_failure.store(unix_secs(), Ordering::Relaxed);
        self.recheck();
    }

    pub fn last_save(&self) -> u64 {
        self.last_save.load(Ordering::Relaxed)
    }

    pub fn last_ok(&self) -> bool {
        self.last_ok.load(Ordering::Relaxed)
    }

    pub fn last_failure(&self) -> u64 {
        self.last_failure.load(Ordering::Relaxed)
    }

    pub fn saved_changes(&self) -> u64 {
        self.saved_changes.load(Ordering::Relaxed)
    }

    pub fn last_bgsave_secs(&self) -> i64 {
        self.last_bgsave_secs.load(Ordering::Relaxed)
    }

    pub fn saves(&self) -> u64 {
        self.saves.load(Ordering::Relaxed)
    }

    /// Whether writes are refused: the last background save failed and `stop-writes-on-bgsave-error` is
    /// on with save points set (Redis's MISCONF).
    #[inline]
    pub fn refuses_writes(&self) -> bool {
        self.refusing.load(Ordering::Relaxed)
    }
}
