//! The pool of one segment kind: slabs that belong to no class, on a dirty list (touched since last
//! purged, each waiting out the purge delay) and a clean one (purged or never touched), and the segments
//! they are carved from. The pool lock nests inside a class lock, never the other way round.

use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::lock::SpinLock;
use crate::platform::{now_ms, PageSource, Reservation};
use crate::segment::{
    segment_of, SegmentHeader, SegmentKind, Slab, SlabList, SlabState, HEADER_AREA, MAX_SLABS,
    MEDIUM_SLAB_SHIFT, SEGMENT_MAGIC, SEGMENT_MAP, SEGMENT_SIZE, SLAB_POOLED, SMALL_SLAB_SHIFT,
};

/// How long a dirty slab waits in its pool before it is purged: about the large blocks' budget window
/// (`large::budget`), long beside a producer/consumer cycle, short beside a program's phases.
pub const PURGE_DELAY_MS: u32 = 100;

/// Slabs of one segment kind that belong to no class.
pub struct SlabPool {
    pub kind: SegmentKind,
    /// What its segments hold, for the huge-page setting: [`Reservation::SparseSlabs`] for the pools of
    /// the classes whose blocks fill part of a slab (the 8 to 48 B ones) and of the medium classes.
    pub holds: Reservation,
    /// Keep every dirty slab resident (no purge but `trim`): the SLUB experiment's working set stays
    /// faulted in. Off unless a benchmark turns it on.
    pub keep_dirty: AtomicBool,
    /// How long a dirty slab waits before it is purged ([`PURGE_DELAY_MS`]; tests change it).
    pub purge_delay_ms: AtomicU32,
    /// Segments reserved so far (the large-mapping cache gives pages back as this grows).
    pub reserved: AtomicUsize,
    /// Whether a clean slab (or a fresh segment's first) was taken since `Heap::trim` last purged the
    /// clean ones: only then may a huge page have made clean slabs resident, and only then does the next
    /// trim look at them again (so that a second `malloc_trim` finds nothing to give, and a program that
    /// trims often pays no `madvise` per clean slab each time).
    pub clean_taken: AtomicBool,
    pub inner: SpinLock<PoolInner>,
}

/// A pool's lists, under the pool lock. Invariants (relied on by `get`, `put` and `take_expired`):
/// - every slab on `dirty` is in state `Pooled`, every slab on `clean` in state `Clean`, each with
///   `carved == 0`; a slab taken off to be purged is `Purging` and on no list until `purge` files it
///   as clean; a segment's `clean` counts its slabs on `clean`;
/// - `sleeping` holds the first slab (state `Asleep`) of each sleeping segment, whose other slabs are
///   on no list (`central::sleep`);
/// - `dirty` is ordered by the time each slab went there (kept in its `hint`), newest at the head: `get` takes the head (the warmest), the
///   purges take the tail (the one unused longest).
pub struct PoolInner {
    /// Touched since last purged; most recently returned first.
    pub dirty: SlabList,
    /// Purged or never touched.
    pub clean: SlabList,
    /// Segments whose every slab is clean, with their slab headers decommitted.
    pub sleeping: SlabList,
    pub segments: u64,
    pub purged: u64,
    /// Every segment this pool reserved.
    pub all: *mut SegmentHeader,
}

// SAFETY: the lists and segment pointers are only followed under the pool lock.
unsafe impl Send for PoolInner {}

impl SlabPool {
    pub const fn new(kind: SegmentKind, holds: Reservation) -> Self {
        SlabPool {
            kind,
            holds,
            keep_dirty: AtomicBool::new(false),
            purge_delay_ms: AtomicU32::new(PURGE_DELAY_MS),
            reserved: AtomicUsize::new(0),
            clean_taken: AtomicBool::new(false),
            inner: SpinLock::new(PoolInner {
                dirty: SlabList::new(),
                clean: SlabList::new(),
                sleeping: SlabList::new(),
                segments: 0,
                purged: 0,
                all: ptr::null_mut(),
            }),
        }
    }

    pub const fn slab_shift(&self) -> u32 {
        match self.kind {
            SegmentKind::Medium => MEDIUM_SLAB_SHIFT,
            _ => SMALL_SLAB_SHIFT,
        }
    }

    pub const fn slot_size(&self) -> usize {
        1 << self.slab_shift()
    }

    /// A segment's first slab slot: the first one the header area leaves.
    pub const fn first_slot(&self) -> usize {
        HEADER_AREA.div_ceil(self.slot_size())
    }

