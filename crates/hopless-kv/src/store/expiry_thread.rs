//! The background thread of the active expiry: a pass every 100 ms until it is stopped or its store is
//! gone. It knows nothing of the store: it is handed the pass to run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The active-expiry thread; stops it when dropped (with the last [`Store`](super::Store) handle).
pub(super) struct ExpiryThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ExpiryThread {
    /// Starts the thread if `active` (else holds none). `pass` runs one pass and returns false once the
    /// store it expires is gone, which ends the thread.
    pub(super) fn start(active: bool, pass: impl Fn() -> bool + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = active.then(|| {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("hopless-kv-expiry".into())
                .spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::park_timeout(Duration::from_millis(100));
                        if stop.load(Ordering::SeqCst) || !pass() {
                            break;
                        }
                    }
                })
                .expect("spawn the expiry thread")
        });
        ExpiryThread { stop, handle }
    }
}

impl Drop for ExpiryThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}
