//! A binary min-heap of (deadline, item address) over a vector from the store's allocator: the active
//! expiry's queue. Entries go stale when a key's TTL changes or the key goes away; the expiry map is the
//! truth, and stale entries are skipped when they surface.

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

pub(crate) struct DeadlineHeap<A: Allocator> {
    v: Vec<(u64, usize), A>,
}

impl<A: Allocator> DeadlineHeap<A> {
    pub(crate) fn new_in(alloc: A) -> Self {
        DeadlineHeap {
            v: Vec::new_in(alloc),
        }
    }

    /// Bytes the heap's array takes.
    pub(crate) fn bytes(&self) -> usize {
        self.v.capacity() * core::mem::size_of::<(u64, usize)>()
    }

    pub(crate) fn push(&mut self, e: (u64, usize)) {
        self.v.push(e);
        let mut i = self.v.len() - 1;
        while i > 0 {
            let p = (i - 1) / 2;
            if self.v[p] <= self.v[i] {
                break;
            }
            self.v.swap(p, i);
            i = p;
        }
    }

    pub(crate) fn peek(&self) -> Option<(u64, usize)> {
        self.v.first().copied()
    }

    pub(crate) fn pop(&mut self) -> Option<(u64, usize)> {
        if self.v.is_empty() {
            return None;
        }
        let top = self.v.swap_remove(0);
        let n = self.v.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.v[l] < self.v[m] {
                m = l;
            }
            if r < n && self.v[r] < self.v[m] {
                m = r;
            }
            if m == i {
                break;
            }
            self.v.swap(i, m);
            i = m;
        }
        Some(top)
    }

    /// Empties the heap and gives its array back.
    pub(crate) fn clear(&mut self) {
        self.v.clear();
        self.v.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::DeadlineHeap;
    use allocator_api2::alloc::Global;

    #[test]
    fn pops_in_deadline_order() {
        let mut h = DeadlineHeap::new_in(Global);
        let mut x = 7u64;
        let mut all = vec![];
        for i in 0..500 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            h.push((x >> 40, i));
            all.push((x >> 40, i));
        }
        all.sort();
        let mut out = vec![];
        while let Some(e) = h.pop() {
            out.push(e);
        }
        assert_eq!(out, all);
    }
}
