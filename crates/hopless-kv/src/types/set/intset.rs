//! The intset form of a set, as Redis's `intset.c`: sorted distinct integers in one block, each stored in
//! the narrowest width that fits the widest member (2, 4 or 8 bytes, little-endian), found by binary
//! search. The width only grows (a member that needs more upgrades every member), as in Redis.

use crate::alloc::KvAlloc;
use crate::types::thin_buf::ThinBuf;

/// `len * width` bytes, the members in ascending order; the width (bytes per member: 2, 4 or 8) is the
/// buffer's own word.
pub(crate) struct IntSet<A: KvAlloc> {
    buf: ThinBuf<A>,
}

/// The narrowest width that holds `x`.
fn width_of(x: i64) -> usize {
    if i16::try_from(x).is_ok() {
        2
    } else if i32::try_from(x).is_ok() {
        4
    } else {
        8
    }
}

impl<A: KvAlloc> IntSet<A> {
    pub(crate) fn new_in(alloc: A) -> Self {
        let mut buf = ThinBuf::new_in(alloc);
        buf.word = 2;
        IntSet { buf }
    }

    /// Bytes per member: 2, 4 or 8.
    #[inline]
    fn width(&self) -> usize {
        self.buf.word as usize
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len() / self.width()
    }

    /// Bytes the block takes.
    pub(crate) fn bytes(&self) -> usize {
        self.buf.block_bytes()
    }

    /// The member at index `i` (below `len`).
    pub(crate) fn get(&self, i: usize) -> i64 {
        let b = &self.buf[i * self.width()..(i + 1) * self.width()];
        match self.width() {
            2 => i16::from_le_bytes([b[0], b[1]]) as i64,
            4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            _ => i64::from_le_bytes(b.try_into().expect("8 bytes")),
        }
    }

    fn put(buf: &mut [u8], width: usize, i: usize, x: i64) {
        let dst = &mut buf[i * width..(i + 1) * width];
        match width {
            2 => dst.copy_from_slice(&(x as i16).to_le_bytes()),
            4 => dst.copy_from_slice(&(x as i32).to_le_bytes()),
            _ => dst.copy_from_slice(&x.to_le_bytes()),
        }
    }

    pub(crate) fn first(&self) -> Option<i64> {
        (self.len() > 0).then(|| self.get(0))
    }

    pub(crate) fn last(&self) -> Option<i64> {
        (self.len() > 0).then(|| self.get(self.len() - 1))
    }

