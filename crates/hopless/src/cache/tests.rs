//! The thread cache's tests. Over a private heap on `SystemPages`, natively and under Miri: refill and
//! flush, parked caches' pages, the free key through refills and flushes. Then magazines and their keys
//! on their own, over a test-owned cache: push and pop, the offset table, epochs, the keys' bits.

use super::free_key::*;
use super::magazine::EPOCH_REFRESH;
use super::{class_at_mag_offset, mag_offset, OwnKey, Push, MALLOC_MAG_OFFSET};
use crate::cache::ThreadCache;
use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::segment::{segment_of, slab_of, SLAB_POOLED};
use crate::size_class::{self, class_for, class_size, MAG_CAPACITY, MAG_MAX, NUM_CLASSES, SMALL_MAX};
use crate::test_util::{check, fill, scaled};

#[test]
fn magazine_refills_half_and_flushes_the_older_half() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(32, 8).unwrap();
    let cap = MAG_CAPACITY[class] as usize;
    let n = cap * 3;
    let mut live = Vec::new();
    // SAFETY: `tc` is this test's cache; every block is freed once.
    unsafe {
        for i in 0..n {
            let p = heap.alloc(tc, 32, 8, false);
            assert!(!p.is_null());
            fill(p, 32, i as u8);
            live.push(p);
        }
        let m = ThreadCache::mag(tc, class);
        assert!((*m).count as usize <= cap);
        for (i, &p) in live.iter().enumerate() {
            check(p, 32, i as u8);
            heap.free_checked(tc, class, p);
            assert!((*m).count as usize <= cap);
        }
        assert!((*m).count as usize > 0, "frees stay cached");
        let st = heap.stats();
        assert!(st.classes[class].refills >= (n / (cap / 2)) as u64);
        assert!(st.classes[class].flushes >= 1);
        heap.retire_thread_cache(tc);
        assert_eq!((*m).count, 0);
    }
    let st = heap.stats();
    assert_eq!(
        st.classes[class].slabs, 1,
        "one slab kept empty, nothing else held"
    );
    // A retired cache is reused by the next thread.
    assert_eq!(heap.new_thread_cache(1), tc);
}

#[test]
fn a_few_parked_caches_keep_their_magazine_pages_until_trim() {
    use crate::cache::mag_offset;
    use crate::cache::MAX_WARM;
    use crate::platform::PAGE_SIZE;
    let heap = Heap::new(SystemPages);
    // A class whose magazine lies past the cache's first page (the page a parked cache always keeps).
    let class = (0..NUM_CLASSES)
        .find(|&c| mag_offset(c) as usize >= PAGE_SIZE && class_size(c) <= 1024)
        .unwrap();
    let size = class_size(class);
    // `SystemPages` zeroes what it decommits: a magazine whose capacity reads 0 again was given back.
    // SAFETY: each cache is used by this test alone, as one thread's; every block is freed once.
    let cap = |tc: *mut ThreadCache| unsafe { (*ThreadCache::mag(tc, class)).cap };
    let caches: Vec<_> = (0..MAX_WARM + 2)
        .map(|i| {
            let tc = heap.new_thread_cache(i as i32 + 1);
            // SAFETY: as above.
            unsafe {
                let p = heap.alloc(tc, size, 8, false);
                assert!(!p.is_null());
                heap.free_ptr(tc, p);
            }
            assert_ne!(cap(tc), 0, "the class's magazine is open");
            tc
        })
        .collect();
    for &tc in &caches {
        // SAFETY: as above; nothing uses the cache afterwards.
        unsafe { heap.retire_thread_cache(tc) };
    }
    let kept: Vec<bool> = caches.iter().map(|&tc| cap(tc) != 0).collect();
    let mut want = vec![true; MAX_WARM];
    want.extend([false, false]);
    assert_eq!(
        kept, want,
        "the first {MAX_WARM} retired keep their pages, later ones give them back"
    );
    // A new thread takes a parked cache (the newest, given back); the warm ones are still parked.
    let next = heap.new_thread_cache(100);
    assert!(caches.contains(&next));
    // Trim gives back the pages of every warm parked cache, and they stay parked for reuse.
    heap.trim();
    for &tc in &caches {
        if tc != next {
            assert_eq!(cap(tc), 0, "trim left a parked cache's magazines resident");
        }
    }
    let mut again: Vec<_> = (0..MAX_WARM + 1)
        .map(|i| heap.new_thread_cache(200 + i as i32))
        .collect();
    again.push(next);
    again.sort();
    let mut all = caches.clone();
    all.sort();
    assert_eq!(again, all, "every parked cache is reused");
    // Once retired again, the count of warm caches starts over: the first retired keep their pages.
    for &tc in &caches {
        // SAFETY: as above (each is now a cache this test made for a new "thread").
        unsafe {
            let p = heap.alloc(tc, size, 8, false);
            heap.free_ptr(tc, p);
        }
    }
    for &tc in &caches {
        // SAFETY: as above.
        unsafe { heap.retire_thread_cache(tc) };
    }
    assert_eq!(caches.iter().filter(|&&tc| cap(tc) != 0).count(), MAX_WARM);
}

