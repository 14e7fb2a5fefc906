//! Core tests over a private heap on `SystemPages`, natively and under Miri. The heap as a whole: every class round trip, pools and purging, realloc, batches, threads.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::cache::ThreadCache;
use crate::heap::Heap;
use crate::platform::{PageSource, SystemPages};
use crate::segment::{SEGMENT_SIZE, SMALL_SLAB_SHIFT};
use crate::size_class::{class_for, class_size, MAG_CAPACITY, NUM_CLASSES};
use crate::test_util::{check, fill, scaled};

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

/// Takes `slabs` whole slabs of the 4096-byte class (16 blocks each), writes each block's start, and
/// frees them all: `slabs - 1` go back to the pool (the class keeps one).
fn fill_and_empty_slabs(heap: &Heap<SystemPages>, slabs: usize, touched: usize) -> Vec<*mut u8> {
    let class = class_for(4096, 8).unwrap();
    let mut blocks = vec![core::ptr::null_mut(); 16 * slabs];
    assert_eq!(heap.refill(class, &mut blocks), blocks.len());
    assert_eq!(heap.stats().classes[class].slabs, slabs as u64);
    for (i, &p) in blocks.iter().enumerate() {
        fill(p, touched, i as u8 | 1);
    }
    // SAFETY: every block freed once.
    unsafe { heap.flush(class, &blocks) };
    assert_eq!(heap.stats().classes[class].slabs, 1);
    blocks
}

/// How many of `blocks` (refilled, `touched` bytes looked at) read as zero: purged since they were written.
fn zero_blocks(blocks: &[*mut u8], touched: usize) -> usize {
    blocks
        .iter()
        .filter(|&&p| {
            // SAFETY: live 4096-byte blocks.
            unsafe { core::slice::from_raw_parts(p, touched) }
                .iter()
                .all(|&b| b == 0)
        })
        .count()
}

#[test]
fn emptied_slabs_go_back_to_the_pool_and_are_purged_beyond_the_cap() {
    let heap = Heap::new(SystemPages);
    heap.set_purge_delay_ms(u32::MAX);
    let class = class_for(4096, 8).unwrap();
    let cap = heap.max_dirty_small();
    let slabs = cap + scaled(20, 3);
    // Under Miri, touch only the start of each block: per-byte checks are slow there.
    let touched = scaled(4096, 16);
    fill_and_empty_slabs(&heap, slabs, touched);
    let st = heap.stats();
    assert_eq!(
        st.purged_slabs as usize,
        slabs - 1 - cap,
        "the oldest past the cap, no more"
    );
    // Purged slabs come back zeroed.
    let mut again = vec![core::ptr::null_mut(); 16 * slabs];
    assert_eq!(heap.refill(class, &mut again), again.len());
    assert!(zero_blocks(&again, touched) >= (slabs - 1 - cap) * 16);
    // SAFETY: freed once.
    unsafe { heap.flush(class, &again) };
}

/// The CPython producer/consumer case: slabs emptied and taken again within the purge delay
/// cost no `madvise` and no fresh page faults (their contents are still there).
#[test]
fn slabs_emptied_and_refilled_within_the_delay_are_not_purged() {
    let heap = Heap::new(SystemPages);
    heap.set_purge_delay_ms(u32::MAX);
    let class = class_for(4096, 8).unwrap();
    let slabs = scaled(40, 12);
    let touched = scaled(4096, 16);
    for _round in 0..3 {
        fill_and_empty_slabs(&heap, slabs, touched);
        assert_eq!(heap.stats().purged_slabs, 0);
    }
    let mut again = vec![core::ptr::null_mut(); 16 * slabs];
    assert_eq!(heap.refill(class, &mut again), again.len());
    assert_eq!(
        zero_blocks(&again, touched),
        0,
        "every block still holds what was written"
    );
    // SAFETY: freed once.
    unsafe { heap.flush(class, &again) };
    heap.trim();
    assert_eq!(
        heap.stats().purged_slabs as usize,
        slabs,
        "trim purges what waited"
    );
}

/// `SystemPages` that counts its `decommit` and `leave_huge` calls: how many calls a purge pass makes.
/// With `huge`, it says it has advised huge pages (as `OsPages` does past the 64 MiB mark).
#[derive(Default)]
struct CountingPages {
    decommits: core::sync::atomic::AtomicUsize,
    leaves: core::sync::atomic::AtomicUsize,
    huge: bool,
}

