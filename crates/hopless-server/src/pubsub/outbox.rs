//! A subscriber's outbox: the messages PUBLISH queued (on any event loop) for one connection and that
//! connection has not written yet, their byte count against `client-output-buffer-limit pubsub`, and the
//! wake-up that tells the connection there is something to write.
//!
//! A message's payload is shared, not copied: a 100 MB message to ten subscribers is one 100 MB buffer.
//! Its cost against the limit is what it would take in the subscriber's output, as Redis counts it.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::Notify;

use super::limit::OutputLimit;
use crate::codec::Reply;

/// One message for one subscriber: `message` (a channel it subscribed to) or `pmessage` (a pattern), a
/// line for a MONITOR client (`cmd::monitor`), or a client-side caching push, which take the same road
/// to their connection.
#[derive(Debug, Clone)]
pub enum Message {
    Published(Published),
    /// A MONITOR line: sent as a simple string (`+...`), already escaped to printable ASCII.
    Monitor(Bytes),
    /// A frame written as it is: a client-side caching invalidation (`tracking`), already in the
    /// receiving connection's protocol.
    Push(Bytes),
}

/// A published message, as one subscriber receives it.
#[derive(Debug, Clone)]
pub struct Published {
    /// A shard channel's message (SPUBLISH's, sent as `smessage`).
    pub shard: bool,
    pub pattern: Option<Bytes>,
    pub channel: Bytes,
    pub payload: Bytes,
}

impl From<Published> for Message {
    fn from(p: Published) -> Message {
        Message::Published(p)
    }
}

impl Message {
    /// About the bytes it takes written out: the three or four bulk strings and their headers.
    pub fn size(&self) -> u64 {
        match self {
            Message::Published(m) => {
                let p = m.pattern.as_ref().map_or(0, |p| p.len() + 16);
                (p + m.channel.len() + m.payload.len() + 48) as u64
            }
            Message::Monitor(line) => (line.len() + 3) as u64,
            Message::Push(frame) => frame.len() as u64,
        }
    }

    /// Writes it as Redis does: an array in RESP2, a push frame in RESP3; a MONITOR line as a simple
    /// string in both.
    pub fn write(&self, out: &mut Reply) {
        let m = match self {
            Message::Published(m) => m,
            Message::Monitor(line) => {
                out.simple(&String::from_utf8_lossy(line));
                return;
            }
            Message::Push(frame) => {
                out.buf.extend_from_slice(frame);
                return;
            }
        };
        let n = if m.pattern.is_some() { 4 } else { 3 };
        if out.resp3() {
            out.push(n);
        } else {
            out.array(n);
        }
        match &m.pattern {
            Some(p) => {
                out.bulk(b"pmessage");
                out.bulk(p);
            }
            None if m.shard => out.bulk(b"smessage"),
            None => out.bulk(b"message"),
        }
        out.bulk(&m.channel);
        out.bulk(&m.payload);
    }
}

/// What [`Outbox::push`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// This message took the outbox past its limit: it was dropped with everything queued, and the
    /// outbox is closed (the caller disconnects the subscriber).
    Overflowed,
    /// Closed by an earlier overflow: dropped.
    Closed,
}

#[derive(Default)]
struct Queue {
    messages: VecDeque<Message>,
    /// The sum of `size()` over `messages`.
    bytes: u64,
    /// Since when `bytes` has been at or over the soft limit (as of the last push).
    over_soft_since: Option<Instant>,
    closed: bool,
}

/// One subscriber's queue of unwritten messages.
#[derive(Default)]
pub struct Outbox {
    queue: Mutex<Queue>,
    ready: Notify,
}

impl Outbox {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a message and wakes the connection, unless it takes the outbox past `limit`: Redis's
    /// `checkClientOutputBufferLimits`, at `hard` bytes, or over `soft` for more than `soft_secs`.
    pub fn push(&self, m: Message, limit: &OutputLimit) -> Pushed {
        let mut q = self.queue();
        if q.closed {
            return Pushed::Closed;
        }
        let bytes = q.bytes + m.size();
        let hard = limit.hard != 0 && bytes >= limit.hard;
        let soft = if limit.soft != 0 && bytes >= limit.soft {
            let since = *q.over_soft_since.get_or_insert_with(Instant::now);
            since.elapsed().as_secs() > limit.soft_secs
        } else {
            q.over_soft_since = None;
            false
        };
        if hard || soft {
            *q = Queue {
                closed: true,
                ..Queue::default()
            };
            return Pushed::Overflowed;
        }
        q.bytes = bytes;
        q.messages.push_back(m);
        drop(q);
        self.ready.notify_one();
        Pushed::Queued
    }

