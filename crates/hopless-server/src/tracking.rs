//! Client-side caching (CLIENT TRACKING), as Redis 7.0's `tracking.c`: the table of keys that tracking
//! clients read (key → client ids), the BCAST clients' prefixes and the keys written under each since
//! the last flush, and each tracking client's options and redirection.
//!
//! An invalidation goes to the client's own connection as a RESP3 push (`>2 invalidate [keys]`), or to
//! the client it redirects to: a push if that one speaks RESP3, else a `message` of the
//! `__redis__:invalidate` channel if it subscribes to anything (RESP2 has no push frames). A frame is
//! queued in the receiving connection's push outbox ([`Outbox`]), which its own event loop writes: a
//! client's invalidation of a key it wrote itself follows that write's reply, as in Redis.
//!
//! Whether any client tracks is one relaxed load ([`Tracking::active`]): with none, a command pays
//! nothing more. The store's expiry and eviction reach [`Tracking::invalidate`] under a shard lock or
//! on the expiry thread: it takes this table's lock, the client registry's and outboxes', never the
//! store's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};
use hopless_kv::{Gone, KeyGone};

use crate::pubsub::{Message, Outbox, OutputLimit, PubSub};

/// `tracking-table-max-keys`'s default.
pub const DEFAULT_MAX_KEYS: u64 = 1_000_000;

/// CLIENT TRACKING's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

/// A tracking client, as CLIENT TRACKINGINFO, GETREDIR and LIST show it.
#[derive(Debug, Clone, Default)]
pub struct Info {
    pub options: Options,
    /// The client its invalidations go to; 0: itself.
    pub redirect: u64,
    /// Its redirect target was gone when an invalidation was sent.
    pub broken: bool,
    /// Its BCAST prefixes, in order.
    pub prefixes: Vec<Bytes>,
}

/// A connection an invalidation can reach: its push outbox and protocol.
pub struct Target {
    pub pushes: Arc<Outbox>,
    pub resp3: bool,
}

/// Finds a connected client by id.
pub type Lookup = Box<dyn Fn(u64) -> Option<Target> + Send + Sync>;

#[derive(Default)]
struct Client {
    options: Options,
    redirect: u64,
    broken: bool,
    prefixes: BTreeSet<Bytes>,
}

#[derive(Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    /// Keys written since the last flush, and who wrote each last (None: expiry, eviction).
    keys: BTreeMap<Bytes, Option<u64>>,
}

#[derive(Default)]
struct Inner {
    /// Key → the clients that may cache it.
    keys: HashMap<Bytes, BTreeSet<u64>>,
    /// The sum of the sets' sizes (INFO's `tracking_total_items`).
    items: usize,
    prefixes: BTreeMap<Bytes, Prefix>,
    clients: BTreeMap<u64, Client>,
    /// Some prefix has keys waiting.
    pending: bool,
}

/// The server's tracking state.
pub struct Tracking {
    /// How many clients track (INFO's `tracking_clients`).
    count: AtomicUsize,
    max_keys: AtomicU64,
    inner: Mutex<Inner>,
    pubsub: Arc<PubSub>,
    lookup: OnceLock<Lookup>,
}

/// Pushes are a normal client's output, unlimited by default in Redis.
const UNLIMITED: OutputLimit = OutputLimit {
    hard: 0,
    soft: 0,
    soft_secs: 0,
};

impl Tracking {
    pub fn new(pubsub: Arc<PubSub>) -> Self {
        Tracking {
            count: AtomicUsize::new(0),
            max_keys: AtomicU64::new(DEFAULT_MAX_KEYS),
            inner: Mutex::default(),
            pubsub,
            lookup: OnceLock::new(),
        }
    }

