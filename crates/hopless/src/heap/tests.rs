//! Core tests over a private heap on `SystemPages`, natively and under Miri. The heap as a whole: every class round trip, realloc, batches, threads, the double-free look after refills (the purge tests are in `purge_tests.rs`).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::cache::ThreadCache;
use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::size_class::{class_for, class_size, MAG_CAPACITY, NUM_CLASSES};
use crate::test_util::{check, fill, flush_when_full, scaled};

#[test]
fn every_class_round_trips_with_contents_intact() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let per = scaled(200, 3);
    // SAFETY: `tc` is this test's cache; blocks are freed once.
    unsafe {
        for class in 0..NUM_CLASSES {
            let size = class_size(class);
            let blocks: Vec<_> = (0..per).map(|_| heap.alloc(tc, size, 8, false)).collect();
            for (i, &p) in blocks.iter().enumerate() {
                assert!(!p.is_null());
                assert_eq!(heap.usable_size(p), size);
                fill(p, size.min(256), (i + class) as u8);
            }
            for (i, &p) in blocks.iter().enumerate() {
                check(p, size.min(256), (i + class) as u8);
                heap.free_ptr(tc, p);
            }
        }
        heap.retire_thread_cache(tc);
    }
    let st = heap.stats();
    for (class, c) in st.classes.iter().enumerate() {
        assert!(
            c.slabs <= 1,
            "class {class} holds {} slabs after everything was freed",
            c.slabs
        );
    }
    heap.trim();
    let st = heap.stats();
    assert!(st.classes.iter().all(|c| c.slabs == 0));
    assert!(st.purged_slabs > 0);
}

#[test]
fn realloc_stays_in_place_within_a_class_and_moves_across() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    // SAFETY: `tc` is this test's cache; each block is live when used.
    unsafe {
        let p = heap.alloc(tc, 100, 8, false);
        fill(p, 100, 7);
        assert_eq!(
            heap.realloc(tc, p, 100, 8, 110),
            p,
            "100 and 110 share the 112 class"
        );
        let q = heap.realloc(tc, p, 110, 8, 1000);
        assert_ne!(q, p);
        check(q, 100, 7);
        fill(q, 1000, 9);
        let r = heap.realloc(tc, q, 1000, 8, 600_000);
        check(r, 1000, 9);
        let s = heap.realloc(tc, r, 600_000, 8, 500_000);
        assert_eq!(
            s, r,
            "a large block shrinks in place while it uses half its mapping"
        );
        let t = heap.realloc(tc, s, 500_000, 8, 10);
        check(t, 10, 9);
        heap.free_ptr(tc, t);
        heap.retire_thread_cache(tc);
    }
}

#[test]
fn batches_move_many_blocks_per_call() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let n = scaled(1000, 150);
    let mut out = vec![core::ptr::null_mut(); n];
    // SAFETY: `tc` is this test's cache; blocks freed once.
    unsafe {
        assert_eq!(heap.alloc_batch(tc, 200, 8, &mut out), n);
        let mut sorted = out.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "no block handed out twice");
        for (i, &p) in out.iter().enumerate() {
            fill(p, 200, i as u8);
        }
        for (i, &p) in out.iter().enumerate() {
            check(p, 200, i as u8);
        }
        heap.free_batch(tc, 200, 8, &out);
        let class = class_for(200, 8).unwrap();
        assert_eq!((*ThreadCache::mag(tc, class)).count, MAG_CAPACITY[class]);
        heap.retire_thread_cache(tc);
    }
}

/// With thread-owned slabs and without: with them, the consumer's frees are remote frees the
/// producer folds, and its exit (while the consumer still frees) hands its slabs over.
#[test]
fn threads_free_each_others_blocks() {
    for owned in [false, true] {
        threads_free_each_others_blocks_with(owned);
    }
}