/// The free key never takes a correct free for a double free: blocks handed out again without their first
/// word written, freed through this cache or another one, through flushes and refills.
#[test]
fn unwritten_blocks_freed_anywhere_are_not_double_frees() {
    let heap = Heap::new(SystemPages);
    let a = heap.new_thread_cache(1);
    let b = heap.new_thread_cache(2);
    let class = class_for(48, 8).unwrap();
    // Under Miri (where each round takes minutes): two rounds cover both parities of which cache frees
    // which block, and a few blocks past two magazines still overflow each cache once.
    let rounds = if cfg!(miri) { 2 } else { 50 };
    let mut slabs = Vec::new();
    // SAFETY: `a` and `b` are this test's caches (one thread plays both owners); every block is live
    // when freed, and freed once per allocation.
    unsafe {
        for round in 0..rounds {
            // The same block again and again, never written.
            for _ in 0..10 {
                let p = heap.alloc(a, 48, 8, false);
                heap.free_checked(a, class, p);
            }
            // Many blocks: magazines overflow (flush), then refill and hand out.
            let n = MAG_CAPACITY[class] as usize * scaled(3, 2) + scaled(0, 4);
            let blocks: Vec<_> = (0..n).map(|_| heap.alloc(a, 48, 8, false)).collect();
            for (i, &p) in blocks.iter().enumerate() {
                // Half freed by the other cache: a cross-thread free of an unwritten block.
                let tc = if (i + round) % 2 == 0 { a } else { b };
                heap.free_checked(tc, class, p);
            }
            let again: Vec<_> = (0..n).map(|_| heap.alloc(b, 48, 8, false)).collect();
            for &p in &again {
                heap.free_checked(a, class, p);
            }
            // And the batch and uncached paths.
            let mut out = vec![core::ptr::null_mut(); 100];
            let got = heap.alloc_batch(b, 48, 8, &mut out);
            heap.free_batch(a, 48, 8, &out[..got]);
            let p = heap.alloc(core::ptr::null_mut(), 48, 8, false);
            heap.free_checked(core::ptr::null_mut(), class, p);
            slabs.extend(
                blocks
                    .iter()
                    .chain(&again)
                    .chain(&out[..got])
                    .chain([&p])
                    .map(|&q| slab_of(segment_of(q), q)),
            );
        }
        heap.retire_thread_cache(a);
        heap.retire_thread_cache(b);
        // Every block came home: each slab the blocks came from is wholly free again, or back in its pool.
        slabs.sort();
        slabs.dedup();
        for &s in &slabs {
            assert!(
                (*s).magic == SLAB_POOLED || (*s).free == (*s).capacity,
                "slab {s:p}: {} of {} blocks free after every block was freed",
                (*s).free,
                (*s).capacity
            );
        }
    }
}

