//! The treap's node arena: slots addressed by `u32`, held in chunks of [`CHUNK`] (the first grows from
//! small), so a growing set never copies its nodes in one long stall (a single `Vec` doubling would
//! copy every node at once, hundreds of milliseconds at ten million members) and never holds more
//! than a chunk of spare slots. A slot never moves.

use core::ops::{Index, IndexMut};

use allocator_api2::vec::Vec;

use crate::alloc::KvAlloc;

const SHIFT: u32 = 10;
/// Slots per chunk.
pub(super) const CHUNK: usize = 1 << SHIFT;

pub(super) struct Arena<T, A: KvAlloc> {
    /// Every chunk but the last holds exactly `CHUNK` slots.
    chunks: Vec<Vec<T, A>, A>,
    len: usize,
    /// Slots the chunks have room for (kept, so that [`Arena::bytes`], asked on every change of the
    /// set, is O(1)).
    room: usize,
    alloc: A,
}

impl<T, A: KvAlloc> Arena<T, A> {
    pub(super) fn new_in(alloc: A) -> Self {
        Arena {
            chunks: Vec::new_in(alloc.clone()),
            len: 0,
            room: 0,
            alloc,
        }
    }

    /// Slots in use (live or not: the arena does not know).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the chunks and of the chunk list.
    pub(super) fn bytes(&self) -> usize {
        self.chunks.capacity() * core::mem::size_of::<Vec<T, A>>() + self.room * core::mem::size_of::<T>()
    }

    /// Appends a slot; its index.
    pub(super) fn push(&mut self, v: T) -> u32 {
        assert!(self.len < u32::MAX as usize, "arena slots fit in u32");
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            let first = if self.chunks.is_empty() { 16 } else { CHUNK };
            let chunk = Vec::with_capacity_in(first, self.alloc.clone());
            self.room += chunk.capacity();
            self.chunks.push(chunk);
        }
        let last = self.chunks.last_mut().expect("a chunk");
        if last.len() == last.capacity() {
            let grow = last.len().min(CHUNK - last.len());
            let before = last.capacity();
            last.reserve_exact(grow);
            self.room += last.capacity() - before;
        }
        last.push(v);
        self.len += 1;
        (self.len - 1) as u32
    }

    pub(super) fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i >> SHIFT)?.get(i & (CHUNK - 1))
    }

    /// Every slot in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flat_map(|c| c.iter())
    }
}

impl<T, A: KvAlloc> Index<u32> for Arena<T, A> {
    type Output = T;

    fn index(&self, i: u32) -> &T {
        &self.chunks[(i >> SHIFT) as usize][i as usize & (CHUNK - 1)]
    }
}

impl<T, A: KvAlloc> IndexMut<u32> for Arena<T, A> {
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self.chunks[(i >> SHIFT) as usize][i as usize & (CHUNK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn slots_stay_put_across_chunks() {
        let mut a = Arena::new_in(Global);
        let n = if cfg!(miri) { CHUNK + 40 } else { 5 * CHUNK + 3 };
        for i in 0..n {
            assert_eq!(a.push(i), i as u32);
        }
        assert_eq!(a.len(), n);
        for i in 0..n {
            assert_eq!(a[i as u32], i);
            assert_eq!(a.get(i), Some(&i));
        }
        a[3] = 77;
        assert_eq!(a.iter().nth(3), Some(&77));
        assert_eq!(a.get(n), None);
        // Spare room is at most one chunk's, and the count kept agrees with the chunks.
        let room: usize = a.chunks.iter().map(|c| c.capacity()).sum();
        assert_eq!(a.room, room);
        assert!(room <= n + CHUNK);
    }
}
