//! Bit arithmetic on byte strings as Redis's `bitops.c` does it (BITCOUNT, BITPOS, GETBIT, SETBIT,
//! BITOP, BITFIELD): bit 0 is the most significant bit of byte 0, and a string reads as if followed by
//! zero bytes forever. Pure functions over slices; the store applies them under its locks.

/// How BITCOUNT's and BITPOS's range counts: in bytes (the default) or bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitUnit {
    Byte,
    Bit,
}

/// BITOP's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// What BITFIELD does when a SET or INCRBY does not fit its field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    /// Nothing is written and the reply is nil.
    Fail,
}

/// A BITFIELD field: `i1`..`i64` or `u1`..`u63`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldType {
    pub signed: bool,
    pub bits: u32,
}

/// One BITFIELD operation on the field of type `ty` at bit `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOp {
    Get,
    /// Writes the value; the reply is the old one.
    Set(i64),
    /// Adds to the field; the reply is the new value.
    IncrBy(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitfieldOp {
    pub offset: u64,
    pub ty: FieldType,
    pub op: FieldOp,
    pub overflow: Overflow,
}

/// GETBIT: bit `offset` (0 past the end).
pub fn get_bit(s: &[u8], offset: u64) -> bool {
    let byte = (offset >> 3) as usize;
    byte < s.len() && s[byte] & (0x80 >> (offset & 7)) != 0
}

/// SETBIT on a string long enough to hold bit `offset`: returns the bit's old value.
pub fn set_bit(s: &mut [u8], offset: u64, on: bool) -> bool {
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let old = s[byte] & mask != 0;
    if on {
        s[byte] |= mask;
    } else {
        s[byte] &= !mask;
    }
    old
}

/// A range clamped as Redis clamps BITCOUNT's and BITPOS's: `(first byte, last byte, bits of the first
/// byte before the range, bits of the last byte after it)`, or None when the range is empty. `len` is
/// the string's length in the range's unit.
fn clamp(mut start: i64, mut end: i64, len: i64, unit: BitUnit) -> Option<(usize, usize, u8, u8)> {
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end {
        return None;
    }
    Some(match unit {
        BitUnit::Byte => (start as usize, end as usize, 0, 0),
        // Redis's masks: the bits of the edge bytes outside the range.
        BitUnit::Bit => (
            (start >> 3) as usize,
            (end >> 3) as usize,
            !((1u16 << (8 - (start & 7))) - 1) as u8,
            ((1u16 << (7 - (end & 7))) - 1) as u8,
        ),
    })
}

fn popcount(s: &[u8]) -> u64 {
    let mut chunks = s.chunks_exact(8);
    let mut n: u64 = chunks
        .by_ref()
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")).count_ones() as u64)
        .sum();
    n += chunks
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum::<u64>();
    n
}

/// BITCOUNT: the set bits of `s`, or of the inclusive range `(start, end, unit)` with Redis's index
/// rules (negative from the end, clamped; both negative with start after end: 0).
pub fn count(s: &[u8], range: Option<(i64, i64, BitUnit)>) -> u64 {
    let Some((start, end, unit)) = range else {
        return popcount(s);
    };
    if start < 0 && end < 0 && start > end {
        return 0;
    }
    let len = match unit {
        BitUnit::Byte => s.len() as i64,
        BitUnit::Bit => (s.len() as i64) << 3,
    };
    let Some((first, last, first_mask, last_mask)) = clamp(start, end, len, unit) else {
        return 0;
    };
    popcount(&s[first..=last])
        - (s[first] & first_mask).count_ones() as u64
        - (s[last] & last_mask).count_ones() as u64
}

/// Redis's `redisBitpos`: the first bit equal to `bit` in `s`, counted from its start; none found is
/// -1 for a set bit and the bit just past the end for a clear one (the string is zero-padded).
fn first_bit(s: &[u8], bit: bool) -> i64 {
    let skip = if bit { 0x00 } else { 0xff };
    match s.iter().position(|&b| b != skip) {
        Some(i) => {
            let b = if bit { s[i] } else { !s[i] };
            (i as i64) * 8 + b.leading_zeros() as i64
        }
        None if bit => -1,
        None => (s.len() as i64) * 8,
    }
}

/// BITPOS of an existing string: the first bit equal to `bit` from `start` (default 0) to `end`
/// (default the end), in `unit`s; -1 when there is none. Without an explicit `end`, a search for a
/// clear bit in an all-ones range finds the first bit past it (the string is zero-padded), as Redis
/// answers.
pub fn position(s: &[u8], bit: bool, start: Option<i64>, end: Option<i64>, unit: BitUnit) -> i64 {
    let total = s.len() as i64;
    let (first, last, first_mask, last_mask) = match start {
        None => {
            if s.is_empty() {
                return -1;
            }
            (0, s.len() - 1, 0, 0)
        }
        Some(start) => {
            let end = end.unwrap_or(match unit {
                BitUnit::Bit => (total << 3) + 7,
                BitUnit::Byte => total - 1,
            });
            let len = match unit {
                BitUnit::Byte => total,
                BitUnit::Bit => total << 3,
            };
            match clamp(start, end, len, unit) {
                Some(r) => r,
                None => return -1,
            }
        }
    };
    // Redis's walk: the masked first byte, the whole bytes, the masked last byte.
    let mut begin = first;
    let mut bytes = last - first + 1;
    let mut pos;
    'found: {
        let masked = |b: u8, mask: u8| if bit { b & !mask } else { b | mask };
        if first_mask != 0 {
            let mut t = masked(s[begin], first_mask);
            if last_mask != 0 && bytes == 1 {
                t = masked(t, last_mask);
            }
            pos = first_bit(&[t], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found;
            }
            begin += 1;
            bytes -= 1;
        }
        let whole = bytes - usize::from(last_mask != 0);
        if whole > 0 {
            pos = first_bit(&s[begin..begin + whole], bit);
            if bytes == whole || (pos != -1 && pos != (whole as i64) << 3) {
                break 'found;
            }
            begin += whole;
            bytes -= whole;
        }
        pos = first_bit(&[masked(s[last], last_mask)], bit);
    }
    if end.is_some() && !bit && pos == (bytes as i64) << 3 {
        return -1;
    }
    if pos != -1 {
        pos += (begin as i64) << 3;
    }
    pos
}

