//! Reading RDB's primitives as Redis's `rdbLoad*` functions do (`rdb.c`), from a byte slice that may
//! be anything: every read is bounds-checked, every length is checked against what is left before it
//! is used, and nothing panics.

use std::borrow::Cow;

use super::{
    lzf, Corrupt, RDB_32BITLEN, RDB_64BITLEN, RDB_ENCVAL, RDB_ENC_INT16, RDB_ENC_INT32, RDB_ENC_INT8,
    RDB_ENC_LZF,
};

/// A length field: a plain length, or (top bits `11`) the string encoding it names (`RDB_ENC_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Len {
    /// A count or a byte length.
    Plain(u64),
    /// `RDB_ENC_INT8`, `_INT16`, `_INT32` or `_LZF` (or an unknown one, 4 to 63).
    Encoded(u8),
}

/// A reader over RDB bytes. Every method advances past what it read and returns [`Corrupt`] when the
/// bytes run out or are not what Redis writes; after an error the position is unspecified.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Decoder { data, pos: 0 }
    }

    /// How many bytes have been read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// How many bytes are left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// The next byte, not consumed.
    pub fn peek_u8(&self) -> Result<u8, Corrupt> {
        self.data.get(self.pos).copied().ok_or(Corrupt)
    }

    pub fn u8(&mut self) -> Result<u8, Corrupt> {
        let b = self.peek_u8()?;
        self.pos += 1;
        Ok(b)
    }

    /// The next `n` bytes, borrowed.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if n > self.remaining() {
            return Err(Corrupt);
        }
        let b = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    /// A length field (`rdbLoadLenByRef`): 6 bits, 14 bits big-endian, [`RDB_32BITLEN`] and a
    /// big-endian u32, [`RDB_64BITLEN`] and a big-endian u64, or a string encoding. Any other first
    /// byte of the form `10xxxxxx` is corrupt.
    pub fn len(&mut self) -> Result<Len, Corrupt> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Len::Plain((b & 0x3f) as u64),
            1 => Len::Plain((((b & 0x3f) as u64) << 8) | self.u8()? as u64),
            RDB_ENCVAL => Len::Encoded(b & 0x3f),
            _ if b == RDB_32BITLEN => Len::Plain(u32::from_be_bytes(self.array()?) as u64),
            _ if b == RDB_64BITLEN => Len::Plain(u64::from_be_bytes(self.array()?)),
            _ => return Err(Corrupt),
        })
    }

    /// A plain length (`rdbLoadLen` where no string may follow): an encoded one is corrupt.
    pub fn length(&mut self) -> Result<u64, Corrupt> {
        match self.len()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(Corrupt),
        }
    }

    /// A count of things that follow, each taking at least `min_bytes` of the input (one when given
    /// 0): corrupt when they could not fit in what is left. For sizing a collection before reading it.
    pub fn count(&mut self, min_bytes: usize) -> Result<usize, Corrupt> {
        let n = self.length()?;
        let fits = n
            .checked_mul(min_bytes.max(1) as u64)
            .is_some_and(|b| b <= self.remaining() as u64);
        if !fits {
            return Err(Corrupt);
        }
        Ok(n as usize)
    }

    /// A plain length that must fit in what is left, as a byte count.
    fn byte_len(&mut self) -> Result<usize, Corrupt> {
        let n = self.length()?;
        if n > self.remaining() as u64 {
            return Err(Corrupt);
        }
        Ok(n as usize)
    }

    /// A string (`rdbGenericLoadStringObject`): a length and its bytes (borrowed), an `INT8`/`16`/`32`
    /// as its decimal digits, or an LZF stream decompressed. LZF's compressed length must fit in what
    /// is left, and its stated length must be one the stream could produce, before anything is
    /// allocated.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, Corrupt> {
        match self.len()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| Corrupt)?;
                Ok(Cow::Borrowed(self.bytes(n)?))
            }
            Len::Encoded(RDB_ENC_LZF) => {
                let clen = self.byte_len()?;
                let len = usize::try_from(self.length()?).map_err(|_| Corrupt)?;
                let stream = self.bytes(clen)?;
                lzf::decompress(stream, len).map(Cow::Owned).ok_or(Corrupt)
            }
            Len::Encoded(enc) => {
                let v = self.encoded_int(enc)?;
                Ok(Cow::Owned(v.to_string().into_bytes()))
            }
        }
    }

    /// A string that must be an integer: an `INT8`/`16`/`32` read as one, or any other form whose
    /// bytes Redis's `string2ll` accepts (no sign but `-`, no leading zero, within i64).
    pub fn string_i64(&mut self) -> Result<i64, Corrupt> {
        let at = self.pos;
        if let Len::Encoded(enc @ (RDB_ENC_INT8 | RDB_ENC_INT16 | RDB_ENC_INT32)) = self.len()? {
            return self.encoded_int(enc);
        }
        self.pos = at;
        let s = self.string()?;
        crate::redis_util::parse_i64(&s).ok_or(Corrupt)
    }

    /// Skips a string without decompressing it (its LZF stream is not checked).
    pub fn skip_string(&mut self) -> Result<(), Corrupt> {
        match self.len()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| Corrupt)?;
                self.bytes(n).map(drop)
            }
            Len::Encoded(RDB_ENC_LZF) => {
                let clen = self.byte_len()?;
                self.length()?;
                self.bytes(clen).map(drop)
            }
            Len::Encoded(enc) => self.encoded_int(enc).map(drop),
        }
    }

    /// The integer after an `INT8`/`16`/`32` marker (`rdbLoadIntegerObject`, little-endian).
    fn encoded_int(&mut self, enc: u8) -> Result<i64, Corrupt> {
        match enc {
            RDB_ENC_INT8 => Ok(self.u8()? as i8 as i64),
            RDB_ENC_INT16 => Ok(i16::from_le_bytes(self.array()?) as i64),
            RDB_ENC_INT32 => Ok(i32::from_le_bytes(self.array()?) as i64),
            _ => Err(Corrupt),
        }
    }

    /// A time in milliseconds (`rdbLoadMillisecondTime`): 8 bytes, little-endian.
    pub fn millis(&mut self) -> Result<i64, Corrupt> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A time in seconds (`rdbLoadTime`, after [`super::RDB_OPCODE_EXPIRETIME`]): 4 bytes,
    /// little-endian.
    pub fn secs(&mut self) -> Result<i32, Corrupt> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    /// 8 bytes, little-endian.
    pub fn u64_le(&mut self) -> Result<u64, Corrupt> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A binary64 double, little-endian (`rdbLoadBinaryDoubleValue`).
    pub fn binary_double(&mut self) -> Result<f64, Corrupt> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A double as `RDB_TYPE_ZSET` stores scores (`rdbLoadDoubleValue`): a length byte, where 253 is
    /// NaN, 254 +inf and 255 -inf; else that many bytes of text read as `sscanf("%lg")` reads them (up
    /// to a NUL, leading white space skipped, the longest prefix that is a number).
    pub fn old_double(&mut self) -> Result<f64, Corrupt> {
        match self.u8()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.bytes(n as usize)?;
                let text = text.split(|&b| b == 0).next().unwrap_or_default();
                strtod_prefix(text).ok_or(Corrupt)
            }
        }
    }
}

