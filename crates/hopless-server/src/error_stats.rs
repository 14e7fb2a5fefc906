//! INFO's error counts (`errorstats`, `total_error_replies`): every error reply the server sends,
//! counted once where the reply writer writes it, by its first word as Redis counts them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Redis's `ERROR_STATS_NUMBER`: past this many distinct codes, new ones are not tracked (their replies
/// still count in the total), so a client inventing codes cannot grow the table.
const MAX_CODES: usize = 128;

#[derive(Debug, Default)]
pub struct ErrorStats {
    total: AtomicU64,
    /// Error code (`ERR`, `WRONGTYPE`...) → replies, in the code order INFO lists them.
    by_code: Mutex<BTreeMap<String, u64>>,
}

impl ErrorStats {
    /// Counts one error reply (`msg` as sent, without the leading `-`). Its code is the text before the
    /// first space within the first 32 bytes, else `ERR`, as Redis's `afterErrorReply` takes it.
    pub fn count(&self, msg: &[u8]) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let head = &msg[..msg.len().min(32)];
        let code = match head.iter().position(|&b| b == b' ') {
            Some(i) => String::from_utf8_lossy(&msg[..i]).into_owned(),
            None => "ERR".to_string(),
        };
        let mut m = self.by_code.lock().unwrap_or_else(|e| e.into_inner());
        let room = m.len() < MAX_CODES;
        if let Some(n) = m.get_mut(&code) {
            *n += 1;
        } else if room {
            m.insert(code, 1);
        }
    }

    /// `total_error_replies`.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Each code and its count, in order.
    pub fn by_code(&self) -> Vec<(String, u64)> {
        let m = self.by_code.lock().unwrap_or_else(|e| e.into_inner());
        m.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.total.store(0, Ordering::Relaxed);
        self.by_code.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_first_word() {
        let s = ErrorStats::default();
        s.count(b"ERR syntax error");
        s.count(b"WRONGTYPE Operation against a key holding the wrong kind of value");
        s.count(b"ERR x");
        s.count(b"NOSPACEATALLINTHEFIRSTTHIRTYTWOBYTES_OF_THIS_REPLY at all");
        assert_eq!(s.total(), 4);
        assert_eq!(
            s.by_code(),
            vec![("ERR".to_string(), 3), ("WRONGTYPE".to_string(), 1)]
        );
    }

    #[test]
    fn new_codes_stop_at_the_limit() {
        let s = ErrorStats::default();
        for i in 0..MAX_CODES + 10 {
            s.count(format!("C{i} x").as_bytes());
        }
        assert_eq!(s.by_code().len(), MAX_CODES);
        assert_eq!(s.total(), MAX_CODES as u64 + 10);
    }
}