fn threads_free_each_others_blocks_with(owned: bool) {
    let heap = Heap::new(SystemPages);
    heap.set_owned_slabs(owned);
    let n = scaled(20_000, 200);
    /// A block on its way to the other thread (a pointer, not an integer: Miri runs with strict provenance).
    struct Sent(*mut u8);
    // SAFETY: the sender gives the block up; only the receiver uses it afterwards.
    unsafe impl Send for Sent {}
    let (tx, rx) = std::sync::mpsc::sync_channel::<Sent>(1024);
    std::thread::scope(|s| {
        let heap = &heap;
        s.spawn(move || {
            let tc = heap.new_thread_cache(1);
            for i in 0..n {
                let size = 16 + (i % 7) * 40;
                // SAFETY: this thread's cache.
                let p = unsafe { heap.alloc(tc, size, 8, false) };
                fill(p, size, i as u8);
                tx.send(Sent(p)).unwrap();
            }
            // SAFETY: the thread is done with its cache.
            unsafe { heap.retire_thread_cache(tc) };
        });
        s.spawn(move || {
            let tc = heap.new_thread_cache(1);
            for i in 0..n {
                let p = rx.recv().unwrap().0;
                let size = 16 + (i % 7) * 40;
                check(p, size, i as u8);
                // SAFETY: the block came from the other thread, which gave it up.
                unsafe { heap.free_ptr(tc, p) };
            }
            // SAFETY: the thread is done with its cache.
            unsafe { heap.retire_thread_cache(tc) };
        });
    });
    heap.trim();
    assert!(heap.stats().classes.iter().all(|c| c.slabs == 0));
}

/// A program that frees its blocks without writing their first word (the Rust view of `hopless bench
/// alloc`, a `Vec::with_capacity` dropped unused): each free of a refilled block, the key of its free
/// before the flush still there (naming a slot that no longer holds it), looks through the refilled slots; at the second look the blocks that refill left in the
/// magazine are keyed. The next frees then take no look, and a double free of one of those blocks is
/// still seen: its key names the slot that holds it, for the owner's check and another thread's alike.
#[test]
fn unwritten_frees_of_refilled_blocks_key_the_rest_of_the_refill_at_the_second_look() {
    use crate::cache::{read_key, KeySays, KEY_AFTER_LOOKS};
    assert_eq!(KEY_AFTER_LOOKS, 2);
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(64, 8).unwrap();
    let cap = MAG_CAPACITY[class] as usize;
    // SAFETY: this test's cache; every block is freed once and never written.
    unsafe {
        // Freed unwritten, three magazines' worth: full magazines flush, the blocks keeping their keys.
        let id = (*tc).id as usize;
        let stale = |p: *mut u8, slot: usize| matches!(read_key(p), KeySays::Slot { id: i, slot: s } if i == id && s != slot);
        let blocks: Vec<*mut u8> = (0..3 * cap).map(|_| heap.take_block(tc, class)).collect();
        for &p in &blocks {
            flush_when_full(tc, class);
            heap.free_checked(tc, class, p);
        }
        // Hand out what the magazine holds; the next take refills with blocks flushed before.
        let mut out = Vec::new();
        while ThreadCache::count(tc, class) > 0 {
            out.push(heap.take_block(tc, class));
        }
        // Handed out first and kept: its slot stays above the count (q1 and q2 go back below it), so
        // the keying, which stops at the count, must leave it alone.
        let kept = heap.take_block(tc, class);
        let kept_key = kept.cast::<usize>().read();
        assert!(
            matches!(read_key(kept), KeySays::Slot { .. }),
            "refilled from the slab, its key unwritten"
        );
        // The first look builds the refill filter from the refilled blocks still in the magazine, q1
        // and q2 among them: their frees below then look through the refilled slots.
        let r = ThreadCache::slot(tc, class, 0);
        assert!(stale(r, 0));
        assert!(
            ThreadCache::holds_refilled(tc, class, r),
            "the look through the refilled slots finds it"
        );
        let (q1, q2) = (heap.take_block(tc, class), heap.take_block(tc, class));
        let left = ThreadCache::count(tc, class);
        assert!(left > 1);
        assert!(
            stale(q1, left + 1) && stale(q2, left),
            "keys for slots that do not hold them"
        );

        heap.free_checked(tc, class, q1);
        assert!(stale(r, 0), "one look: nothing keyed yet");
        assert!(ThreadCache::holds_refilled(tc, class, r));
        heap.free_checked(tc, class, q2);
        assert_eq!(
            read_key(r),
            KeySays::Slot { id, slot: 0 },
            "keyed for the slot that holds it"
        );
        assert!(
            ThreadCache::holds_at(tc, class, 0, r),
            "where a double free from any thread looks"
        );
        assert!(
            !ThreadCache::holds_refilled(tc, class, r),
            "no refilled range left to look through"
        );
        assert_eq!(
            kept.cast::<usize>().read(),
            kept_key,
            "a block handed out is not the magazine's to write"
        );
        for i in 1..left {
            let s = ThreadCache::slot(tc, class, i);
            assert_eq!(read_key(s), KeySays::Slot { id, slot: i });
        }
        // Handed out and freed again unwritten: each finds its own key (or another slot's, which does
        // not hold it) and is taken back without a report.
        let again: Vec<*mut u8> = (0..left + 2).map(|_| heap.take_block(tc, class)).collect();
        for &p in again.iter().chain(&out).chain([&kept]) {
            heap.free_checked(tc, class, p);
        }
        heap.retire_thread_cache(tc);
    }
    heap.trim();
    assert_eq!(heap.stats().classes[class].outstanding_blocks, 0);
}

