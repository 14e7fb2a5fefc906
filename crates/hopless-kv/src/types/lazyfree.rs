//! Freeing big collections on a background thread (Redis's lazyfree), so deleting, overwriting,
//! evicting or expiring one never stalls the shard's other clients.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

use super::collection::Collection;
use crate::alloc::KvAlloc;

/// Collections with more elements than this are freed by the background thread (Redis's
/// `LAZYFREE_THRESHOLD`), so deleting, overwriting, evicting or expiring a big one never stalls the
/// shard's other clients.
pub const LAZYFREE_THRESHOLD: usize = 64;

static LAZYFREE_PENDING: AtomicUsize = AtomicUsize::new(0);

/// Collections handed to the background thread and not yet freed (INFO's `lazyfree_pending_objects`).
pub fn lazyfree_pending() -> usize {
    LAZYFREE_PENDING.load(Ordering::Relaxed)
}

type Job = std::boxed::Box<dyn FnOnce() + Send>;

fn lazyfree_sender() -> Option<Sender<Job>> {
    static TX: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("hopless-lazyfree".into())
            .spawn(move || {
                for job in rx {
                    job();
                    LAZYFREE_PENDING.fetch_sub(1, Ordering::Relaxed);
                }
            })
            .ok()?;
        Some(Mutex::new(tx))
    })
    .as_ref()
    .and_then(|m| m.lock().ok().map(|tx| tx.clone()))
}

/// Frees a collection: here when small, on the background thread when large.
pub(crate) fn free_collection<A: KvAlloc>(c: Collection<A>) {
    if c.len() <= LAZYFREE_THRESHOLD || cfg!(miri) {
        drop(c);
        return;
    }
    let Some(tx) = lazyfree_sender() else {
        drop(c);
        return;
    };
    LAZYFREE_PENDING.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = tx.send(std::boxed::Box::new(move || drop(c))) {
        LAZYFREE_PENDING.fetch_sub(1, Ordering::Relaxed);
        (e.0)();
    }
}
