//! Magazines and their keys on their own, over a test-owned cache, natively and under Miri: push and pop,
//! the offset table, epochs, the keys' bits.

use super::free_key::*;
use super::magazine::EPOCH_REFRESH;
use super::{class_at_mag_offset, mag_offset, OwnKey, Push, MALLOC_MAG_OFFSET};
use crate::cache::ThreadCache;
use crate::size_class::{self, BATCH_MAX, MAG_CAPACITY, MAG_MAX, NUM_CLASSES, SMALL_MAX};

/// A test-owned cache, reached only through its raw pointer (so Miri's borrow
/// tracking sees no other owner retag it while the tests write through the pointer),
/// freed when the guard drops.
struct TestCache(*mut ThreadCache);

impl Drop for TestCache {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::into_raw` in `cache_with_id` and is
        // freed only here, once.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

/// Test-owned words as blocks: `b(i)` is the `i`th word's address.
fn word_blocks(words: &mut [usize]) -> impl Fn(usize) -> *mut u8 {
    let base: *mut usize = words.as_mut_ptr();
    move |i| base.wrapping_add(i).cast()
}

/// A cache of all zeroes (`ThreadCache::EMPTY`) on the heap: made in place, as the allocator makes
/// its own from zeroed pages (built on the stack first, its megabytes of slots would overflow it).
fn empty_cache() -> Box<ThreadCache> {
    let layout = std::alloc::Layout::new::<ThreadCache>();
    // SAFETY: the layout has a non-zero size; all zeroes is a valid `ThreadCache` (see `EMPTY`), and
    // the block was allocated with `ThreadCache`'s layout by the global allocator, as `Box` needs.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<ThreadCache>();
        assert!(!p.is_null());
        Box::from_raw(p)
    }
}

/// A test-owned cache with id `id`: the guard, and the pointer the tests use.
fn cache_with_id(id: u32) -> (TestCache, *mut ThreadCache) {
    let mut tc = empty_cache();
    tc.id = id;
    let tcp = Box::into_raw(tc);
    (TestCache(tcp), tcp)
}

#[test]
fn magazine_is_lifo_and_bounded() {
    let mut tc = empty_cache();
    let tcp: *mut ThreadCache = &mut *tc;
    let mut blocks = [0u64; BATCH_MAX + 1];
    // SAFETY: a test-owned cache; block pointers are never dereferenced.
    unsafe {
        assert!(ThreadCache::pop(tcp, 3).is_null());
        assert!(
            !ThreadCache::push(tcp, 3, blocks.as_mut_ptr().cast()),
            "empty cache takes nothing"
        );
        ThreadCache::open(tcp, 3);
        let cap = MAG_CAPACITY[3] as usize;
        for i in 0..cap {
            assert!(ThreadCache::push(tcp, 3, blocks.as_mut_ptr().add(i).cast()));
        }
        assert!(!ThreadCache::push(tcp, 3, blocks.as_mut_ptr().add(cap).cast()));
        for i in (0..cap).rev() {
            assert_eq!(ThreadCache::pop(tcp, 3), blocks.as_mut_ptr().add(i).cast());
        }
        assert!(ThreadCache::pop(tcp, 3).is_null());
    }
}

#[test]
fn magazine_offsets_name_the_class_magazines() {
    let mut tc = empty_cache();
    let tcp: *mut ThreadCache = &mut *tc;
    for c in 0..NUM_CLASSES {
        assert_eq!(class_at_mag_offset(mag_offset(c)), c);
        // SAFETY: a test-owned cache; `c` is in range and the offset is its magazine's.
        unsafe { assert_eq!(ThreadCache::mag_at(tcp, mag_offset(c)), ThreadCache::mag(tcp, c)) };
    }
    for size in 0..=SMALL_MAX {
        let want = size_class::malloc_class(size).map(mag_offset);
        assert_eq!(
            MALLOC_MAG_OFFSET.get((size + 7) >> 3).copied(),
            want,
            "size {size}"
        );
    }
}

/// Every `EPOCH_REFRESH` epochs of a cache, an idle magazine moves on to an epoch of its own: the
/// one it leaves counts as the epoch before for the blocks it held then.
#[test]
fn idle_magazines_take_new_epochs_as_the_cache_counts_on() {
    let (_tc, tcp) = cache_with_id(7);
    let mut blocks = [0usize; 4];
    let b = word_blocks(&mut blocks);
    // SAFETY: a test-owned cache; the blocks are test-owned words.
    unsafe {
        ThreadCache::open(tcp, 2);
        ThreadCache::open(tcp, 3);
        for i in 0..2 {
            b(i).cast::<usize>().write(1);
            assert_eq!(ThreadCache::push_keyed(tcp, 3, b(i)), Push::Done);
        }
        b(2).cast::<usize>().write(1);
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Done);
        let idle = ThreadCache::mag(tcp, 3);
        let before = epoch_of((*idle).tag);
        // The next flush of class 2 takes the counter past a multiple of the refresh.
        (*tcp).epochs = EPOCH_REFRESH - 1;
        let mut out = [core::ptr::null_mut(); 1];
        assert_eq!(
            ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)),
            1
        );
        let after = epoch_of((*idle).tag);
        assert_ne!(after, before, "the idle magazine has a new epoch");
        assert_eq!((*idle).epoch_step as usize, before ^ after);
        assert_eq!((*idle).flushed_from, 2, "its blocks then were below the count");
        assert_ne!(after, epoch_of((*ThreadCache::mag(tcp, 2)).tag));
        // Its blocks, keyed in the epoch it left, popped and freed again unwritten: taken back.
        assert_eq!(ThreadCache::pop(tcp, 3), b(1));
        assert_eq!(ThreadCache::pop(tcp, 3), b(0));
        assert_eq!(ThreadCache::push_keyed(tcp, 3, b(0)), Push::Suspect);
        assert_eq!(ThreadCache::own_key_says(tcp, 3, b(0)), OwnKey::Popped);
    }
}

/// Keys two flushes old: the slow path's word on them. A block popped from a slot that still holds
/// it untagged is taken back; one whose slot a flush tagged may be in its slab (stale).
#[test]
fn a_key_two_flushes_old_is_popped_while_its_slot_holds_the_block() {
    let (_tc, tcp) = cache_with_id(7);
    let mut blocks = [0usize; 4];
    let b = word_blocks(&mut blocks);
    // SAFETY: a test-owned cache; the blocks are test-owned words.
    unsafe {
        ThreadCache::open(tcp, 2);
        for i in 0..4 {
            b(i).cast::<usize>().write(0x1234_5678 + i);
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(i)), Push::Done);
        }
        let mut out = [core::ptr::null_mut(); 1];
        assert_eq!(
            ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)),
            1
        );
        assert_eq!(
            ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)),
            1
        );
        assert_eq!(out[0], b(2));
        assert_eq!(ThreadCache::pop(tcp, 2), b(1));
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(1)), Push::Suspect);
        assert_eq!(ThreadCache::own_key_says(tcp, 2, b(1)), OwnKey::Popped);
        assert!(ThreadCache::push_checked(tcp, 2, b(1)));
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Suspect);
        assert_eq!(ThreadCache::own_key_says(tcp, 2, b(2)), OwnKey::Stale);
        assert_eq!(ThreadCache::own_key_says(tcp, 2, b(3)), OwnKey::Stale);
    }
}

/// The free path's one test: two keys of one block and magazine differ only in where the block went
/// and in the epoch, above the address part, which their difference leaves clear.
#[test]
fn keys_of_one_block_differ_only_in_the_slot_and_epoch() {
    let mut x = 0x9e37_79b9_7f4a_7c15usize;
    for round in 0..64 {
        x = x.rotate_left(23).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ round;
        let p = core::ptr::without_provenance_mut::<u8>(x & ((1 << 47) - 8));
        let tag = tag_of(round % MAX_CACHE_ID) ^ (x as u64 & 0xffff);
        for slot in (0..MAG_MAX).step_by(61).chain([MAG_MAX - 1]) {
            assert_eq!(slot_key(p, tag, slot) ^ slot_key(p, tag, 0), slot << SLOT_SHIFT);
        }
        let later = tag_at(round % MAX_CACHE_ID, round + 1) ^ (x as u64 & 0xffff);
        let d = slot_key(p, later, 5) ^ slot_key(p, tag, 0);
        assert!(
            d & KEY_LOW == 0 && (d >> EPOCH_SHIFT) & EPOCH_MASK != 0,
            "round {round}: {d:#x}"
        );
        assert_eq!(d >> SLOT_SHIFT, 5);
    }
}

/// A program's 1- or 2-byte write to a freed block's first bytes (a string's NUL) breaks the key's
/// address part, so its next free is not sent to the slow check (keys stored rotated the other way,
/// with where the block went in the low 16 bits, would read as a key for another slot). A 4-byte write
/// breaks it too: it covers the address part's 25 bits.
#[test]
fn a_write_to_a_blocks_first_bytes_breaks_its_key() {
    let mut x = 0x2545_f491_4f6c_dd1dusize;
    for round in 0..64 {
        x = x.rotate_left(17).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ round;
        let mut word = 0usize;
        let p: *mut u8 = (&mut word as *mut usize).cast();
        let tag = tag_of(round % MAX_CACHE_ID) ^ (x as u64 & 0xffff);
        let slot = round % MAG_MAX;
        for (bytes, value) in [(1, 0u32), (1, 0x41), (2, 0x2e2e), (4, 0x0807_0605), (4, 0)] {
            // SAFETY: `p` is this test's word.
            unsafe {
                write_key(p, slot_key(p, tag, slot));
                match bytes {
                    1 => p.write(value as u8),
                    2 => p.cast::<u16>().write_unaligned(value as u16),
                    _ => p.cast::<u32>().write_unaligned(value),
                }
                let after = key_word(p);
                if after != slot_key(p, tag, slot) {
                    assert_ne!(
                        after & KEY_LOW,
                        slot_key(p, tag, slot) & KEY_LOW,
                        "a {bytes}-byte write left the address part whole"
                    );
                }
            }
        }
    }
}

#[test]
fn a_pushed_block_carries_its_slot_and_a_written_one_is_taken() {
    let (_tc, tcp) = cache_with_id(7);
    let mut blocks = [0usize; 8];
    let b = word_blocks(&mut blocks);
    // SAFETY: a test-owned cache; the blocks are test-owned words.
    unsafe {
        ThreadCache::open(tcp, 2);
        for i in 0..4 {
            b(i).cast::<usize>().write(0x1234_5678 + i); // written by "the program"
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(i)), Push::Done);
            assert_eq!(read_key(b(i)), KeySays::Slot { id: 7, slot: i });
        }
        // In the magazine at slot 3: a second free is suspect.
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Suspect);
        // Popped and freed again unwritten: its own slot's key, a correct free.
        assert_eq!(ThreadCache::pop(tcp, 2), b(3));
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Done);
        // Popped (slots 3 and 2), then slot 3's block freed first, into slot 2, and slot 2's block
        // into slot 3: keys of this epoch whose slots do not hold them below the count, both
        // correct.
        assert_eq!(ThreadCache::pop(tcp, 2), b(3));
        assert_eq!(ThreadCache::pop(tcp, 2), b(2));
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Done);
        assert_eq!(read_key(b(3)), KeySays::Slot { id: 7, slot: 2 });
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Done);
        assert_eq!(read_key(b(2)), KeySays::Slot { id: 7, slot: 3 });
        // Flushed from slot 3, its key unwritten: freed again, it is stale (an earlier epoch's
        // key, and the flush left its slot holding it tagged): its slab is looked at.
        let mut out = [core::ptr::null_mut(); 1];
        assert_eq!(
            ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)),
            1
        );
        assert_eq!(out[0], b(2));
        assert_eq!(read_key(b(2)), KeySays::Slot { id: 7, slot: 3 });
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Suspect);
        assert_eq!(ThreadCache::own_key_says(tcp, 2, b(2)), OwnKey::Stale);
        // Slot 2's block popped now: an earlier epoch's key (for the slow path), its slot holding
        // it untagged at the count: popped, a correct free.
        assert_eq!(ThreadCache::pop(tcp, 2), b(3));
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Suspect);
        assert_eq!(ThreadCache::own_key_says(tcp, 2, b(3)), OwnKey::Popped);
        assert!(ThreadCache::push_checked(tcp, 2, b(3)));
        // Still in the magazine (slot 1): suspect, whatever slot the push would take.
        assert_eq!(ThreadCache::push_keyed(tcp, 2, b(1)), Push::Suspect);
    }
}