/// The number at the start of `s` as C's `strtod` reads it, or `None` when there is none: white
/// space, a sign, then `inf`/`infinity`/`nan` (any case), a hexadecimal float (`0x1.8p3`), or a
/// decimal one (`-12.5e-3`); an exponent marker with no digits after it ends the number before it.
fn strtod_prefix(s: &[u8]) -> Option<f64> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let rest = &s[i..];
    let sign = if neg { -1.0 } else { 1.0 };
    let starts = |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"inf") {
        return Some(sign * f64::INFINITY);
    }
    if starts(b"nan") {
        return Some(f64::NAN);
    }
    let digits = |from: usize, hex: bool| {
        let mut j = from;
        while j < rest.len() && (rest[j].is_ascii_digit() || (hex && rest[j].is_ascii_hexdigit())) {
            j += 1;
        }
        j
    };
    // Mantissa: digits, optionally a point and more digits; at least one digit in all.
    let mantissa = |from: usize, hex: bool| {
        let a = digits(from, hex);
        let (b, frac) = if rest.get(a) == Some(&b'.') {
            (digits(a + 1, hex), a + 1)
        } else {
            (a, a)
        };
        (a > from || b > frac).then_some((a, b))
    };
    // Exponent: the marker, an optional sign, digits; absent unless there are digits.
    let exponent = |at: usize, marker: u8| {
        if !rest.get(at).is_some_and(|c| c.eq_ignore_ascii_case(&marker)) {
            return at;
        }
        let mut j = at + 1;
        if matches!(rest.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let k = digits(j, false);
        if k > j {
            k
        } else {
            at
        }
    };
    if rest.len() > 2 && rest[0] == b'0' && rest[1].eq_ignore_ascii_case(&b'x') {
        if let Some((int_end, frac_end)) = mantissa(2, true) {
            let end = exponent(frac_end, b'p');
            return Some(
                sign * hex_float(
                    &rest[2..int_end],
                    &rest[(int_end + 1).min(frac_end)..frac_end],
                    &rest[frac_end..end],
                ),
            );
        }
        // "0x" with no hex digit: strtod reads the "0".
        return Some(sign * 0.0);
    }
    let (_, frac_end) = mantissa(0, false)?;
    let end = exponent(frac_end, b'e');
    let text = std::str::from_utf8(&rest[..end]).ok()?;
    text.parse::<f64>().ok().map(|v| sign * v)
}

