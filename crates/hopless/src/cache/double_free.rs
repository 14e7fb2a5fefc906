//! The double-free look in a thread cache: where a block whose first word is a free key (see
//! `free_key`) may still be. A push that finds a key of this cache for another slot asks
//! [`ThreadCache::popped_this_epoch`] (one look); the slow path asks [`ThreadCache::own_key_says`] for
//! this cache's keys, [`ThreadCache::holds_at`] and [`ThreadCache::may_have_flushed`] for the cache a key
//! names (any thread's), and [`ThreadCache::check_refilled`] for the blocks the last refill put in this
//! thread's magazine, which carry what their last free or flush left rather than their slot's key.

use core::sync::atomic::Ordering;

use super::free_key::*;
use super::thread_cache::{Magazine, ThreadCache};
use crate::size_class::MAG_MAX;

/// Looks through the refilled slots after which the rest of a refill is keyed (see
/// [`ThreadCache::check_refilled`]).
pub const KEY_AFTER_LOOKS: u32 = 2;

/// What [`ThreadCache::own_key_says`] makes of a key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OwnKey {
    /// Popped from the slot the key names and handed out since: a correct free.
    Popped,
    /// From before a flush that may have taken the block: look in its slab and this magazine's refill.
    Stale,
    /// Look where the key says.
    Look,
}

/// Whether a slot value read below a count read just before is `p`: the block itself, or the block
/// tagged by a flush that took it after that count was read (a slot below the count is written only
/// after the count drops below it, and rewritten before the count rises above it again).
#[inline]
fn is_or_flushed(v: *mut u8, p: *mut u8) -> bool {
    // `p` is 8-aligned: `p` and `flushed(p)` differ in bit 0 alone, so one masked compare tells both.
    v.addr() & !1 == p.addr()
}

impl ThreadCache {
    /// The first word of `p` is a key, other than the one slot `n` would get (`d`: the difference).
    /// When it is this cache's key of this epoch for another slot, and that slot does not hold `p`
    /// below the count, the block was popped from there since (pushed there since the last flush, it
    /// left the slot only by a pop): a correct free, decided with one look ([`ThreadCache::holds_at`],
    /// as the slow path would). Anything else is for the slow path ([`ThreadCache::own_key_says`],
    /// then the look where the key says).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache, `m` one of its magazines, holding `n` blocks.
    #[inline]
    pub(super) unsafe fn popped_this_epoch(
        tc: *mut ThreadCache,
        m: *mut Magazine,
        n: u32,
        p: *mut u8,
        d: usize,
    ) -> bool {
        // SAFETY: `tc` is the calling thread's live cache, per the caller.
        let id = unsafe { (*tc).id };
        // Another cache's key, or another epoch's (the id and epoch bits differ: all but the slot's).
        if (d >> EPOCH_SHIFT) & !((MAG_MAX - 1) << (SLOT_SHIFT - EPOCH_SHIFT)) != 0 || id == 0 {
            return false;
        }
        let slot = ((d >> SLOT_SHIFT) & (MAG_MAX - 1)) ^ n as usize;
        // The count the caller read: only this thread changes it.
        !Self::slot_below_holds(m, slot, n as usize, p)
    }

    /// What the slow path makes of a block whose first word is a key other than the one the next push
    /// into the magazine of `class` would write (a free [`Push::Suspect`](super::Push::Suspect) sent
    /// here), when it is this cache's:
    /// - [`OwnKey::Popped`]: of this epoch, or of the one before for a slot below where the last flush
    ///   started (pushed there since the last flush that could have taken it), and the slot does not
    ///   hold it below the count; or of an earlier epoch with the slot, at or above the count, holding
    ///   it untagged (no flush took it from there: [`ThreadCache::take_newest`] tags the slots it
    ///   takes). Popped from that slot since, and handed out: a correct free.
    /// - [`OwnKey::Stale`]: of an earlier epoch, the slot holding something else: a flush may have
    ///   taken it, so it may be free in its slab or refilled into this magazine (the caller looks).
    /// - [`OwnKey::Look`]: anything else (the slot holds it below the count, another cache's key, a
    ///   mark, a cache without an id): the caller looks where the key says.
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache (or the empty one), `class < NUM_CLASSES`, and `p` a
    /// block of `class` whose first word the caller may read.
    pub unsafe fn own_key_says(tc: *mut ThreadCache, class: usize, p: *mut u8) -> OwnKey {
        // SAFETY: per the caller.
        if unsafe { (*tc).id } == 0 {
            return OwnKey::Look;
        }
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        // At most the capacity (a full magazine's free comes here too): slots count modulo `MAG_MAX`.
        let n = Self::count_of(m).load(Ordering::Relaxed) as usize;
        // SAFETY: per the caller; the owner reads its own magazine's tag plainly.
        let d = unsafe { key_word(p) ^ slot_key(p, (*m).tag, n & (MAG_MAX - 1)) };
        if d & KEY_LOW != 0 || d >> ID_SHIFT != 0 {
            return OwnKey::Look;
        }
        let slot = ((d >> SLOT_SHIFT) & (MAG_MAX - 1)) ^ (n & (MAG_MAX - 1));
        let holds = Self::slot_of(m, slot).load(Ordering::Relaxed) == p;
        if slot < n && holds {
            return OwnKey::Look;
        }
        if Self::keyed_since_flush(m, (d >> EPOCH_SHIFT) & EPOCH_MASK, slot) || holds {
            OwnKey::Popped
        } else {
            OwnKey::Stale
        }
    }

