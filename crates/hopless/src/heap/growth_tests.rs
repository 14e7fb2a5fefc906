//! Magazines that grow (`growth.rs`) over a private heap on `SystemPages`, natively and under Miri: a
//! cycling class grows instead of flushing and keeps its blocks keyed in their slots, a double free in
//! a grown slot is still found where its key says, and growth is given back by a magazine only freed
//! into, by the decay pass, and at a thread's exit.

use crate::cache::{read_key, KeySays, OwnKey, Push, ThreadCache};
use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::size_class::{class_for, class_size, MAG_CAPACITY};
use crate::test_util::{flush_when_full, scaled};

/// Blocks of 64 bytes cycled through one cache: `rounds` times, `n` allocated, then all freed.
///
/// # Safety
///
/// `tc` is the calling thread's live cache of `heap`.
unsafe fn cycle(heap: &Heap<SystemPages>, tc: *mut ThreadCache, class: usize, n: usize, rounds: usize) {
    for _ in 0..rounds {
        // SAFETY: per the caller; every block is freed once.
        unsafe {
            let blocks: Vec<*mut u8> = (0..n).map(|_| heap.take_block(tc, class)).collect();
            assert!(blocks.iter().all(|p| !p.is_null()));
            for &p in &blocks {
                heap.free_checked(tc, class, p);
            }
        }
    }
}

#[test]
fn a_cycling_class_grows_its_magazine_and_stops_flushing() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(64, 8).unwrap();
    let first = MAG_CAPACITY[class];
    // Enough blocks that the second cycle's refills grow the magazine past them (500 under Miri).
    let n = scaled(1000, 500);
    // SAFETY: this test's cache; every block is freed once (the double free below is only pushed,
    // and the push refuses it without writing anything).
    unsafe {
        // Seen once, the working set is a burst: the magazine flushes (and does not keep it).
        cycle(&heap, tc, class, n, 1);
        let m = ThreadCache::mag(tc, class);
        assert_eq!(
            (*m).cap,
            first,
            "a burst freed at once does not grow the magazine"
        );
        // Come round again, it cycles: the magazine grows to hold it.
        cycle(&heap, tc, class, n, 1);
        assert!((*m).cap as usize >= n && (*m).cap > first, "cap {}", (*m).cap);
        assert_eq!((*tc).grown_bytes, ((*m).cap - first) as usize * class_size(class));
        let before = heap.stats().classes[class];
        cycle(&heap, tc, class, n, 3);
        let after = heap.stats().classes[class];
        assert_eq!(
            (after.refills, after.flushes),
            (before.refills, before.flushes),
            "the working set stays in the magazine"
        );
        // Every block freed into the magazine is keyed for its slot (every one past the first
        // capacity); below it, blocks of the first refill never handed out carry nothing.
        let id = (*tc).id as usize;
        let count = ThreadCache::count(tc, class);
        assert!(count >= n);
        for slot in 0..count {
            let says = read_key(ThreadCache::slot(tc, class, slot));
            let fresh = slot < first as usize && says == KeySays::Nothing;
            assert!(
                fresh || says == KeySays::Slot { id, slot },
                "slot {slot}: {says:?}"
            );
        }
        // A block in a slot past the first capacity, freed again: the push refuses it (one block
        // handed out first, so that the magazine has room), and the look finds it where its key says.
        let spare = heap.take_block(tc, class);
        let slot = count - 7;
        let p = ThreadCache::slot(tc, class, slot);
        assert!(slot >= first as usize);
        assert_eq!(ThreadCache::push_keyed(tc, class, p), Push::Suspect);
        assert_eq!(ThreadCache::own_key_says(tc, class, p), OwnKey::Look);
        assert!(ThreadCache::holds_at(tc, class, slot, p));
        // Popped and handed out again, its free is a correct one.
        while ThreadCache::count(tc, class) > slot {
            let q = heap.take_block(tc, class);
            heap.free_checked(core::ptr::null_mut(), class, q);
        }
        heap.free_checked(tc, class, spare);
        heap.retire_thread_cache(tc);
        assert_eq!(ThreadCache::count(tc, class), 0);
        assert_eq!((*tc).grown_bytes, 0);
        assert!((*m).cap <= first, "back to its first capacity");
    }
    heap.trim();
    assert!(heap.stats().classes.iter().all(|c| c.slabs == 0));
}

#[test]
fn a_grown_magazine_only_freed_into_halves_when_full() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(64, 8).unwrap();
    let first = MAG_CAPACITY[class];
    let n = scaled(1000, 500);
    // SAFETY: this test's cache; every block is freed once.
    unsafe {
        // A burst, then cycles: the second grows the magazine, the third refills it (active since the
        // last decay pass, whenever a pass due on the clock ran).
        cycle(&heap, tc, class, n, 3);
        let m = ThreadCache::mag(tc, class);
        let cap = (*m).cap;
        assert!(cap > first);
        // Blocks from the slabs, freed through the magazine alone: it fills without a refill.
        let mut extra = vec![core::ptr::null_mut(); cap as usize + 1];
        assert_eq!(heap.refill(class, &mut extra), extra.len());
        let before = (*tc).grown_bytes;
        flush_when_full(tc, class);
        for &p in &extra {
            heap.free_checked(tc, class, p);
            assert!(ThreadCache::count(tc, class) <= (*m).cap as usize);
        }
        assert!((*m).cap < cap, "halved at the first full magazine");
        assert!((*tc).grown_bytes < before);
        heap.retire_thread_cache(tc);
    }
    heap.trim();
    assert!(heap.stats().classes.iter().all(|c| c.slabs == 0));
}

#[test]
fn the_decay_pass_halves_grown_magazines_that_stopped_cycling() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(64, 8).unwrap();
    let first = MAG_CAPACITY[class];
    let n = scaled(1000, 500);
    // SAFETY: this test's cache; every block is freed once.
    unsafe {
        // A burst, then cycles: the second grows the magazine, the third refills it (active since the
        // last decay pass, whenever a pass due on the clock ran).
        cycle(&heap, tc, class, n, 3);
        let m = ThreadCache::mag(tc, class);
        let cap = (*m).cap;
        // The pass after the growth sees it active, and keeps it.
        heap.decay(tc);
        assert_eq!((*m).cap, cap);
        // Used since from the magazine alone (no refill, no growth): each pass halves it, down to its
        // first capacity, flushing what lies above.
        cycle(&heap, tc, class, n / 4, 1);
        let slabs_before = heap.stats().classes[class].flushes;
        let mut last = cap;
        for _ in 0..cap.ilog2() {
            if last == first {
                break;
            }
            heap.decay(tc);
            let now = (*m).cap;
            assert!(now < last && ThreadCache::count(tc, class) <= now as usize);
            last = now;
        }
        assert_eq!(last, first);
        assert!(heap.stats().classes[class].flushes > slabs_before);
        assert_eq!((*tc).grown_bytes, 0);
        heap.retire_thread_cache(tc);
    }
    heap.trim();
    assert!(heap.stats().classes.iter().all(|c| c.slabs == 0));
}
