//! [`SlabList`]: the intrusive doubly linked list of slab headers the central heap keeps its partial and
//! pooled slabs in.

use core::ptr;

use super::header::Slab;

/// An intrusive doubly linked list of slab headers (through `prev`/`next`).
pub struct SlabList {
    pub head: *mut Slab,
    pub tail: *mut Slab,
    pub len: usize,
}

impl Default for SlabList {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the list is only touched under the lock of whatever owns it; the raw pointers point into segment
// headers that live as long as the heap.
unsafe impl Send for SlabList {}

impl SlabList {
    pub const fn new() -> Self {
        Self {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
            len: 0,
        }
    }

    /// # Safety
    ///
    /// `s` is a valid slab header on no list; the caller owns the list.
    pub unsafe fn push_front(&mut self, s: *mut Slab) {
        // SAFETY: per the caller, `s` and every node of the list are valid headers we own.
        unsafe {
            (*s).prev = ptr::null_mut();
            (*s).next = self.head;
            if self.head.is_null() {
                self.tail = s;
            } else {
                (*self.head).prev = s;
            }
        }
        self.head = s;
        self.len += 1;
    }

    /// # Safety
    ///
    /// `s` is on this list.
    pub unsafe fn remove(&mut self, s: *mut Slab) {
        // SAFETY: per the caller, `s` and its neighbours are valid nodes of this list.
        unsafe {
            let (p, n) = ((*s).prev, (*s).next);
            if p.is_null() {
                self.head = n;
            } else {
                (*p).next = n;
            }
            if n.is_null() {
                self.tail = p;
            } else {
                (*n).prev = p;
            }
            (*s).prev = ptr::null_mut();
            (*s).next = ptr::null_mut();
        }
        self.len -= 1;
    }

    /// # Safety
    ///
    /// The caller owns the list.
    pub unsafe fn pop_front(&mut self) -> *mut Slab {
        let s = self.head;
        if !s.is_null() {
            // SAFETY: `s` is this list's head.
            unsafe { self.remove(s) };
        }
        s
    }

    /// # Safety
    ///
    /// The caller owns the list.
    pub unsafe fn pop_back(&mut self) -> *mut Slab {
        let s = self.tail;
        if !s.is_null() {
            // SAFETY: `s` is this list's tail.
            unsafe { self.remove(s) };
        }
        s
    }
}
