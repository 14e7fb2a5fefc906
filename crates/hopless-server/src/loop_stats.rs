//! The request path's counters (INFO commandstats, `total_commands_processed`, the network byte totals):
//! one row per event loop, each written only by its own loop's thread, so a count is a plain load and
//! store (no locked instruction on the request path; a locked add costs more than the rest of a count's
//! work). Readers sum the rows; a reader on another thread may see a row a few counts behind.
//!
//! CONFIG RESETSTAT does not write the rows (a store from another thread could be lost against the
//! owner's): it takes a snapshot of the sums, and readers report the counts since it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A count that only one thread adds to.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the row's own loop calls this (a plain load and store, not a locked add).
    #[inline]
    pub fn add(&self, n: u64) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v.wrapping_add(n), Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One command's counts on one loop.
#[derive(Default)]
pub struct CmdStat {
    pub calls: Counter,
    /// Nanoseconds: a command of a fraction of a microsecond adds what it took, not zero (INFO shows
    /// the sum in microseconds).
    pub nanos: Counter,
    pub failed: Counter,
    pub rejected: Counter,
}

/// One command's counts, summed over the loops.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub struct CmdTotals {
    pub calls: u64,
    pub nanos: u64,
    pub failed: u64,
    pub rejected: u64,
}

impl CmdTotals {
    fn since(self, base: CmdTotals) -> CmdTotals {
        CmdTotals {
            calls: self.calls.wrapping_sub(base.calls),
            nanos: self.nanos.wrapping_sub(base.nanos),
            failed: self.failed.wrapping_sub(base.failed),
            rejected: self.rejected.wrapping_sub(base.rejected),
        }
    }
}

/// One loop's row, on cache lines of its own (two lines: adjacent-line prefetch pairs them).
#[repr(align(128))]
pub struct LoopStats {
    pub commands: Box<[CmdStat]>,
    pub processed: Counter,
    pub net_input: Counter,
    pub net_output: Counter,
    /// Writes that changed the dataset (the snapshot's `rdb_changes_since_last_save` and save points).
    pub changes: Counter,
}

pub struct Stats {
    loops: Box<[LoopStats]>,
    /// The command totals at the last CONFIG RESETSTAT (empty: none yet).
    base: Mutex<Vec<CmdTotals>>,
}

impl Stats {
    /// Rows for `loops` loops of `commands` commands each.
    pub fn new(loops: usize, commands: usize) -> Self {
        Stats {
            loops: (0..loops.max(1))
                .map(|_| LoopStats {
                    commands: (0..commands).map(|_| CmdStat::default()).collect(),
                    processed: Counter::default(),
                    net_input: Counter::default(),
                    net_output: Counter::default(),
                    changes: Counter::default(),
                })
                .collect(),
            base: Mutex::new(Vec::new()),
        }
    }

    /// Loop `loop_index`'s row: to be written only from that loop's thread.
    #[inline]
    pub fn of(&self, loop_index: usize) -> &LoopStats {
        &self.loops[loop_index % self.loops.len()]
    }

    /// Writes that changed the dataset since the start, summed over the loops.
    pub fn changes(&self) -> u64 {
        self.loops.iter().map(|l| l.changes.get()).sum()
    }

    /// Command `i`'s counts since the last reset, summed over the loops.
    pub fn command(&self, i: usize) -> CmdTotals {
        let now = self.raw(i);
        let base = self.base.lock().unwrap_or_else(|e| e.into_inner());
        now.since(base.get(i).copied().unwrap_or_default())
    }

    fn raw(&self, i: usize) -> CmdTotals {
        let mut t = CmdTotals::default();
        for l in self.loops.iter() {
            if let Some(s) = l.commands.get(i) {
                t.calls += s.calls.get();
                t.nanos += s.nanos.get();
                t.failed += s.failed.get();
                t.rejected += s.rejected.get();
            }
        }
        t
    }

    /// CONFIG RESETSTAT: every command's counts start again from zero.
    pub fn reset_commands(&self) {
        let commands = self.loops[0].commands.len();
        let now: Vec<CmdTotals> = (0..commands).map(|i| self.raw(i)).collect();
        *self.base.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }

    pub fn processed(&self) -> u64 {
        self.loops.iter().map(|l| l.processed.get()).sum()
    }

    pub fn net_input(&self) -> u64 {
        self.loops.iter().map(|l| l.net_input.get()).sum()
    }

    pub fn net_output(&self) -> u64 {
        self.loops.iter().map(|l| l.net_output.get()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sum_over_loops_and_restart_from_a_reset() {
        let s = Stats::new(3, 4);
        s.of(0).commands[2].calls.add(5);
        s.of(2).commands[2].calls.add(7);
        s.of(1).commands[2].nanos.add(40);
        s.of(4).processed.add(3); // loop 4 of 3: the row of loop 1
        assert_eq!(s.command(2).calls, 12);
        assert_eq!(s.command(2).nanos, 40);
        assert_eq!(s.processed(), 3);
        s.reset_commands();
        assert_eq!(s.command(2), CmdTotals::default());
        s.of(1).commands[2].failed.add(1);
        assert_eq!(s.command(2).failed, 1);
        assert_eq!(s.command(2).calls, 0);
    }

    /// Each loop adds from its own thread; a reader on another thread sums them, with no count lost.
    #[test]
    fn loops_counting_at_once_lose_nothing() {
        let s = std::sync::Arc::new(Stats::new(4, 1));
        let threads: Vec<_> = (0..4)
            .map(|l| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        s.of(l).commands[0].calls.add(1);
                        s.of(l).processed.add(1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(s.command(0).calls, 400_000);
        assert_eq!(s.processed(), 400_000);
    }
}