// SAFETY: every call goes to `SystemPages`, which keeps the contract; counting changes nothing.
unsafe impl PageSource for CountingPages {
    fn reserve(&self, size: usize, align: usize) -> *mut u8 {
        SystemPages.reserve(size, align)
    }

    unsafe fn release(&self, ptr: *mut u8, size: usize, align: usize) {
        // SAFETY: forwarded: the caller keeps `release`'s contract.
        unsafe { SystemPages.release(ptr, size, align) }
    }

    unsafe fn decommit(&self, ptr: *mut u8, size: usize) {
        self.decommits.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded: the caller keeps `decommit`'s contract.
        unsafe { SystemPages.decommit(ptr, size) }
    }

    unsafe fn leave_huge(&self, _base: *mut u8, _size: usize, _ptr: *mut u8, _len: usize) {
        self.leaves.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }

    fn huge_pages_used(&self) -> bool {
        self.huge
    }
}

#[test]
fn a_huge_page_is_left_once_until_the_huge_page_advice_is_given_again() {
    let heap = Heap::new(CountingPages {
        huge: true,
        ..Default::default()
    });
    heap.set_purge_delay_ms(0);
    let class = class_for(4096, 8).unwrap();
    let slabs = 8;
    let mut blocks = vec![core::ptr::null_mut(); 16 * slabs];
    assert_eq!(heap.refill(class, &mut blocks), blocks.len());
    let slot_of = |p: *mut u8| p.addr() >> SMALL_SLAB_SHIFT;
    blocks.sort_unstable_by_key(|&p| p.addr());
    let huge = crate::platform::huge_page_size();
    let huge_pages = |bs: &[*mut u8]| {
        let mut h: Vec<usize> = bs.iter().map(|&p| p.addr() / huge).collect();
        h.dedup();
        h.len()
    };
    let leaves = || heap.source.leaves.load(core::sync::atomic::Ordering::Relaxed);
    // One slab at a time: with no delay each put purges the one before it on its own.
    let (first, second) = blocks.split_at(16 * slabs / 2);
    for slab in first.chunks(16) {
        assert!(slab.iter().all(|&p| slot_of(p) == slot_of(slab[0])));
        // SAFETY: each freed once.
        unsafe { heap.flush(class, slab) };
    }
    let purged = heap.stats().purged_slabs;
    assert!(purged >= 2, "{purged}");
    assert_eq!(
        leaves(),
        huge_pages(first),
        "each huge page left once, not once a slab"
    );
    // The huge-page advice again (the 64 MiB mark): what was left counts no more.
    for pool in heap.pools() {
        pool.advise_huge_all(&heap.source);
    }
    let before = leaves();
    for slab in second.chunks(16) {
        // SAFETY: each freed once.
        unsafe { heap.flush(class, slab) };
    }
    assert!(heap.stats().purged_slabs >= purged + 2);
    assert_eq!(
        leaves() - before,
        huge_pages(second),
        "left again after the advice, once a huge page"
    );
}

#[test]
fn a_trim_purges_neighbouring_slabs_in_one_call_and_never_a_slab_in_use() {
    let heap = Heap::new(CountingPages::default());
    heap.set_purge_delay_ms(u32::MAX);
    let class = class_for(4096, 8).unwrap();
    let slabs = 12;
    let mut blocks = vec![core::ptr::null_mut(); 16 * slabs];
    assert_eq!(heap.refill(class, &mut blocks), blocks.len());
    for (i, &p) in blocks.iter().enumerate() {
        fill(p, 64, i as u8 | 1);
    }
    // The slabs by address (a slab's slot is aligned to its size); the 4th and the 8th stay in use.
    let slot_of = |p: *mut u8| p.addr() >> SMALL_SLAB_SHIFT;
    let mut slots: Vec<usize> = blocks.iter().map(|&p| slot_of(p)).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), slabs);
    let kept = [slots[3], slots[7]];
    let (held, freed): (Vec<_>, Vec<_>) = blocks
        .iter()
        .enumerate()
        .partition(|(_, &p)| kept.contains(&slot_of(p)));
    let freed: Vec<*mut u8> = freed.into_iter().map(|(_, &p)| p).collect();
    // SAFETY: each freed once.
    unsafe { heap.flush(class, &freed) };
    assert_eq!(
        heap.source.decommits.load(core::sync::atomic::Ordering::Relaxed),
        0,
        "the delay holds purges back"
    );
    heap.trim();
    assert_eq!(heap.stats().purged_slabs as usize, slabs - 2);
    for &(i, &p) in &held {
        check(p, 64, i as u8 | 1);
    }
    // One call per run of neighbouring slots in one segment, and fewer calls than slabs.
    let freed_slots: Vec<usize> = slots.iter().copied().filter(|s| !kept.contains(s)).collect();
    let same_segment =
        |a: usize, b: usize| (a << SMALL_SLAB_SHIFT) / SEGMENT_SIZE == (b << SMALL_SLAB_SHIFT) / SEGMENT_SIZE;
    let runs = 1 + freed_slots
        .windows(2)
        .filter(|w| w[1] != w[0] + 1 || !same_segment(w[0], w[1]))
        .count();
    assert_eq!(
        heap.source.decommits.load(core::sync::atomic::Ordering::Relaxed),
        runs
    );
    assert!(
        runs < slabs - 2,
        "a fresh segment's slabs lie side by side: {freed_slots:x?}"
    );
    // The purged slabs come back zeroed.
    let mut again = vec![core::ptr::null_mut(); 16 * (slabs - 2)];
    assert_eq!(heap.refill(class, &mut again), again.len());
    assert_eq!(zero_blocks(&again, 64), again.len());
    // SAFETY: each freed once.
    unsafe {
        heap.flush(class, &again);
        let held: Vec<*mut u8> = held.iter().map(|&(_, &p)| p).collect();
        heap.flush(class, &held);
    }
}