/// BITOP over the sources (None: a missing key, an empty string): a result as long as the longest,
/// shorter ones read as zero-padded. NOT takes one source.
pub fn bitop(op: BitOp, srcs: &[Option<&[u8]>]) -> Vec<u8> {
    let srcs: Vec<&[u8]> = srcs.iter().map(|s| s.unwrap_or(&[])).collect();
    let max = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![0u8; max];
    if let Some(first) = srcs.first() {
        out[..first.len()].copy_from_slice(first);
    }
    match op {
        BitOp::Not => out.iter_mut().for_each(|b| *b = !*b),
        BitOp::And => {
            for s in &srcs[1..] {
                for (o, b) in out.iter_mut().zip(s.iter().chain(std::iter::repeat(&0))) {
                    *o &= b;
                }
            }
        }
        BitOp::Or | BitOp::Xor => {
            for s in &srcs[1..] {
                for (o, b) in out.iter_mut().zip(s.iter()) {
                    if op == BitOp::Or {
                        *o |= b;
                    } else {
                        *o ^= b;
                    }
                }
            }
        }
    }
    out
}

/// The `bits`-wide field at bit `offset` as an unsigned number (zeros past the end of `s`).
pub fn get_unsigned(s: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for i in 0..bits as u64 {
        v = (v << 1) | get_bit(s, offset + i) as u64;
    }
    v
}

/// The field read as a two's-complement signed number.
pub fn get_signed(s: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(s, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        (v | (u64::MAX << bits)) as i64
    } else {
        v as i64
    }
}

/// Writes the low `bits` bits of `v` at bit `offset` (`s` holds the whole field).
pub fn set_field(s: &mut [u8], offset: u64, bits: u32, v: u64) {
    for i in 0..bits as u64 {
        set_bit(s, offset + i, v & (1 << (bits as u64 - 1 - i)) != 0);
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: 0 if `value + incr` fits, else 1 or -1 with the value to
/// store instead (wrapped, or saturated).
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (i32, u64) {
    let max = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        (1, if ow == Overflow::Sat { max } else { wrap() })
    } else if incr < 0 && incr < minincr {
        (-1, if ow == Overflow::Sat { 0 } else { wrap() })
    } else {
        (0, 0)
    }
}

/// Redis's `checkSignedBitfieldOverflow`, likewise.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (i32, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        (1, if ow == Overflow::Sat { max } else { wrap() })
    } else if value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr) {
        (-1, if ow == Overflow::Sat { min } else { wrap() })
    } else {
        (0, 0)
    }
}

