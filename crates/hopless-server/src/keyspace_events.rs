//! Keyspace events (Redis's `notify-keyspace-events`): which classes of events are on, and publishing
//! one. An event on key `k` named `e` goes out as the message `e` on `__keyspace@0__:k` (flag `K`) and
//! as the message `k` on `__keyevent@0__:e` (flag `E`), through the ordinary pub/sub registry, when its
//! class is on. The store tells of keys that expire or are evicted through [`KeyGone`]; the commands'
//! events are worked out in `cmd/notify.rs`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hopless_kv::{Gone, KeyGone};

use crate::pubsub::PubSub;

/// `K`: `__keyspace@0__:<key>` messages.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: `__keyevent@0__:<event>` messages.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted-set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: a key expired.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: a key was evicted.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: a read found no key (not part of `A`).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events (hopless has no modules; the flag is kept as Redis keeps it).
pub const MODULE: u32 = 1 << 13;
/// `n`: a key was created (not part of `A`).
pub const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`.
pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The classes on, and where events go.
pub struct KeyspaceEvents {
    flags: AtomicU32,
    pubsub: Arc<PubSub>,
}

impl KeyspaceEvents {
    /// None on, publishing through `pubsub`.
    pub fn new(pubsub: Arc<PubSub>) -> Self {
        KeyspaceEvents {
            flags: AtomicU32::new(0),
            pubsub,
        }
    }

    /// The registry events go through.
    pub fn pubsub(&self) -> &Arc<PubSub> {
        &self.pubsub
    }

    /// The classes on (a bit set of the constants above).
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Whether any event can go out: a class and a channel kind on both.
    pub fn active(&self) -> bool {
        let f = self.flags();
        f & (KEYSPACE | KEYEVENT) != 0 && f & !(KEYSPACE | KEYEVENT) != 0
    }

    /// Whether events of `class` go out.
    pub fn wants(&self, class: u32) -> bool {
        let f = self.flags();
        f & class != 0 && f & (KEYSPACE | KEYEVENT) != 0
    }

    /// Sets the classes from Redis's letters; false (nothing changed) for a letter it does not know.
    pub fn set(&self, text: &[u8]) -> bool {
        match parse(text) {
            Some(f) => {
                self.flags.store(f, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The classes on, as CONFIG GET shows them (Redis's `keyspaceEventsFlagsToString`).
    pub fn text(&self) -> String {
        format(self.flags())
    }

    /// Publishes event `event` of `class` on `key`, if that class is on.
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        let f = self.flags();
        if f & class == 0 {
            return;
        }
        if f & KEYSPACE != 0 {
            let channel = channel(b"__keyspace@0__:", key);
            self.pubsub
                .publish(&channel, &Bytes::copy_from_slice(event.as_bytes()));
        }
        if f & KEYEVENT != 0 {
            let channel = channel(b"__keyevent@0__:", event.as_bytes());
            self.pubsub.publish(&channel, &Bytes::copy_from_slice(key));
        }
    }
}

impl KeyGone for KeyspaceEvents {
    fn gone(&self, why: Gone, key: &[u8]) {
        match why {
            Gone::Expired => self.notify(EXPIRED, "expired", key),
            Gone::Evicted => self.notify(EVICTED, "evicted", key),
        }
    }
}

fn channel(prefix: &[u8], name: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(prefix.len() + name.len());
    b.put_slice(prefix);
    b.put_slice(name);
    b.freeze()
}

/// Redis's `keyspaceEventsStringToFlags`: None for a letter it does not know.
fn parse(text: &[u8]) -> Option<u32> {
    text.iter().try_fold(0, |f, c| {
        let bit = match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
        Some(f | bit)
    })
}

/// Redis's `keyspaceEventsFlagsToString`.
fn format(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        let classes = [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ];
        s.extend(classes.iter().filter(|(b, _)| f & b != 0).map(|(_, c)| c));
    }
    for (b, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if f & b != 0 {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_and_print_as_redis_does() {
        for (given, shown) in [
            ("", ""),
            ("KEA", "AKE"),
            ("Ex", "xE"),
            ("gK$lshzxetdn", "AK"),
            ("Kg$lshzxetd", "AK"),
            ("mE", "Em"),
            ("nK", "nK"),
            ("AAA", "A"),
        ] {
            assert_eq!(
                parse(given.as_bytes()).map(format).as_deref(),
                Some(shown),
                "{given}"
            );
        }
        assert_eq!(parse(b"Kq"), None);
        assert_eq!(parse(b"k"), None);
    }
}