    /// Writes queued messages into `out` in the order they were queued, until `out` holds `max` bytes
    /// (at least one message is written); if some are left, the connection is woken again for them.
    pub fn drain(&self, out: &mut Reply, max: usize) {
        let mut q = self.queue();
        while let Some(m) = q.messages.pop_front() {
            q.bytes -= m.size();
            m.write(out);
            if out.buf.len() >= max && !q.messages.is_empty() {
                drop(q);
                self.ready.notify_one();
                return;
            }
        }
    }

    /// Resolves when a message may have been queued since the last call (a wake-up is never lost: one
    /// that comes while nobody waits is kept for the next call).
    pub async fn ready(&self) {
        self.ready.notified().await;
    }

    /// The unwritten bytes.
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.queue().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Proto;

    fn msg(payload: usize) -> Message {
        published(payload).into()
    }

    fn published(payload: usize) -> Published {
        Published {
            shard: false,
            pattern: None,
            channel: Bytes::from_static(b"ch"),
            payload: Bytes::from(vec![b'x'; payload]),
        }
    }

    const LIMIT: OutputLimit = OutputLimit {
        hard: 1000,
        soft: 0,
        soft_secs: 0,
    };

    #[test]
    fn messages_come_out_in_order_in_either_protocol() {
        let o = Outbox::default();
        let p: Message = Published {
            pattern: Some(Bytes::from_static(b"c*")),
            ..published(1)
        }
        .into();
        assert_eq!(o.push(msg(2), &LIMIT), Pushed::Queued);
        assert_eq!(o.push(p.clone(), &LIMIT), Pushed::Queued);
        let mut out = Reply::new(Proto::Resp2);
        o.drain(&mut out, usize::MAX);
        assert_eq!(
            &out.buf[..],
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nxx\r\n\
              *4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$1\r\nx\r\n"
        );
        assert_eq!(o.bytes(), 0);
        o.push(p, &LIMIT);
        let mut out = Reply::new(Proto::Resp3);
        o.drain(&mut out, usize::MAX);
        assert!(out.buf.starts_with(b">4\r\n$8\r\npmessage\r\n"));
    }

    #[test]
    fn the_hard_limit_closes_and_frees_the_outbox() {
        let o = Outbox::default();
        assert_eq!(o.push(msg(400), &LIMIT), Pushed::Queued);
        assert_eq!(o.push(msg(400), &LIMIT), Pushed::Queued);
        assert_eq!(o.push(msg(400), &LIMIT), Pushed::Overflowed);
        assert!(o.queue().closed);
        assert_eq!(o.bytes(), 0);
        assert_eq!(o.push(msg(1), &LIMIT), Pushed::Closed);
        // A message bigger than the limit on its own overflows an empty outbox.
        assert_eq!(Outbox::default().push(msg(5000), &LIMIT), Pushed::Overflowed);
        // No limit: anything goes.
        let none = OutputLimit { hard: 0, ..LIMIT };
        assert_eq!(Outbox::default().push(msg(5000), &none), Pushed::Queued);
    }

    #[test]
    fn the_soft_limit_allows_its_seconds() {
        let soft = OutputLimit {
            hard: 0,
            soft: 100,
            soft_secs: 0,
        };
        let o = Outbox::default();
        assert_eq!(o.push(msg(100), &soft), Pushed::Queued);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(o.push(msg(1), &soft), Pushed::Overflowed);
        // Under the soft limit again before the time is up: the clock starts over.
        let long = OutputLimit {
            soft_secs: 60,
            ..soft
        };
        let o = Outbox::default();
        assert_eq!(o.push(msg(100), &long), Pushed::Queued);
        o.drain(&mut Reply::new(Proto::Resp2), usize::MAX);
        assert_eq!(o.push(msg(1), &long), Pushed::Queued);
        assert!(o.queue().over_soft_since.is_none());
    }

    #[test]
    fn a_bounded_drain_leaves_the_rest_and_a_wake_up() {
        let o = Outbox::default();
        for _ in 0..3 {
            o.push(msg(10), &LIMIT);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let woken = || {
            rt.block_on(async {
                tokio::time::timeout(std::time::Duration::from_millis(200), o.ready())
                    .await
                    .is_ok()
            })
        };
        assert!(woken(), "the pushes left a wake-up");
        assert!(!woken(), "one wake-up for any number of pushes");
        let mut out = Reply::new(Proto::Resp2);
        o.drain(&mut out, 1);
        assert_eq!(o.bytes(), 2 * msg(10).size());
        assert!(woken(), "a bounded drain leaves a wake-up for the rest");
        o.drain(&mut out, usize::MAX);
        assert!(!woken(), "nothing left: no wake-up");
    }
}
