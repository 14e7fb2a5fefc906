//! Fatal reports, written without allocating and without `core::fmt`: a fixed stack buffer, hand-rolled
//! number formatting, one raw `write(2)`, then `abort()` so a core dump keeps the faulting stack.

use crate::platform;

/// A message being built on the stack. Text past the buffer's end is dropped.
pub struct Msg {
    buf: [u8; 1024],
    len: usize,
}

impl Default for Msg {
    fn default() -> Self {
        Self::new()
    }
}

impl Msg {
    pub const fn new() -> Self {
        Self {
            buf: [0; 1024],
            len: 0,
        }
    }

    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        let free = self.buf.get_mut(self.len..).unwrap_or_default();
        let n = b.len().min(free.len());
        if let (Some(dst), Some(src)) = (free.get_mut(..n), b.get(..n)) {
            dst.copy_from_slice(src);
            self.len += n;
        }
        self
    }

    /// `0x` and the value in hexadecimal.
    pub fn hex(&mut self, v: usize) -> &mut Self {
        let mut tmp = [0u8; 18];
        tmp[0] = b'0';
        tmp[1] = b'x';
        let digits = if v == 0 {
            1
        } else {
            (usize::BITS - v.leading_zeros()).div_ceil(4) as usize
        };
        for (i, t) in tmp.iter_mut().skip(2).take(digits).enumerate() {
            let nib = (v >> (4 * (digits - 1 - i))) & 0xf;
            *t = b"0123456789abcdef".get(nib).copied().unwrap_or(b'?');
        }
        self.bytes(tmp.get(..2 + digits).unwrap_or(&tmp))
    }

    /// The value in decimal.
    pub fn dec(&mut self, mut v: u64) -> &mut Self {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        // u64::MAX has 20 digits: the loop stops at i == 0 at the latest.
        for t in tmp.iter_mut().rev() {
            *t = b'0' + (v % 10) as u8;
            i -= 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.bytes(tmp.get(i..).unwrap_or(&tmp))
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&self.buf)
    }

    /// Writes the message to stderr.
    pub fn emit(&self) {
        platform::write_stderr(self.as_bytes());
    }

    /// Writes the message to stderr and aborts.
    #[cold]
    pub fn fatal(&self) -> ! {
        self.emit();
        platform::abort()
    }
}

#[cfg(test)]
mod tests {
    use super::Msg;

    #[test]
    fn formats_numbers_without_fmt() {
        let mut m = Msg::new();
        m.str("p=")
            .hex(0x7f00_dead_beef)
            .str(" n=")
            .dec(0)
            .str(" ")
            .dec(18446744073709551615)
            .hex(0);
        assert_eq!(m.as_bytes(), b"p=0x7f00deadbeef n=0 184467440737095516150x0");
    }
}
