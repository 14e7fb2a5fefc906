//! The node sequence of a list: a ring buffer of [`Packed`] blocks in one allocation of the store's
//! allocator, so that adding or dropping a node at either end is O(1) amortised (Redis's quicklist links
//! its nodes; a ring of pointers costs 8 bytes a node less and walks faster).
//!
//! Every slot of the ring exists (`None` when free), so the code stays safe: a slot's `Option` costs
//! nothing, as a `Packed` holds a non-null pointer.

use allocator_api2::vec::Vec;

use crate::alloc::KvAlloc;
use crate::types::packed::Packed;

pub(super) struct Nodes<A: KvAlloc> {
    /// The ring: a power-of-two number of slots (or none), `len` of them from `head` (wrapping) in use.
    slots: Vec<Option<Packed<A>>, A>,
    head: usize,
    len: usize,
}

impl<A: KvAlloc> Nodes<A> {
    pub(super) fn new_in(alloc: A) -> Self {
        Nodes {
            slots: Vec::new_in(alloc),
            head: 0,
            len: 0,
        }
    }

    pub(super) fn alloc(&self) -> &A {
        self.slots.allocator()
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the ring itself (the nodes' blocks are counted by the list).
    pub(super) fn bytes(&self) -> usize {
        self.slots.capacity() * core::mem::size_of::<Option<Packed<A>>>()
    }

    fn slot(&self, i: usize) -> usize {
        (self.head + i) & (self.slots.len() - 1)
    }

    pub(super) fn get(&self, i: usize) -> &Packed<A> {
        self.slots[self.slot(i)]
            .as_ref()
            .expect("slots within len hold a node")
    }

    pub(super) fn get_mut(&mut self, i: usize) -> &mut Packed<A> {
        let s = self.slot(i);
        self.slots[s].as_mut().expect("slots within len hold a node")
    }

    /// Moves the nodes into a ring of `cap` slots (a power of two, at least `len`), first at slot 0.
    fn resize(&mut self, cap: usize) {
        let mut slots = Vec::with_capacity_in(cap, self.alloc().clone());
        for i in 0..self.len {
            let s = self.slot(i);
            slots.push(self.slots[s].take());
        }
        slots.resize_with(cap, || None);
        self.slots = slots;
        self.head = 0;
    }

    fn grow_if_full(&mut self) {
        if self.len == self.slots.len() {
            self.resize((self.slots.len() * 2).max(4));
        }
    }

    /// Gives back half the ring when under a quarter of it is used.
    fn shrink_if_sparse(&mut self) {
        if self.slots.len() > 8 && self.len * 4 < self.slots.len() {
            self.resize(self.slots.len() / 2);
        }
    }

    pub(super) fn push_back(&mut self, n: Packed<A>) {
        self.grow_if_full();
        let s = self.slot(self.len);
        self.slots[s] = Some(n);
        self.len += 1;
    }

    pub(super) fn push_front(&mut self, n: Packed<A>) {
        self.grow_if_full();
        self.head = (self.head + self.slots.len() - 1) & (self.slots.len() - 1);
        self.slots[self.head] = Some(n);
        self.len += 1;
    }

    pub(super) fn pop_back(&mut self) -> Option<Packed<A>> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let s = self.slot(self.len);
        let n = self.slots[s].take();
        self.shrink_if_sparse();
        n
    }

    pub(super) fn pop_front(&mut self) -> Option<Packed<A>> {
        if self.len == 0 {
            return None;
        }
        let n = self.slots[self.head].take();
        self.head = (self.head + 1) & (self.slots.len() - 1);
        self.len -= 1;
        self.shrink_if_sparse();
        n
    }

    /// Puts `n` at position `i` (0..=len), moving the nodes after it one slot on: O(len - i).
    pub(super) fn insert(&mut self, i: usize, n: Packed<A>) {
        self.push_back(n);
        for k in (i..self.len - 1).rev() {
            let (a, b) = (self.slot(k), self.slot(k + 1));
            self.slots.swap(a, b);
        }
    }

    /// Takes out the node at position `i` (< len), moving the nodes after it one slot back: O(len - i).
    pub(super) fn remove(&mut self, i: usize) -> Packed<A> {
        for k in i..self.len - 1 {
            let (a, b) = (self.slot(k), self.slot(k + 1));
            self.slots.swap(a, b);
        }
        self.pop_back().expect("a node at i < len")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    fn node(tag: u8) -> Packed<Global> {
        let mut p = Packed::new_in(Global);
        p.push_back(&[tag]);
        p
    }

    fn tags(n: &Nodes<Global>) -> std::vec::Vec<u8> {
        (0..n.len()).map(|i| n.get(i).get(0).0[0]).collect()
    }

    #[test]
    fn ring_keeps_order_through_wraps_and_middle_edits() {
        let mut n = Nodes::new_in(Global);
        let mut model = std::collections::VecDeque::new();
        let mut seed = 99u64;
        let mut rnd = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let steps = if cfg!(miri) { 200 } else { 5000 };
        for step in 0..steps {
            let t = step as u8;
            match rnd(7) {
                0 | 1 => {
                    n.push_back(node(t));
                    model.push_back(t);
                }
                2 => {
                    n.push_front(node(t));
                    model.push_front(t);
                }
                3 => assert_eq!(n.pop_back().map(|p| p.get(0).0[0]), model.pop_back()),
                4 => assert_eq!(n.pop_front().map(|p| p.get(0).0[0]), model.pop_front()),
                5 => {
                    let i = rnd(model.len() + 1);
                    n.insert(i, node(t));
                    model.insert(i, t);
                }
                _ if !model.is_empty() => {
                    let i = rnd(model.len());
                    assert_eq!(n.remove(i).get(0).0[0], model.remove(i).unwrap());
                }
                _ => {}
            }
            assert_eq!(tags(&n), model.iter().copied().collect::<std::vec::Vec<_>>());
        }
    }
}
