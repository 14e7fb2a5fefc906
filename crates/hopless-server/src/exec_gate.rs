//! The gate that lets a transaction run alone: every event loop holds its own gate shared while it runs
//! one command, and EXEC holds every loop's gate exclusively while it runs its queue. No command of any
//! other client, on any loop, runs between a transaction's commands, and no reader sees part of one.
//!
//! The common path pays one uncontended read lock on a cache line its own loop alone uses (a reader
//! never shares a lock word with another loop's readers), once for a batch of requests ([`Held`]: the
//! requests one read brought from one client); EXEC pays one write lock per loop and waits for each
//! loop's batch in flight to finish (microseconds: commands never block inside, and a batch ends at
//! its client's buffered requests or 64 KiB of replies).
//!
//! One more gate stands beside the loops': the side gate ([`SideGate`]), held shared by work that
//! changes the store off the event loops (the active expiry's passes). An exclusive holder takes it too,
//! so that nothing changes a key while it holds every gate: what the append-only file records in one
//! order is then the order the changes were made in.
//!
//! Lock order, which keeps it free of deadlocks: gates in loop order, then the side gate, before any
//! other lock a command takes (the watch and blocked-client registries, then the store's shard locks). A
//! loop never takes its own gate twice: EXEC runs its queue under the exclusive hold, without the shared
//! one.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// How long a wait for a gate goes before it looks again whether a script is busy.
const BUSY_CHECK: Duration = Duration::from_millis(20);

/// One loop's gate, alone on its cache lines (two lines: adjacent-line prefetch pairs them).
#[repr(align(128))]
struct LoopGate(RwLock<()>);

pub struct ExecGate {
    loops: Box<[LoopGate]>,
    side: Arc<SideGate>,
}

/// The gate of work off the event loops that changes keys (the active expiry): held shared while it
/// works, exclusively with every loop's gate.
#[derive(Default)]
pub struct SideGate(RwLock<()>);

impl SideGate {
    /// Runs `work` under the gate held shared (it waits while an exclusive holder runs).
    pub fn shared<R>(&self, work: impl FnOnce() -> R) -> R {
        let _held = self.0.read();
        work()
    }
}

/// Held by EXEC: every loop's gate, and the side gate, written.
pub struct Exclusive<'a> {
    _held: Vec<RwLockWriteGuard<'a, ()>>,
}

impl ExecGate {
    /// A gate for `loops` event loops beside `side`, which work off the loops holds.
    pub fn with_side(loops: usize, side: Arc<SideGate>) -> Self {
        ExecGate {
            loops: (0..loops.max(1)).map(|_| LoopGate(RwLock::new(()))).collect(),
            side,
        }
    }

    /// Held by loop `loop_index` while it runs one command, unless `busy` says a script has held every
    /// gate too long (Redis's BUSY): `None` then. Waits while the gate is held otherwise.
    pub fn enter_unless(
        &self,
        loop_index: usize,
        busy: impl Fn() -> bool,
    ) -> Option<RwLockReadGuard<'_, ()>> {
        let gate = &self.loops[loop_index % self.loops.len()].0;
        if let Some(g) = gate.try_read() {
            return Some(g);
        }
        loop {
            if let Some(g) = gate.try_read_for(BUSY_CHECK) {
                return Some(g);
            }
            if busy() {
                return None;
            }
        }
    }

    /// Makes sure `held` holds loop `loop_index`'s gate, taking it unless it does already; false when
    /// `busy` says a script has held every gate too long (Redis's BUSY).
    pub fn hold<'a>(&'a self, loop_index: usize, busy: impl Fn() -> bool, held: &mut Held<'a>) -> bool {
        if held.0.is_none() {
            held.0 = self.enter_unless(loop_index, busy);
        }
        held.0.is_some()
    }

    /// Every loop's gate, in loop order (no other command runs until it is dropped), unless `busy` says a
    /// script has held every gate too long: `None` then. A writer waiting for a gate keeps new readers
    /// out of it, so a stream of commands on a loop cannot starve a transaction.
    pub fn exclusive_unless(&self, busy: impl Fn() -> bool) -> Option<Exclusive<'_>> {
        let mut held = Vec::with_capacity(self.loops.len());
        for g in self.loops.iter() {
            let guard = loop {
                if let Some(w) = g.0.try_write_for(BUSY_CHECK) {
                    break w;
                }
                if busy() {
                    return None;
                }
            };
            held.push(guard);
        }
        // Work off the loops never waits for a loop's gate, so this wait ends without a busy check.
        held.push(self.side.0.write());
        Some(Exclusive { _held: held })
    }
}

/// A loop's gate held across the commands of one batch: taken before the first command that needs it,
/// let go before a command that takes every gate (EXEC, a script: a loop never takes its own gate
/// twice) and when the batch ends, before the loop waits for anything.
#[derive(Default)]
pub struct Held<'a>(Option<RwLockReadGuard<'a, ()>>);

impl Held<'_> {
    pub fn release(&mut self) {
        self.0 = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    /// Two loops add 1 to two counters under their shared gate; an exclusive holder must always see
    /// them equal (no command half done while it holds every gate).
    #[test]
    fn an_exclusive_holder_sees_no_command_in_flight() {
        let gate = Arc::new(ExecGate::with_side(2, Arc::default()));
        let (a, b) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let workers: Vec<_> = (0..2)
            .map(|l| {
                let (gate, a, b) = (gate.clone(), a.clone(), b.clone());
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let _g = gate.enter_unless(l, || false);
                        a.fetch_add(1, Ordering::Relaxed);
                        std::hint::spin_loop();
                        b.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for _ in 0..2_000 {
            let _x = gate.exclusive_unless(|| false);
            assert_eq!(a.load(Ordering::Relaxed), b.load(Ordering::Relaxed));
        }
        for w in workers {
            w.join().unwrap();
        }
    }
}
