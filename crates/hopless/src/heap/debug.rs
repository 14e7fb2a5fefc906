//! Debug mode's checked paths: no thread caches; every allocation and free goes to the central heap
//! under its class lock, where the slab bitmap is the truth (see `crate::debug`).

use core::ptr;
use core::sync::atomic::Ordering;

use super::Heap;
use crate::address::{locate, Located};
use crate::central::ClassHeap;
use crate::platform::PageSource;
use crate::scratch;
use crate::segment::{segment_of, slab_of, Slab};
use crate::size_class::BATCH_MAX;

/// A new slab in debug mode with every block takeable at once (hardened too): all of it poison.
///
/// # Safety
///
/// `s` was just initialised and is the caller's (class lock held); its slot has `slot_size` bytes.
pub(super) unsafe fn poison_slot(s: *mut Slab, _class: usize, slot_size: usize) {
    // SAFETY: per the caller, the whole slot is ours and mapped.
    unsafe { ptr::write_bytes((*s).start, crate::debug::POISON, slot_size) };
}

impl<P: PageSource> Heap<P> {
    /// Debug mode: a checked allocation straight from the central heap (see `crate::debug`).
    #[cold]
    #[inline(never)]
    pub(crate) fn debug_alloc(&self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        use crate::debug;
        // No lock is held here: the first call to the unwinder may allocate (see `platform::stack`).
        crate::platform::stack::warm();
        match debug::class_for(size, align) {
            Some(class) => {
                let mut one = [ptr::null_mut(); 1];
                if self.refill(class, &mut one) == 0 {
                    return ptr::null_mut();
                }
                // SAFETY: a block of `class` just taken from its slab.
                unsafe { debug::prepare(one[0], class, size, zeroed) };
                one[0]
            }
            None => {
                let p = self.checked_large_alloc(size, align, zeroed, 0);
                if !p.is_null() {
                    crate::report::record(crate::report::OpKind::Alloc, p, 0xff);
                }
                p
            }
        }
    }

    /// Debug mode: the requested size of a block (what `usable_size` reports then).
    ///
    /// # Safety
    ///
    /// `p` is a live debug-mode block.
    pub(crate) unsafe fn debug_size(&self, p: *mut u8) -> usize {
        if let Located::Large(seg) = locate(p) {
            // SAFETY: a mapped large-block header.
            return unsafe { self.checked_large_size(seg, p) }.unwrap_or(0);
        }
        // SAFETY: per the caller, a slab block ends with its size trailer.
        unsafe { p.add(self.usable_size(p) - 8).cast::<u64>().read_unaligned() as usize }
    }

    /// Debug mode: a checked free (see `crate::debug`).
    ///
    /// # Safety
    ///
    /// None beyond the program's claim that `p` is a live block: every other case is reported.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn debug_free(&self, p: *mut u8) {
        use crate::debug;
        // Taken before any lock (the ring's record of a small block's free is made under its class
        // lock); the first call to the unwinder may allocate (see `platform::stack`).
        crate::platform::stack::warm();
        let from = crate::platform::stack::capture(0);
        // SAFETY: check_headers validates everything it reads through the segment map first.
        match unsafe { debug::check_headers(p) } {
            None => {
                let seg = match locate(p) {
                    Located::Large(seg) => seg,
                    _ => segment_of(p),
                };
                // SAFETY: check_headers found a mapped large-block header holding `p`.
                unsafe { self.checked_large_free(seg, p) }
            }
            Some(class) => {
                let seg = segment_of(p);
                // SAFETY: check_headers found a live slab of `class` with `p` at a block start.
                let s = unsafe { slab_of(seg, p) };
                // One hold of the class lock from the bitmap check to the bitmap update: two threads
                // freeing the same block at once are told apart here (the second sees it free), not by
                // the second finding the first one's poison (a "damaged trailer").
                let mut victims = scratch::buffer::<*mut Slab, BATCH_MAX>();
                let nv = {
                    let mut g = self.class(class).inner.lock();
                    // SAFETY: we hold the class lock that owns the bitmap.
                    let (free, never) = unsafe {
                        let i = (*s).index_of(p);
                        (
                            (*s).bitmap
                                .get(i / 64)
                                .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0),
                            i >= (*s).carved.load(Ordering::Relaxed) as usize,
                        )
                    };
                    if free {
                        crate::report::fault("double free", p, class, None);
                    }
                    if never {
                        crate::report::fault("free of a block that was never allocated", p, class, None);
                    }
                    // SAFETY: an in-use block of `class`; the program gives it up. Poisoning writes
                    // only the block, and neither it nor the record allocates or locks.
                    unsafe { debug::check_and_poison(p, class) };
                    crate::report::record_from(crate::report::OpKind::Free, p, class, &from);
                    // SAFETY: as above, under this class's lock; the flush re-checks the bitmap.
                    unsafe { ClassHeap::flush_locked(&mut g, class, self.pool(class), &[p], &mut victims) }
                };
                // SAFETY: `flush_locked` wrote the first `nv`.
                for &v in unsafe { scratch::written(&victims, nv) } {
                    // SAFETY: the pool handed these back to purge, and no lock is held.
                    unsafe {
                        self.pool(class)
                            .purge(&self.source, v, self.checks().keep_last_page)
                    };
                }
            }
        }
    }
}
