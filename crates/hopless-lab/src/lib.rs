//! # hopless-lab
//!
//! The SLUB fast-path experiment, outside the production allocator: hopless's thread cache against a
//! model of Linux SLUB and two variants of its pop, each a whole allocator (thread cache and central
//! layer) for one size class. `hopless bench fastpath` runs them; `scripts/check/fastpath_asm.sh` reads
//! the machine code of this crate's two probes (`libhopless_lab.so`). What it takes from hopless is named
//! in `hopless::experiment`: the heap's `refill` and `flush`, the magazine's own pop and push, the class
//! lock and the class table.
//!
//! - [`Array`] (`array`, hopless): "what is free next" is an array in metadata ([`Magazine`]), refilled
//!   and flushed half a magazine at a time (the global allocator's capacities) through [`Heap::refill`]
//!   and [`Heap::flush`] (free bitmaps). Pop and
//!   push never touch block memory. (The real allocator's free also writes an 8-byte double-free key into
//!   the block it frees; this model leaves it out, as SLUB's model leaves out its debug checks.)
//! - [`Slub`] models SLUB as Linux builds it ([`SlubHeap`]): every slab keeps a list of its free objects
//!   threaded through their first word, written when an object is freed. A thread owns one slab at a time
//!   (SLUB's per-CPU slab): its allocations pop the slab's list, its frees of that slab's objects push onto
//!   it, and frees of other slabs' objects go onto those slabs' lists under the class lock. When the list
//!   runs dry the thread takes over another slab's whole list in O(1) (a partial slab, or a new one whose
//!   list is written when it is made). Three variants of the pop:
//!   - `Slub<PLAIN>` (`intrusive`, `get_freepointer`): reads the next pointer out of the object it hands
//!     out: the extra hop;
//!   - `Slub<PREFETCH>` (`intrusive-prefetch`): the same, then prefetches the new head, as SLUB's
//!     `prefetch_freepointer`;
//!   - `Slub<CACHED_NEXT>` (`cached-next`): the thread also keeps the object after the head in
//!     metadata, so a pop hands out the head without a load through it; it refreshes the cached
//!     next from the new head's first word, a load from an object that is handed out only by the next pop.
//!
//! Both central layers take their memory from a [`PageSource`] in 64 KiB slabs; neither ever gives it back
//! while the experiment runs (`Heap::set_purging(false)`), so a pre-faulted working set stays faulted in.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use hopless::experiment::cache::{Magazine, ThreadCache};
use hopless::experiment::lock::SpinLock;
use hopless::experiment::size_class::{class_size, BATCH_MAX, MAG_CAPACITY, NUM_CLASSES};
use hopless::experiment::Heap;
use hopless::{PageSource, PAGE_SIZE};

/// One thread's allocator for one size class, as the experiment drives it.
pub trait Strategy {
    /// Allocates a block (null when out of memory).
    ///
    /// # Safety
    ///
    /// The strategy is used by one thread, with the heap and class it was made for.
    unsafe fn alloc(&mut self) -> *mut u8;
    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `p` is a live block this strategy (or another of the same heap and class) handed out; the caller
    /// gives it up.
    unsafe fn free(&mut self, p: *mut u8);
    /// Gives every cached block back to the central layer.
    ///
    /// # Safety
    ///
    /// As for [`Strategy::alloc`].
    unsafe fn finish(&mut self);
    /// Allocations served without the central layer, and those that went to it.
    fn counts(&self) -> (u64, u64);
}

/// hopless's thread cache for one class: a [`Magazine`] over a [`Heap`].
pub struct Array<'h, P: PageSource> {
    heap: &'h Heap<P>,
    class: usize,
    mag: Magazine,
    fast: u64,
    slow: u64,
}

