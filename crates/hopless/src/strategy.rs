//! The SLUB fast-path experiment: three thread-cache strategies over the same central heap, chosen by type.
//!
//! - [`Magazine`] (`array`, what [`crate::Hopless`] uses): "what is free next" is an array in metadata.
//!   Pop and push never touch block memory.
//! - [`Intrusive`] (`intrusive`, classic SLUB `get_freepointer`): the free blocks form a list threaded
//!   through their first word. Pop reads the next pointer out of the block it hands out: the extra hop.
//!   `Intrusive<true>` also prefetches the new head, as SLUB's `prefetch_freepointer` does.
//! - [`CachedNext`] (`cached-next`, the seed's first option): the same list, but the metadata also holds
//!   the next free block. Pop hands out `head` and moves to the cached `next` without waiting on a load
//!   from the block it returns; it refreshes `next` from the new head's first word, a load from a block
//!   that is handed out only on the following pop.
//!
//! [`StrategyCache`] holds one list per class and refills and flushes through [`Heap::refill`] and
//! [`Heap::flush`] in batches of 32, like the global allocator's magazines, so only the list differs.
//! Every list holds at most [`MAG_MAX`] blocks.

// The SLUB experiment's own caches (benchmarks only, never behind `Hopless`): indexed freely.
#![allow(clippy::indexing_slicing)]

use core::ptr;

use crate::heap::Heap;
use crate::platform::PageSource;
use crate::size_class::{MAG_MAX, NUM_CLASSES};
use crate::thread_cache::Magazine;

/// A thread-local free list of one class.
pub trait FreeList {
    /// The strategy's name in reports.
    const NAME: &'static str;
    fn empty() -> Self;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pops a block; null when empty.
    ///
    /// # Safety
    ///
    /// Every block in the list is a free block of the list's class that nobody else uses.
    unsafe fn pop(&mut self) -> *mut u8;
    /// Pushes a block; false (and nothing changed) when the list holds [`MAG_MAX`] blocks.
    ///
    /// # Safety
    ///
    /// `p` is a block of the list's class that the caller gives up, at least 8 bytes, 8-aligned.
    unsafe fn push(&mut self, p: *mut u8) -> bool;
}

impl FreeList for Magazine {
    const NAME: &'static str = "array";
    fn empty() -> Self {
        Magazine {
            count: 0,
            cap: MAG_MAX as u32,
            tag: 0,
            refilled: 0,
            refill_filter: [0; 2],
            slots: [ptr::null_mut(); MAG_MAX],
        }
    }
    fn len(&self) -> usize {
        self.count as usize
    }
    #[inline(always)]
    unsafe fn pop(&mut self) -> *mut u8 {
        if self.count == 0 {
            return ptr::null_mut();
        }
        self.count -= 1;
        self.slots[self.count as usize]
    }
    #[inline(always)]
    unsafe fn push(&mut self, p: *mut u8) -> bool {
        if self.count >= self.cap {
            return false;
        }
        self.slots[self.count as usize] = p;
        self.count += 1;
        true
    }
}

/// Classic SLUB: a list threaded through the free blocks.
pub struct Intrusive<const PREFETCH: bool> {
    head: *mut u8,
    count: u32,
}

impl<const PREFETCH: bool> FreeList for Intrusive<PREFETCH> {
    const NAME: &'static str = if PREFETCH {
        "intrusive-prefetch"
    } else {
        "intrusive"
    };
    fn empty() -> Self {
        Intrusive {
            head: ptr::null_mut(),
            count: 0,
        }
    }
    fn len(&self) -> usize {
        self.count as usize
    }
    #[inline(always)]
    unsafe fn pop(&mut self) -> *mut u8 {
        let p = self.head;
        if p.is_null() {
            return p;
        }
        // SAFETY: a free block of the list holds the next pointer in its first word.
        self.head = unsafe { p.cast::<*mut u8>().read() };
        if PREFETCH && !self.head.is_null() {
            prefetch(self.head);
        }
        self.count -= 1;
        p
    }
    #[inline(always)]
    unsafe fn push(&mut self, p: *mut u8) -> bool {
        if self.count as usize >= MAG_MAX {
            return false;
        }
        // SAFETY: the caller gives `p` up; its first word becomes the link.
        unsafe { p.cast::<*mut u8>().write(self.head) };
        self.head = p;
        self.count += 1;
        true
    }
}

