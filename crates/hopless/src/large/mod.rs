//! Large blocks: above 256 KiB, or aligned to more than the largest class alignment.
//!
//! Up to [`MAX_SPAN`] (16 MiB) and aligned to at most 8 KiB, a block is a span of an arena (see
//! `arena`): its header in the span's first page, found from the block by the arena map and the
//! arena's span table. A freed span's slices go back to the arena's free runs, coalescing with free
//! neighbours, and keep their pages: the next large block of any size that fits there is served without
//! a page fault (a program churning blocks of random sizes up to 8 MiB paid 8.7× mimalloc's time per op
//! with one mapping per block, cached; level with it in arenas). A span grows in place into the free run
//! after it, or moves with a quarter more room; it shrinks in place.
//!
//! Bigger blocks, and blocks aligned to 16 KiB or more, or with a guard page (hardened mode), are a
//! mapping each, aligned to the segment size so that `free` finds its header the way it finds a slab's;
//! the block starts one page (or one alignment) after the header. A block aligned to the segment size
//! (4 MiB) or more would start at a segment boundary, where `free` would look for its header: such a
//! block gets a whole segment slot before it, with the header at that slot's start (`data_offset ==
//! SEGMENT_SIZE`), and `address::locate` looks one slot down for a pointer at a slot boundary.
//! Nothing else hopless hands out starts at a slot boundary. A cache of recently freed mappings (at most
//! [`CACHE_ENTRIES`], each at most [`CACHE_MAX_ENTRY`]) keeps their pages: a request takes the smallest
//! cached mapping of up to twice its size (trimming a tail of more than half the request), else the
//! biggest of at least three quarters of its size, grown by moving its pages (`mremap`). Resizing
//! ([`LargeCache::resize`]) moves pages, never bytes, with a quarter of the size as slack when growing.
//!
//! What free memory stays resident (cached mappings plus free dirty arena slices) follows what the
//! program holds: at most a quarter more than the most large bytes in use over the last [`RETAIN_MS`]
//! to twice that, plus what of that most is free now, so that blocks in use and free memory together
//! stay within 2.25 times that most (the free memory at least [`CACHE_MIN_BYTES`], at most
//! [`CACHE_MAX_BYTES`]). Each large free checks it and gives back the excess: the oldest cached mappings are unmapped, then free arena slices purged
//! (`MADV_DONTNEED`), the emptiest arena's first; an arena left empty and clean is unmapped while
//! another remains. So a program that frees its large blocks and allocates them again at once (the
//! next phase of a batch job) finds their pages, while one that moves on gives them back at its next
//! large free. And when the small heap grows into a new segment, that much kept memory is given back
//! ([`LargeCache::slab_segments`]), so freed large blocks do not stay resident beside small objects that
//! took their place. A reused block is zeroed by hand for a zeroed allocation, up to what an earlier
//! user may have written; fresh pages are zero already.

//!
//! | file | what it holds |
//! |---|---|
//! | `state.rs` | [`LargeCache`], the state under its lock, a large block's header |
//! | `placement.rs` | alloc, free, resize: an arena span or a mapping of its own |
//! | `arena.rs` | 64 MiB arenas cut into 16 KiB slices, their span table and free bitmaps |
//! | `spans.rs` | large blocks as arena spans |
//! | `mapped.rs` | mappings of their own and the cache of recent ones |
//! | `budget.rs` | what stays resident, and the purge batches that give back the rest |

pub(crate) mod arena;
mod budget;
mod mapped;
mod placement;
mod spans;
mod state;

pub use state::{LargeCache, CACHE_ENTRIES, CACHE_MAX_BYTES, CACHE_MIN_BYTES};
#[cfg(test)]
pub use state::{LargeInner, RETAIN_MS};
// Only the tests over the OS's own pages use it, and Miri does not run those.
#[cfg(all(test, not(miri)))]
pub use state::CACHE_MAX_ENTRY;

#[cfg(test)]
mod tests;