/// A hexadecimal float's value from its integer digits, fraction digits and exponent part (`p-3`),
/// rounded once to nearest (a result in the subnormal range may be rounded twice).
fn hex_float(int: &[u8], frac: &[u8], exp: &[u8]) -> f64 {
    let mut mant: u128 = 0;
    let mut scale: i64 = 0; // binary exponent of the mantissa's last bit
    let mut sticky = false;
    for (k, &c) in int.iter().chain(frac).enumerate() {
        let d = (c as char).to_digit(16).unwrap_or(0) as u128;
        if mant >> 120 == 0 {
            mant = (mant << 4) | d;
            if k >= int.len() {
                scale -= 4;
            }
        } else {
            sticky |= d != 0;
            if k < int.len() {
                scale += 4;
            }
        }
    }
    if sticky {
        mant |= 1;
    }
    let mut e: i64 = 0;
    if exp.len() > 1 {
        let (neg, digits) = match exp[1] {
            b'-' => (true, &exp[2..]),
            b'+' => (false, &exp[2..]),
            _ => (false, &exp[1..]),
        };
        for &c in digits {
            e = (e * 10 + (c - b'0') as i64).min(1 << 20);
        }
        if neg {
            e = -e;
        }
    }
    let mut v = mant as f64;
    let mut p = (scale + e).clamp(-(1 << 21), 1 << 21);
    while p > 0 {
        let step = p.min(1000);
        v *= 2f64.powi(step as i32);
        p -= step;
    }
    while p < 0 {
        let step = (-p).min(1000);
        v *= 2f64.powi(-(step as i32));
        p += step;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        let mut d =
            Decoder::new(b"\x3f\x40\xc8\x80\x00\x01\x00\x00\x81\x00\x00\x00\x01\x00\x00\x00\x00\xc3\xbf");
        assert_eq!(d.len(), Ok(Len::Plain(63)));
        assert_eq!(d.len(), Ok(Len::Plain(200)));
        assert_eq!(d.len(), Ok(Len::Plain(65536)));
        assert_eq!(d.len(), Ok(Len::Plain(1 << 32)));
        assert_eq!(d.len(), Ok(Len::Encoded(3)));
        assert_eq!(d.len(), Err(Corrupt));
        assert_eq!(Decoder::new(b"\xc0").length(), Err(Corrupt));
        assert_eq!(Decoder::new(b"\x80\x00\x00").len(), Err(Corrupt));
        assert_eq!(Decoder::new(b"").len(), Err(Corrupt));
    }

    #[test]
    fn strings_redis_wrote() {
        // The bodies of DUMPs of `SET` keys on redis-server 7.0.15 (after the type byte 0x00).
        let cases: [(&[u8], &[u8]); 6] = [
            (b"\x05hello", b"hello"),
            (b"\xc0\xfb", b"-5"),
            (b"\xc1,\x01", b"300"),
            (b"\xc2p\x11\x01\x00", b"70000"),
            (b"\x0b12345678901", b"12345678901"),
            (b"\xc3\x09@\xc8\x01aa\xe0\xbb\x00\x01aa", &[b'a'; 200]),
        ];
        for (bytes, want) in cases {
            let mut d = Decoder::new(bytes);
            assert_eq!(&*d.string().unwrap(), want);
            assert!(d.is_empty());
            let mut d = Decoder::new(bytes);
            d.skip_string().unwrap();
            assert!(d.is_empty());
        }
        assert!(matches!(
            Decoder::new(b"\x05hello").string(),
            Ok(Cow::Borrowed(_))
        ));
        assert_eq!(Decoder::new(b"\xc0\xfb").string_i64(), Ok(-5));
        assert_eq!(Decoder::new(b"\x0b12345678901").string_i64(), Ok(12345678901));
        assert_eq!(Decoder::new(b"\x0212").string_i64(), Ok(12));
        assert_eq!(Decoder::new(b"\x02+1").string_i64(), Err(Corrupt));
    }

    #[test]
    fn encoder_round_trip() {
        use crate::rdb::encode::Encoder;
        let mut e = Encoder::new(true);
        let long: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8 + b'a').collect();
        let strings: [&[u8]; 9] = [
            b"",
            b"x",
            b"0",
            b"-1",
            b"127",
            b"-32769",
            b"99999999999",
            b"abc",
            &long,
        ];
        for s in strings {
            e.string(s);
        }
        for v in [0, -1, 1 << 31, i64::MIN, i64::MAX] {
            e.int_string(v);
        }
        for n in [0u64, 63, 64, 16383, 16384, u32::MAX as u64, u64::MAX] {
            e.len(n);
        }
        e.millis(-7);
        e.u64_le(u64::MAX - 1);
        e.binary_double(-0.25);
        let bytes = e.take();
        let mut d = Decoder::new(&bytes);
        for s in strings {
            assert_eq!(&*d.string().unwrap(), s);
        }
        for v in [0, -1, 1 << 31, i64::MIN, i64::MAX] {
            assert_eq!(d.string_i64(), Ok(v));
        }
        for n in [0u64, 63, 64, 16383, 16384, u32::MAX as u64, u64::MAX] {
            assert_eq!(d.length(), Ok(n));
        }
        assert_eq!(d.millis(), Ok(-7));
        assert_eq!(d.u64_le(), Ok(u64::MAX - 1));
        assert_eq!(d.binary_double(), Ok(-0.25));
        assert!(d.is_empty());
    }

    #[test]
    fn lengths_past_the_end_are_corrupt_not_allocations() {
        // A plain string claiming 4 GiB with a few bytes left.
        assert_eq!(Decoder::new(b"\x80\xff\xff\xff\xffabc").string(), Err(Corrupt));
        assert_eq!(
            Decoder::new(b"\x81\xff\xff\xff\xff\xff\xff\xff\xffabc").string(),
            Err(Corrupt)
        );
        // LZF: a compressed length past the end, and an uncompressed one no stream of that size makes.
        assert_eq!(
            Decoder::new(b"\xc3\x80\xff\xff\xff\xff\x05\x00a").string(),
            Err(Corrupt)
        );
        assert_eq!(
            Decoder::new(b"\xc3\x02\x81\x00\x00\x01\x00\x00\x00\x00\x00\x00a").string(),
            Err(Corrupt)
        );
        assert_eq!(
            Decoder::new(b"\xc3\x02\x81\xff\xff\xff\xff\xff\xff\xff\xff\x00a").string(),
            Err(Corrupt)
        );
        // Unknown string encodings.
        assert_eq!(Decoder::new(b"\xc4\x00").string(), Err(Corrupt));
        assert_eq!(Decoder::new(b"\xff").string(), Err(Corrupt));
        // Counts that cannot fit.
        assert_eq!(Decoder::new(b"\x80\xff\xff\xff\xff\x00").count(1), Err(Corrupt));
        assert_eq!(Decoder::new(b"\x03abc").count(1), Ok(3));
        assert_eq!(Decoder::new(b"\x03abc").count(2), Err(Corrupt));
        assert_eq!(
            Decoder::new(b"\x81\xff\xff\xff\xff\xff\xff\xff\xff").count(0),
            Err(Corrupt)
        );
    }

    #[test]
    fn fixed_width_reads() {
        let mut d = Decoder::new(b"\x01\x02\x03\x04\x05\x06\x07");
        assert_eq!(d.secs(), Ok(0x0403_0201));
        assert_eq!(d.pos(), 4);
        assert_eq!(d.remaining(), 3);
        assert_eq!(d.rest(), b"\x05\x06\x07");
        assert_eq!(d.peek_u8(), Ok(5));
        assert_eq!(d.millis(), Err(Corrupt));
        let mut d = Decoder::new(b"\x05\x06\x07");
        assert_eq!(d.bytes(2), Ok(&b"\x05\x06"[..]));
        assert_eq!(d.bytes(2), Err(Corrupt));
        assert_eq!(d.u8(), Ok(7));
        assert_eq!(d.u8(), Err(Corrupt));
    }

    #[test]
    fn old_doubles() {
        let read = |b: &[u8]| Decoder::new(b).old_double();
        assert!(read(b"\xfd").unwrap().is_nan());
        assert_eq!(read(b"\xfe"), Ok(f64::INFINITY));
        assert_eq!(read(b"\xff"), Ok(f64::NEG_INFINITY));
        // As encodings.rdb (RDB 4, tests/assets in Redis's source) stores a zset's scores.
        assert_eq!(read(b"\x0a5000000000"), Ok(5e9));
        assert_eq!(read(b"\x0220"), Ok(20.0));
        assert_eq!(read(b"\x171.0000000000000001e+300"), Ok(1e300));
        assert_eq!(read(b"\x04-1.5"), Ok(-1.5));
        assert_eq!(read(b"\x04 2.5"), Ok(2.5));
        assert_eq!(read(b"\x052.5xy"), Ok(2.5));
        assert_eq!(read(b"\x032e+"), Ok(2.0));
        assert_eq!(read(b"\x02.5"), Ok(0.5));
        assert_eq!(read(b"\x025."), Ok(5.0));
        assert_eq!(read(b"\x051e999"), Ok(f64::INFINITY));
        assert_eq!(read(b"\x04-inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(read(b"\x08Infinity"), Ok(f64::INFINITY));
        assert!(read(b"\x03nan").unwrap().is_nan());
        assert_eq!(read(b"\x070x1.8p1"), Ok(3.0));
        assert_eq!(read(b"\x05-0x10"), Ok(-16.0));
        assert_eq!(read(b"\x030xg"), Ok(0.0));
        assert_eq!(read(b"\x060x1.8p"), Ok(1.5));
        assert_eq!(read(b"\x050X.8P"), Ok(0.5));
        assert_eq!(read(b"\x060x1p-2"), Ok(0.25));
        assert_eq!(read(b"\x033\x004"), Ok(3.0));
        assert_eq!(read(b"\x00"), Err(Corrupt));
        assert_eq!(read(b"\x01."), Err(Corrupt));
        assert_eq!(read(b"\x03abc"), Err(Corrupt));
        assert_eq!(read(b"\x01-"), Err(Corrupt));
        assert_eq!(read(b"\x05123"), Err(Corrupt));
    }

    #[test]
    fn adversarial_input_never_panics() {
        let mut e = crate::rdb::encode::Encoder::new(true);
        e.string(&[b'q'; 300]);
        e.string(b"12");
        e.string(b"hello world");
        e.len(1 << 40);
        e.u8(0x17);
        e.bytes(b"12.5e3abcdefghijklmnopqrstuvw");
        let good = e.take();
        let mut seed = 0x0dd_ba11_cafe_f00du64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut inputs: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
        for _ in 0..3000 {
            let mut b = good.clone();
            for _ in 0..1 + rnd() % 3 {
                let i = rnd() as usize % b.len();
                b[i] ^= 1 << (rnd() % 8);
            }
            inputs.push(b);
        }
        for b in &inputs {
            for start in 0..b.len().min(8) {
                let mut d = Decoder::new(&b[start..]);
                while !d.is_empty() {
                    let before = d.pos();
                    let r = match rnd() % 5 {
                        0 => d.string().map(drop),
                        1 => d.skip_string(),
                        2 => d.old_double().map(drop),
                        3 => d.string_i64().map(drop),
                        _ => d.len().map(drop),
                    };
                    if r.is_err() || d.pos() == before {
                        break;
                    }
                }
            }
        }
    }
}
