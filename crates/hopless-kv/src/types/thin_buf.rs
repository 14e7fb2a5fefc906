//! [`ThinBuf`]: a growable byte buffer sixteen bytes wide. Its one block starts with its own capacity,
//! and beside the pointer sit the length and a 32-bit word its owner keeps there (a packed block's entry
//! count, an intset's width). A `Vec` plus that word is 32 bytes; this is half, which is what lets a small
//! hash, set or sorted set live inside its key's item (see `value.rs`) instead of in a block of its own.

use core::alloc::Layout;
use core::ops::{Deref, DerefMut, Range};
use core::ptr::NonNull;

use allocator_api2::alloc::handle_alloc_error;

use crate::alloc::KvAlloc;

/// The capacity word in front of a block's bytes.
pub(crate) const HEADER: usize = core::mem::size_of::<u32>();

/// The capacity word of a buffer that has no block: zero, so that the first growth allocates one. Only
/// ever read.
static NO_BLOCK: u32 = 0;

pub(crate) struct ThinBuf<A: KvAlloc> {
    /// A block of `HEADER + cap` bytes aligned to 4, starting with `cap` as a `u32` (`cap > 0`); or, with
    /// no block, `NO_BLOCK`'s address. Bytes `HEADER..HEADER + len` are initialised.
    block: NonNull<u8>,
    len: u32,
    /// The owner's word, kept here so that the owner is no wider than the buffer.
    pub(crate) word: u32,
    alloc: A,
}

// SAFETY: the buffer owns its block (nothing else points into it), as a `Vec<u8, A>` does; the static it
// points at without a block is never written.
unsafe impl<A: KvAlloc> Send for ThinBuf<A> {}
// SAFETY: as above; `&ThinBuf` only reads.
unsafe impl<A: KvAlloc> Sync for ThinBuf<A> {}

#[cold]
#[inline(never)]
fn capacity_overflow() -> ! {
    panic!("a packed block cannot exceed 4 GiB")
}

fn block_layout(cap: usize) -> Layout {
    match HEADER
        .checked_add(cap)
        .map(|size| Layout::from_size_align(size, HEADER))
    {
        Some(Ok(l)) if cap <= u32::MAX as usize => l,
        _ => capacity_overflow(),
    }
}

impl<A: KvAlloc> ThinBuf<A> {
    pub(crate) fn new_in(alloc: A) -> Self {
        ThinBuf {
            block: NonNull::from(&NO_BLOCK).cast(),
            len: 0,
            word: 0,
            alloc,
        }
    }

    pub(crate) fn allocator(&self) -> &A {
        &self.alloc
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Bytes the block holds beyond its header (0 without a block).
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        // SAFETY: `block` points at a live, 4-aligned `u32` (the block's header, or `NO_BLOCK`).
        unsafe { self.block.cast::<u32>().as_ptr().read() as usize }
    }

    /// Bytes the block takes, header included (what the store charges).
    pub(crate) fn block_bytes(&self) -> usize {
        match self.capacity() {
            0 => 0,
            cap => HEADER + cap,
        }
    }

    /// Moves the contents to a block of `cap` bytes (at least `len`), or to none when `cap` is 0.
    /// Err (and nothing changed) when the allocator has no memory.
    fn try_set_capacity(&mut self, cap: usize) -> Result<(), ()> {
        debug_assert!(cap >= self.len());
        let old = self.capacity();
        if cap == old {
            return Ok(());
        }
        let new_layout = block_layout(cap);
        let block = if old == 0 {
            self.alloc.allocate(new_layout).map_err(|_| ())?.cast::<u8>()
        } else if cap == 0 {
            // SAFETY: the block was allocated by `alloc` with `block_layout(old)`; nothing points into
            // it once `block` is replaced below.
            unsafe { self.alloc.deallocate(self.block, block_layout(old)) };
            self.block = NonNull::from(&NO_BLOCK).cast();
            return Ok(());
        } else if cap > old {
            // SAFETY: the block was allocated by `alloc` with `block_layout(old)`, which is smaller.
            unsafe { self.alloc.grow(self.block, block_layout(old), new_layout) }
                .map_err(|_| ())?
                .cast::<u8>()
        } else {
            // SAFETY: as above, and the new layout is smaller; the bytes kept (`len <= cap`) are copied.
            unsafe { self.alloc.shrink(self.block, block_layout(old), new_layout) }
                .map_err(|_| ())?
                .cast::<u8>()
        };
        // SAFETY: a block of `new_layout`, 4-aligned, ours alone: its header is written here.
        unsafe { block.cast::<u32>().as_ptr().write(cap as u32) };
        self.block = block;
        Ok(())
    }

    fn set_capacity(&mut self, cap: usize) {
        if self.try_set_capacity(cap).is_err() {
            handle_alloc_error(block_layout(cap));
        }
    }