    /// Sets how clients are found (once, when the client registry exists).
    pub fn set_lookup(&self, lookup: Lookup) {
        let _ = self.lookup.set(lookup);
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether any client tracks: the one load a command pays when none does.
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    pub fn max_keys(&self) -> u64 {
        self.max_keys.load(Ordering::Relaxed)
    }

    /// Sets `tracking-table-max-keys` (0: no limit) and evicts down to it.
    pub fn set_max_keys(&self, n: u64) {
        self.max_keys.store(n, Ordering::Relaxed);
        let mut inner = self.inner();
        self.limit(&mut inner);
    }

    /// Client `id`'s tracking, or None when it does not track.
    pub fn info(&self, id: u64) -> Option<Info> {
        let inner = self.inner();
        inner.clients.get(&id).map(|c| Info {
            options: c.options,
            redirect: c.redirect,
            broken: c.broken,
            prefixes: c.prefixes.iter().cloned().collect(),
        })
    }

    /// INFO's counts: tracking clients, keys, items (key and client pairs), prefixes.
    pub fn counts(&self) -> [usize; 4] {
        let inner = self.inner();
        [
            inner.clients.len(),
            inner.keys.len(),
            inner.items,
            inner.prefixes.len(),
        ]
    }

    /// CLIENT TRACKING ON (its checks passed): new options and redirection; a BCAST client's prefixes
    /// are added to those it has (none given: the empty prefix, every key).
    pub fn enable(&self, id: u64, redirect: u64, options: Options, prefixes: &[Bytes]) {
        let mut inner = self.inner();
        let inner = &mut *inner;
        let c = inner.clients.entry(id).or_insert_with(|| {
            self.count.fetch_add(1, Ordering::Relaxed);
            Client::default()
        });
        c.options = options;
        c.redirect = redirect;
        c.broken = false;
        if options.bcast {
            let empty = [Bytes::new()];
            let list = if prefixes.is_empty() { &empty[..] } else { prefixes };
            for p in list {
                inner.prefixes.entry(p.clone()).or_default().clients.insert(id);
                c.prefixes.insert(p.clone());
            }
        }
    }

    /// CLIENT TRACKING OFF, RESET, or the client went: it leaves the prefixes it listened to. Its keys
    /// stay in the table until written (as in Redis), and are skipped then; with no tracking client
    /// left, the table is emptied.
    pub fn disable(&self, id: u64) {
        let mut inner = self.inner();
        let Some(c) = inner.clients.remove(&id) else {
            return;
        };
        self.count.fetch_sub(1, Ordering::Relaxed);
        for p in &c.prefixes {
            if let Some(state) = inner.prefixes.get_mut(p) {
                state.clients.remove(&id);
                if state.clients.is_empty() {
                    inner.prefixes.remove(p);
                }
            }
        }
        if inner.clients.is_empty() {
            *inner = Inner::default();
        }
    }

    /// After client `id` read `keys`: it may cache them. Past `tracking-table-max-keys`, keys are
    /// evicted (and invalidated).
    pub fn remember<'a>(&self, id: u64, keys: impl Iterator<Item = &'a [u8]>) {
        let mut inner = self.inner();
        let inner = &mut *inner;
        if !inner.clients.contains_key(&id) {
            return;
        }
        for k in keys {
            let ids = match inner.keys.get_mut(k) {
                Some(ids) => ids,
                None => inner.keys.entry(Bytes::copy_from_slice(k)).or_default(),
            };
            if ids.insert(id) {
                inner.items += 1;
            }
        }
        self.limit(inner);
    }

