//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN...): who waits on which key, first come first
//! served, and serving them when a write makes a key ready.
//!
//! A blocking command first tries to pop with the registry locked, and registers only if nothing was
//! there ([`Blocked::try_or_block`]). A write command, after it ran and while it still holds its
//! loop's gate, hands its keys to [`Blocked::serve`], which pops for the waiters in the order they
//! blocked and sends each its reply through a oneshot channel, before the writer's own reply goes out:
//! as in Redis, an element pushed to a key somebody waits on is theirs, and a reader that runs after the
//! push never sees it. A served BLMOVE's push serves the destination's waiters in the same pass. A
//! transaction hands its keys over once, after its last command, so that its own pops come first.
//!
//! No wake-up is lost: a waiter raises `count` before its try, and a writer checks `count` after a
//! `fence(SeqCst)` that follows its write. Either the writer sees the waiter (and serves it, the
//! registry lock ordering the two), or the waiter's try sees the write.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::Mutex;

use bytes::{Bytes, BytesMut};
use hopless_kv::{Kind, Store};
use tokio::sync::oneshot;

use crate::codec::{Proto, Reply};
use crate::keyspace_events::{KeyspaceEvents, GENERIC};

/// What a blocked command does once a key it waits on is ready.
pub trait BlockedOp: Send {
    /// What the keys it pops from must hold: a key of another kind is not ready for it (it stays
    /// blocked, as in Redis).
    fn kind(&self) -> Kind;
    /// Pops from `key` for the waiting client and writes its reply into `out`. `Ok(true)`: served;
    /// `Ok(false)`: nothing there; an error is the client's reply (the first try's WRONGTYPE; on a
    /// wake-up, BLMOVE's destination of another type, which unblocks it with that error as Redis does).
    fn serve(&self, store: &Store, key: &[u8], out: &mut Reply) -> Result<bool, hopless_kv::Error>;
    /// The key a served pop pushed to (BLMOVE's destination), which may serve other waiters.
    fn pushes_to(&self) -> Option<&Bytes> {
        None
    }
    /// The error that unblocks the waiter when a key it waits on is deleted or takes another type (an
    /// XREADGROUP's group is gone with it); None: it waits on, as a pop does.
    fn gone(&self) -> Option<&'static str> {
        None
    }
    /// The keyspace events a served pop makes, as Redis names them: its class, the pop's event on the
    /// key, and a push's event on [`BlockedOp::pushes_to`] (BLMOVE's), which Redis publishes first.
    fn events(&self) -> Option<(u32, &'static str, Option<&'static str>)> {
        None
    }
    /// Whether serving takes what it serves (a pop): then a key that has nothing for the first waiter
    /// has nothing for the ones after it. A read (XREAD) takes nothing, so each waiter is tried.
    fn consumes(&self) -> bool {
        true
    }
}

struct Waiter {
    keys: Vec<Bytes>,
    op: Box<dyn BlockedOp>,
    proto: Proto,
    reply: oneshot::Sender<BytesMut>,
}

#[derive(Default)]
struct Waiting {
    by_key: HashMap<Bytes, VecDeque<u64>>,
    by_client: HashMap<u64, Waiter>,
}

impl Waiting {
    /// Takes `client` out of every queue it is in.
    fn remove(&mut self, client: u64) -> Option<Waiter> {
        let w = self.by_client.remove(&client)?;
        for k in &w.keys {
            if let Some(q) = self.by_key.get_mut(k) {
                q.retain(|&c| c != client);
                if q.is_empty() {
                    self.by_key.remove(k);
                }
            }
        }
        Some(w)
    }
}

#[derive(Default)]
pub struct Blocked {
    /// Blocked clients, plus those between raising it and their first try.
    count: AtomicUsize,
    waiting: Mutex<Waiting>,
}

/// What a blocking command's first try came to.
pub enum Tried {
    /// Served at once (the reply is written).
    Served,
    /// Blocked: the reply comes through this channel.
    Blocked(oneshot::Receiver<BytesMut>),
}

