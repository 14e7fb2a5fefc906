//! The grid: the simplest allocation loop there is, over block sizes and working sets. `n` blocks of one
//! size allocated, then the older half freed oldest first and the newer half newest first, repeated; the
//! blocks are never written, so the figure is the allocator's alone (ns per malloc+free pair). Sizes 16,
//! 32, 64, 256 and 1024 B; `n` = 1, 8, 25, 100, 128, 400, 1 600 and 10 000 live blocks: from a single
//! pair, through a thread cache's capacity, to working sets of thousands of blocks of one class.
//!
//! The same cells run with threads: `tK`, K threads each running the loop on its own blocks at once (a
//! gain for one thread must not be paid for across threads), and `pc`, one thread allocating rounds of
//! `n` blocks and a second thread freeing them in the same order (every free a remote one), handed over
//! at least 1 024 blocks at a time.
//!
//! A cell's name is `grid-SIZE-N` (one thread), `grid-SIZE-N-tK` or `grid-SIZE-N-pc`.

use std::hint::black_box;
use std::sync::mpsc::sync_channel;
use std::sync::Barrier;
use std::time::Instant;

use crate::alloc::blocks::Blocks;

/// The grid's block sizes, in bytes.
pub const GRID_SIZES: [usize; 5] = [16, 32, 64, 256, 1024];

/// The grid's working sets: live blocks per round.
pub const GRID_LIVE: [usize; 8] = [1, 8, 25, 100, 128, 400, 1600, 10_000];

/// Who runs a cell's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridThreads {
    /// This many threads, each on its own blocks, at once.
    Each(usize),
    /// One thread allocates each round's blocks, another frees them.
    ProducerConsumer,
}

impl std::str::FromStr for GridThreads {
    type Err = String;

    /// `1`, `2`, `4` (threads each running the loop) or `pc` (producer and consumer).
    fn from_str(s: &str) -> Result<GridThreads, String> {
        match s {
            "pc" => Ok(GridThreads::ProducerConsumer),
            _ => match s.parse::<usize>() {
                Ok(k) if (1..=64).contains(&k) => Ok(GridThreads::Each(k)),
                _ => Err(format!("bad grid threads {s:?}: a count of 1 to 64, or pc")),
            },
        }
    }
}

/// One cell of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridCell {
    pub size: usize,
    pub live: usize,
    pub threads: GridThreads,
}

impl GridCell {
    /// The cell a workload name stands for, if it is one (`grid-SIZE-N`, `-tK`, `-pc`).
    pub fn parse(name: &str) -> Option<GridCell> {
        let mut parts = name.strip_prefix("grid-")?.split('-');
        let size: usize = parts.next()?.parse().ok()?;
        let live: usize = parts.next()?.parse().ok()?;
        let threads = match parts.next() {
            None => GridThreads::Each(1),
            Some("pc") => GridThreads::ProducerConsumer,
            Some(t) => GridThreads::Each(t.strip_prefix('t')?.parse().ok().filter(|&k| k > 1)?),
        };
        if parts.next().is_some() || !(1..=1 << 20).contains(&size) || !(1..=1 << 20).contains(&live) {
            return None;
        }
        Some(GridCell { size, live, threads })
    }

    /// The cell's workload name.
    pub fn name(&self) -> String {
        let base = format!("grid-{}-{}", self.size, self.live);
        match self.threads {
            GridThreads::Each(1) => base,
            GridThreads::Each(k) => format!("{base}-t{k}"),
            GridThreads::ProducerConsumer => format!("{base}-pc"),
        }
    }
}

/// Every cell's workload name for the given thread modes: mode by mode, then size by size, then `n`.
/// The names live as long as the program (a bench asks for them once).
pub fn grid_names(modes: &[GridThreads]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for &threads in modes {
        for size in GRID_SIZES {
            for live in GRID_LIVE {
                let name = GridCell { size, live, threads }.name();
                out.push(&*Box::leak(name.into_boxed_str()));
            }
        }
    }
    out
}