#[test]
fn a_trim_purges_more_slabs_than_one_batch_holds() {
    let heap = Heap::new(SystemPages);
    heap.set_purge_delay_ms(u32::MAX);
    let class = class_for(4096, 8).unwrap();
    // Past two batches of `PURGE_BATCH` (64), and not a multiple of it.
    let slabs = 2 * crate::central::PURGE_BATCH + 5;
    let touched = scaled(4096, 16);
    fill_and_empty_slabs(&heap, slabs, touched);
    assert_eq!(heap.stats().purged_slabs, 0);
    heap.trim();
    assert_eq!(
        heap.stats().purged_slabs as usize,
        slabs,
        "every emptied slab, the class's kept one too"
    );
    let mut again = vec![core::ptr::null_mut(); 16 * slabs];
    assert_eq!(heap.refill(class, &mut again), again.len());
    assert_eq!(zero_blocks(&again, touched), again.len());
    // SAFETY: freed once.
    unsafe { heap.flush(class, &again) };
}

#[test]
fn slabs_that_waited_out_the_delay_are_purged_at_the_next_put() {
    let heap = Heap::new(SystemPages);
    heap.set_purge_delay_ms(0);
    let slabs = scaled(20, 6);
    fill_and_empty_slabs(&heap, slabs, 16);
    // Each put finds the oldest due: nothing stays dirty.
    assert_eq!(heap.stats().purged_slabs as usize, slabs - 1);
}

#[cfg(not(miri))]
#[test]
fn a_refill_from_the_pool_purges_a_slab_past_the_delay() {
    let heap = Heap::new(SystemPages);
    heap.set_purge_delay_ms(30);
    fill_and_empty_slabs(&heap, 5, 16);
    assert_eq!(heap.stats().purged_slabs, 0, "within the delay");
    std::thread::sleep(std::time::Duration::from_millis(80));
    // Another class's first slab comes from the pool (the newest dirty one); the refill then purges
    // the other three, now due.
    let other = class_for(64, 8).unwrap();
    let mut one = [core::ptr::null_mut(); 1];
    assert_eq!(heap.refill(other, &mut one), 1);
    assert_eq!(heap.stats().purged_slabs, 3);
    // SAFETY: freed once.
    unsafe { heap.flush(other, &one) };
}

#[cfg(not(miri))]
#[test]
fn a_large_free_purges_the_slabs_past_the_delay() {
    let heap = Heap::new(SystemPages);
    heap.set_purge_delay_ms(30);
    fill_and_empty_slabs(&heap, 5, 16);
    std::thread::sleep(std::time::Duration::from_millis(80));
    // SAFETY: no thread cache; the large block is freed once.
    unsafe {
        let p = heap.alloc(core::ptr::null_mut(), 1 << 20, 8, false);
        assert!(!p.is_null());
        heap.free_ptr(core::ptr::null_mut(), p);
    }
    assert_eq!(
        heap.stats().purged_slabs,
        4,
        "every dirty slab waited out the delay"
    );
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