    /// `Ok(index)` of `x`, or `Err(index)` where it would go.
    fn search(&self, x: i64) -> Result<usize, usize> {
        if width_of(x) > self.width() {
            // Wider than every member: below them all or above them all.
            return Err(if x < 0 { 0 } else { self.len() });
        }
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(&x) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub(crate) fn contains(&self, x: i64) -> bool {
        self.search(x).is_ok()
    }

    /// Room for `extra` more bytes, growing by at least an eighth (amortised appends, little slack).
    fn reserve(&mut self, extra: usize) {
        if self.buf.len() + extra > self.buf.capacity() {
            self.buf.reserve_exact(extra.max(self.buf.len() / 8).max(16));
        }
    }

    /// Rewrites every member at `width` (wider than now).
    fn upgrade(&mut self, width: usize) {
        let n = self.len();
        let old = self.width();
        self.reserve(n * (width - old));
        self.buf.resize(n * width);
        // From the top down, so that no member is overwritten before it is read.
        for i in (0..n).rev() {
            let b = &self.buf[i * old..(i + 1) * old];
            let x = match old {
                2 => i16::from_le_bytes([b[0], b[1]]) as i64,
                _ => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            };
            Self::put(&mut self.buf, width, i, x);
        }
        self.buf.word = width as u32;
    }

    /// Adds `x`; false if it was there.
    pub(crate) fn insert(&mut self, x: i64) -> bool {
        if width_of(x) > self.width() {
            self.upgrade(width_of(x));
        }
        let Err(i) = self.search(x) else {
            return false;
        };
        let w = self.width();
        self.reserve(w);
        let end = self.buf.len();
        self.buf.resize(end + w);
        self.buf.copy_within(i * w..end, (i + 1) * w);
        Self::put(&mut self.buf, w, i, x);
        true
    }

    /// Removes the member at index `i` (below `len`) and returns it.
    pub(crate) fn remove_at(&mut self, i: usize) -> i64 {
        let x = self.get(i);
        let w = self.width();
        self.buf.remove_range(i * w..(i + 1) * w);
        self.maybe_shrink();
        x
    }

    /// Removes `x`; false if it was not there.
    pub(crate) fn remove(&mut self, x: i64) -> bool {
        match self.search(x) {
            Ok(i) => {
                self.remove_at(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Keeps the members `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(i64) -> bool) {
        let (w, n) = (self.width(), self.len());
        let mut out = 0;
        for i in 0..n {
            let x = self.get(i);
            if keep(x) {
                Self::put(&mut self.buf, w, out, x);
                out += 1;
            }
        }
        self.buf.truncate(out * w);
        self.maybe_shrink();
    }

    fn maybe_shrink(&mut self) {
        if self.buf.capacity() > 64 && self.buf.len() < self.buf.capacity() / 2 {
            self.buf.shrink_to(self.buf.len() + self.buf.len() / 8);
        }
    }

    /// The members in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// A copy, or None when the allocator has no memory for it.
    pub(crate) fn try_clone(&self) -> Option<Self> {
        let mut buf = ThinBuf::new_in(self.buf.allocator().clone());
        buf.try_reserve_exact(self.buf.len()).ok()?;
        buf.extend_from_slice(&self.buf);
        buf.word = self.buf.word;
        Some(IntSet { buf })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;
    use std::collections::BTreeSet;

    #[test]
    fn widths_grow_and_order_holds() {
        let mut s = IntSet::new_in(Global);
        let mut m = BTreeSet::new();
        let vals = [
            5,
            -3,
            i16::MAX as i64,
            i16::MIN as i64,
            70_000,
            -70_000,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
            0,
            5,
            (i32::MAX as i64) + 1,
        ];
        for (n, &x) in vals.iter().enumerate() {
            assert_eq!(s.insert(x), m.insert(x));
            assert_eq!(
                s.iter().collect::<std::vec::Vec<_>>(),
                m.iter().copied().collect::<std::vec::Vec<_>>()
            );
            assert_eq!(s.len(), m.len(), "after {n} inserts");
        }
        assert_eq!(s.width(), 8);
        for &x in &vals {
            assert!(s.contains(x));
        }
        assert!(!s.contains(6) && !s.contains(i64::MAX - 1));
        assert!(s.remove(i64::MIN) && !s.remove(i64::MIN));
        assert_eq!(s.first(), Some(i32::MIN as i64));
        assert_eq!(s.last(), Some(i64::MAX));
        s.retain(|x| x >= 0);
        assert_eq!(
            s.iter().collect::<std::vec::Vec<_>>(),
            vec![0, 5, i16::MAX as i64, 70_000, (i32::MAX as i64) + 1, i64::MAX]
        );
        assert_eq!(s.try_clone().unwrap().iter().count(), 6);
    }

    #[test]
    fn small_members_take_two_bytes() {
        let mut s = IntSet::new_in(Global);
        let n = if cfg!(miri) { 50 } else { 500 };
        for i in 0..n {
            s.insert(i * 3);
        }
        assert_eq!(s.width(), 2);
        assert!(s.bytes() <= 2 * n as usize * 9 / 8 + 16);
        // A value a wider width holds below (or above) every member lands at the start (or end).
        s.insert(-100_000);
        s.insert(100_000);
        assert_eq!(s.first(), Some(-100_000));
        assert_eq!(s.last(), Some(100_000));
        assert!(s.contains(3) && !s.contains(4));
    }
}
