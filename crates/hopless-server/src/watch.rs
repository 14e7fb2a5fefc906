//! WATCH: which clients watch which keys, and marking them when a watched key is written.
//!
//! A write command touches its keys after it ran (`touch`); every client watching one of them gets its
//! `dirty` flag set, and its EXEC then aborts. Nobody watching is the common case, and costs a write one
//! load of `count` (after the fence that orders it against a WATCH being registered: see
//! [`Watches::touch`]). What a touch cannot see (a key expired, evicted or flushed: the store removes
//! those without a command) EXEC finds by checking that each key that existed at WATCH still does.

use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

struct Watcher {
    client: u64,
    dirty: Arc<AtomicBool>,
}

#[derive(Default)]
pub struct Watches {
    /// How many (client, key) watches exist.
    count: AtomicUsize,
    by_key: Mutex<HashMap<Bytes, Vec<Watcher>>>,
}

impl Watches {
    fn keys(&self) -> std::sync::MutexGuard<'_, HashMap<Bytes, Vec<Watcher>>> {
        self.by_key.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `client`'s watch of `key` (once per key: the caller skips keys it already watches).
    pub fn watch(&self, key: &Bytes, client: u64, dirty: &Arc<AtomicBool>) {
        let mut keys = self.keys();
        keys.entry(key.clone()).or_default().push(Watcher {
            client,
            dirty: dirty.clone(),
        });
        self.count.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `touch`: a write that does not see this watch ran before it.
        fence(Ordering::SeqCst);
    }

    /// Drops `client`'s watches of `keys`.
    pub fn unwatch<'k>(&self, keys: impl Iterator<Item = &'k Bytes>, client: u64) {
        let mut map = self.keys();
        for key in keys {
            if let Some(list) = map.get_mut(key) {
                let before = list.len();
                list.retain(|w| w.client != client);
                self.count.fetch_sub(before - list.len(), Ordering::SeqCst);
                if list.is_empty() {
                    map.remove(key);
                }
            }
        }
    }

    /// Whether anybody watches anything: a write's check before it looks its keys up. The caller has
    /// issued `fence(SeqCst)` after its write (`Watches::after_write_fence`).
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Marks every client watching one of `keys` (called after a write to them, while the writer still
    /// holds its loop's gate, so that an EXEC cannot run between the write and its mark).
    pub fn touch<'k>(&self, keys: impl Iterator<Item = &'k [u8]>) {
        let map = self.keys();
        for key in keys {
            if let Some(list) = map.get(key) {
                for w in list {
                    w.dirty.store(true, Ordering::Release);
                }
            }
        }
    }

    /// Orders a write before the loads of `active` (here and in the blocked-client registry) that
    /// follow it: either the write's check sees a watch registered at the same moment, or the WATCH's
    /// own existence check sees the write. One fence per write command.
    pub fn after_write_fence() {
        fence(Ordering::SeqCst);
    }

    #[cfg(test)]
    fn watched(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touch_marks_only_the_clients_watching_that_key() {
        let w = Watches::default();
        let (d1, d2) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (a, b) = (Bytes::from("a"), Bytes::from("b"));
        w.watch(&a, 1, &d1);
        w.watch(&b, 2, &d2);
        assert!(w.active());
        w.touch([&b"c"[..]].into_iter());
        assert!(!d1.load(Ordering::Relaxed) && !d2.load(Ordering::Relaxed));
        w.touch([&b"a"[..]].into_iter());
        assert!(d1.load(Ordering::Relaxed) && !d2.load(Ordering::Relaxed));
        w.unwatch([&a].into_iter(), 1);
        w.unwatch([&b].into_iter(), 2);
        assert_eq!(w.watched(), 0);
        assert!(w.keys().is_empty());
    }
}
