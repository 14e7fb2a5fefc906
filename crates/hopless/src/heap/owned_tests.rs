//! Thread-owned slabs (`owned.rs`, turned on for each test's heap) over a private heap on `SystemPages`,
//! natively and under Miri: a
//! thread's own blocks go back without the class, another thread's frees are folded in and reused, and
//! a thread's exit hands its slabs to their classes with nothing lost.

use core::sync::atomic::Ordering;

use crate::cache::ThreadCache;
use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::segment::{segment_of, slab_of, Slab, SlabState};
use crate::size_class::{class_for, MAG_CAPACITY};
use crate::test_util::flush_when_full;

fn slab(p: *mut u8) -> *mut Slab {
    // SAFETY: `p` is a block of a live small or medium segment of the test's heap.
    unsafe { slab_of(segment_of(p), p) }
}

/// `n` blocks of `size` allocated through `tc`.
///
/// # Safety
///
/// `tc` is the calling thread's cache of `heap`.
unsafe fn alloc_n(heap: &Heap<SystemPages>, tc: *mut ThreadCache, size: usize, n: usize) -> Vec<*mut u8> {
    // SAFETY: per the caller.
    (0..n)
        .map(|_| unsafe { heap.alloc(tc, size, 8, false) })
        .collect()
}

#[test]
fn a_threads_own_blocks_go_back_to_its_slabs_without_the_class() {
    let heap = Heap::new(SystemPages);
    heap.set_owned_slabs(true);
    let a = heap.new_thread_cache(1);
    let class = class_for(64, 8).unwrap();
    let n = 3 * MAG_CAPACITY[class] as usize;
    // SAFETY: `a` is this thread's cache; each block is freed once.
    unsafe {
        let blocks = alloc_n(&heap, a, 64, n);
        let s = slab(blocks[0]);
        assert_ne!((*a).token, 0);
        assert_eq!((*s).owner.load(Ordering::Relaxed), (*a).token);
        assert_eq!((*s).state, SlabState::Owned);
        for &p in &blocks {
            flush_when_full(a, class);
            heap.free_ptr(a, p);
        }
        {
            let g = heap.class(class).inner.lock();
            assert_eq!(
                (g.counters.refills, g.counters.flushes),
                (0, 0),
                "no batch went through the class"
            );
            assert!(g.partial.head.is_null());
        }
        let st = heap.stats();
        assert!(st.classes[class].refills >= 3 && st.classes[class].flushes >= 2);
        heap.retire_thread_cache(a);
        assert_eq!(
            (*s).owner.load(Ordering::Relaxed),
            0,
            "handed to its class at exit"
        );
        assert_eq!(heap.stats().classes[class].outstanding_blocks, 0);
    }
}

#[test]
fn another_threads_frees_are_folded_by_the_owner_and_handed_out_again() {
    let heap = Heap::new(SystemPages);
    heap.set_owned_slabs(true);
    let (a, b) = (heap.new_thread_cache(1), heap.new_thread_cache(2));
    // 16 blocks a slab; a refill is half a magazine.
    let size = 4096;
    let class = class_for(size, 8).unwrap();
    let n = MAG_CAPACITY[class] as usize / 2;
    // SAFETY: each cache is used as one thread's; each block is freed once, by `b`.
    unsafe {
        let mut first = alloc_n(&heap, a, size, n);
        assert_eq!(ThreadCache::count(a, class), 0, "one refill, all handed out");
        let slabs = heap.stats().classes[class].slabs;
        for &p in &first {
            heap.free_ptr(b, p);
        }
        heap.flush_all(b);
        let s = slab(first[0]);
        assert!((*s).remote.has_pending() && Slab::is_free(s, first[0]));
        assert!(ThreadCache::take_hint(a, class), "the owner was hinted");
        (*a).remote_hint[class].store(1, Ordering::Relaxed);
        let mut again = alloc_n(&heap, a, size, n);
        assert_eq!(heap.stats().classes[class].slabs, slabs, "no slab adopted");
        first.sort();
        again.sort();
        assert_eq!(first, again, "the blocks freed remotely came back");
        assert!(!(*s).remote.has_pending());
        for &p in &again {
            heap.free_ptr(a, p);
        }
        heap.retire_thread_cache(a);
        heap.retire_thread_cache(b);
        assert_eq!(heap.stats().classes[class].outstanding_blocks, 0);
    }
}

#[test]
fn blocks_freed_after_their_owner_exits_go_back_through_the_class() {
    let heap = Heap::new(SystemPages);
    heap.set_owned_slabs(true);
    let (a, b) = (heap.new_thread_cache(1), heap.new_thread_cache(2));
    let size = 4096;
    let class = class_for(size, 8).unwrap();
    let n = 3 * MAG_CAPACITY[class] as usize / 2;
    // SAFETY: as above.
    unsafe {
        let blocks = alloc_n(&heap, a, size, n);
        // Half freed remotely while `a` owns the slabs, half after it exited.
        let (early, late) = blocks.split_at(n / 2);
        for &p in early {
            heap.free_ptr(b, p);
        }
        heap.flush_all(b);
        heap.retire_thread_cache(a);
        for &p in &blocks {
            assert_eq!((*slab(p)).owner.load(Ordering::Relaxed), 0);
        }
        for &p in late {
            heap.free_ptr(b, p);
        }
        heap.retire_thread_cache(b);
        let st = heap.stats();
        assert_eq!(st.classes[class].outstanding_blocks, 0);
        assert!(blocks
            .iter()
            .all(|&p| Slab::is_free(slab(p), p) || (*slab(p)).carved.load(Ordering::Relaxed) == 0));
        heap.trim();
        assert!(
            heap.stats().classes.iter().all(|c| c.slabs == 0),
            "every slab back in its pool"
        );
    }
}