/// A full magazine's flush writes no block: each flushed block keeps its free's key, a refilled block
/// nobody took stays unwritten (its page need not become resident), and the slots the flush took hold
/// their blocks tagged. A free of a flushed block (a double free) is then sent to the slow path's
/// look, while an unwritten block popped and freed again is taken back without a look at its slab.
#[test]
fn a_flush_writes_no_block_and_tags_the_slots_it_took() {
    use crate::cache::free_key::key_word;
    use crate::cache::{read_key, KeySays, OwnKey, Push};
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(512, 8).unwrap();
    let cap = MAG_CAPACITY[class] as usize;
    // SAFETY: `tc` is this test's cache; every block is freed once (the pushes that return `Suspect`
    // write nothing).
    unsafe {
        // The first allocation refills half the magazine and takes its top block.
        let first = heap.alloc(tc, 512, 8, false);
        let m = ThreadCache::mag(tc, class);
        let refilled = (*m).refilled as usize;
        assert_eq!((*m).count as usize, refilled - 1);
        let untouched = ThreadCache::slot(tc, class, 0);
        let before = key_word(untouched);
        // Blocks from the slabs directly (not through this magazine), freed through it: pushes above the
        // refilled slots until it is full, then a flush of its newer half.
        let mut extra = vec![core::ptr::null_mut(); cap - refilled + 2 + cap / 2];
        assert_eq!(heap.refill(class, &mut extra), extra.len());
        let pushes = cap - (*m).count as usize;
        for &p in &extra[..pushes] {
            heap.free_checked(tc, class, p);
        }
        assert_eq!((*m).count as usize, cap);
        let id = (*tc).id as usize;
        let flushed = &extra[pushes - cap / 2..pushes];
        let keys: Vec<usize> = flushed.iter().map(|&p| key_word(p)).collect();
        // The next free flushes the newer half: the last cap/2 pushed blocks.
        heap.free_checked(tc, class, extra[pushes]);
        assert_eq!((*m).count as usize, cap / 2 + 1);
        for (i, &p) in flushed.iter().enumerate() {
            let slot = cap / 2 + i;
            assert_eq!(key_word(p), keys[i], "a flushed block is not written");
            assert_eq!(read_key(p), KeySays::Slot { id, slot });
            if slot > cap / 2 {
                assert_eq!(
                    ThreadCache::slot(tc, class, slot).addr(),
                    p.addr() | 1,
                    "its slot holds it tagged"
                );
            }
            assert_eq!(
                ThreadCache::push_keyed(tc, class, p),
                Push::Suspect,
                "freed again: the slow path looks"
            );
            assert_eq!(
                ThreadCache::own_key_says(tc, class, p),
                OwnKey::Stale,
                "in its slab, perhaps"
            );
        }
        assert_eq!(
            key_word(untouched),
            before,
            "a refilled block nobody took is not written"
        );
        // Two pushed blocks popped and freed again unwritten, the older first: `a`, keyed in this
        // epoch, pushed at once; `b`, keyed in the one before but below where the flush started, after
        // the slow path's word on it.
        let a = ThreadCache::pop(tc, class);
        let b = ThreadCache::pop(tc, class);
        assert_eq!(ThreadCache::push_keyed(tc, class, a), Push::Done);
        assert_eq!(ThreadCache::push_keyed(tc, class, b), Push::Suspect);
        assert_eq!(ThreadCache::own_key_says(tc, class, b), OwnKey::Popped);
        heap.free_checked(tc, class, b);
        assert_eq!((*m).count as usize, cap / 2 + 1);
        for &p in &extra[pushes + 1..] {
            heap.free_checked(tc, class, p);
        }
        heap.free_checked(tc, class, first);
        heap.retire_thread_cache(tc);
    }
}

