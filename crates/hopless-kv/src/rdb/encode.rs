//! Writing RDB's primitives as Redis's `rdbSave*` functions do (`rdb.c`): lengths, strings (as small
//! integers, LZF-compressed, or plain), times and doubles, appended to a buffer.

use super::{
    lzf, RDB_32BITLEN, RDB_64BITLEN, RDB_ENCVAL, RDB_ENC_INT16, RDB_ENC_INT32, RDB_ENC_INT8, RDB_ENC_LZF,
};
use crate::redis_util::parse_i64;

/// An RDB writer over a growing buffer. `compress` is Redis's `rdbcompression`: strings longer than 20
/// bytes are LZF-compressed when that saves at least four bytes.
#[derive(Debug, Default)]
pub struct Encoder {
    /// What has been written.
    pub out: Vec<u8>,
    /// Whether [`Encoder::string`] tries LZF.
    pub compress: bool,
    /// LZF's output before its lengths are known.
    scratch: Vec<u8>,
}

impl Encoder {
    pub fn new(compress: bool) -> Self {
        Encoder {
            out: Vec::new(),
            compress,
            scratch: Vec::new(),
        }
    }

    /// One byte: a type or an opcode.
    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    /// Bytes as they are, with no length.
    pub fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    /// A length (`rdbSaveLen`): 6 bits in one byte below 64, 14 bits big-endian in two below 16384,
    /// else [`RDB_32BITLEN`] and a big-endian u32, or [`RDB_64BITLEN`] and a big-endian u64.
    pub fn len(&mut self, n: u64) {
        if n < 1 << 6 {
            self.out.push(n as u8);
        } else if n < 1 << 14 {
            self.out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
        } else if let Ok(n) = u32::try_from(n) {
            self.out.push(RDB_32BITLEN);
            self.out.extend_from_slice(&n.to_be_bytes());
        } else {
            self.out.push(RDB_64BITLEN);
            self.out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A string (`rdbSaveRawString`): one of at most 11 bytes that Redis's `string2ll` reads as an
    /// integer within i32 goes as that integer (`INT8`/`16`/`32`, little-endian); else, with `compress`
    /// and more than 20 bytes, LZF (`0xC3`, compressed length, length, stream) when that saves at least
    /// four bytes; else its length and its bytes.
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 11 {
            if let Some(v) = parse_i64(s) {
                if self.small_int(v) {
                    return;
                }
            }
        }
        if self.compress && s.len() > 20 {
            self.scratch.clear();
            if lzf::compress(s, &mut self.scratch) {
                self.lzf_blob_parts(s.len());
                return;
            }
        }
        self.len(s.len() as u64);
        self.out.extend_from_slice(s);
    }

    /// An LZF-compressed string from the stream in `scratch` and its uncompressed length.
    fn lzf_blob_parts(&mut self, original_len: usize) {
        self.out.push((RDB_ENCVAL << 6) | RDB_ENC_LZF);
        self.len(self.scratch.len() as u64);
        self.len(original_len as u64);
        self.out.extend_from_slice(&self.scratch);
    }

    /// An integer as a string (`rdbSaveLongLongAsStringObject`): the integer encoding within i32, else
    /// its decimal digits as a plain string.
    pub fn int_string(&mut self, v: i64) {
        if !self.small_int(v) {
            let mut buf = [0u8; 20];
            let digits = decimal(v, &mut buf);
            self.len(digits.len() as u64);
            self.out.extend_from_slice(digits);
        }
    }

    /// `rdbEncodeInteger`: the smallest of `INT8`, `INT16` and `INT32` that holds `v`, or false.
    fn small_int(&mut self, v: i64) -> bool {
        let enc = RDB_ENCVAL << 6;
        if let Ok(v) = i8::try_from(v) {
            self.out.extend_from_slice(&[enc | RDB_ENC_INT8, v as u8]);
        } else if let Ok(v) = i16::try_from(v) {
            self.out.push(enc | RDB_ENC_INT16);
            self.out.extend_from_slice(&v.to_le_bytes());
        } else if let Ok(v) = i32::try_from(v) {
            self.out.push(enc | RDB_ENC_INT32);
            self.out.extend_from_slice(&v.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    /// A time in milliseconds (`rdbSaveMillisecondTime`): 8 bytes, little-endian.
    pub fn millis(&mut self, ms: i64) {
        self.out.extend_from_slice(&ms.to_le_bytes());
    }

    /// 8 bytes, little-endian (a module's unsigned integer, a stream ID's half in a listpack key).
    pub fn u64_le(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// A double as IEEE 754 binary64, little-endian (`rdbSaveBinaryDoubleValue`, `RDB_TYPE_ZSET_2`).
    pub fn binary_double(&mut self, v: f64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// Hands over what has been written, leaving the buffer empty (its capacity goes with it).
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }
}

/// `v`'s decimal digits (Redis's `ll2string`), written at the end of `buf`.
fn decimal(v: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: impl FnOnce(&mut Encoder)) -> Vec<u8> {
        let mut e = Encoder::new(true);
        f(&mut e);
        e.take()
    }

    #[test]
    fn lengths() {
        assert_eq!(enc(|e| e.len(0)), [0x00]);
        assert_eq!(enc(|e| e.len(63)), [0x3f]);
        assert_eq!(enc(|e| e.len(64)), [0x40, 0x40]);
        assert_eq!(enc(|e| e.len(200)), [0x40, 0xc8]);
        assert_eq!(enc(|e| e.len(16383)), [0x7f, 0xff]);
        assert_eq!(enc(|e| e.len(16384)), [0x80, 0, 0, 0x40, 0]);
        assert_eq!(enc(|e| e.len(u32::MAX as u64)), [0x80, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(enc(|e| e.len(1 << 32)), [0x81, 0, 0, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn strings_as_redis_writes_them() {
        // The bodies of DUMPs of `SET` keys on redis-server 7.0.15 (after the type byte 0x00).
        assert_eq!(enc(|e| e.string(b"hello")), b"\x05hello");
        assert_eq!(enc(|e| e.string(b"-5")), b"\xc0\xfb");
        assert_eq!(enc(|e| e.string(b"300")), b"\xc1,\x01");
        assert_eq!(enc(|e| e.string(b"70000")), b"\xc2p\x11\x01\x00");
        assert_eq!(enc(|e| e.string(b"12345678901")), b"\x0b12345678901");
        assert_eq!(
            enc(|e| e.string(&[b'a'; 200])),
            b"\xc3\x09@\xc8\x01aa\xe0\xbb\x00\x01aa"
        );
        // With rdbcompression no.
        let mut e = Encoder::new(false);
        e.string(&[b'a'; 200]);
        assert_eq!(e.out[..2], [0x40, 0xc8]);
        assert_eq!(e.out.len(), 202);
        // Not integers: leading zero, plus sign, "-0", too long for the integer form.
        assert_eq!(enc(|e| e.string(b"007")), b"\x03007");
        assert_eq!(enc(|e| e.string(b"+7")), b"\x02+7");
        assert_eq!(enc(|e| e.string(b"-0")), b"\x02-0");
        assert_eq!(enc(|e| e.string(b"-2147483648")), b"\xc2\x00\x00\x00\x80");
        assert_eq!(enc(|e| e.string(b"2147483648")), b"\x0a2147483648");
        assert_eq!(enc(|e| e.string(b"")), b"\x00");
        // 20 bytes are never compressed; 21 are when it pays.
        assert_eq!(enc(|e| e.string(&[b'b'; 20]))[0], 20);
        assert_eq!(enc(|e| e.string(&[b'b'; 21]))[0], 0xc3);
    }

    #[test]
    fn integers_and_fixed_width() {
        assert_eq!(enc(|e| e.int_string(127)), [0xc0, 0x7f]);
        assert_eq!(enc(|e| e.int_string(-129)), [0xc1, 0x7f, 0xff]);
        assert_eq!(enc(|e| e.int_string(i32::MIN as i64)), [0xc2, 0, 0, 0, 0x80]);
        assert_eq!(enc(|e| e.int_string(1 << 31)), b"\x0a2147483648");
        assert_eq!(enc(|e| e.int_string(i64::MIN)), b"\x14-9223372036854775808");
        assert_eq!(
            enc(|e| e.millis(-2)),
            [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(enc(|e| e.u64_le(0x0102)), [2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(enc(|e| e.binary_double(1.5)), 1.5f64.to_le_bytes());
        let mut e = Encoder::new(false);
        e.u8(5);
        e.bytes(b"xy");
        assert_eq!(e.take(), [5, b'x', b'y']);
        assert!(e.out.is_empty());
    }
}