/// Runs one BITFIELD operation; a SET or INCRBY writes into `s`, which must hold its field. The reply:
/// the field (GET), its old value (SET), its new value (INCRBY), or None when it overflowed under FAIL
/// (nothing written).
pub fn apply(s: &mut [u8], op: &BitfieldOp) -> Option<i64> {
    if op.op == FieldOp::Get {
        return Some(read(s, op));
    }
    let FieldType { signed, bits } = op.ty;
    let (reply, new, overflow) = if signed {
        let old = get_signed(s, op.offset, bits);
        match op.op {
            FieldOp::IncrBy(d) => {
                let (o, w) = signed_overflow(old, d, bits, op.overflow);
                let new = if o != 0 { w } else { old.wrapping_add(d) };
                (new, new as u64, o)
            }
            FieldOp::Set(v) => {
                let (o, w) = signed_overflow(v, 0, bits, op.overflow);
                (old, if o != 0 { w } else { v } as u64, o)
            }
            FieldOp::Get => unreachable!("handled above"),
        }
    } else {
        let old = get_unsigned(s, op.offset, bits);
        match op.op {
            FieldOp::IncrBy(d) => {
                let (o, w) = unsigned_overflow(old, d, bits, op.overflow);
                let new = if o != 0 { w } else { old.wrapping_add(d as u64) };
                (new as i64, new, o)
            }
            FieldOp::Set(v) => {
                let (o, w) = unsigned_overflow(v as u64, 0, bits, op.overflow);
                (old as i64, if o != 0 { w } else { v as u64 }, o)
            }
            FieldOp::Get => unreachable!("handled above"),
        }
    };
    if overflow != 0 && op.overflow == Overflow::Fail {
        return None;
    }
    set_field(s, op.offset, bits, new);
    Some(reply)
}

