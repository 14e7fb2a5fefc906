//! The central heap: per class, the slabs with free blocks; below it, per segment kind, the pool of slabs
//! that belong to no class. Each class has its own lock, held only for one batch move (a refill or a
//! flush of at most a magazine); the pool lock nests inside a class lock, never the other way round.
//!
//! Memory goes back to the OS here: a class keeps at most [`KEEP_EMPTY_SMALL`] fully free slabs; the rest
//! return to the pool's dirty list, and once that list is longer than its limit the oldest dirty slab is
//! purged (`madvise(MADV_DONTNEED)`) with no lock held, then kept as a clean (zero, not resident) slab.

use core::ptr;

use crate::lock::SpinLock;
use crate::platform::PageSource;
use crate::segment::{
    SegmentHeader, SegmentKind, Slab, SlabList, SlabState, HEADER_AREA, MAX_SLABS, MEDIUM_SLAB_SHIFT,
    SEGMENT_MAGIC, SEGMENT_MAP, SEGMENT_SIZE, SLAB_POOLED, SMALL_SLAB_SHIFT,
};
use crate::stats::CentralCounters;

/// Fully free slabs a small class keeps for itself (medium classes keep none: their slabs are 512 KiB).
pub const KEEP_EMPTY_SMALL: u32 = 1;

/// One class's share of the central heap.
#[repr(C, align(128))]
pub struct ClassHeap {
    pub inner: SpinLock<ClassInner>,
}

pub struct ClassInner {
    /// Slabs of this class with at least one free block.
    pub partial: SlabList,
    /// Slabs on `partial` that are entirely free.
    pub empty: u32,
    /// Slabs this class holds.
    pub slabs: u32,
    pub counters: CentralCounters,
}

impl ClassHeap {
    pub const fn new() -> Self {
        ClassHeap {
            inner: SpinLock::new(ClassInner {
                partial: SlabList::new(),
                empty: 0,
                slabs: 0,
                counters: CentralCounters {
                    refills: 0,
                    flushes: 0,
                    outstanding: 0,
                    peak_outstanding: 0,
                },
            }),
        }
    }
}

impl Default for ClassHeap {
    fn default() -> Self {
        Self::new()
    }
}

/// Slabs of one segment kind that belong to no class.
pub struct SlabPool {
    pub kind: SegmentKind,
    pub inner: SpinLock<PoolInner>,
}

pub struct PoolInner {
    /// Touched since last purged; most recently returned first.
    pub dirty: SlabList,
    /// Purged or never touched.
    pub clean: SlabList,
    pub segments: u64,
    pub purged: u64,
    /// Every segment this pool reserved.
    pub all: *mut SegmentHeader,
}

// SAFETY: the lists and segment pointers are only followed under the pool lock.
unsafe impl Send for PoolInner {}

