//! Pub/sub's registry: which connections listen to which channels and patterns ([`PubSub`], one for the
//! server, shared by every event loop), and each connection's own subscriptions ([`ClientSubs`]).
//!
//! PUBLISH, on whichever loop reads it, looks the channel up and matches every pattern (Redis's glob)
//! under the registry's lock, and queues the message in each listener's [`Outbox`]; the listener's
//! connection, on its own loop, is woken and writes what is queued. One lock for the whole registry
//! puts all publishes in one order, so each publisher's messages reach every subscriber in the order it
//! published them. A connection's subscriptions leave the registry when it unsubscribes or its
//! [`ClientSubs`] is dropped (it disconnects, or RESET): a client that is gone leaves nothing behind.

mod limit;
mod outbox;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use hopless_kv::store::glob_match;
use tracing::warn;

pub use self::limit::{OutputLimit, OutputLimits};
pub use self::outbox::{Message, Outbox, Published, Pushed};

/// A channel, a pattern of channels, or a shard channel (SSUBSCRIBE's, a namespace of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

const KINDS: [Kind; 3] = [Kind::Channel, Kind::Pattern, Kind::Shard];

/// One subscribed connection as publishers and CLIENT LIST see it.
pub struct Subscriber {
    pub id: u64,
    pub outbox: Outbox,
    /// Closes the connection; called once, by the publisher whose message takes it past the limit.
    disconnect: Box<dyn Fn() + Send + Sync>,
    /// How many channels, patterns and shard channels it listens to (CLIENT LIST's `sub`, `psub` and
    /// `ssub`).
    counts: [AtomicUsize; 3],
}

/// The subscribers of one channel or pattern, by client id.
type Listeners = HashMap<u64, Arc<Subscriber>>;

#[derive(Default)]
struct Lists {
    /// Channel, pattern or shard channel → its subscribers (index: [`Kind`]). A name with no
    /// subscriber left is removed.
    names: [HashMap<Bytes, Listeners>; 3],
    /// Every connection with a [`ClientSubs`], by client id.
    clients: HashMap<u64, Arc<Subscriber>>,
}

/// The server's pub/sub registry.
#[derive(Default)]
pub struct PubSub {
    lists: Mutex<Lists>,
    limits: Mutex<OutputLimits>,
    /// Subscribers disconnected at `client-output-buffer-limit pubsub`.
    pub overflow_disconnections: AtomicU64,
}

impl PubSub {
    fn lists(&self) -> MutexGuard<'_, Lists> {
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `payload` for every subscriber of `channel` and of each pattern matching it; the number
    /// of receivers (a subscriber counted once for the channel and once for each matching pattern), as
    /// PUBLISH replies. A subscriber that this takes past its output limit is disconnected (and still
    /// counted, as in Redis).
    pub fn publish(&self, channel: &Bytes, payload: &Bytes) -> usize {
        let limit = self.limits().pubsub;
        let lists = self.lists();
        let mut receivers = 0;
        if let Some(subs) = lists.names[Kind::Channel as usize].get(&channel[..]) {
            for s in subs.values() {
                receivers += self.deliver(s, false, None, channel, payload, &limit);
            }
        }
        for (pattern, subs) in &lists.names[Kind::Pattern as usize] {
            if glob_match(pattern, channel) {
                for s in subs.values() {
                    receivers += self.deliver(s, false, Some(pattern), channel, payload, &limit);
                }
            }
        }
        receivers
    }

    /// SPUBLISH: queues `payload` for every subscriber of shard channel `channel` (no pattern reaches
    /// a shard channel); the number of receivers.
    pub fn publish_shard(&self, channel: &Bytes, payload: &Bytes) -> usize {
        let limit = self.limits().pubsub;
        let lists = self.lists();
        let Some(subs) = lists.names[Kind::Shard as usize].get(&channel[..]) else {
            return 0;
        };
        subs.values()
            .map(|s| self.deliver(s, true, None, channel, payload, &limit))
            .sum()
    }

    /// Queues one message for `sub` (disconnecting it past its output limit); 1, as it counts as a
    /// receiver either way.
    fn deliver(
        &self,
        sub: &Subscriber,
        shard: bool,
        pattern: Option<&Bytes>,
        channel: &Bytes,
        payload: &Bytes,
        limit: &OutputLimit,
    ) -> usize {
        let m = Message::from(Published {
            shard,
            pattern: pattern.cloned(),
            channel: channel.clone(),
            payload: payload.clone(),
        });
        if sub.outbox.push(m, limit) == Pushed::Overflowed {
            self.overflow_disconnections.fetch_add(1, Ordering::Relaxed);
            warn!(
                id = sub.id,
                "client scheduled to be closed ASAP for overcoming of output buffer limits (pubsub)"
            );
            (sub.disconnect)();
        }
        1
    }

