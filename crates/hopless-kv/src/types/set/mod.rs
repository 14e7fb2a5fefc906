//! STUB: to be written.

use crate::alloc::KvAlloc;

pub struct Set<A: KvAlloc> {
    alloc: A,
    len: usize,
}

impl<A: KvAlloc> Set<A> {
    pub fn new_in(alloc: A) -> Self {
        Set { alloc, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes this collection's blocks take beyond the struct itself.
    pub fn bytes(&self) -> usize {
        0
    }

    pub fn encoding(&self) -> &'static str {
        "listpack"
    }

    pub fn try_clone(&self) -> Option<Self> {
        Some(Set {
            alloc: self.alloc.clone(),
            len: self.len,
        })
    }
}
