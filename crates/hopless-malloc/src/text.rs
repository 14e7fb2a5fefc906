//! Text built on the stack, for the reports the library writes (`malloc_stats`, `malloc_info`): no
//! allocation (the caller may be inside a program's allocator bookkeeping, or out of memory) and no
//! `core::fmt` (a library without `std` would carry its code for two reports).

/// A text of at most `N` bytes. What does not fit is dropped, and [`Text::is_full`] says so.
pub(crate) struct Text<const N: usize> {
    buf: [u8; N],
    len: usize,
    dropped: bool,
}

impl<const N: usize> Text<N> {
    pub(crate) const fn new() -> Self {
        Text {
            buf: [0; N],
            len: 0,
            dropped: false,
        }
    }

    pub(crate) fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        let free = self.buf.get_mut(self.len..).unwrap_or_default();
        let n = b.len().min(free.len());
        if let (Some(dst), Some(src)) = (free.get_mut(..n), b.get(..n)) {
            dst.copy_from_slice(src);
            self.len += n;
        }
        self.dropped |= n < b.len();
        self
    }

    /// `v` in decimal.
    pub(crate) fn dec(&mut self, v: u64) -> &mut Self {
        self.dec_in(v, 0)
    }

    /// `v` in decimal, right-aligned in `width` columns (printf's `%10u` for a width of 10).
    pub(crate) fn dec_in(&mut self, mut v: u64, width: usize) -> &mut Self {
        // u64::MAX has 20 digits: the loop ends at `i == 0` at the latest.
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        for d in digits.iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            i -= 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let digits = digits.get(i..).unwrap_or_default();
        for _ in digits.len()..width {
            self.bytes(b" ");
        }
        self.bytes(digits)
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// Whether something was dropped for want of room.
    pub(crate) fn is_full(&self) -> bool {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn writes_numbers_as_printf_does_and_drops_what_does_not_fit() {
        let mut t = Text::<64>::new();
        t.str("[")
            .dec_in(42, 10)
            .str("][")
            .dec_in(0, 3)
            .str("][")
            .dec(u64::MAX)
            .str("]");
        assert_eq!(t.as_bytes(), b"[        42][  0][18446744073709551615]");
        assert!(!t.is_full());
        t.dec_in(1234567890123, 10);
        assert_eq!(t.as_bytes().len(), 39 + 13);
        let mut small = Text::<4>::new();
        small.str("abcdef");
        assert_eq!(small.as_bytes(), b"abcd");
        assert!(small.is_full());
    }
}