    /// The channels with a subscriber, those matching `pattern` if given (PUBSUB CHANNELS).
    pub fn channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let lists = self.lists();
        lists.names[kind as usize]
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c)))
            .cloned()
            .collect()
    }

    /// How many connections subscribe to `channel`, patterns aside (PUBSUB NUMSUB).
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        self.lists().names[kind as usize]
            .get(channel)
            .map_or(0, |s| s.len())
    }

    /// How many channels, or distinct patterns, have a subscriber (INFO's `pubsub_channels` and
    /// `pubsub_patterns`; PUBSUB NUMPAT).
    pub fn names(&self, kind: Kind) -> usize {
        self.lists().names[kind as usize].len()
    }

    /// A client's channel, pattern and shard channel counts (CLIENT LIST's `sub`, `psub` and `ssub`);
    /// zero for one that subscribes to nothing.
    pub fn counts(&self, id: u64) -> [usize; 3] {
        self.lists()
            .clients
            .get(&id)
            .map_or([0; 3], |s| s.counts.each_ref().map(|c| c.load(Ordering::Relaxed)))
    }

    pub fn limits(&self) -> OutputLimits {
        *self.limits.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies CONFIG SET's `client-output-buffer-limit` text; Redis's reason when it is wrong (nothing
    /// changes then).
    pub fn set_limits(&self, text: &str) -> Result<(), &'static str> {
        let mut l = self.limits.lock().unwrap_or_else(|e| e.into_inner());
        *l = l.with(text)?;
        Ok(())
    }
}

/// One connection's subscriptions: while it has any, the connection is in subscribed mode. Dropping
/// it takes them all out of the registry.
pub struct ClientSubs {
    registry: Arc<PubSub>,
    me: Arc<Subscriber>,
    /// Its channels, patterns and shard channels (index: [`Kind`]), sharing their bytes with the
    /// registry's keys.
    names: [HashSet<Bytes>; 3],
}

impl ClientSubs {
    /// Registers client `id` as a subscriber of nothing yet; `disconnect` closes its connection.
    pub fn new(registry: Arc<PubSub>, id: u64, disconnect: Box<dyn Fn() + Send + Sync>) -> Self {
        let me = Arc::new(Subscriber {
            id,
            outbox: Outbox::default(),
            disconnect,
            counts: Default::default(),
        });
        registry.lists().clients.insert(id, me.clone());
        ClientSubs {
            registry,
            me,
            names: Default::default(),
        }
    }

    /// Subscribes to a channel or pattern (again: no change).
    pub fn subscribe(&mut self, kind: Kind, name: &[u8]) {
        if self.names[kind as usize].contains(name) {
            return;
        }
        let name = Bytes::copy_from_slice(name);
        let mut lists = self.registry.lists();
        lists.names[kind as usize]
            .entry(name.clone())
            .or_default()
            .insert(self.me.id, self.me.clone());
        drop(lists);
        self.names[kind as usize].insert(name);
        self.count_changed(kind);
    }

    /// Unsubscribes from a channel or pattern (one it does not have: no change).
    pub fn unsubscribe(&mut self, kind: Kind, name: &[u8]) {
        if self.names[kind as usize].remove(name) {
            remove(&mut self.registry.lists(), kind, name, self.me.id);
            self.count_changed(kind);
        }
    }

    fn count_changed(&self, kind: Kind) {
        self.me.counts[kind as usize].store(self.names[kind as usize].len(), Ordering::Relaxed);
    }

    /// Its channels and patterns together, as (P)(UN)SUBSCRIBE's replies count them.
    pub fn count(&self) -> usize {
        self.names[0].len() + self.names[1].len()
    }

    /// Its shard channels, as S(UN)SUBSCRIBE's replies count them.
    pub fn shard_count(&self) -> usize {
        self.names[2].len()
    }

    /// Every subscription: the connection is in subscribed mode while it has one.
    pub fn total(&self) -> usize {
        self.count() + self.shard_count()
    }

    /// Its channels, or its patterns.
    pub fn names(&self, kind: Kind) -> Vec<Bytes> {
        self.names[kind as usize].iter().cloned().collect()
    }

    pub fn outbox(&self) -> &Outbox {
        &self.me.outbox
    }
}

impl Drop for ClientSubs {
    fn drop(&mut self) {
        let mut lists = self.registry.lists();
        for kind in KINDS {
            for name in &self.names[kind as usize] {
                remove(&mut lists, kind, name, self.me.id);
            }
        }
        lists.clients.remove(&self.me.id);
    }
}