impl<'h, P: PageSource> Array<'h, P> {
    pub fn new(heap: &'h Heap<P>, class: usize) -> Self {
        Array {
            heap,
            class,
            // The global allocator's capacity for this class.
            mag: Magazine::with_capacity(MAG_CAPACITY[class]),
            fast: 0,
            slow: 0,
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_slow(&mut self) -> *mut u8 {
        self.slow += 1;
        // Half a magazine per refill or flush, as the global allocator moves.
        let mut buf = [ptr::null_mut(); BATCH_MAX];
        let half = (self.mag.cap as usize / 2).max(1);
        let n = self.heap.refill(self.class, &mut buf[..half]);
        if n == 0 {
            return ptr::null_mut();
        }
        // Hand out the first block; the rest go to the magazine (empty, so there is room).
        for &b in buf[1..n].iter().rev() {
            // SAFETY: the model's own magazine, used by this thread alone; `b` a free block of its class.
            unsafe { ThreadCache::push_in(&mut self.mag, b) };
        }
        buf[0]
    }

    /// # Safety
    ///
    /// As for [`Strategy::free`].
    #[cold]
    #[inline(never)]
    unsafe fn free_slow(&mut self, p: *mut u8) {
        let n = (self.mag.cap as usize / 2).max(1).min(self.mag.count as usize);
        let from = self.mag.count as usize - n;
        // SAFETY: the magazine's blocks are free blocks of this class from `heap`.
        unsafe { self.heap.flush(self.class, &self.mag.slots[from..from + n]) };
        self.mag.count -= n as u32;
        // SAFETY: as above; there is room now.
        unsafe { ThreadCache::push_in(&mut self.mag, p) };
    }
}

impl<P: PageSource> Strategy for Array<'_, P> {
    #[inline(always)]
    unsafe fn alloc(&mut self) -> *mut u8 {
        // SAFETY: the model's own magazine, used by this thread alone (the strategy's contract).
        match unsafe { ThreadCache::try_pop_in(&mut self.mag) } {
            Some(p) => {
                self.fast += 1;
                p
            }
            None => self.alloc_slow(),
        }
    }

    #[inline(always)]
    unsafe fn free(&mut self, p: *mut u8) {
        // SAFETY: as in `alloc`; `p` per the caller.
        if unsafe { ThreadCache::push_in(&mut self.mag, p) } {
            return;
        }
        // SAFETY: per the caller.
        unsafe { self.free_slow(p) }
    }

    unsafe fn finish(&mut self) {
        let n = self.mag.count as usize;
        // SAFETY: the magazine's blocks are free blocks of this class from `heap`.
        unsafe { self.heap.flush(self.class, &self.mag.slots[..n]) };
        self.mag.count = 0;
    }

    fn counts(&self) -> (u64, u64) {
        (self.fast, self.slow)
    }
}

/// Bytes per slab of the SLUB model (hopless's small slab size).
pub const SLUB_SLAB: usize = 64 << 10;
/// No slab (slab numbers start at 1).
const NONE: u32 = 0;

/// Where a slab of the SLUB model is (SLUB's `struct slab`'s list fields).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SlabState {
    /// A thread's current slab: its free objects are on that thread's list (and frees of other
    /// threads on `freelist`).
    Frozen,
    /// On its class's partial list.
    Partial,
    /// No free object, on no list.
    Full,
}

/// The metadata of one slab of the SLUB model (SLUB keeps it in `struct page`, apart from the objects).
#[derive(Clone, Copy)]
struct SlabMeta {
    /// Free objects not on a thread's list, threaded through their first word.
    freelist: *mut u8,
    /// The next slab on the partial list.
    next: u32,
    state: SlabState,
}

/// A class's partial slabs: taken from the head, added at the tail (as SLUB's `__slab_free`).
struct SlubClass {
    head: u32,
    tail: u32,
}

/// SLUB's central layer for every class: slabs of [`SLUB_SLAB`] bytes carved in order from one reservation,
/// metadata in another, one lock per class.
///
/// Invariants: slab `i` (from 1) is `SLUB_SLAB` bytes at `base + (i - 1) * SLUB_SLAB` and belongs to one class
/// for good; its metadata, and the partial list of its class, are read and written only under that class's
/// lock, except by the thread it is frozen to, which owns the list it took over.
pub struct SlubHeap<P: PageSource> {
    source: P,
    /// Slabs the reservation holds.
    capacity: usize,
    base: AtomicPtr<u8>,
    meta: AtomicPtr<SlabMeta>,
    /// Slabs carved so far.
    carved: AtomicUsize,
    /// Serialises the lazy reservation.
    init: SpinLock<()>,
    classes: [SpinLock<SlubClass>; NUM_CLASSES],
}