    /// Keys were written (by client `writer`) or expired or were evicted (`writer` None): each is
    /// invalidated for the clients that may cache it, and queued for the BCAST clients of its
    /// prefixes (sent by [`Tracking::flush`]).
    pub fn invalidate<'a>(&self, writer: Option<u64>, keys: impl Iterator<Item = &'a [u8]>) {
        let mut inner = self.inner();
        for k in keys {
            self.invalidate_key(&mut inner, writer, k, true);
        }
    }

    fn invalidate_key(&self, inner: &mut Inner, writer: Option<u64>, key: &[u8], bcast: bool) {
        if bcast && !inner.prefixes.is_empty() {
            for (p, state) in inner.prefixes.iter_mut() {
                if key.starts_with(p) {
                    state.keys.insert(Bytes::copy_from_slice(key), writer);
                    inner.pending = true;
                }
            }
        }
        let Some(ids) = inner.keys.remove(key) else {
            return;
        };
        inner.items -= ids.len();
        let body = keys_body([key].into_iter(), 1);
        for id in ids {
            let Some(c) = inner.clients.get(&id) else {
                continue;
            };
            if c.options.bcast || (c.options.noloop && writer == Some(id)) {
                continue;
            }
            self.send(inner, id, &body);
        }
    }

    /// Sends the BCAST clients the keys written under their prefixes since the last flush: one array
    /// a prefix (a NOLOOP client's without the keys it wrote itself).
    pub fn flush(&self) {
        let mut inner = self.inner();
        if !inner.pending {
            return;
        }
        inner.pending = false;
        let mut sends = Vec::new();
        for state in inner.prefixes.values_mut() {
            if state.keys.is_empty() {
                continue;
            }
            let keys = std::mem::take(&mut state.keys);
            let all = keys_body(keys.keys().map(|k| &k[..]), keys.len());
            for &id in &state.clients {
                sends.push((id, all.clone(), keys.clone()));
            }
        }
        for (id, all, keys) in sends {
            let noloop = inner.clients.get(&id).is_some_and(|c| c.options.noloop);
            if !noloop {
                self.send(&mut inner, id, &all);
                continue;
            }
            let mine = keys.iter().filter(|(_, w)| **w != Some(id));
            let n = mine.clone().count();
            if n > 0 {
                let body = keys_body(mine.map(|(k, _)| &k[..]), n);
                self.send(&mut inner, id, &body);
            }
        }
    }

    /// FLUSHALL, FLUSHDB: every tracking client is told every key is invalid (a null), and the table
    /// is emptied.
    pub fn flush_all(&self) {
        let mut inner = self.inner();
        let ids: Vec<u64> = inner.clients.keys().copied().collect();
        for id in ids {
            let resp3 = self.find(id).is_some_and(|t| t.resp3);
            let null: &[u8] = if resp3 { b"_\r\n" } else { b"$-1\r\n" };
            self.send(&mut inner, id, null);
        }
        inner.keys.clear();
        inner.items = 0;
    }

    fn find(&self, id: u64) -> Option<Target> {
        self.lookup.get().and_then(|l| l(id))
    }

    /// Redis's `sendTrackingMessage`: `body` (the keys' array, or a null) to client `id`, or to the
    /// client it redirects to.
    fn send(&self, inner: &mut Inner, id: u64, body: &[u8]) {
        let Some(c) = inner.clients.get_mut(&id) else {
            return;
        };
        let (target, redirected) = if c.redirect != 0 {
            match self.find(c.redirect) {
                Some(t) => (t, true),
                None => {
                    c.broken = true;
                    if let Some(me) = self.find(id).filter(|t| t.resp3) {
                        let mut f = BytesMut::from(&b">2\r\n$21\r\ntracking-redir-broken\r\n"[..]);
                        f.put_slice(format!(":{}\r\n", c.redirect).as_bytes());
                        me.pushes.push(Message::Push(f.freeze()), &UNLIMITED);
                    }
                    return;
                }
            }
        } else {
            match self.find(id) {
                Some(t) => (t, false),
                None => return,
            }
        };
        let head: &[u8] = if target.resp3 {
            b">2\r\n$10\r\ninvalidate\r\n"
        } else if redirected && self.pubsub.counts(c.redirect) != [0, 0, 0] {
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
        } else {
            return;
        };
        let mut f = BytesMut::with_capacity(head.len() + body.len());
        f.put_slice(head);
        f.put_slice(body);
        target.pushes.push(Message::Push(f.freeze()), &UNLIMITED);
    }

    /// Redis's `trackingLimitUsedSlots`: past `tracking-table-max-keys`, keys are dropped from the
    /// table, their clients told as if they changed.
    fn limit(&self, inner: &mut Inner) {
        let max = self.max_keys() as usize;
        if max == 0 {
            return;
        }
        while inner.keys.len() > max {
            let Some(k) = inner.keys.keys().next().cloned() else {
                break;
            };
            self.invalidate_key(inner, None, &k, false);
        }
    }
}

/// An array of bulk strings, `n` of them.
fn keys_body<'a>(keys: impl Iterator<Item = &'a [u8]>, n: usize) -> Bytes {
    let mut b = BytesMut::new();
    b.put_slice(format!("*{n}\r\n").as_bytes());
    for k in keys {
        b.put_slice(format!("${}\r\n", k.len()).as_bytes());
        b.put_slice(k);
        b.put_slice(b"\r\n");
    }
    b.freeze()
}

/// The store's expired and evicted keys, for both keyspace events and tracking.
pub struct GoneFanout<A: KeyGone> {
    pub events: Arc<A>,
    pub tracking: Arc<Tracking>,
}

impl<A: KeyGone> KeyGone for GoneFanout<A> {
    fn gone(&self, why: Gone, key: &[u8]) {
        self.events.gone(why, key);
        if self.tracking.active() {
            self.tracking.invalidate(None, std::iter::once(key));
            self.tracking.flush();
        }
    }
}