/// Resolves when messages may be waiting in `outbox` (never, for a connection without one: it
/// subscribes to nothing, or does not MONITOR): what a connection's event loop waits on beside its
/// socket.
pub async fn delivery(outbox: Option<&Outbox>) {
    match outbox {
        Some(o) => o.ready().await,
        None => std::future::pending().await,
    }
}

/// Takes client `id` off a name's subscribers, and the name off the registry when none is left.
fn remove(lists: &mut Lists, kind: Kind, name: &[u8], id: u64) {
    let map = &mut lists.names[kind as usize];
    if let Some(subs) = map.get_mut(name) {
        subs.remove(&id);
        if subs.is_empty() {
            map.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Proto, Reply};
    use std::sync::atomic::AtomicBool;

    fn client(r: &Arc<PubSub>, id: u64) -> (ClientSubs, Arc<AtomicBool>) {
        let gone = Arc::new(AtomicBool::new(false));
        let g = gone.clone();
        let subs = ClientSubs::new(r.clone(), id, Box::new(move || g.store(true, Ordering::Relaxed)));
        (subs, gone)
    }

    fn written(s: &ClientSubs) -> String {
        let mut out = Reply::new(Proto::Resp2);
        s.outbox().drain(&mut out, usize::MAX);
        String::from_utf8_lossy(&out.buf).into_owned()
    }

    #[test]
    fn publish_reaches_channels_and_patterns_and_counts_receivers() {
        let r = Arc::new(PubSub::default());
        let (mut a, _) = client(&r, 1);
        let (mut b, _) = client(&r, 2);
        a.subscribe(Kind::Channel, b"news");
        a.subscribe(Kind::Pattern, b"n*");
        a.subscribe(Kind::Pattern, b"n*");
        b.subscribe(Kind::Pattern, b"n*");
        b.subscribe(Kind::Pattern, b"x*");
        assert_eq!(a.count(), 2);
        assert_eq!(r.names(Kind::Pattern), 2);
        assert_eq!(r.counts(1), [1, 1, 0]);
        let n = r.publish(&Bytes::from_static(b"news"), &Bytes::from_static(b"hi"));
        assert_eq!(n, 3);
        assert_eq!(
            written(&a),
            "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n\
             *4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert!(written(&b).starts_with("*4\r\n$8\r\npmessage"));
        assert_eq!(r.publish(&Bytes::from_static(b"other"), &Bytes::new()), 0);
        assert_eq!(r.channels(Kind::Channel, None), vec![Bytes::from_static(b"news")]);
        assert!(r.channels(Kind::Channel, Some(b"x*")).is_empty());
    }

    #[test]
    fn unsubscribing_and_dropping_leave_nothing_behind() {
        let r = Arc::new(PubSub::default());
        let (mut a, _) = client(&r, 1);
        let (mut b, _) = client(&r, 2);
        a.subscribe(Kind::Channel, b"c");
        b.subscribe(Kind::Channel, b"c");
        b.subscribe(Kind::Pattern, b"*");
        assert_eq!(r.numsub(Kind::Channel, b"c"), 2);
        a.unsubscribe(Kind::Channel, b"c");
        a.unsubscribe(Kind::Channel, b"never");
        assert_eq!(r.numsub(Kind::Channel, b"c"), 1);
        drop(b);
        assert_eq!(r.numsub(Kind::Channel, b"c"), 0);
        assert_eq!(r.names(Kind::Channel), 0);
        assert_eq!(r.names(Kind::Pattern), 0);
        assert_eq!(r.counts(2), [0, 0, 0]);
        drop(a);
        assert!(r.lists().clients.is_empty());
    }

    #[test]
    fn a_subscriber_past_the_limit_is_disconnected_and_counted() {
        let r = Arc::new(PubSub::default());
        r.set_limits("pubsub 1kb 0 0").unwrap();
        let (mut a, gone) = client(&r, 1);
        a.subscribe(Kind::Channel, b"c");
        let big = Bytes::from(vec![0u8; 2048]);
        assert_eq!(r.publish(&Bytes::from_static(b"c"), &big), 1);
        assert!(gone.load(Ordering::Relaxed));
        assert_eq!(r.overflow_disconnections.load(Ordering::Relaxed), 1);
        assert_eq!(written(&a), "");
        // Still counted until its connection is gone, as in Redis, but nothing more is queued.
        assert_eq!(r.publish(&Bytes::from_static(b"c"), &Bytes::new()), 1);
        assert_eq!(a.outbox().bytes(), 0);
    }
}