impl<P: PageSource> SlubHeap<P> {
    /// A heap of at most `capacity` slabs (reserved on first use).
    pub const fn new(source: P, capacity: usize) -> Self {
        SlubHeap {
            source,
            capacity,
            base: AtomicPtr::new(ptr::null_mut()),
            meta: AtomicPtr::new(ptr::null_mut()),
            carved: AtomicUsize::new(0),
            init: SpinLock::new(()),
            classes: [const {
                SpinLock::new(SlubClass {
                    head: NONE,
                    tail: NONE,
                })
            }; NUM_CLASSES],
        }
    }

    /// Slabs carved so far (none is ever given back).
    pub fn carved(&self) -> usize {
        self.carved.load(Ordering::Relaxed)
    }

    fn meta_bytes(&self) -> usize {
        (self.capacity * core::mem::size_of::<SlabMeta>()).next_multiple_of(PAGE_SIZE)
    }

    /// The slab holding `p`.
    #[inline(always)]
    fn slab_of(&self, p: *mut u8) -> u32 {
        let base = self.base.load(Ordering::Relaxed) as usize;
        ((p as usize - base) / SLUB_SLAB) as u32 + 1
    }

    /// The metadata of slab `s`.
    ///
    /// # Safety
    ///
    /// `s` is a carved slab; the caller follows the invariants on [`SlubHeap`] to use the result.
    #[inline(always)]
    unsafe fn meta(&self, s: u32) -> *mut SlabMeta {
        // SAFETY: carved slabs are below `capacity`, and `meta` holds `capacity` entries.
        unsafe { self.meta.load(Ordering::Acquire).add(s as usize - 1) }
    }

    /// Carves a new slab for `class`: its whole list written through its objects, in address order (SLUB
    /// writes it when it makes a slab). Returns (slab, list), or (NONE, null) when out of memory.
    fn new_slab(&self, class: usize) -> (u32, *mut u8) {
        if self.base.load(Ordering::Acquire).is_null() {
            let _g = self.init.lock();
            if self.base.load(Ordering::Acquire).is_null() {
                let meta = self.source.reserve(self.meta_bytes(), PAGE_SIZE);
                let base = self.source.reserve(self.capacity * SLUB_SLAB, SLUB_SLAB);
                if meta.is_null() || base.is_null() {
                    return (NONE, ptr::null_mut());
                }
                self.meta.store(meta.cast(), Ordering::Release);
                self.base.store(base, Ordering::Release);
            }
        }
        let i = self.carved.fetch_add(1, Ordering::Relaxed);
        if i >= self.capacity {
            return (NONE, ptr::null_mut());
        }
        let size = class_size(class);
        let n = SLUB_SLAB / size;
        if n == 0 {
            // A class too large for one slab: the model serves classes up to `SLUB_SLAB` only.
            return (NONE, ptr::null_mut());
        }
        let start = self.base.load(Ordering::Acquire).wrapping_add(i * SLUB_SLAB);
        for k in 0..n {
            let next = if k + 1 < n {
                start.wrapping_add((k + 1) * size)
            } else {
                ptr::null_mut()
            };
            // SAFETY: object `k` lies inside the slab, which nobody else has yet.
            unsafe { start.add(k * size).cast::<*mut u8>().write(next) };
        }
        let s = i as u32 + 1;
        // SAFETY: the new slab's metadata is ours until we hand the slab out.
        unsafe {
            self.meta(s).write(SlabMeta {
                freelist: ptr::null_mut(),
                next: NONE,
                state: SlabState::Frozen,
            })
        };
        (s, start)
    }

    /// Puts slab `s` at the tail of its class's partial list (SLUB's `add_partial(.., DEACTIVATE_TO_TAIL)`).
    ///
    /// # Safety
    ///
    /// `g` is the guard of `s`'s class lock; `s` is a carved slab of that class on no list.
    unsafe fn push_partial(&self, g: &mut SlubClass, s: u32) {
        // SAFETY: per the caller, the class lock guards both slabs' metadata.
        unsafe {
            let m = self.meta(s);
            (*m).state = SlabState::Partial;
            (*m).next = NONE;
            if g.tail == NONE {
                g.head = s;
            } else {
                (*self.meta(g.tail)).next = s;
            }
        }
        g.tail = s;
    }