/// A BITFIELD GET (of any string, zero-padded).
pub fn read(s: &[u8], op: &BitfieldOp) -> i64 {
    if op.ty.signed {
        get_signed(s, op.offset, op.ty.bits)
    } else {
        get_unsigned(s, op.offset, op.ty.bits) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(signed: bool, bits: u32, offset: u64, op: FieldOp, overflow: Overflow) -> BitfieldOp {
        BitfieldOp {
            offset,
            ty: FieldType { signed, bits },
            op,
            overflow,
        }
    }

    #[test]
    fn bits_count_from_the_top_of_the_first_byte() {
        let mut s = [0u8; 2];
        assert!(!set_bit(&mut s, 1, true));
        assert!(set_bit(&mut s, 1, true));
        assert_eq!(s, [0x40, 0]);
        set_bit(&mut s, 15, true);
        assert_eq!(s, [0x40, 0x01]);
        assert!(get_bit(&s, 15) && get_bit(&s, 1) && !get_bit(&s, 0) && !get_bit(&s, 1000));
    }

    #[test]
    fn bitcount_follows_redis_ranges() {
        let s = b"foobar";
        assert_eq!(count(s, None), 26);
        assert_eq!(count(s, Some((0, 0, BitUnit::Byte))), 4);
        assert_eq!(count(s, Some((1, 1, BitUnit::Byte))), 6);
        assert_eq!(count(s, Some((5, 30, BitUnit::Bit))), 17);
        assert_eq!(count(s, Some((-1, -2, BitUnit::Byte))), 0);
        assert_eq!(count(s, Some((-100, 100, BitUnit::Byte))), 26);
        assert_eq!(count(s, Some((3, 2, BitUnit::Byte))), 0);
        assert_eq!(count(b"", Some((0, -1, BitUnit::Bit))), 0);
        // Every bit range of a byte agrees with counting bit by bit.
        let s = [0b1011_0110u8, 0xff, 0x01];
        for a in 0..24i64 {
            for b in a..24 {
                let slow = (a..=b).filter(|&i| get_bit(&s, i as u64)).count() as u64;
                assert_eq!(count(&s, Some((a, b, BitUnit::Bit))), slow, "{a}..{b}");
            }
        }
    }

    #[test]
    fn bitpos_follows_redis() {
        assert_eq!(position(b"\xff\xf0\x00", false, None, None, BitUnit::Byte), 12);
        assert_eq!(position(b"\x00\xff\xf0", true, Some(0), None, BitUnit::Byte), 8);
        assert_eq!(position(b"\x00\xff\xf0", true, Some(2), None, BitUnit::Byte), 16);
        assert_eq!(
            position(b"\x00\xff\xf0", true, Some(2), Some(-1), BitUnit::Byte),
            16
        );
        assert_eq!(
            position(b"\x00\xff\xf0", true, Some(7), Some(15), BitUnit::Bit),
            8
        );
        assert_eq!(position(b"\xff\xff\xff", false, None, None, BitUnit::Byte), 24);
        assert_eq!(position(b"\xff\xff\xff", false, Some(0), None, BitUnit::Byte), 24);
        assert_eq!(
            position(b"\xff\xff\xff", false, Some(0), Some(-1), BitUnit::Byte),
            -1
        );
        assert_eq!(position(b"\x00\x00", true, None, None, BitUnit::Byte), -1);
        assert_eq!(position(b"", false, None, None, BitUnit::Byte), -1);
        // Bit ranges agree with a bit-by-bit search (an explicit end: none found is -1).
        let s = [0b1011_0110u8, 0xff, 0x01];
        for a in 0..24i64 {
            for b in a..24 {
                for bit in [false, true] {
                    let slow = (a..=b).find(|&i| get_bit(&s, i as u64) == bit).unwrap_or(-1);
                    assert_eq!(
                        position(&s, bit, Some(a), Some(b), BitUnit::Bit),
                        slow,
                        "{bit} {a}..{b}"
                    );
                }
            }
        }
    }

    #[test]
    fn bitop_pads_shorter_sources_with_zeros() {
        let (a, b): (&[u8], &[u8]) = (b"\xff\x0f", b"\xf0");
        assert_eq!(bitop(BitOp::And, &[Some(a), Some(b)]), b"\xf0\x00");
        assert_eq!(bitop(BitOp::Or, &[Some(a), Some(b)]), b"\xff\x0f");
        assert_eq!(bitop(BitOp::Xor, &[Some(a), Some(b)]), b"\x0f\x0f");
        assert_eq!(bitop(BitOp::Not, &[Some(a)]), b"\x00\xf0");
        assert_eq!(bitop(BitOp::And, &[Some(a), None]), b"\x00\x00");
        assert!(bitop(BitOp::Or, &[None, None]).is_empty());
    }

    #[test]
    fn fields_read_and_write_across_bytes() {
        let mut s = [0u8; 3];
        set_field(&mut s, 4, 12, 0xabc);
        assert_eq!(s, [0x0a, 0xbc, 0]);
        assert_eq!(get_unsigned(&s, 4, 12), 0xabc);
        assert_eq!(get_signed(&s, 4, 12), 0xabc - 0x1000);
        assert_eq!(get_unsigned(&s, 20, 8), 0, "zero-padded past the end");
        let mut s = [0u8; 8];
        set_field(&mut s, 0, 64, i64::MIN as u64);
        assert_eq!(get_signed(&s, 0, 64), i64::MIN);
    }

    #[test]
    fn overflow_wraps_saturates_or_fails() {
        let mut s = [0u8; 2];
        let inc = |d, ow| op(false, 8, 0, FieldOp::IncrBy(d), ow);
        assert_eq!(apply(&mut s, &inc(250, Overflow::Wrap)), Some(250));
        assert_eq!(apply(&mut s, &inc(10, Overflow::Wrap)), Some(4));
        assert_eq!(apply(&mut s, &inc(300, Overflow::Sat)), Some(255));
        assert_eq!(apply(&mut s, &inc(1, Overflow::Fail)), None);
        assert_eq!(s[0], 255, "FAIL writes nothing");
        assert_eq!(apply(&mut s, &inc(-300, Overflow::Sat)), Some(0));
        let sinc = |d, ow| op(true, 4, 8, FieldOp::IncrBy(d), ow);
        assert_eq!(apply(&mut s, &sinc(7, Overflow::Wrap)), Some(7));
        assert_eq!(apply(&mut s, &sinc(1, Overflow::Wrap)), Some(-8));
        assert_eq!(apply(&mut s, &sinc(-1, Overflow::Sat)), Some(-8));
        assert_eq!(apply(&mut s, &sinc(100, Overflow::Sat)), Some(7));
        assert_eq!(
            apply(&mut s, &op(true, 4, 8, FieldOp::Set(9), Overflow::Wrap)),
            Some(7)
        );
        assert_eq!(
            apply(&mut s, &op(true, 4, 8, FieldOp::Get, Overflow::Wrap)),
            Some(-7)
        );
        let mut s = [0u8; 8];
        let big = op(true, 64, 0, FieldOp::IncrBy(i64::MAX), Overflow::Wrap);
        assert_eq!(apply(&mut s, &big), Some(i64::MAX));
        assert_eq!(apply(&mut s, &big), Some(-2));
        let sat = op(true, 64, 0, FieldOp::IncrBy(i64::MAX), Overflow::Sat);
        assert_eq!(apply(&mut s, &sat), Some(i64::MAX - 2));
        assert_eq!(apply(&mut s, &sat), Some(i64::MAX));
    }
}
