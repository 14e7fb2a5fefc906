//! Core tests of the heap's memory going back to the OS, over a private heap on `SystemPages`, natively
//! and under Miri: slabs emptied into the pool, the purge delay, purges in address order and batches, the
//! huge-page record, and which frees and refills purge what waited out the delay.

use crate::heap::Heap;
use crate::platform::{PageSource, SystemPages};
use crate::segment::{SEGMENT_SIZE, SMALL_SLAB_SHIFT};
use crate::size_class::class_for;
use crate::test_util::{check, fill, scaled};

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
