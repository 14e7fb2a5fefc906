//! The central heap: per class, the slabs with free blocks; below it, per segment kind, the pool of slabs
//! that belong to no class. Each class has its own lock, held only for one batch move (a refill or a
//! flush of at most a magazine); the pool lock nests inside a class lock, never the other way round.
//!
//! Memory goes back to the OS here: a class keeps at most
//! [`KEEP_EMPTY_SMALL`](class_heap::KEEP_EMPTY_SMALL) fully free slabs; the rest return to the pool's
//! dirty list, where each waits, resident, for the purge delay ([`PURGE_DELAY_MS`](pool::PURGE_DELAY_MS)).
//! A dirty slab is purged (`madvise(MADV_DONTNEED)`, with no lock held, then kept as a clean slab: zero,
//! not resident) once it has stayed on the list that long, or at once when the list is longer than its
//! cap ([`SlabPool::max_dirty`]). `trim` purges them all. A small segment whose every slab is clean sleeps: its slab
//! headers past its first page go back too (`sleep.rs`).
//!
//! # Why purges wait
//!
//! A producer/consumer program empties slabs and fills new ones all the time: each medium class cycles
//! about one slab through the pool. Purging the moment the dirty list passed a few slabs would make every
//! such cycle an `madvise` and a page fault per page when the producer carves it again: about 1 900
//! `madvise` calls and tens of thousands of context switches in a CPython run where mimalloc makes 4.
//! A slab taken again within the delay costs nothing; `get` takes the most recently emptied first.
//!
//! Waiting does not raise the pool's own peak: a dirty slab was in use a moment before, and `get` takes
//! dirty slabs before it reserves a segment, so in-use plus dirty never exceeds the pool's earlier peak in
//! use. What it can raise is the process's peak when another pool (or the large blocks, or the program's
//! other memory) grows within the delay: by at most the cap. Checks happen where the pool lock is taken
//! anyway: each `put`, each refill that took a slab from the pool (after the class lock is dropped),
//! and each large free (`Heap::free_large`); a program that stops calling into the heap keeps at most
//! the caps resident until `trim`.
//!
//! | file | what it holds |
//! |---|---|
//! | `class_heap.rs` | [`ClassHeap`]: a class's slabs under its lock, the refill, the slab a thread cache adopts; [`Checks`] |
//! | `flush.rs` | blocks and slabs coming back to a class: the flush's lock-free check, then its locked half; a slab handed over |
//! | `pool.rs` | [`SlabPool`]: the slabs of one segment kind that belong to no class (dirty and clean lists, new segments) |
//! | `purge.rs` | giving a pool's slabs back to the OS: purges in address order, the huge-page record of each segment |
//! | `sleep.rs` | segments whose every slab is clean: their slab headers back to the OS too, until `get` wakes one |

mod class_heap;
mod flush;
mod pool;
mod purge;
mod sleep;
#[cfg(test)]
pub use sleep::{SLEPT, WOKEN};

pub(crate) use class_heap::Checks;
pub use class_heap::ClassHeap;
pub use pool::SlabPool;
#[cfg(test)]
pub use purge::PURGE_BATCH;