impl SlabPool {
    pub const fn new(kind: SegmentKind) -> Self {
        SlabPool {
            kind,
            inner: SpinLock::new(PoolInner {
                dirty: SlabList::new(),
                clean: SlabList::new(),
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

    /// Dirty slabs kept resident before the oldest is purged: 1 MiB of small slabs, 2 MiB of medium.
    const fn max_dirty(&self) -> usize {
        match self.kind {
            SegmentKind::Medium => 4,
            _ => 16,
        }
    }

    /// Takes a slab (dirty first: it is warm), reserving a new segment when the pool is empty. Null when
    /// the page source has no memory.
    pub fn get<P: PageSource>(&self, source: &P) -> *mut Slab {
        {
            let mut g = self.inner.lock();
            // SAFETY: we hold the pool lock, which owns both lists.
            let s = unsafe {
                let s = g.dirty.pop_front();
                if s.is_null() {
                    g.clean.pop_front()
                } else {
                    s
                }
            };
            if !s.is_null() {
                return s;
            }
        }
        let base = source.reserve(SEGMENT_SIZE, SEGMENT_SIZE);
        if base.is_null() {
            return ptr::null_mut();
        }
        let seg = base.cast::<SegmentHeader>();
        if !SEGMENT_MAP.insert(seg) {
            // SAFETY: the reservation just made, unused.
            unsafe { source.release(base, SEGMENT_SIZE, SEGMENT_SIZE) };
            return ptr::null_mut();
        }
        let shift = self.slab_shift();
        let first_slot = HEADER_AREA.div_ceil(1 << shift);
        let slots = SEGMENT_SIZE >> shift;
        debug_assert!(slots <= MAX_SLABS);
        // SAFETY: `base` is a fresh, zeroed, 4 MiB-aligned reservation that only this thread knows; the
        // header area fits before `first_slot`.
        unsafe {
            seg.write(SegmentHeader {
                magic: SEGMENT_MAGIC,
                kind: self.kind,
                slab_shift: shift,
                first_slot: first_slot as u32,
                map_len: SEGMENT_SIZE,
                data_offset: 0,
                usable: 0,
                next: ptr::null_mut(),
            });
            let slabs = crate::segment::slabs_of(seg);
            for slot in first_slot..slots {
                let s = slabs.add(slot);
                (&raw mut (*s).magic).write(SLAB_POOLED);
                (&raw mut (*s).state).write(SlabState::Pooled);
                (&raw mut (*s).start).write(base.add(slot << shift));
            }
            let mut g = self.inner.lock();
            g.segments += 1;
            (*seg).next = g.all;
            g.all = seg;
            // Hand out the lowest slot; queue the rest so lower addresses go first.
            for slot in (first_slot + 1..slots).rev() {
                g.clean.push_front(slabs.add(slot));
            }
            slabs.add(first_slot)
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
            (*s).dirty = true;
        }
        let mut g = self.inner.lock();
        // SAFETY: pool lock held; `s` is on no list.
        unsafe {
            g.dirty.push_front(s);
            if g.dirty.len > self.max_dirty() {
                let v = g.dirty.pop_back();
                (*v).state = SlabState::Purging;
                return v;
            }
        }
        ptr::null_mut()
    }

    /// Purges a slab [`SlabPool::put`] handed back, then files it as clean.
    ///
    /// # Safety
    ///
    /// `s` came from `put` or `take_dirty` of this pool and has not been purged yet.
    pub unsafe fn purge<P: PageSource>(&self, source: &P, s: *mut Slab) {
        // SAFETY: a slab in state Purging is on no list and belongs to nobody: only this thread touches it
        // and its memory.
        unsafe {
            // Hardened mode keeps the slot's last page: its last 8 bytes are the guard word of the next
            // slot's first block, which may be in use (see `heap::hardened`).
            #[cfg(feature = "debug")]
            let keep = if crate::debug::hardened() {
                crate::platform::PAGE_SIZE
            } else {
                0
            };
            #[cfg(not(feature = "debug"))]
            let keep = 0;
            source.decommit((*s).start, self.slot_size() - keep);
            (*s).dirty = false;
            (*s).state = SlabState::Pooled;
        }
        let mut g = self.inner.lock();
        g.purged += 1;
        // SAFETY: pool lock held; `s` is on no list.
        unsafe { g.clean.push_front(s) };
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
                SEGMENT_MAP.remove(seg);
                source.release(seg.cast(), SEGMENT_SIZE, SEGMENT_SIZE);
                seg = next;
            }
        }
        g.all = ptr::null_mut();
        g.dirty = SlabList::new();
        g.clean = SlabList::new();
    }

    /// Takes one dirty slab to purge (for trimming), or null.
    pub fn take_dirty(&self) -> *mut Slab {
        let mut g = self.inner.lock();
        // SAFETY: pool lock held.
        let v = unsafe { g.dirty.pop_back() };
        if !v.is_null() {
            // SAFETY: `v` is off every list; we own it now.
            unsafe { (*v).state = SlabState::Purging };
        }
        v
    }
}