    /// The lock of `class`. Callers pass a class below [`NUM_CLASSES`]; the modulo keeps a bad one from
    /// panicking (no bounds check is left to fail), so libhopless.so's probes reach no panic machinery.
    fn class_lock(&self, class: usize) -> &SpinLock<SlubClass> {
        &self.classes[class % NUM_CLASSES]
    }

    /// Frees `p` onto its slab's list (SLUB's `__slab_free`), for a thread that does not hold that slab.
    ///
    /// # Safety
    ///
    /// `p` is a live object of `class` from this heap that the caller gives up.
    #[inline(never)]
    unsafe fn free_remote(&self, class: usize, p: *mut u8) {
        let s = self.slab_of(p);
        let mut g = self.class_lock(class).lock();
        // SAFETY: we hold the class lock, which guards the slab's metadata; `p` is ours to write.
        unsafe {
            let m = self.meta(s);
            p.cast::<*mut u8>().write((*m).freelist);
            (*m).freelist = p;
            if (*m).state == SlabState::Full {
                self.push_partial(&mut g, s);
            }
        }
    }

    /// The slow path of a thread whose list ran dry (SLUB's `___slab_alloc`): the frees other threads put
    /// on its slab, else the whole list of a partial slab, else a new slab. `held` is the thread's slab
    /// (NONE for none), which it gives up unless it takes that slab's list again. Returns (slab, list).
    fn take_list(&self, class: usize, held: u32) -> (u32, *mut u8) {
        {
            let mut g = self.class_lock(class).lock();
            // SAFETY: we hold the class lock, which guards the metadata and the partial list.
            unsafe {
                if held != NONE {
                    let m = self.meta(held);
                    if !(*m).freelist.is_null() {
                        let l = (*m).freelist;
                        (*m).freelist = ptr::null_mut();
                        return (held, l);
                    }
                    (*m).state = SlabState::Full;
                }
                if g.head != NONE {
                    let s = g.head;
                    let m = self.meta(s);
                    g.head = (*m).next;
                    if g.head == NONE {
                        g.tail = NONE;
                    }
                    let l = (*m).freelist;
                    (*m).freelist = ptr::null_mut();
                    (*m).state = SlabState::Frozen;
                    return (s, l);
                }
            }
        }
        self.new_slab(class)
    }

    /// Gives a thread's slab and list back (SLUB's `deactivate_slab`): the list's objects go onto the
    /// slab's list, and the slab onto the partial list if it has any free object.
    ///
    /// # Safety
    ///
    /// `s` is frozen to the caller, and `list` is the caller's list of its free objects.
    unsafe fn give_back(&self, class: usize, s: u32, mut list: *mut u8) {
        let mut g = self.class_lock(class).lock();
        // SAFETY: we hold the class lock; the list's objects are free objects of `s` that we own.
        unsafe {
            let m = self.meta(s);
            while !list.is_null() {
                let next = list.cast::<*mut u8>().read();
                list.cast::<*mut u8>().write((*m).freelist);
                (*m).freelist = list;
                list = next;
            }
            if (*m).freelist.is_null() {
                (*m).state = SlabState::Full;
            } else {
                self.push_partial(&mut g, s);
            }
        }
    }
}

impl<P: PageSource> Drop for SlubHeap<P> {
    fn drop(&mut self) {
        let base = *self.base.get_mut();
        if !base.is_null() {
            // SAFETY: the two reservations made in `new_slab`; nobody can use them once the heap is dropped.
            unsafe {
                self.source.release(base, self.capacity * SLUB_SLAB, SLUB_SLAB);
                self.source
                    .release(self.meta.get_mut().cast(), self.meta_bytes(), PAGE_SIZE);
            }
        }
    }
}

/// `Slub<PLAIN>`: `get_freepointer` on every pop.
pub const PLAIN: u8 = 0;
/// `Slub<PREFETCH>`: `get_freepointer`, then `prefetch_freepointer` of the new head.
pub const PREFETCH: u8 = 1;
/// `Slub<CACHED_NEXT>`: the next object cached in metadata.
pub const CACHED_NEXT: u8 = 2;