    /// Whether slot `slot` of the magazine of `class` holds `p` (a keyed block's key names its slot:
    /// blocks never move between slots). Any thread may ask.
    ///
    /// # Safety
    ///
    /// `tc` is a cache of the registry that stays mapped during the call; `class < NUM_CLASSES`.
    #[inline]
    pub unsafe fn holds_at(tc: *mut ThreadCache, class: usize, slot: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        unsafe { Self::mag_holds_at(Self::mag(tc, class), slot, p) }
    }

    /// Whether a flush of the magazine of `class` may have taken a block its free put in slot `slot`
    /// at flush epoch `epoch` (a slot key's): not when the key is of this epoch, nor of the one before
    /// for a slot below where the last flush started. A key that is not may be in that slot still (a
    /// look there says), or was popped from it and handed out: nowhere else, so the double-free check
    /// need not look in the slab or a refill. Any thread may ask; read while the owner flushes, the
    /// answer can be a flush late, as the look at the slot can.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::holds_at`].
    pub unsafe fn may_have_flushed(tc: *mut ThreadCache, class: usize, slot: usize, epoch: usize) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let tag = Self::flush_state_of(m).0.load(Ordering::Relaxed);
        // Zero: a magazine not opened, or whose pages were given back: nothing to go by.
        tag == 0 || !Self::keyed_since_flush(m, epoch ^ epoch_of(tag), slot)
    }

    /// Whether a key for `slot` whose epoch differs from the magazine `m`'s by `step` (their XOR) was
    /// written since the last flush that could have taken its block: of this epoch, or of the one
    /// before for a slot below where the last flush started.
    fn keyed_since_flush(m: *mut Magazine, step: usize, slot: usize) -> bool {
        let (_, last, from) = Self::flush_state_of(m);
        step == 0
            || (step == last.load(Ordering::Relaxed) as usize && slot < from.load(Ordering::Relaxed) as usize)
    }

    /// [`ThreadCache::holds_at`] for the magazine `m`.
    ///
    /// # Safety
    ///
    /// `m` is a magazine of a cache of the registry that stays mapped during the call.
    #[inline]
    unsafe fn mag_holds_at(m: *mut Magazine, slot: usize, p: *mut u8) -> bool {
        let n = (Self::count_of(m).load(Ordering::Acquire) as usize).min(MAG_MAX);
        Self::slot_below_holds(m, slot, n, p)
    }

    /// Whether `slot`, below the count `n` (at most [`MAG_MAX`]) of `m`, holds `p` (or `p` tagged by a
    /// flush).
    #[inline(always)]
    fn slot_below_holds(m: *mut Magazine, slot: usize, n: usize, p: *mut u8) -> bool {
        slot < n && is_or_flushed(Self::slot_of(m, slot).load(Ordering::Relaxed), p)
    }

    /// Whether `p` is among the blocks a refill put in this thread's magazine of `class` that may still be
    /// there (a query: nothing is counted; the double-free check uses [`ThreadCache::check_refilled`]).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache; `class < NUM_CLASSES`.
    pub unsafe fn holds_refilled(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        // SAFETY: as above.
        Self::refilled_slots_hold(m, unsafe { Self::refilled_to_look(m, p) }, p)
    }

    /// The double-free check's look for a block `p` whose key says it is elsewhere, or that carries a
    /// mark (flushed to its slab since its last free, perhaps refilled since), among the blocks the
    /// last refill put in this thread's magazine of `class`: whether it is
    /// there. A look that went through the refilled slots (`p`'s filter bit was set) and found nothing
    /// is counted, and the [`KEY_AFTER_LOOKS`]th since the refill keys the rest of the refill
    /// ([`ThreadCache::key_refilled`]): a program that frees its blocks unwritten would otherwise pay
    /// that look at every free, and one that does so now and then pays one look, not the keying's read
    /// and write of every block still in the magazine. (The empty cache, a checked mode's, holds
    /// nothing, so it never looks.)
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::holds_refilled`], and `tc`'s pushes write keys (the default mode; hardened
    /// mode's cache pushes without them, and its frees never reach this check) or `tc` is the empty
    /// cache.
    pub unsafe fn check_refilled(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        // SAFETY: as above.
        let end = unsafe { Self::refilled_to_look(m, p) };
        if end == 0 {
            return false;
        }
        if Self::refilled_slots_hold(m, end, p) {
            return true;
        }
        // SAFETY: as above; only this thread writes the magazine.
        unsafe {
            (*m).looks += 1;
            if (*m).looks >= KEY_AFTER_LOOKS {
                Self::key_refilled(tc, class);
            }
        }
        false
    }

    /// How many slots the look for `p` goes through: those below `refilled` and `count`, or
    /// none when `p`'s bit in the refill filter is clear (`p` is not a refilled block still here).
    /// The first look after a refill builds the filter (zero until then) from those slots. That finds
    /// every refilled block still in the magazine: a slot below the count changes only after a pop
    /// took the count below it, and a pop hands its block out (freed again, it comes back keyed).
    ///
    /// # Safety
    ///
    /// `m` is a magazine of the calling thread's live cache.
    unsafe fn refilled_to_look(m: *mut Magazine, p: *mut u8) -> usize {
        let n = Self::count_of(m).load(Ordering::Relaxed);
        // SAFETY: per the caller; only this thread writes the magazine and reads its filter.
        let end = unsafe { (*m).refilled.min(n) as usize }.min(MAG_MAX);
        if end == 0 {
            return 0;
        }
        // SAFETY: as above.
        let filter = unsafe {
            if (*m).refill_filter == [0; 2] {
                let mut filter = [0u64; 2];
                for i in 0..end {
                    let b = refill_bit(Self::slot_of(m, i).load(Ordering::Relaxed));
                    if let Some(w) = filter.get_mut(b / 64) {
                        *w |= 1 << (b % 64);
                    }
                }
                (*m).refill_filter = filter;
            }
            (*m).refill_filter
        };
        let b = refill_bit(p);
        if filter.get(b / 64).is_none_or(|w| w & (1 << (b % 64)) == 0) {
            return 0;
        }
        end
    }

    /// Whether one of the first `end` slots of `m` holds `p`.
    fn refilled_slots_hold(m: *mut Magazine, end: usize, p: *mut u8) -> bool {
        (0..end).any(|i| Self::slot_of(m, i).load(Ordering::Relaxed) == p)
    }

    /// Writes its slot key, as a push would have, into every block a refill left in the magazine of
    /// `class` that carries a mark (the slab mark) or a key other than its slot's (the key of
    /// its last free, before a flush took it), and empties the refilled range: from here on every
    /// such block in the magazine carries the key of the slot that holds it. A fresh block, never
    /// written, is left so (the keying does not touch its page, and nothing in it can send a free to
    /// the refilled slots). Another cache's key is most often its stale one; it can also be a double
    /// free from another thread that its check missed, into this magazine's free block, which both
    /// magazines will then hand out: writing over the first word that program may write by then
    /// adds nothing to that. Caches without an id are not keyed: their keys send a free that finds
    /// another slot's key to the search of every magazine, slower than the look this saves.
    /// The double-free check of a keyed block then needs no look through the refilled slots (the key
    /// names the slot that holds it), and a free of one of these blocks from another thread finds its
    /// key and that slot.
    ///
    /// For a program that frees blocks without writing their first word, each free of a refilled block
    /// otherwise looked through up to half a magazine; this writes the blocks still there once per
    /// refill instead (the slow path's writes, never the allocation's).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache, `class < NUM_CLASSES`, and pushes write keys (the
    /// default mode): slots at and above `refilled` hold blocks keyed for their slot.
    unsafe fn key_refilled(tc: *mut ThreadCache, class: usize) {
        // SAFETY: per the caller.
        if unsafe { (*tc).id } == 0 {
            return;
        }
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let n = Self::count_of(m).load(Ordering::Relaxed);
        // SAFETY: as above; only this thread writes the magazine.
        let (end, tag, own) = unsafe { ((*m).refilled.min(n) as usize, (*m).tag, (*tc).id as usize) };
        for i in 0..end.min(MAG_MAX) {
            let p = Self::slot_of(m, i).load(Ordering::Relaxed);
            // SAFETY: `slots[..count]` are free blocks of this magazine (the invariant on `Magazine`),
            // at least 8 bytes and aligned to 8; their first words are the allocator's.
            unsafe {
                let stale = match read_key(p) {
                    KeySays::Slab => true,
                    // Any key but this slot's own: the key of the block's last free, before a flush
                    // took it (a block keyed since sits in its key's slot).
                    KeySays::Slot { id, slot } => id != own || slot != i,
                    KeySays::Nothing => false,
                };
                if stale {
                    write_key(p, slot_key(p, tag, i));
                }
            }
        }
        // SAFETY: as above.
        unsafe {
            (*m).refilled = 0;
            (*m).refill_filter = [0; 2];
        }
    }

    /// Whether the magazine of `class` holds `p`. Any thread may ask (the double-free check).
    ///
    /// # Safety
    ///
    /// `tc` is a cache of the registry that stays mapped during the call; `class < NUM_CLASSES`.
    pub unsafe fn holds(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let n = (Self::count_of(m).load(Ordering::Acquire) as usize).min(MAG_MAX);
        (0..n).any(|i| is_or_flushed(Self::slot_of(m, i).load(Ordering::Relaxed), p))
    }
}