    /// Dirty slabs kept resident at most, however recently used: 16 MiB of each kind. A producer/consumer
    /// program cycles about one slab per active medium class (a CPython producer/consumer run has about
    /// 16 such classes); a thread that frees 1 600 blocks of 4 KiB and allocates as many of 3 KiB at once
    /// (`fifo-lifo-1600`) moves 100 small slabs through the pool. Beyond it the oldest is purged at once.
    /// The pool of the smallest classes keeps 4 MiB of slabs (64), each of which they fill at most in
    /// part.
    pub const fn max_dirty(&self) -> usize {
        match (self.kind, self.holds) {
            (SegmentKind::Medium, _) => 32,
            (_, Reservation::SparseSlabs) => 64,
            _ => 256,
        }
    }

    /// Dirty slabs kept when a thread exits (1 MiB of small slabs, 2 MiB of medium). A thread's exit
    /// flushes its magazines, which empties the slabs only it was carving; a program that ends thousands
    /// of threads gives those pages back at once, rather than keeping up to [`SlabPool::max_dirty`]
    /// resident for the delay.
    pub const fn exit_dirty(&self) -> usize {
        match (self.kind, self.holds) {
            (SegmentKind::Medium, _) | (_, Reservation::SparseSlabs) => 4,
            _ => 16,
        }
    }

    /// Whether the oldest dirty slab (the tail) should go now: the list is longer than `cap`, or the slab
    /// has waited out the purge delay. Never while `keep_dirty` is on.
    fn purge_due(&self, g: &PoolInner, now: u64, cap: usize) -> bool {
        if g.dirty.tail.is_null() || self.keep_dirty.load(Ordering::Relaxed) {
            return false;
        }
        let delay = self.purge_delay_ms.load(Ordering::Relaxed);
        // SAFETY: pool lock held (`g`); the tail is a pooled slab header of this pool, whose `hint` holds
        // when it became dirty.
        let since = unsafe { (*g.dirty.tail).hint };
        // Wrapping: right for any wait under 49 days (a longer one only waits for the next delay).
        g.dirty.len > cap || (now as u32).wrapping_sub(since) >= delay
    }

    /// Takes a slab (dirty first: it is warm, then clean, then a sleeping segment's), reserving a new
    /// segment when the pool has none. Null when the page source has no memory, or the slab would pass
    /// the memory limit (`crate::limit`: a slab is counted from here until [`SlabPool::put`] takes it
    /// back).
    pub fn get<P: PageSource>(&self, source: &P) -> *mut Slab {
        if !crate::limit::take(self.slot_size()) {
            return ptr::null_mut();
        }
        let s = self.get_counted(source);
        if s.is_null() {
            crate::limit::give(self.slot_size());
        }
        s
    }

    /// [`SlabPool::get`] once the slab is counted against the limit.
    fn get_counted<P: PageSource>(&self, source: &P) -> *mut Slab {
        let sleeper = {
            let mut g = self.inner.lock();
            // SAFETY: we hold the pool lock, which owns the lists.
            unsafe {
                let s = g.dirty.pop_front();
                if !s.is_null() {
                    return s;
                }
                let c = g.clean.pop_front();
                if !c.is_null() {
                    (*segment_of((*c).start)).clean -= 1;
                    self.clean_taken.store(true, Ordering::Relaxed);
                    return c;
                }
                g.sleeping.pop_front()
            }
        };
        if !sleeper.is_null() {
            self.clean_taken.store(true, Ordering::Relaxed);
            // SAFETY: just taken off the sleeping list.
            return unsafe { self.wake(sleeper) };
        }
        let base = source.reserve(SEGMENT_SIZE, SEGMENT_SIZE);
        if base.is_null() {
            return ptr::null_mut();
        }
        let seg = base.cast::<SegmentHeader>();
        if !SEGMENT_MAP.insert(seg.cast()) {
            // SAFETY: the reservation just made, unused.
            unsafe { source.release(base, SEGMENT_SIZE, SEGMENT_SIZE) };
            return ptr::null_mut();
        }
        if self.holds == Reservation::Slabs {
            source.note_dense_bytes((self.reserved.load(Ordering::Relaxed) + 1) * SEGMENT_SIZE);
        }
        // SAFETY: the whole reservation just made.
        unsafe { source.advise_huge(base, SEGMENT_SIZE, self.holds) };
        let shift = self.slab_shift();
        debug_assert!(SEGMENT_SIZE >> shift <= MAX_SLABS);
        // SAFETY: `base` is a fresh, zeroed, 4 MiB-aligned reservation that only this thread knows; the
        // header area fits before the first slot.
        unsafe {
            seg.write(SegmentHeader {
                magic: SEGMENT_MAGIC,
                kind: self.kind,
                slab_shift: shift,
                first_slot: self.first_slot() as u16,
                clean: 0,
                sample: 0,
                map_len: SEGMENT_SIZE,
                data_offset: 0,
                usable: 0,
                next: ptr::null_mut(),
                left_huge: AtomicU64::new(0),
            });
            crate::segment::init_granules(seg, shift);
            self.reserved.fetch_add(1, Ordering::Relaxed);
            self.clean_taken.store(true, Ordering::Relaxed);
            {
                let mut g = self.inner.lock();
                g.segments += 1;
                (*seg).next = g.all;
                g.all = seg;
            }
            self.carve(seg)
        }
    }

