//! The free key: double frees caught at the free, with the allocation path off the block.
//!
//! A free writes a key into the first word of the block it takes back: the block's address, mixed with a
//! per-process secret, with *where the block went* in the top 16 bits (the id of the thread cache in
//! bits 55..64, the magazine slot in bits 41..55) and the magazine's flush epoch in bits 25..41. Nothing
//! else writes the word in the default mode: not the allocation path, refills included, and not a flush
//! back to the slab, which leaves the key as it is and gives the magazine a new epoch. Epochs are
//! numbered per thread cache, across its classes (`ThreadCache::epochs`): opening a magazine and each
//! flush take the cache's next, so an epoch names one magazine's stretch between two flushes, even for
//! a block whose slab another class took since (a key does not name its class), and a cache taken again
//! goes on from its last holder's count. Every 16 384 of them each open magazine takes a new one, so an
//! idle magazine's epoch never lingers until a busier class's counter comes round to it. (Writing a mark
//! into each flushed block would cost a store to a line the cache has mostly lost by then.) The
//! exception writes a mark (cache id `MARK_ID`): a block freed without a thread cache, or through the
//! batch API. And for a program that frees blocks unwritten, the free path keys its magazine's last
//! refill (`ThreadCache::key_refilled`).
//!
//! A free that finds its own magazine's key for this very slot and epoch (a block popped from the top
//! and freed again unwritten, the usual unwritten case) costs nothing more. This magazine's key for
//! another slot in the same epoch takes one look: pushed there since the last flush, the block left the
//! slot only by a pop unless it is still there, below the count (a double free). A key of an earlier
//! epoch may be a block a flush took: still in the slot the key names, tagged by the flush, or gone to
//! its slab, perhaps refilled since. One whose slot still holds it untagged at or above the count was
//! popped from there; anything else goes to the slow path, which looks where the key says (that slot,
//! read through atomics, also another thread's), then in the slab's bitmap (read lock-free), then among
//! the blocks the last refill put in this thread's magazine (a filter says whether to look). Found: a
//! double free, reported. Otherwise the block was handed out since and its first word never written: a
//! correct free.
//!
//! In memory a key is stored as it is: the address part in the low 25 bits, the epoch and where the
//! block went in the high 39. A program's first write to a block is most often to its first bytes (a
//! string's NUL, a flag byte, a 4- or 8-byte field), and that breaks the address part, so the free path
//! tells "not a key" (the common case) with one test of the low bits
//! (`(word ^ key) & KEY_LOW != 0`). Stored rotated the other way (where the
//! block went in the low 16 bits), a 1-byte write would leave a word that reads as a key for another
//! slot and send the free to the slow check: every iteration of a C loop of `p = malloc(n); p[0] = 0;
//! free(p)` would take it. Every reader and writer goes through `read_key`, `key_word` and `write_key`.
//!
//! Two cases are left to the flush's bitmap check, which may come after the block was handed out twice:
//! - a block freed, flushed, refilled into *another* thread's magazine, and freed again before that
//!   thread handed it out (unless that thread keyed its refill, `ThreadCache::key_refilled`: then the key
//!   names the slot). Seeing it at the free would need the refill to write every block it moves (a
//!   cache-line transfer per block between a producer and a consumer thread) or a search of every
//!   thread's magazines;
//! - a block freed, flushed, and freed again unwritten through the same thread cache after its epoch
//!   count has come round to the key's again (65 536 flushes and magazine openings of that cache, or
//!   one fewer, the epoch before also being accepted for the slots below where the last flush
//!   started): the key then reads as one written since the last flush, and the one look finds the
//!   slot holding something else. The epoch has 16 bits and the slot 14 (a grown magazine's); more
//!   would weaken the "not a key" test, which the address part's 25 bits make (a written word passes
//!   for a key once in 32 million: the slow check then finds it in use).

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::size_class::MAG_MAX;

// The id, the slot and the epoch fill the word above the address part.
const _: () = assert!(ID_SHIFT == SLOT_SHIFT + MAG_MAX.trailing_zeros() && SLOT_SHIFT == EPOCH_SHIFT + 16);

/// Bits of a key that must match for it to be one (the address part: the low 25 bits of the block's
/// address, mixed with the salt).
pub const KEY_LOW: usize = (1 << EPOCH_SHIFT) - 1;
/// Where a key keeps its magazine's flush epoch: bits 25..41 (see the module's docs).
pub(crate) const EPOCH_SHIFT: u32 = 25;
/// The epoch's bits in a key, before the shift.
pub(crate) const EPOCH_MASK: usize = 0xffff;
/// Cache ids: 1..MAX_CACHE_ID (509 of them) name a slot of [`CACHE_TABLE`](super::CACHE_TABLE); 0 is a
/// cache without one. Id 510 is no cache's: a word that reads as a key with it sends the check to the
/// search of every magazine, as a key of a cache without an id does.
pub const MAX_CACHE_ID: usize = 510;
/// The cache id of a block's mark while it sits in its slab.
pub const MARK_ID: usize = 511;
pub(crate) const ID_SHIFT: u32 = 55;
/// Where a key keeps its slot: bits 41..55, as many as [`MAG_MAX`] slots.
pub(crate) const SLOT_SHIFT: u32 = 41;