/// The refill filter is built by the first look after a refill, not by the refill: whenever it is
/// built (after pops, after pushes of other blocks, after pops that went below slots pushed since), a
/// refilled block the magazine holds is found by the double-free check, by the look or (pushed again
/// since) by its key for the slot that holds it, and a block it handed out is not. Checked against the
/// magazine's own slots after a random walk of pops and unwritten frees, in every round.
#[test]
fn the_refill_filter_built_late_still_finds_every_refilled_block_the_magazine_holds() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(64, 8).unwrap();
    let cap = MAG_CAPACITY[class] as usize;
    // SAFETY: the cache was just made.
    let id = unsafe { (*tc).id } as usize;
    let mut rng = SmallRng::seed_from_u64(0x9e37_79b9_7f4a_7c15);
    // SAFETY: this test's cache; every block is freed once and never written.
    unsafe {
        // Blocks freed unwritten and flushed: a refill brings them back with their old keys.
        let blocks: Vec<*mut u8> = (0..3 * cap).map(|_| heap.take_block(tc, class)).collect();
        for &p in &blocks {
            flush_when_full(tc, class);
            heap.free_checked(tc, class, p);
        }
        while ThreadCache::count(tc, class) > 0 {
            let _ = heap.take_block(tc, class);
        }
        let (rounds, mut found) = (scaled(200, 12), 0);
        for round in 0..rounds {
            // A refill (the magazine is empty), then a walk of pops and frees before the first look.
            let mut out = vec![heap.take_block(tc, class)];
            let refilled: Vec<*mut u8> = {
                let m = ThreadCache::mag(tc, class);
                (0..(*m).refilled as usize)
                    .map(|i| ThreadCache::slot(tc, class, i))
                    .collect()
            };
            for _ in 0..rng.gen_range(0..40) {
                if rng.gen_ratio(2, 3) && ThreadCache::count(tc, class) > 0 {
                    out.push(heap.take_block(tc, class));
                } else if let Some(p) = out.pop() {
                    heap.free_checked(tc, class, p);
                }
            }
            let count = ThreadCache::count(tc, class);
            let held: Vec<*mut u8> = (0..count).map(|i| ThreadCache::slot(tc, class, i)).collect();
            // The first look: a refilled block still held is found, wherever the walk left it.
            let end = count.min((*ThreadCache::mag(tc, class)).refilled as usize);
            for &p in &refilled {
                match held.iter().position(|&h| h == p) {
                    Some(i) if i < end => {
                        found += 1;
                        let keyed = crate::cache::read_key(p) == crate::cache::KeySays::Slot { id, slot: i };
                        assert!(
                            keyed || ThreadCache::holds_refilled(tc, class, p),
                            "round {round}: refilled block in slot {i} neither keyed for it nor found"
                        );
                    }
                    Some(_) => {}
                    None => assert!(
                        !ThreadCache::holds_refilled(tc, class, p),
                        "round {round}: a block handed out is found"
                    ),
                }
            }
            // Everything back, unwritten; the magazine emptied for the next round's refill.
            for p in out {
                heap.free_checked(tc, class, p);
            }
            while ThreadCache::count(tc, class) > 0 {
                let _ = heap.take_block(tc, class);
            }
        }
        assert!(
            found > rounds * 5,
            "the walks left refilled blocks to find: {found}"
        );
        heap.retire_thread_cache(tc);
    }
}
