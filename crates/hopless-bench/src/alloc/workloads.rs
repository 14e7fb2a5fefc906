//! The allocator workloads, each written once, generic over where its blocks come from ([`Blocks`]) and
//! what it does to them ([`Touch`]), and run by name. Each view runs its own list of them: the in-process
//! view (`in_process.rs`) on every peer's `GlobalAlloc` with [`Bare`](super::touch::Bare) blocks; the
//! C-ABI view (`cabi.rs`) on the process's `malloc`/`free` with
//! [`TaggedWord`](super::touch::TaggedWord) blocks (the first word written when allocated and, across
//! threads, read by the thread that frees it).
//!
//! Workloads (an "op" is one allocation and its free):
//! - `pair-N`: allocate N bytes and free it at once, N in 16, 64, 256, 1024, 4096;
//! - `lifo-100`: allocate 100 blocks of 16..=256 bytes, then free them newest first;
//! - `batch-100`: 100 blocks of 64 bytes, freed in allocation order (oldest first);
//! - `random-churn`: a live set of 10 000 slots; each op frees a random slot's block and allocates a new
//!   one of a random size in 8..=4096 in its place (the sequence is fixed and the same for all);
//! - `producer-consumer`: one thread allocates 64-byte blocks and hands them over a bounded queue to a
//!   second thread that frees them (every free is a cross-thread free); the clock runs from before the
//!   two threads start to after both end;
//! - `producer-consumer-N`: one thread allocates 64-byte blocks and hands them round-robin over bounded
//!   queues to N consumer threads that free them, N = 1, 3 and 15 (2, 4 and 16 threads); the clock runs
//!   from the first allocation to the last consumer's last free;
//! - `handoff-N`: the same with the queue's cost taken out: the producer fills a buffer of 1024 fresh
//!   64-byte blocks and hands the whole buffer to the next of N consumers (1, 3, 15), which frees them
//!   all; what is left is the allocator's cross-thread path (the flush, the class lock, the refill);
//! - `all-to-all-N`: N threads (4 and 16) each put fresh 16..=256-byte blocks into random slots of one
//!   shared array of 4096, freeing the block each swaps out (allocated, N-1 times in N, by another
//!   thread); no thread knows that block's size, so only an allocator whose free needs none runs it;
//! - `fifo-lifo-N`: per size from 16 B to 4 KiB (16 sizes), N blocks (25, 100, 400, 1600) allocated and
//!   written, then the older half freed oldest first and the newer half newest first: a working set
//!   larger than a thread cache, in one thread;
//! - `mixed-sizes`: 2 000 live blocks of 16 B..32 KiB (log-uniform); each op frees a random one and
//!   allocates a new one of a random size in its place;
//! - `exchange-N`: N threads (2, 4, 16) each replace random slots of an array of 1 024 blocks of
//!   8..=1024 bytes and hand the array to the next thread every 256 replacements: a server whose
//!   requests are freed by other threads;
//! - `queue-churn`: two producers allocate 512 B..20 KiB blocks into a queue the main thread frees, while
//!   three threads churn 64 live blocks each of 600 B..70 KiB (the CPython case,
//!   `scripts/repro/cpython_queue_churn.py`: slabs emptied and needed again at once);
//! - `large-churn`: 32 live large blocks; each op frees a random one and allocates 256 KiB..8 MiB in its
//!   place, writing every page (a fixed sequence): what the allocator does with freed large memory
//!   (keeps it, gives it back and faults it in again, or maps fresh) is most of the cost;
//! - `grid-SIZE-N[-tK|-pc]`: the grid (`grid.rs`), `N` blocks of one size allocated, then the older half
//!   freed oldest first and the newer half newest first, the blocks never written; in one thread, in K
//!   threads at once, or allocated by one thread and freed by another.

mod cross_thread;
mod exchange;
mod grid;
mod single_thread;
mod working_set;

pub use grid::{grid_names, GridCell, GridThreads, GRID_LIVE, GRID_SIZES};
pub use single_thread::ChurnPlan;

