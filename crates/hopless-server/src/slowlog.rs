//! The slow log (SLOWLOG): the commands whose execution took at least `slowlog-log-slower-than`
//! microseconds, newest first, at most `slowlog-max-len` of them, as Redis keeps it: each entry has an id
//! that is never reused (RESET keeps counting), the Unix time it was logged, the execution time, the
//! arguments (at most 32, each cut at 128 bytes, with Redis's notes of what was cut), the client's address
//! and name. The time is the command's execution, not its reading or its reply; a blocking command is
//! logged when it is served or times out.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;

/// Redis's `SLOWLOG_ENTRY_MAX_ARGC` and `SLOWLOG_ENTRY_MAX_STRING`.
const MAX_ARGS: usize = 32;
const MAX_ARG_BYTES: usize = 128;

/// One logged command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    /// Unix time, seconds.
    pub time: i64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    /// `ip:port` (`[ip]:port` for IPv6), as CLIENT LIST's `addr`.
    pub peer: String,
    pub name: Bytes,
}

struct Log {
    entries: VecDeque<Entry>,
    next_id: u64,
}

pub struct SlowLog {
    log: Mutex<Log>,
    /// `slowlog-log-slower-than` (µs; negative: nothing is logged, 0: everything).
    slower_than: AtomicI64,
    /// `slowlog-max-len`.
    max_len: AtomicU64,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            log: Mutex::new(Log {
                entries: VecDeque::new(),
                next_id: 0,
            }),
            slower_than: AtomicI64::new(10_000),
            max_len: AtomicU64::new(128),
        }
    }
}

impl SlowLog {
    /// The log (a panic elsewhere while it was held leaves nothing half-done in it).
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn slower_than(&self) -> i64 {
        self.slower_than.load(Ordering::Relaxed)
    }

    pub fn set_slower_than(&self, micros: i64) {
        self.slower_than.store(micros, Ordering::Relaxed);
    }

    pub fn max_len(&self) -> u64 {
        self.max_len.load(Ordering::Relaxed)
    }

    /// Takes effect at the next entry logged, which drops the oldest beyond it (as in Redis).
    pub fn set_max_len(&self, n: u64) {
        self.max_len.store(n, Ordering::Relaxed);
    }

    /// Whether a command that ran `micros` goes in: the caller gathers the entry's fields only then.
    pub fn wants(&self, micros: u64) -> bool {
        let t = self.slower_than();
        t >= 0 && micros >= t as u64
    }

    /// Logs a command that ran `micros` (the caller asked [`SlowLog::wants`]), then drops the oldest
    /// entries beyond `slowlog-max-len`.
    pub fn push(&self, micros: u64, args: &[Bytes], peer: String, name: Bytes) {
        let args = trimmed(args);
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let max = self.max_len() as usize;
        let mut log = self.lock();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(Entry {
            id,
            time,
            micros,
            args,
            peer,
            name,
        });
        log.entries.truncate(max);
    }

    /// The newest `count` entries, newest first.
    pub fn newest(&self, count: usize) -> Vec<Entry> {
        self.lock().entries.iter().take(count).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Empties the log; ids go on from where they were.
    pub fn reset(&self) {
        self.lock().entries.clear();
    }
}

/// The arguments as Redis logs them: beyond 32, the 32nd says how many more there were; an argument
/// over 128 bytes keeps its first 128 and says how many more it had.
fn trimmed(args: &[Bytes]) -> Vec<Bytes> {
    let kept = args.len().min(MAX_ARGS);
    (0..kept)
        .map(|j| {
            if kept != args.len() && j == kept - 1 {
                Bytes::from(format!("... ({} more arguments)", args.len() - kept + 1))
            } else if args[j].len() > MAX_ARG_BYTES {
                let mut s = args[j][..MAX_ARG_BYTES].to_vec();
                s.extend_from_slice(format!("... ({} more bytes)", args[j].len() - MAX_ARG_BYTES).as_bytes());
                Bytes::from(s)
            } else {
                args[j].clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn entries_go_in_newest_first_and_the_oldest_leave_beyond_the_max() {
        let log = SlowLog::default();
        log.set_slower_than(0);
        log.set_max_len(3);
        for i in 0..5 {
            assert!(log.wants(0));
            log.push(i, &args(&["ping"]), "127.0.0.1:1".into(), Bytes::new());
        }
        let ids: Vec<u64> = log.newest(10).iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 3, 2]);
        assert_eq!(log.newest(1)[0].micros, 4);
        log.reset();
        assert_eq!(log.len(), 0);
        log.push(9, &args(&["ping"]), String::new(), Bytes::new());
        assert_eq!(log.newest(10)[0].id, 5, "ids are never reused");
        log.set_max_len(0);
        log.push(9, &args(&["ping"]), String::new(), Bytes::new());
        assert_eq!(log.len(), 0);
    }

    #[test]
    fn the_threshold_is_inclusive_and_negative_turns_it_off() {
        let log = SlowLog::default();
        assert!(!log.wants(9_999) && log.wants(10_000));
        log.set_slower_than(-1);
        assert!(!log.wants(u64::MAX));
    }

    #[test]
    fn long_arguments_and_long_calls_are_cut_as_redis_cuts_them() {
        let mut many = vec!["sadd".to_string(), "set".to_string()];
        many.extend((3..=33).map(|i| i.to_string()));
        let many: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
        let t = trimmed(&args(&many));
        assert_eq!(t.len(), 32);
        assert_eq!(t[30], "31");
        assert_eq!(t[31], "... (2 more arguments)");
        let long = "A".repeat(129);
        let t = trimmed(&args(&["sadd", "set", "foo", &long]));
        assert_eq!(t[3], format!("{}... (1 more bytes)", "A".repeat(128)));
        let exact = "B".repeat(128);
        assert_eq!(trimmed(&args(&[&exact]))[0], exact.as_str());
    }
}
