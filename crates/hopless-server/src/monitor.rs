//! MONITOR: the connections that watch every command the server runs, and the line each is sent, as
//! Redis writes it: `+<seconds>.<microseconds> [0 <client address>] "command" "arg"...`, each argument
//! quoted and escaped as Redis's `sdscatrepr` escapes it. A line takes the pub/sub road to its
//! connection (an outbox, written by that connection's own event loop), so a monitor on one loop sees
//! the commands of every loop, in the order each loop ran them.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use crate::pubsub::{Message, Outbox, OutputLimit};
use crate::redact::redacted;

/// The server's monitors, by client id.
#[derive(Default)]
pub struct Monitors {
    list: Mutex<Vec<(u64, Arc<Outbox>)>>,
    /// Whether there is any: every command checks this one load before it formats anything.
    any: AtomicBool,
}

impl Monitors {
    fn list(&self) -> MutexGuard<'_, Vec<(u64, Arc<Outbox>)>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether any connection monitors.
    pub fn active(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// Makes client `id` a monitor; its lines go to `outbox`.
    pub fn add(&self, id: u64, outbox: Arc<Outbox>) {
        let mut list = self.list();
        if !list.iter().any(|(i, _)| *i == id) {
            list.push((id, outbox));
        }
        self.any.store(true, Ordering::Relaxed);
    }

    /// Client `id` monitors no more (RESET, or it went).
    pub fn remove(&self, id: u64) {
        let mut list = self.list();
        list.retain(|(i, _)| *i != id);
        self.any.store(!list.is_empty(), Ordering::Relaxed);
    }

    /// Sends every monitor the line for a command `args` that client `addr` ran; passwords (AUTH's,
    /// HELLO's AUTH) read `(redacted)`, as Redis shows them.
    pub fn feed(&self, client: &str, args: &[Bytes]) {
        let shown = redacted(args);
        let line = Bytes::from(line(now_micros(), client, shown.as_deref().unwrap_or(args)));
        // A monitor's output is a normal client's: Redis's `client-output-buffer-limit normal` is
        // unlimited by default, and so is this.
        let unlimited = OutputLimit {
            hard: 0,
            soft: 0,
            soft_secs: 0,
        };
        for (_, outbox) in self.list().iter() {
            outbox.push(Message::Monitor(line.clone()), &unlimited);
        }
    }
}

fn now_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// One MONITOR line (without the `+` and CRLF of its frame).
pub fn line(micros: u128, client: &str, args: &[Bytes]) -> String {
    let mut s = format!("{}.{:06} [0 {client}]", micros / 1_000_000, micros % 1_000_000);
    for a in args {
        s.push(' ');
        repr(&mut s, a);
    }
    s
}

/// `a` quoted and escaped as Redis's `sdscatrepr`: `\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b`, printable
/// ASCII as is, any other byte as `\xhh`.
fn repr(s: &mut String, a: &[u8]) {
    s.push('"');
    for &b in a {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x07 => s.push_str("\\a"),
            0x08 => s.push_str("\\b"),
            b' '..=b'~' => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_redis_writes_them() {
        let addr = "127.0.0.1:6000";
        let args = [
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"a \"b\"\\\n\r\t\x07\x08\x00\xff"),
        ];
        assert_eq!(
            line(1_339_518_083_107_412, addr, &args),
            r#"1339518083.107412 [0 127.0.0.1:6000] "SET" "k" "a \"b\"\\\n\r\t\a\b\x00\xff""#
        );
        assert_eq!(line(5, addr, &args[..1]), r#"0.000005 [0 127.0.0.1:6000] "SET""#);
    }
}
