//! Segments and slabs: where blocks live, and how a block pointer finds its slab in O(1).
//!
//! A segment is 4 MiB, aligned to 4 MiB. Its first bytes hold a [`SegmentHeader`], then (small and
//! medium segments) a granule table, then an array of [`Slab`] headers, one per slab slot. The rest is
//! cut into equal slab slots: 64 KiB for small classes, 512 KiB for medium ones. The slots that the
//! headers cover are never handed out, so block memory is aligned to the slot size and no header shares
//! a cache line with a block.
//!
//! From any block pointer `p`: `segment = p & !(4 MiB - 1)`, `slot = (p - segment) >> slab_shift`,
//! `slab = &segment.slabs[slot]`. A large block is a segment of its own kind with the block after the
//! header page, so the same two lines find its header. The C free path takes the slab from the
//! granule table instead (`segment.granules[(p - segment) >> 16]`, which also names the class's
//! magazine): an address from `p` alone, not one that waits for the load of `slab_shift`.
//!
//! Invariants:
//! - a block is in exactly one place: a thread's magazine, free in its slab (bit set, or at or beyond
//!   `carved`), or in use;
//! - the bitmap is the truth for "is this block free"; only the owning class's lock holder writes it;
//! - `free == set bits + (capacity - carved)`.
//!
//! | file | what it holds |
//! |---|---|
//! | `header.rs` | the layout constants, [`SegmentHeader`], [`Slab`], [`SEGMENT_MAP`]; pointer → segment and slab |
//! | `slab.rs` | a slab's bitmap: take, return, the free checks, [`FreeError`] |
//! | `list.rs` | [`SlabList`] |
//! | `remote.rs` | [`RemoteFrees`]: frees from threads that do not own the slab (thread-owned slabs, `heap/owned.rs`) |
//! | `map.rs` | [`SlotMap`], the address map segments and arenas share |

mod header;
mod list;
mod map;
mod remote;
mod slab;

pub use header::*;
pub use list::SlabList;
pub use map::{map_bits, SlotMap};
pub use remote::RemoteFree;
pub use slab::FreeError;

#[cfg(test)]
mod tests;