/// The seed's first option: the list, plus the next free block cached in metadata.
pub struct CachedNext {
    head: *mut u8,
    /// The block after `head` (null when `head` is the last or null).
    next: *mut u8,
    count: u32,
}

impl FreeList for CachedNext {
    const NAME: &'static str = "cached-next";
    fn empty() -> Self {
        CachedNext {
            head: ptr::null_mut(),
            next: ptr::null_mut(),
            count: 0,
        }
    }
    fn len(&self) -> usize {
        self.count as usize
    }
    #[inline(always)]
    unsafe fn pop(&mut self) -> *mut u8 {
        let p = self.head;
        if p.is_null() {
            return p;
        }
        self.head = self.next;
        self.next = if self.head.is_null() {
            ptr::null_mut()
        } else {
            // SAFETY: the new head is a free block of the list: its first word is the link.
            unsafe { self.head.cast::<*mut u8>().read() }
        };
        self.count -= 1;
        p
    }
    #[inline(always)]
    unsafe fn push(&mut self, p: *mut u8) -> bool {
        if self.count as usize >= MAG_MAX {
            return false;
        }
        // SAFETY: the caller gives `p` up; its first word becomes the link.
        unsafe { p.cast::<*mut u8>().write(self.head) };
        self.next = self.head;
        self.head = p;
        self.count += 1;
        true
    }
}