static FREE_SALT: AtomicUsize = AtomicUsize::new(0x5be2_d1c9_a36f_8e47);

/// Mixes per-process randomness into the salt (at start-up, before any block is freed).
pub fn seed_free_key(random: usize) {
    FREE_SALT.store(
        (random | 1).rotate_left(17) ^ 0x5be2_d1c9_a36f_8e47,
        Ordering::Relaxed,
    );
}

/// The per-process secret keys and marks are mixed with (hardened mode's guard words use it too).
#[inline]
pub fn free_salt() -> usize {
    FREE_SALT.load(Ordering::Relaxed)
}

/// The key for `p` placed in slot `slot` of the magazine whose tag is `tag`.
#[inline(always)]
pub fn slot_key(p: *mut u8, tag: u64, slot: usize) -> usize {
    p.addr() ^ (tag as usize) ^ (slot << SLOT_SHIFT)
}

/// The bit of `p` in a magazine's refill filter (0..128).
#[inline]
pub(crate) fn refill_bit(p: *mut u8) -> usize {
    (((p.addr() as u64) >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 57) as usize
}

/// The mark of a block in its slab.
#[inline]
pub fn slab_mark(p: *mut u8) -> usize {
    p.addr() ^ FREE_SALT.load(Ordering::Relaxed) ^ (MARK_ID << ID_SHIFT)
}

/// A magazine tag for cache `id`, at epoch 0 (the salt is fixed before the first cache is made).
#[inline]
pub fn tag_of(id: usize) -> u64 {
    (FREE_SALT.load(Ordering::Relaxed) ^ (id << ID_SHIFT)) as u64
}

/// A magazine tag for cache `id` at flush epoch `epoch` (its low 16 bits).
#[inline]
pub fn tag_at(id: usize, epoch: usize) -> u64 {
    tag_of(id) ^ (((epoch & EPOCH_MASK) << EPOCH_SHIFT) as u64)
}

/// The flush epoch of a magazine's `tag`.
#[inline]
pub fn epoch_of(tag: u64) -> usize {
    ((tag as usize ^ FREE_SALT.load(Ordering::Relaxed)) >> EPOCH_SHIFT) & EPOCH_MASK
}

/// The flush epoch in the key of `p` (meaningful when [`read_key`] finds a slot key).
///
/// # Safety
///
/// As for [`read_key`].
#[inline]
pub unsafe fn key_epoch(p: *mut u8) -> usize {
    // SAFETY: per the caller.
    ((unsafe { key_word(p) } ^ p.addr() ^ FREE_SALT.load(Ordering::Relaxed)) >> EPOCH_SHIFT) & EPOCH_MASK
}

/// What the first word of `p` says about where it is, if it is a key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KeySays {
    /// Not a key: the program wrote over it (or the block never had one).
    Nothing,
    /// In its slab since a flush.
    Slab,
    /// In slot `slot` of cache `id`'s magazine (id 0: a cache without an id).
    Slot { id: usize, slot: usize },
}

/// Reads the key of `p`.
///
/// # Safety
///
/// `p` is a block of at least 8 bytes, aligned to 8, that the caller may read.
#[inline]
pub unsafe fn read_key(p: *mut u8) -> KeySays {
    // SAFETY: per the caller.
    let t = unsafe { key_word(p) } ^ p.addr() ^ FREE_SALT.load(Ordering::Relaxed);
    if t & KEY_LOW != 0 {
        return KeySays::Nothing;
    }
    let id = t >> ID_SHIFT;
    if id == MARK_ID {
        KeySays::Slab
    } else {
        KeySays::Slot {
            id,
            slot: (t >> SLOT_SHIFT) & (MAG_MAX - 1),
        }
    }
}

/// `x`, with the compiler forgetting how it was computed (no instruction): the free path's rare branch
/// then works from `x` alone, instead of keeping the word and the key alive in two more registers on
/// the common path.
#[inline(always)]
#[cfg_attr(not(all(target_arch = "x86_64", not(miri))), allow(unused_mut))]
pub(crate) fn opaque(mut x: usize) -> usize {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: an empty template: no instruction, no memory, stack or flags touched; `x` comes out as it
    // went in.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
    }
    x
}

/// Marks the path of a free whose block still holds a key (the program did not write it) as the unlikely
/// one, so that the written case falls through to the push with one branch.
#[cold]
#[inline]
pub(crate) fn unwritten() {}

/// The first word of `p` read as a key, whatever it holds.
///
/// # Safety
///
/// As for [`read_key`].
#[inline(always)]
pub unsafe fn key_word(p: *mut u8) -> usize {
    // SAFETY: per the caller.
    unsafe { p.cast::<usize>().read() }
}

/// Writes `key` into the first word of `p`.
///
/// # Safety
///
/// As for [`read_key`], and the caller may write it.
#[inline(always)]
pub unsafe fn write_key(p: *mut u8, key: usize) {
    // SAFETY: per the caller.
    unsafe { p.cast::<usize>().write(key) }
}
