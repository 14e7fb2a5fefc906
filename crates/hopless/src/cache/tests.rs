//! The thread cache's tests over a private heap on `SystemPages`, natively and under Miri: refill and
//! flush, parked caches' pages, the free key through refills and flushes, the `top` copy. Magazines and
//! their keys on their own, over a test-owned cache, are in `magazine_tests.rs`.

use crate::cache::ThreadCache;
use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::segment::{segment_of, slab_of, SLAB_POOLED};
use crate::size_class::{class_for, class_size, MAG_CAPACITY, NUM_CLASSES};
use crate::test_util::{check, fill, flush_when_full, scaled};

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
            // A thread that only frees the class: its magazine flushes when full.
            flush_when_full(tc, class);
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
        flush_when_full(tc, class);
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
            flush_when_full(tc, class);
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