/// One measured run of `cell`, about `pairs` malloc+free pairs per thread: ns per pair, by the wall
/// clock (with K threads each running the loop, the time for each thread's `pairs`: the same as one
/// thread's where the allocator scales and the machine has the cores).
pub fn run_cell<B: Blocks>(b: &B, cell: GridCell, pairs: usize) -> f64 {
    let rounds = pairs.div_ceil(cell.live).max(1);
    let ns = match cell.threads {
        GridThreads::Each(1) => {
            let mut live = vec![std::ptr::null_mut(); cell.live];
            let t = Instant::now();
            rounds_of(b, cell.size, &mut live, rounds);
            t.elapsed().as_nanos() as f64
        }
        GridThreads::Each(k) => each(b, cell, k, rounds),
        GridThreads::ProducerConsumer => producer_consumer(b, cell, rounds),
    };
    ns / (rounds * cell.live) as f64
}

/// `rounds` rounds of the loop on the blocks in `live` (its length is `n`).
#[inline(never)]
fn rounds_of<B: Blocks>(b: &B, bytes: usize, live: &mut [*mut u8], rounds: usize) {
    let (request, size) = (B::request(bytes), B::size(bytes));
    for _ in 0..rounds {
        for slot in live.iter_mut() {
            // SAFETY: a grid size, not zero.
            *slot = black_box(unsafe { b.alloc(request) });
        }
        free_fifo_lifo(b, live, size);
    }
}

/// Frees `live`'s blocks: the older half oldest first, then the newer half newest first.
#[inline(always)]
fn free_fifo_lifo<B: Blocks>(b: &B, live: &[*mut u8], size: B::Size) {
    let (older, newer) = live.split_at(live.len() / 2);
    for &p in older.iter().chain(newer.iter().rev()) {
        // SAFETY: allocated by the caller's round with this size, freed once.
        unsafe { b.free(p, size) };
    }
}

/// `k` threads, each running `rounds` rounds on blocks of its own, started together: the wall time
/// from the start until the last thread's last round. Each thread first runs one round untimed, as the
/// one-thread cell's thread ran the warm-up before it, and the clock stops before the threads exit: the
/// cell times pairs while `k` threads run at once, not a thread's start or exit (the thread-churn rows
/// of `scripts/bench/reliability.py` time those).
fn each<B: Blocks>(b: &B, cell: GridCell, k: usize, rounds: usize) -> f64 {
    let (start, end) = (Barrier::new(k + 1), Barrier::new(k + 1));
    std::thread::scope(|s| {
        for _ in 0..k {
            let (start, end) = (&start, &end);
            s.spawn(move || {
                let mut live = vec![std::ptr::null_mut(); cell.live];
                rounds_of(b, cell.size, &mut live, 1);
                start.wait();
                rounds_of(b, cell.size, &mut live, rounds);
                end.wait();
            });
        }
        start.wait();
        let t = Instant::now();
        end.wait();
        t.elapsed().as_nanos() as f64
    })
}

/// Hand-offs in flight between the producer and the consumer.
const IN_FLIGHT: usize = 4;

/// Blocks a hand-off carries at least: whole rounds of `n`, so that a small `n` does not time the
/// channel instead of the allocator.
const HANDOFF_BLOCKS: usize = 1024;