    /// Makes the capacity at least `len + extra`, to exactly that when it grows.
    pub(crate) fn reserve_exact(&mut self, extra: usize) {
        let need = self
            .len()
            .checked_add(extra)
            .unwrap_or_else(|| capacity_overflow());
        if need > self.capacity() {
            self.set_capacity(need);
        }
    }

    /// As [`ThinBuf::reserve_exact`], Err when the allocator has no memory.
    pub(crate) fn try_reserve_exact(&mut self, extra: usize) -> Result<(), ()> {
        let need = self.len().checked_add(extra).ok_or(())?;
        if need > self.capacity() {
            if need > u32::MAX as usize {
                return Err(());
            }
            self.try_set_capacity(need)?;
        }
        Ok(())
    }

    /// Sets the length, with zeroes where it grows.
    pub(crate) fn resize(&mut self, new_len: usize) {
        let len = self.len();
        if new_len > len {
            self.reserve_exact(new_len - len);
            // SAFETY: the block holds `new_len` bytes after its header.
            unsafe { self.data().add(len).write_bytes(0, new_len - len) };
        }
        self.len = new_len as u32;
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.len = len as u32;
        }
    }

    /// Removes `range`, moving what follows it down.
    pub(crate) fn remove_range(&mut self, range: Range<usize>) {
        let len = self.len();
        assert!(range.start <= range.end && range.end <= len);
        self.copy_within(range.end..len, range.start);
        self.len = (len - (range.end - range.start)) as u32;
    }

    pub(crate) fn extend_from_slice(&mut self, s: &[u8]) {
        let len = self.len();
        self.reserve_exact(s.len());
        // SAFETY: the block holds `len + s.len()` bytes after its header; `s` is not in it (we hold the
        // buffer mutably, so `s` cannot borrow from it).
        unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), self.data().add(len), s.len()) };
        self.len = (len + s.len()) as u32;
    }

    /// Gives back capacity beyond `max(len, min)`.
    pub(crate) fn shrink_to(&mut self, min: usize) {
        let cap = self.len().max(min);
        if cap < self.capacity() {
            // A failed shrink keeps the bigger block, as `Vec` does.
            let _ = self.try_set_capacity(cap);
        }
    }

    /// The first byte after the header.
    #[inline]
    fn data(&self) -> *mut u8 {
        // SAFETY: in bounds of the block, or one past `NO_BLOCK`.
        unsafe { self.block.as_ptr().add(HEADER) }
    }
}

impl<A: KvAlloc> Deref for ThinBuf<A> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes follow the header (none without a block, where the pointer is
        // one past `NO_BLOCK`: non-null and aligned for `u8`).
        unsafe { core::slice::from_raw_parts(self.data(), self.len()) }
    }
}

impl<A: KvAlloc> DerefMut for ThinBuf<A> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            // Never a mutable slice over `NO_BLOCK`.
            return &mut [];
        }
        // SAFETY: `len > 0`, so there is a block, ours alone, with `len` initialised bytes after its header.
        unsafe { core::slice::from_raw_parts_mut(self.data(), self.len()) }
    }
}

impl<A: KvAlloc> Drop for ThinBuf<A> {
    fn drop(&mut self) {
        let cap = self.capacity();
        if cap != 0 {
            // SAFETY: the block was allocated by `alloc` with `block_layout(cap)` and is dropped with us.
            unsafe { self.alloc.deallocate(self.block, block_layout(cap)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn grows_shrinks_and_frees_like_a_vec() {
        let mut b = ThinBuf::new_in(Global);
        assert_eq!((b.len(), b.capacity(), b.block_bytes()), (0, 0, 0));
        assert!(b.is_empty());
        b.word = 7;
        let mut model = std::vec::Vec::new();
        for i in 0..300u32 {
            let s = [i as u8; 3];
            b.extend_from_slice(&s);
            model.extend_from_slice(&s);
        }
        assert_eq!(&b[..], &model[..]);
        assert_eq!(b.capacity(), model.len());
        b.remove_range(10..400);
        model.drain(10..400);
        assert_eq!(&b[..], &model[..]);
        b.resize(model.len() + 5);
        model.resize(model.len() + 5, 0);
        b[0] = 99;
        model[0] = 99;
        assert_eq!(&b[..], &model[..]);
        b.shrink_to(0);
        assert_eq!(b.capacity(), model.len());
        b.truncate(0);
        b.shrink_to(0);
        assert_eq!((b.capacity(), b.block_bytes()), (0, 0));
        assert!(b.try_reserve_exact(8).is_ok());
        assert_eq!(b.block_bytes(), 12);
        assert_eq!(b.word, 7);
        assert!(ThinBuf::new_in(Global).deref_mut().is_empty());
    }

    #[test]
    fn is_sixteen_bytes_and_an_option_costs_nothing() {
        assert_eq!(core::mem::size_of::<ThinBuf<Global>>(), 16);
        assert_eq!(core::mem::size_of::<Option<ThinBuf<Global>>>(), 16);
    }
}