impl Blocked {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many clients are blocked (INFO's `blocked_clients`).
    pub fn len(&self) -> usize {
        self.lock().by_client.len()
    }

    /// Tries `op` on each of `keys` in order (the first error is the command's reply); if none is
    /// ready, blocks `client` on all of them (a client blocks once at a time).
    pub fn try_or_block(
        &self,
        store: &Store,
        client: u64,
        keys: Vec<Bytes>,
        op: Box<dyn BlockedOp>,
        out: &mut Reply,
    ) -> Result<Tried, hopless_kv::Error> {
        let mut waiting = self.lock();
        self.count.fetch_add(1, Ordering::SeqCst);
        // Pairs with the writers' fence: a write this try does not see, sees the count.
        fence(Ordering::SeqCst);
        let mut first = || {
            for k in &keys {
                if op.serve(store, k, out)? {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        match first() {
            Ok(false) => {}
            done => {
                self.count.fetch_sub(1, Ordering::SeqCst);
                return done.map(|_| Tried::Served);
            }
        }
        let (tx, rx) = oneshot::channel();
        for k in &keys {
            let q = waiting.by_key.entry(k.clone()).or_default();
            if !q.contains(&client) {
                q.push_back(client);
            }
        }
        let proto = out.proto;
        waiting.by_client.insert(
            client,
            Waiter {
                keys,
                op,
                proto,
                reply: tx,
            },
        );
        Ok(Tried::Blocked(rx))
    }

    /// Every key somebody waits on (FLUSHALL's, which changes them all).
    pub fn waiting_keys(&self) -> Vec<Bytes> {
        self.lock().by_key.keys().cloned().collect()
    }

    /// Whether anybody is blocked: a write's check before it looks its keys up (after its fence).
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Serves the clients blocked on `keys`, first come first served, while a key has what they wait
    /// for; then the keys their pops pushed to. Returns the keys the served pops changed (popped from,
    /// pushed to), for the watches.
    pub fn serve<'k>(
        &self,
        store: &Store,
        events: &KeyspaceEvents,
        keys: impl Iterator<Item = &'k [u8]>,
    ) -> Vec<Bytes> {
        let mut changed = Vec::new();
        let mut waiting = self.lock();
        let mut ready: Vec<Bytes> = keys
            .filter(|k| waiting.by_key.contains_key(*k))
            .map(Bytes::copy_from_slice)
            .collect();
        while let Some(key) = ready.pop() {
            let mut i = 0;
            while let Some(&client) = waiting.by_key.get(&key).and_then(|q| q.get(i)) {
                let w = &waiting.by_client[&client];
                let mut out = Reply {
                    buf: BytesMut::new(),
                    proto: w.proto,
                    ..Default::default()
                };
                let served = if store.key_type(&key) != Some(w.op.kind()) {
                    let Some(e) = w.op.gone() else {
                        // Not what this client pops (a list for BLPOP, a sorted set for BZPOPMIN): the
                        // next one in the queue may want it.
                        i += 1;
                        continue;
                    };
                    out.error(e);
                    false
                } else {
                    match w.op.serve(store, &key, &mut out) {
                        // Nothing for a reader: the next one may want older entries.
                        Ok(false) if !w.op.consumes() => {
                            i += 1;
                            continue;
                        }
                        // The key is empty (or gone): the rest of its queue waits on.
                        Ok(false) => break,
                        Ok(true) => true,
                        Err(e) => {
                            out.error(&e.to_string());
                            false
                        }
                    }
                };
                let w = waiting.remove(client).expect("a queued client is registered");
                self.count.fetch_sub(1, Ordering::SeqCst);
                if let (true, Some((class, pop, push))) = (served && events.active(), w.op.events()) {
                    if let (Some(e), Some(dst)) = (push, w.op.pushes_to()) {
                        events.notify(class, e, dst);
                    }
                    events.notify(class, pop, &key);
                    if store.key_type(&key).is_none() {
                        events.notify(GENERIC, "del", &key);
                    }
                }
                if served && w.op.consumes() {
                    changed.push(key.clone());
                    if let Some(dst) = w.op.pushes_to() {
                        changed.push(dst.clone());
                        if waiting.by_key.contains_key(dst) {
                            ready.push(dst.clone());
                        }
                    }
                }
                // A client gone since (its receiver dropped) lost nothing it had not left.
                let _ = w.reply.send(out.buf);
            }
        }
        changed
    }

    /// Unblocks `client` by its own choice (timeout, disconnect, kill): true if it was still blocked,
    /// false if a reply is already in its channel.
    pub fn cancel(&self, client: u64) -> bool {
        let removed = self.lock().remove(client).is_some();
        if removed {
            self.count.fetch_sub(1, Ordering::SeqCst);
        }
        removed
    }

    /// CLIENT UNBLOCK: sends `client` the reply `write` makes (a timeout's or an error), if it is
    /// blocked.
    pub fn unblock(&self, client: u64, write: impl FnOnce(&mut Reply)) -> bool {
        let Some(w) = self.lock().remove(client) else {
            return false;
        };
        self.count.fetch_sub(1, Ordering::SeqCst);
        let mut out = Reply {
            buf: BytesMut::new(),
            proto: w.proto,
            ..Default::default()
        };
        write(&mut out);
        let _ = w.reply.send(out.buf);
        true
    }
}