/// One thread allocates rounds of `n` blocks into a buffer and hands it to a second thread, which frees
/// each round's blocks in the loop's order and hands the buffer back (the buffers go round, so the
/// harness allocates nothing while timed). A buffer holds `ceil(1024 / n)` rounds.
fn producer_consumer<B: Blocks>(b: &B, cell: GridCell, rounds: usize) -> f64 {
    /// Rounds of blocks, as addresses (pointers are not `Send`).
    type Batch = Vec<usize>;
    let per_batch = HANDOFF_BLOCKS.div_ceil(cell.live);
    let batches = rounds.div_ceil(per_batch);
    let (full_tx, full_rx) = sync_channel::<Batch>(IN_FLIGHT);
    let (empty_tx, empty_rx) = sync_channel::<Batch>(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        empty_tx
            .send(vec![0; per_batch * cell.live])
            .expect("the channel is open");
    }
    let t = Instant::now();
    let end = std::thread::scope(|s| {
        let consumer = s.spawn(move || {
            let size = B::size(cell.size);
            for batch in full_rx.iter() {
                for round in batch.chunks_exact(cell.live) {
                    let (older, newer) = round.split_at(round.len() / 2);
                    for &p in older.iter().chain(newer.iter().rev()) {
                        // SAFETY: the producer allocated it with this size and gave it up to this thread.
                        unsafe { b.free(p as *mut u8, size) };
                    }
                }
                if empty_tx.send(batch).is_err() {
                    break;
                }
            }
            // Before the thread's exit, which the cell does not time.
            Instant::now()
        });
        let request = B::request(cell.size);
        for _ in 0..batches {
            let mut batch = empty_rx.recv().expect("the consumer hands every buffer back");
            for slot in batch.iter_mut() {
                // SAFETY: a grid size, not zero.
                *slot = black_box(unsafe { b.alloc(request) }) as usize;
            }
            full_tx
                .send(batch)
                .expect("the consumer runs until the producer ends");
        }
        drop(full_tx);
        consumer.join().expect("the consumer does not panic")
    });
    (end - t).as_nanos() as f64 * rounds as f64 / (batches * per_batch) as f64
}

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn names_round_trip_and_others_are_not_cells() {
        for modes in [
            vec![GridThreads::Each(1)],
            vec![
                GridThreads::Each(2),
                GridThreads::Each(4),
                GridThreads::ProducerConsumer,
            ],
        ] {
            let names = grid_names(&modes);
            assert_eq!(names.len(), modes.len() * GRID_SIZES.len() * GRID_LIVE.len());
            for n in names {
                assert_eq!(GridCell::parse(n).map(|c| c.name()).as_deref(), Some(n));
            }
        }
        for bad in [
            "grid-16",
            "grid-16-0",
            "grid-0-8",
            "grid-16-8-t1",
            "grid-16-8-t",
            "grid-16-8-x2",
            "grid-16-8-pc-1",
            "fifo-lifo-400",
        ] {
            assert_eq!(GridCell::parse(bad), None, "{bad}");
        }
        assert_eq!("pc".parse(), Ok(GridThreads::ProducerConsumer));
        assert_eq!("4".parse(), Ok(GridThreads::Each(4)));
        assert!("0".parse::<GridThreads>().is_err());
    }

    /// The system allocator, counting the blocks it has out and the bytes asked for.
    #[derive(Default)]
    struct Counting {
        out: AtomicIsize,
        bytes: AtomicUsize,
    }

    // SAFETY: every call goes to `System` unchanged; the counters are only counted.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            self.out.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(layout.size(), Ordering::Relaxed);
            // SAFETY: the caller's layout, passed on.
            unsafe { GlobalAlloc::alloc(&System, layout) }
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
            self.out.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: `p` came from `alloc` with this layout, passed on.
            unsafe { GlobalAlloc::dealloc(&System, p, layout) }
        }
    }

    #[test]
    fn every_mode_frees_all_it_allocates_and_allocates_what_it_is_asked() {
        for (name, pairs) in [
            ("grid-16-1", 100),
            ("grid-64-25", 2_000),
            ("grid-1024-400-t2", 2_000),
            ("grid-32-100-pc", 2_000),
            ("grid-16-1-pc", 3_000),
        ] {
            let cell = GridCell::parse(name).unwrap();
            let a = Counting::default();
            let ns = run_cell(&a, cell, pairs);
            assert!(ns.is_finite() && ns > 0.0, "{name}: {ns}");
            assert_eq!(a.out.load(Ordering::Relaxed), 0, "{name}: blocks left out");
            let rounds = pairs.div_ceil(cell.live);
            let blocks = match cell.threads {
                GridThreads::Each(1) => rounds * cell.live,
                // And each thread's untimed first round.
                GridThreads::Each(k) => (rounds + 1) * cell.live * k,
                // Whole hand-offs of ceil(1024 / n) rounds.
                GridThreads::ProducerConsumer => {
                    let per = HANDOFF_BLOCKS.div_ceil(cell.live);
                    rounds.div_ceil(per) * per * cell.live
                }
            };
            assert_eq!(a.bytes.load(Ordering::Relaxed), blocks * cell.size, "{name}");
        }
    }
}