#[inline(always)]
fn prefetch(p: *mut u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

/// Blocks moved per refill or flush.
const BATCH: usize = 32;

/// One thread's lists, one per class, over a shared [`Heap`]; counts fast and slow operations.
pub struct StrategyCache<F: FreeList> {
    lists: [F; NUM_CLASSES],
    pub fast_allocs: u64,
    pub slow_allocs: u64,
    pub fast_frees: u64,
    pub slow_frees: u64,
}

impl<F: FreeList> Default for StrategyCache<F> {
    fn default() -> Self {
        StrategyCache {
            lists: core::array::from_fn(|_| F::empty()),
            fast_allocs: 0,
            slow_allocs: 0,
            fast_frees: 0,
            slow_frees: 0,
        }
    }
}

impl<F: FreeList> StrategyCache<F> {
    /// Allocates a block of `class` (null when out of memory).
    ///
    /// # Safety
    ///
    /// Every list holds only blocks of `heap` (this cache is used with one heap only).
    #[inline(always)]
    pub unsafe fn alloc<P: PageSource>(&mut self, heap: &Heap<P>, class: usize) -> *mut u8 {
        // SAFETY: per the caller.
        let p = unsafe { self.lists[class].pop() };
        if !p.is_null() {
            self.fast_allocs += 1;
            return p;
        }
        // SAFETY: per the caller.
        unsafe { self.alloc_slow(heap, class) }
    }

    #[cold]
    #[inline(never)]
    unsafe fn alloc_slow<P: PageSource>(&mut self, heap: &Heap<P>, class: usize) -> *mut u8 {
        self.slow_allocs += 1;
        let mut buf = [ptr::null_mut(); BATCH];
        let n = heap.refill(class, &mut buf);
        if n == 0 {
            return ptr::null_mut();
        }
        // Hand out the first block; the rest go to the list.
        for &b in buf[1..n].iter().rev() {
            // SAFETY: blocks fresh from the heap; the list was empty, so there is room.
            unsafe { self.lists[class].push(b) };
        }
        buf[0]
    }

    /// Frees a block of `class`.
    ///
    /// # Safety
    ///
    /// `p` is a live block of `class` from `heap`, which the caller gives up.
    #[inline(always)]
    pub unsafe fn free<P: PageSource>(&mut self, heap: &Heap<P>, class: usize, p: *mut u8) {
        // SAFETY: per the caller.
        if unsafe { self.lists[class].push(p) } {
            self.fast_frees += 1;
            return;
        }
        // SAFETY: per the caller.
        unsafe { self.free_slow(heap, class, p) }
    }

    #[cold]
    #[inline(never)]
    unsafe fn free_slow<P: PageSource>(&mut self, heap: &Heap<P>, class: usize, p: *mut u8) {
        self.slow_frees += 1;
        let mut buf = [ptr::null_mut(); BATCH];
        // SAFETY: the list's blocks are free blocks of `class` from `heap`; then the list has room for `p`.
        unsafe {
            let n = self.take_batch(class, &mut buf);
            heap.flush(class, &buf[..n]);
            self.lists[class].push(p);
        }
    }

    /// Returns every cached block to the heap.
    ///
    /// # Safety
    ///
    /// As for [`StrategyCache::alloc`].
    pub unsafe fn flush_all<P: PageSource>(&mut self, heap: &Heap<P>) {
        for class in 0..NUM_CLASSES {
            let mut buf = [ptr::null_mut(); BATCH];
            loop {
                // SAFETY: per the caller.
                let n = unsafe { self.take_batch(class, &mut buf) };
                if n == 0 {
                    break;
                }
                // SAFETY: per the caller.
                unsafe { heap.flush(class, &buf[..n]) };
            }
        }
    }

    /// Pops up to `buf.len()` blocks of `class` into `buf`; returns how many.
    ///
    /// # Safety
    ///
    /// As for [`FreeList::pop`].
    unsafe fn take_batch(&mut self, class: usize, buf: &mut [*mut u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            // SAFETY: per the caller.
            let b = unsafe { self.lists[class].pop() };
            if b.is_null() {
                break;
            }
            buf[n] = b;
            n += 1;
        }
        n
    }

    /// Fraction of allocations served without the central heap.
    pub fn fast_alloc_rate(&self) -> f64 {
        let t = self.fast_allocs + self.slow_allocs;
        if t == 0 {
            0.0
        } else {
            self.fast_allocs as f64 / t as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::SystemPages;
    use crate::size_class::{class_for, class_size};

    fn exercise<F: FreeList>() {
        let heap = Heap::new(SystemPages);
        let mut c: Box<StrategyCache<F>> = Box::default();
        let n = if cfg!(miri) { 150 } else { 5000 };
        for size in [32usize, 64, 256, 512] {
            let class = class_for(size, 8).unwrap();
            let mut live = Vec::new();
            // SAFETY: every block comes from `heap` through `c` and is freed once.
            unsafe {
                for i in 0..n {
                    let p = c.alloc(&heap, class);
                    assert!(!p.is_null());
                    core::ptr::write_bytes(p, i as u8, class_size(class));
                    live.push((p, i as u8));
                }
                let mut sorted: Vec<_> = live.iter().map(|x| x.0).collect();
                sorted.sort();
                sorted.dedup();
                assert_eq!(sorted.len(), n, "{}: a block was handed out twice", F::NAME);
                for &(p, tag) in &live {
                    assert!(core::slice::from_raw_parts(p, class_size(class))
                        .iter()
                        .all(|&b| b == tag));
                    c.free(&heap, class, p);
                }
                // Reuse: the hot loop stays in the list.
                for _ in 0..n {
                    let p = c.alloc(&heap, class);
                    c.free(&heap, class, p);
                }
            }
        }
        assert!(c.fast_alloc_rate() > 0.9, "{}: {}", F::NAME, c.fast_alloc_rate());
        // SAFETY: the cache's blocks all came from `heap`.
        unsafe { c.flush_all(&heap) };
        heap.trim();
        assert!(
            heap.stats().classes.iter().all(|s| s.slabs == 0),
            "{}: everything went back",
            F::NAME
        );
    }

    #[test]
    fn every_strategy_hands_out_distinct_blocks_and_returns_them() {
        exercise::<Magazine>();
        exercise::<Intrusive<false>>();
        exercise::<Intrusive<true>>();
        exercise::<CachedNext>();
    }
}