    /// Takes back a slab its class no longer needs. Returns a slab the caller must purge with
    /// [`SlabPool::purge`] once it holds no lock, or null.
    ///
    /// # Safety
    ///
    /// `s` is a slab of this pool's kind that belongs to the calling class (whose lock is held) and is on
    /// no list; no block of it is in use or in a magazine.
    pub unsafe fn put(&self, s: *mut Slab) -> *mut Slab {
        // SAFETY: per the caller, the header is ours until it is on the pool's list.
        unsafe {
            (*s).magic = SLAB_POOLED;
            (*s).state = SlabState::Pooled;
            // No block of a slab outside a class passes the C free path's check (see `Slab`).
            (*s).carved.store(0, Ordering::Relaxed);
        }
        crate::limit::give(self.slot_size());
        // Read before the pool lock (a vDSO read, a few nanoseconds: `put` runs once per emptied slab).
        let now = now_ms();
        let mut g = self.inner.lock();
        // SAFETY: pool lock held; `s` is on no list.
        unsafe {
            (*s).hint = now as u32;
            g.dirty.push_front(s);
            if self.purge_due(&g, now, self.max_dirty()) {
                let v = g.dirty.pop_back();
                (*v).state = SlabState::Purging;
                return v;
            }
        }
        ptr::null_mut()
    }

    /// Takes the oldest dirty slab if it is due for a purge (past the delay, or the list longer than
    /// `cap`: see [`SlabPool::put`]), or null. The caller purges it with [`SlabPool::purge`] once it holds
    /// no lock.
    pub fn take_expired(&self, cap: usize) -> *mut Slab {
        let now = now_ms();
        let mut g = self.inner.lock();
        if !self.purge_due(&g, now, cap) {
            return ptr::null_mut();
        }
        // SAFETY: pool lock held; the tail exists (`purge_due`), and off the list it is ours.
        unsafe {
            let v = g.dirty.pop_back();
            (*v).state = SlabState::Purging;
            v
        }
    }

    /// Takes the clean slab at the tail, for the caller to [`SlabPool::purge`] (which files it at the
    /// head), or null: `trim`'s pass over slabs that a huge page may have made resident.
    pub fn take_clean(&self) -> *mut Slab {
        self.take_to_purge(true)
    }

    /// How many slabs are on the clean list.
    pub fn clean_len(&self) -> usize {
        self.inner.lock().clean.len
    }

    /// Takes one dirty slab to purge (for trimming), or null.
    pub fn take_dirty(&self) -> *mut Slab {
        self.take_to_purge(false)
    }

    /// Takes the slab at the tail of the clean list (`clean`) or the dirty one, marked `Purging`, or null.
    fn take_to_purge(&self, clean: bool) -> *mut Slab {
        let mut g = self.inner.lock();
        let list = if clean { &mut g.clean } else { &mut g.dirty };
        // SAFETY: pool lock held.
        let v = unsafe { list.pop_back() };
        if !v.is_null() {
            // SAFETY: `v` is off every list now, ours; its segment is a live one of this pool, whose
            // count of clean slabs the pool lock (held) covers: it drops in the same hold as the list.
            unsafe {
                (*v).state = SlabState::Purging;
                if clean {
                    (*segment_of((*v).start)).clean -= 1;
                }
            }
        }
        v
    }

    /// Releases every segment of the pool.
    ///
    /// # Safety
    ///
    /// Nothing uses any block, slab or header of this pool any more.
    pub unsafe fn release_all<P: PageSource>(&mut self, source: &P) {
        let g = self.inner.get_mut();
        let mut seg = g.all;
        while !seg.is_null() {
            // SAFETY: per the caller, the segment is unused; read its link before releasing it.
            unsafe {
                let next = (*seg).next;
                SEGMENT_MAP.remove(seg.cast());
                source.release(seg.cast(), SEGMENT_SIZE, SEGMENT_SIZE);
                seg = next;
            }
        }
        g.all = ptr::null_mut();
        g.dirty = SlabList::new();
        g.clean = SlabList::new();
        g.sleeping = SlabList::new();
    }
}