/// One thread's SLUB cache for one class (SLUB's `kmem_cache_cpu`).
///
/// Invariant: `list` is a list of free objects of `slab` threaded through their first word (null when
/// empty), owned by this thread; with `CACHED_NEXT`, `next` is the first word of `list`'s head (null when
/// `list` is null).
pub struct Slub<'h, P: PageSource, const V: u8> {
    heap: &'h SlubHeap<P>,
    class: usize,
    list: *mut u8,
    next: *mut u8,
    slab: u32,
    fast: u64,
    slow: u64,
}

impl<'h, P: PageSource, const V: u8> Slub<'h, P, V> {
    pub fn new(heap: &'h SlubHeap<P>, class: usize) -> Self {
        Slub {
            heap,
            class,
            list: ptr::null_mut(),
            next: ptr::null_mut(),
            slab: NONE,
            fast: 0,
            slow: 0,
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_slow(&mut self) -> *mut u8 {
        self.slow += 1;
        let (s, l) = self.heap.take_list(self.class, self.slab);
        if l.is_null() {
            self.slab = NONE;
            return ptr::null_mut();
        }
        self.slab = s;
        // SAFETY: `l` is a list of free objects of `s`, now ours.
        let next = unsafe { l.cast::<*mut u8>().read() };
        self.list = next;
        self.next = ptr::null_mut();
        if V == CACHED_NEXT && !next.is_null() {
            // SAFETY: as above, for the list's new head.
            self.next = unsafe { next.cast::<*mut u8>().read() };
        }
        l
    }
}

impl<P: PageSource, const V: u8> Strategy for Slub<'_, P, V> {
    #[inline(always)]
    unsafe fn alloc(&mut self) -> *mut u8 {
        let p = self.list;
        if p.is_null() {
            return self.alloc_slow();
        }
        self.fast += 1;
        if V == CACHED_NEXT {
            self.list = self.next;
            self.next = if self.list.is_null() {
                ptr::null_mut()
            } else {
                // SAFETY: the new head is a free object on our list: its first word is the link.
                unsafe { self.list.cast::<*mut u8>().read() }
            };
        } else {
            // SAFETY: `p` is a free object on our list: its first word is the link.
            self.list = unsafe { p.cast::<*mut u8>().read() };
            if V == PREFETCH && !self.list.is_null() {
                prefetch(self.list);
            }
        }
        p
    }

    #[inline(always)]
    unsafe fn free(&mut self, p: *mut u8) {
        if self.heap.slab_of(p) == self.slab {
            // SAFETY: per the caller, `p` is ours to write: its first word becomes the link.
            unsafe { p.cast::<*mut u8>().write(self.list) };
            if V == CACHED_NEXT {
                self.next = self.list;
            }
            self.list = p;
            return;
        }
        // SAFETY: per the caller.
        unsafe { self.heap.free_remote(self.class, p) }
    }

    unsafe fn finish(&mut self) {
        if self.slab != NONE {
            // SAFETY: the slab is frozen to us and `list` holds its objects we own.
            unsafe { self.heap.give_back(self.class, self.slab, self.list) };
        }
        self.slab = NONE;
        self.list = ptr::null_mut();
        self.next = ptr::null_mut();
    }

    fn counts(&self) -> (u64, u64) {
        (self.fast, self.slow)
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

// Probes for scripts/check/fastpath_asm.sh: the global allocator's pop and the SLUB model's pop, out of
// line so that their machine code can be read from libhopless_lab.so.

/// # Safety
///
/// As for `ThreadCache::pop`: `tc` is a live thread cache only the caller uses, `class < NUM_CLASSES`.
#[no_mangle]
#[inline(never)]
pub unsafe extern "C" fn hopless_probe_fast_pop(tc: *mut ThreadCache, class: usize) -> *mut u8 {
    // SAFETY: per the caller.
    unsafe { ThreadCache::pop(tc, class) }
}

/// # Safety
///
/// `l` points to a valid SLUB-model thread cache that only the caller uses.
#[no_mangle]
#[inline(never)]
pub unsafe extern "C" fn hopless_probe_intrusive_pop(
    l: *mut Slub<'static, hopless::OsPages, PLAIN>,
) -> *mut u8 {
    // SAFETY: per the caller.
    unsafe { (*l).alloc() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopless::experiment::size_class::class_for;
    use hopless::SystemPages;

    fn exercise<S: Strategy>(make: &dyn Fn(usize) -> S, name: &str) {
        // Under Miri: enough blocks for more than one slab of the largest size and a magazine flush.
        let (n, sizes): (usize, &[usize]) = if cfg!(miri) {
            (200, &[32, 512])
        } else {
            (5000, &[32, 64, 256, 512])
        };
        for &size in sizes {
            let class = class_for(size, 8).unwrap();
            let bytes = class_size(class);
            let mut a = make(class);
            let mut b = make(class);
            let mut live = Vec::new();
            // SAFETY: every block comes from the same heap and class, is written within its size and freed
            // once; `a` and `b` stand for two threads taking turns.
            unsafe {
                for i in 0..n {
                    let c = if i % 3 == 0 { &mut b } else { &mut a };
                    let p = c.alloc();
                    assert!(!p.is_null());
                    core::ptr::write_bytes(p, i as u8, bytes);
                    live.push((p, i as u8));
                }
                let mut sorted: Vec<_> = live.iter().map(|x| x.0).collect();
                sorted.sort();
                sorted.dedup();
                assert_eq!(sorted.len(), n, "{name}: a block was handed out twice");
                // Under Miri the first and last 16 bytes stand for the block (byte loops are slow there).
                let span = if cfg!(miri) { 16 } else { bytes };
                for (k, &(p, tag)) in live.iter().enumerate() {
                    for at in [p, p.add(bytes - span)] {
                        assert!(core::slice::from_raw_parts(at, span).iter().all(|&x| x == tag));
                    }
                    // Frees cross over: some of each thread's blocks go back through the other.
                    let c = if k % 2 == 0 { &mut a } else { &mut b };
                    c.free(p);
                }
                // Everything comes back, distinct, again.
                let again: Vec<_> = (0..n).map(|_| a.alloc()).collect();
                assert!(
                    again.iter().all(|p| !p.is_null()),
                    "{name}: out of memory on reuse"
                );
                let mut sorted = again.clone();
                sorted.sort();
                sorted.dedup();
                assert_eq!(sorted.len(), n, "{name}: a block was handed out twice on reuse");
                for p in again {
                    core::ptr::write_bytes(p, 0xee, bytes);
                    b.free(p);
                }
                // The hot loop stays in the thread's cache.
                for _ in 0..n {
                    let p = a.alloc();
                    a.free(p);
                }
                a.finish();
                b.finish();
            }
            let (fast, slow) = a.counts();
            assert!(fast > slow, "{name}: {fast} fast, {slow} slow");
        }
    }

    #[test]
    fn every_strategy_hands_out_distinct_blocks_and_takes_them_back() {
        let heap = Heap::new(SystemPages);
        exercise(&|class| Array::new(&heap, class), "array");
        heap.trim();
        assert!(
            heap.stats().classes.iter().all(|s| s.slabs == 0),
            "array: everything went back"
        );
        // Each thread holds a slab per class that the other cannot take: two per class and then some.
        let slabs = if cfg!(miri) { 16 } else { 256 };
        let h0 = SlubHeap::new(SystemPages, slabs);
        exercise(&|class| Slub::<_, PLAIN>::new(&h0, class), "intrusive");
        let h1 = SlubHeap::new(SystemPages, slabs);
        exercise(
            &|class| Slub::<_, PREFETCH>::new(&h1, class),
            "intrusive-prefetch",
        );
        let h2 = SlubHeap::new(SystemPages, slabs);
        exercise(&|class| Slub::<_, CACHED_NEXT>::new(&h2, class), "cached-next");
    }

    #[test]
    fn slub_reuses_freed_slabs() {
        // Two rounds of the same working set carve no new slab the second time.
        let h = SlubHeap::new(SystemPages, if cfg!(miri) { 4 } else { 16 });
        let class = class_for(256, 8).unwrap();
        let n = SLUB_SLAB / class_size(class) * 2 + 3;
        let mut s = Slub::<_, PLAIN>::new(&h, class);
        for _ in 0..2 {
            // SAFETY: blocks from `h` through `s`, freed once.
            unsafe {
                let v: Vec<_> = (0..n).map(|_| s.alloc()).collect();
                assert!(v.iter().all(|p| !p.is_null()));
                for p in v.into_iter().rev() {
                    s.free(p);
                }
                s.finish();
            }
        }
        assert_eq!(h.carved.load(Ordering::Relaxed), 3);
    }
}