/// A magazine's `top` copy of its top slot (which lets a pop's result skip the wait for the count) is
/// kept by pushes, pops, refills and flushes; and a pop hands out the top slot's block even when the copy
/// says something else.
#[test]
fn a_pop_hands_out_the_top_slot_whatever_its_copy_says() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(64, 8).unwrap();
    let cap = MAG_CAPACITY[class] as usize;
    // SAFETY: `tc` is this test's cache; every block is freed once; `top` is written only by this thread.
    unsafe {
        let m = ThreadCache::mag(tc, class);
        let top_is_top_slot = move |what: &str| {
            let n = (*m).count as usize;
            assert!(n > 0, "{what}: an empty magazine");
            let top = (&raw const (*m).top).read();
            assert_eq!(
                top,
                ThreadCache::slot(tc, class, n - 1),
                "{what}: top is slots[{}]",
                n - 1
            );
        };
        // A refill (the first allocation), then pushes up to a flush, then the pops after it.
        let first = heap.alloc(tc, 64, 8, false);
        top_is_top_slot("after the refill");
        let mut blocks = vec![first];
        blocks.extend((0..cap * 2).map(|_| heap.alloc(tc, 64, 8, false)));
        for (i, &p) in blocks.iter().enumerate() {
            heap.free_checked(tc, class, p);
            top_is_top_slot(&format!("after free {i}"));
        }
        assert!(heap.stats().classes[class].flushes >= 1, "the frees flushed");
        // A flush alone (as a thread's exit or a trim takes blocks), with no push after it.
        let mut buf = crate::scratch::buffer::<*mut u8, 8>();
        let n = ThreadCache::take_newest(tc, class, 3, &mut buf);
        assert_eq!(n, 3);
        heap.flush_from_magazine(tc, class, crate::scratch::written(&buf, n));
        top_is_top_slot("after a flush");
        // Every pop hands out the top slot, in the order a stack would.
        let mut popped = Vec::new();
        while (*m).count > 1 {
            let n = (*m).count as usize;
            let want = ThreadCache::slot(tc, class, n - 1);
            // A stale copy, as a refill or flush could leave it: the slot wins.
            if n % 3 == 0 {
                (&raw mut (*m).top).write(blocks[0].wrapping_add(64 * 1000));
            }
            assert_eq!(ThreadCache::pop(tc, class), want, "the pop at count {n}");
            top_is_top_slot(&format!("after the pop at count {n}"));
            popped.push(want);
        }
        // The last pop: the copy refreshed from `slots[-1]`, itself, harmlessly.
        let last = ThreadCache::slot(tc, class, 0);
        assert_eq!(ThreadCache::pop(tc, class), last);
        assert_eq!((*m).count, 0);
        assert!(
            ThreadCache::pop(tc, class).is_null(),
            "an empty magazine pops nothing"
        );
        popped.push(last);
        // A refill into the empty magazine.
        let mut more = vec![core::ptr::null_mut(); 4];
        assert_eq!(heap.refill(class, &mut more), 4);
        ThreadCache::fill(tc, class, &more);
        top_is_top_slot("after a fill");
        for &p in more.iter().rev() {
            assert_eq!(ThreadCache::pop(tc, class), p);
            popped.push(p);
        }
        let mut seen = popped.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), popped.len(), "no block handed out twice");
        for p in popped {
            heap.free_checked(tc, class, p);
        }
        heap.retire_thread_cache(tc);
    }
}

// ----------------------------------------------------------------------------------------------------
// Magazines and their keys on their own, over a test-owned cache and words as blocks (no heap).

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

/// A test-owned cache with id `id`: the guard, and the pointer the tests use.
fn cache_with_id(id: u32) -> (TestCache, *mut ThreadCache) {
    let mut tc = Box::new(ThreadCache::EMPTY);
    tc.id = id;
    let tcp = Box::into_raw(tc);
    (TestCache(tcp), tcp)
}

#[test]
fn magazine_is_lifo_and_bounded() {
    let mut tc = Box::new(ThreadCache::EMPTY);
    let tcp: *mut ThreadCache = &mut *tc;
    let mut blocks = [0u64; MAG_MAX + 1];
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
    let mut tc = Box::new(ThreadCache::EMPTY);
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

/// The free path's one-compare test: two keys of one block and magazine differ only in where the
/// block went and in the epoch, and rotated by `WHERE_ROTATE` their difference is the slot
/// difference and the epoch difference, in the low bits.
#[test]
fn keys_of_one_block_differ_only_in_the_slot_and_epoch() {
    let mut x = 0x9e37_79b9_7f4a_7c15usize;
    for round in 0..64 {
        x = x.rotate_left(23).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ round;
        let p = core::ptr::without_provenance_mut::<u8>(x & ((1 << 47) - 8));
        let tag = tag_of(round % MAX_CACHE_ID) ^ (x as u64 & 0xffff);
        for slot in 0..MAG_MAX {
            assert_eq!(
                (slot_key(p, tag, slot) ^ slot_key(p, tag, 0)).rotate_left(WHERE_ROTATE),
                slot << (SLOT_SHIFT - EPOCH_SHIFT)
            );
        }
        let later = tag_at(round % MAX_CACHE_ID, round + 1) ^ (x as u64 & 0xffff);
        let d = (slot_key(p, later, 5) ^ slot_key(p, tag, 0)).rotate_left(WHERE_ROTATE);
        assert!(d <= WHERE_MASK && d & EPOCH_MASK != 0, "round {round}: {d:#x}");
        assert_eq!(d >> (SLOT_SHIFT - EPOCH_SHIFT), 5);
    }
}

/// A program's 1- or 2-byte write to a freed block's first bytes (a string's NUL) breaks the key's
/// address part, so its next free is not sent to the slow check (keys stored rotated the other way,
/// with where the block went in the low 16 bits, would read as a key for another slot). A 4-byte write
/// breaks it too: the epoch sits above the address part's 32 bits.
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