use super::blocks::Blocks;
use super::touch::Touch;
use cross_thread::{all_to_all, handoff, producer_consumer, producer_consumers};
use exchange::{exchange, queue_churn};
use single_thread::{batch, churn, large_churn, lifo, pair};
use working_set::{fifo_lifo, mixed_sizes};

/// `base` ops scaled, at least one.
fn ops(base: usize, scale: f64) -> usize {
    ((base as f64 * scale) as usize).max(1)
}

/// One measured run of workload `name` (any but `all-to-all-N`, see [`run_unsized`]) on `b`, at `scale`
/// times its standard op count: nanoseconds per op.
pub fn run<B: Blocks, T: Touch>(b: &B, name: &str, scale: f64, plan: &ChurnPlan) -> f64 {
    match name {
        "pair-16" => pair::<B, T>(b, 16, ops(2_000_000, scale)),
        "pair-64" => pair::<B, T>(b, 64, ops(2_000_000, scale)),
        "pair-256" => pair::<B, T>(b, 256, ops(2_000_000, scale)),
        "pair-1024" => pair::<B, T>(b, 1024, ops(2_000_000, scale)),
        "pair-4096" => pair::<B, T>(b, 4096, ops(2_000_000, scale)),
        "lifo-100" => lifo::<B, T>(b, ops(20_000, scale)),
        "batch-100" => batch::<B, T>(b, ops(20_000, scale)),
        "random-churn" => churn::<B, T>(b, plan, ops(1_000_000, scale)),
        "producer-consumer" => producer_consumer::<B, T>(b, ops(500_000, scale)),
        "producer-consumer-1" => producer_consumers::<B, T>(b, 1, ops(500_000, scale)),
        "producer-consumer-3" => producer_consumers::<B, T>(b, 3, ops(500_000, scale)),
        "producer-consumer-15" => producer_consumers::<B, T>(b, 15, ops(500_000, scale)),
        "handoff-1" => handoff::<B, T>(b, 1, ops(2_000_000, scale)),
        "handoff-3" => handoff::<B, T>(b, 3, ops(2_000_000, scale)),
        "handoff-15" => handoff::<B, T>(b, 15, ops(2_000_000, scale)),
        "fifo-lifo-25" => fifo_lifo::<B, T>(b, 25, ops(2_000_000, scale)),
        "fifo-lifo-100" => fifo_lifo::<B, T>(b, 100, ops(2_000_000, scale)),
        "fifo-lifo-400" => fifo_lifo::<B, T>(b, 400, ops(2_000_000, scale)),
        "fifo-lifo-1600" => fifo_lifo::<B, T>(b, 1600, ops(2_000_000, scale)),
        "mixed-sizes" => mixed_sizes::<B, T>(b, ops(1_000_000, scale)),
        "exchange-2" => exchange::<B, T>(b, 2, ops(1_000_000, scale)),
        "exchange-4" => exchange::<B, T>(b, 4, ops(1_000_000, scale)),
        "exchange-16" => exchange::<B, T>(b, 16, ops(1_000_000, scale)),
        "queue-churn" => queue_churn::<B, T>(b, ops(200_000, scale)),
        "large-churn" => large_churn::<B, T>(b, ops(1_500, scale)),
        other => match GridCell::parse(other) {
            // A grid cell: its blocks are never written, whatever the view's `T`.
            Some(cell) if cell.threads == GridThreads::Each(1) => {
                grid::run_cell(b, cell, ops(2_000_000, scale))
            }
            Some(cell) => grid::run_cell(b, cell, ops(1_000_000, scale)),
            None => panic!("unknown workload {other}"),
        },
    }
}

/// [`run`], and the workloads only an allocator whose free needs no size can run (`all-to-all-N`).
pub fn run_unsized<B: Blocks<Size = ()>, T: Touch>(b: &B, name: &str, scale: f64, plan: &ChurnPlan) -> f64 {
    match name {
        "all-to-all-4" => all_to_all::<B, T>(b, 4, ops(1_000_000, scale)),
        "all-to-all-16" => all_to_all::<B, T>(b, 16, ops(1_000_000, scale)),
        _ => run::<B, T>(b, name, scale, plan),
    }
}
