//! The sparse representation: after the header, a run-length code of the 16384 registers in three
//! opcodes, which must cover exactly [`HLL_REGISTERS`] registers:
//!
//! - ZERO `00xxxxxx`: 1 to 64 registers at 0 (`xxxxxx` + 1);
//! - XZERO `01xxxxxx yyyyyyyy`: 1 to 16384 registers at 0 (the 14 bits `xxxxxxyyyyyyyy` + 1);
//! - VAL `1vvvvvxx`: 1 to 4 registers (`xx` + 1) at the value 1 to 32 (`vvvvv` + 1).
//!
//! A register above 32 cannot be written sparse: setting one converts the value to dense, as does an
//! update that would make the value longer than `hll-sparse-max-bytes`.
//!
//! Redis's strings end in a terminator byte that its sparse code may read (an XZERO opcode cut short
//! at the last byte reads it as its second byte) and, on such a value, write. The functions here read a
//! byte past the value as 0; [`set`] works on a buffer that carries the terminator as its last byte,
//! so a run of updates sees what Redis's would.

use super::dense;
use super::error::HllError;
use super::header::{invalidate_cache, HLL_DENSE, HLL_DENSE_SIZE, HLL_HDR_SIZE, HLL_REGISTERS};
use super::header::{HLL_SPARSE, MAGIC};

/// The largest value a VAL opcode holds.
pub const HLL_SPARSE_VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_BIT: u8 = 0x40;
const VAL_BIT: u8 = 0x80;

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == XZERO_BIT
}

fn is_val(b: u8) -> bool {
    b & VAL_BIT != 0
}

fn zero_len(b: u8) -> usize {
    usize::from(b & 0x3f) + 1
}

fn xzero_len(b: u8, b1: u8) -> usize {
    (usize::from(b & 0x3f) << 8 | usize::from(b1)) + 1
}

fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

fn val_len(b: u8) -> usize {
    usize::from(b & 0x3) + 1
}

/// A VAL opcode (`val` 1..=32, `len` 1..=4).
fn val_op(val: u8, len: usize) -> u8 {
    ((val - 1) << 2 | (len as u8 - 1)) | VAL_BIT
}

/// A ZERO opcode (`len` 1..=64).
fn zero_op(len: usize) -> u8 {
    (len - 1) as u8
}

/// An XZERO opcode (`len` 1..=16384).
fn xzero_op(len: usize) -> [u8; 2] {
    let l = len - 1;
    [(l >> 8) as u8 | XZERO_BIT, (l & 0xff) as u8]
}

/// A new, empty value as Redis creates it (`createHLLObject`): sparse, one XZERO opcode covering every
/// register, the cached cardinality a valid 0. 18 bytes.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HLL_HDR_SIZE + 2);
    v.extend_from_slice(MAGIC);
    v.push(HLL_SPARSE);
    v.extend_from_slice(&[0; HLL_HDR_SIZE - 5]);
    v.extend_from_slice(&xzero_op(HLL_REGISTERS));
    v
}

/// Writes a run of `len` zero registers at `seq[*n..]`: ZERO up to 64, XZERO above.
fn zeros(seq: &mut [u8; 5], n: &mut usize, len: usize) {
    if len > ZERO_MAX_LEN {
        seq[*n..*n + 2].copy_from_slice(&xzero_op(len));
        *n += 2;
    } else {
        seq[*n] = zero_op(len);
        *n += 1;
    }
}

/// One opcode, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Zero(usize),
    XZero(usize),
    Val { value: u8, len: usize },
}

/// The opcodes of a sparse value, from the header to `end` (the value's length).
pub(super) struct Ops<'a> {
    buf: &'a [u8],
    p: usize,
    end: usize,
}

impl<'a> Ops<'a> {
    pub(super) fn new(value: &'a [u8]) -> Self {
        Ops {
            buf: value,
            p: HLL_HDR_SIZE,
            end: value.len(),
        }
    }

    /// The opcodes of `buf[..end]`, `buf[end]` being the terminator.
    fn terminated(buf: &'a [u8], end: usize) -> Self {
        Ops {
            buf,
            p: HLL_HDR_SIZE,
            end,
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.buf.get(i).copied().unwrap_or(0)
    }
}

impl Iterator for Ops<'_> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        if self.p >= self.end {
            return None;
        }
        let b = self.at(self.p);
        Some(if is_zero(b) {
            self.p += 1;
            Op::Zero(zero_len(b))
        } else if is_xzero(b) {
            let len = xzero_len(b, self.at(self.p + 1));
            self.p += 2;
            Op::XZero(len)
        } else {
            self.p += 1;
            Op::Val {
                value: val_value(b),
                len: val_len(b),
            }
        })
    }
}

/// Calls `each(index, value)` for every register a VAL opcode sets, in order; [`HllError::Corrupt`]
/// unless the opcodes cover exactly [`HLL_REGISTERS`] registers (what `hllSparseToDense` and
/// `hllMerge` check: an opcode whose run passes the last register makes the value corrupt, even when
/// the runs before it covered every register).
fn for_each_set(ops: Ops<'_>, mut each: impl FnMut(usize, u8)) -> Result<(), HllError> {
    let mut idx = 0usize;
    for op in ops {
        match op {
            Op::Zero(len) | Op::XZero(len) => idx += len,
            Op::Val { value, len } => {
                if idx + len > HLL_REGISTERS {
                    return Err(HllError::Corrupt);
                }
                for i in idx..idx + len {
                    each(i, value);
                }
                idx += len;
            }
        }
        // Past the end the value is corrupt whatever follows (Redis reads on, to the same answer).
        if idx > HLL_REGISTERS {
            break;
        }
    }
    if idx == HLL_REGISTERS {
        Ok(())
    } else {
        Err(HllError::Corrupt)
    }
}

/// The dense form of a sparse value (`hllSparseToDense`): the header copied (cached cardinality and
/// the unused bytes included), the encoding set to dense.
pub(super) fn to_dense(value: &[u8]) -> Result<Vec<u8>, HllError> {
    dense_of(value, Ops::new(value))
}

fn dense_of(header: &[u8], ops: Ops<'_>) -> Result<Vec<u8>, HllError> {
    let mut dense = vec![0u8; HLL_DENSE_SIZE];
    dense[..HLL_HDR_SIZE].copy_from_slice(&header[..HLL_HDR_SIZE]);
    dense[4] = HLL_DENSE;
    let regs = &mut dense[HLL_HDR_SIZE..];
    for_each_set(ops, |i, v| dense::set(regs, i, v))?;
    Ok(dense)
}

/// Raises each of `max`'s registers to this sparse value's where lower (`hllMerge`).
pub(super) fn merge_into(value: &[u8], max: &mut [u8; HLL_REGISTERS]) -> Result<(), HllError> {
    for_each_set(Ops::new(value), |i, v| {
        if v > max[i] {
            max[i] = v;
        }
    })
}

/// Adds each register's value to `histo` (`hllSparseRegHisto`); [`HllError::Corrupt`] unless the
/// opcodes cover exactly [`HLL_REGISTERS`] registers.
pub(super) fn histogram(value: &[u8], histo: &mut [u64; 64]) -> Result<(), HllError> {
    let mut idx = 0usize;
    for op in Ops::new(value) {
        match op {
            Op::Zero(len) | Op::XZero(len) => {
                idx += len;
                histo[0] += len as u64;
            }
            Op::Val { value, len } => {
                idx += len;
                histo[usize::from(value)] += len as u64;
            }
        }
        if idx > HLL_REGISTERS {
            break;
        }
    }
    if idx == HLL_REGISTERS {
        Ok(())
    } else {
        Err(HllError::Corrupt)
    }
}

/// Raises register `index` to `count` if it is lower (`hllSparseSet`), on `buf`: a sparse value followed
/// by its terminator byte. True when the register changed.
///
/// Splits the opcode covering the register, merges equal VAL opcodes around it, and invalidates the
/// cached cardinality; converts `buf` to dense (terminator kept) when `count` is above
/// [`HLL_SPARSE_VAL_MAX_VALUE`] or the value would grow past `max_bytes`. [`HllError::Corrupt`] when
/// no opcode covers the register, or when a conversion finds the value corrupt; `buf` is then unchanged.
pub(super) fn set(buf: &mut Vec<u8>, index: usize, count: u8, max_bytes: usize) -> Result<bool, HllError> {
    if count > HLL_SPARSE_VAL_MAX_VALUE {
        return promote(buf, index, count);
    }
    let mut end = buf.len() - 1;

    // Step 1: the opcode covering the register.
    let mut p = HLL_HDR_SIZE;
    let mut first = 0usize;
    let mut prev = None;
    let mut span = 0usize;
    while p < end {
        let b = buf[p];
        let oplen;
        if is_zero(b) {
            span = zero_len(b);
            oplen = 1;
        } else if is_val(b) {
            span = val_len(b);
            oplen = 1;
        } else {
            span = xzero_len(b, buf[p + 1]);
            oplen = 2;
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(HllError::Corrupt);
    }
    let b = buf[p];
    let oldlen = if is_xzero(b) { 2 } else { 1 };
    let next = Some(p + oldlen).filter(|&n| n < end);

    // Step 2: the trivial cases, in place.
    if is_val(b) {
        if val_value(b) >= count {
            return Ok(false);
        }
        if val_len(b) == 1 {
            buf[p] = val_op(count, 1);
            merge_adjacent(buf, prev.unwrap_or(HLL_HDR_SIZE), end);
            return Ok(true);
        }
    }
    if is_zero(b) && zero_len(b) == 1 {
        buf[p] = val_op(count, 1);
        merge_adjacent(buf, prev.unwrap_or(HLL_HDR_SIZE), end);
        return Ok(true);
    }

    // The general case: the opcode split in up to three (XZERO-VAL-XZERO at most, 5 bytes).
    let mut seq = [0u8; 5];
    let mut n = 0;
    let last = first + span - 1;
    if is_val(b) {
        let cur = val_value(b);
        if index != first {
            seq[n] = val_op(cur, index - first);
            n += 1;
        }
        seq[n] = val_op(count, 1);
        n += 1;
        if index != last {
            seq[n] = val_op(cur, last - index);
            n += 1;
        }
    } else {
        if index != first {
            zeros(&mut seq, &mut n, index - first);
        }
        seq[n] = val_op(count, 1);
        n += 1;
        if index != last {
            zeros(&mut seq, &mut n, last - index);
        }
    }

    // Step 3: the new sequence in place of the opcode, what follows moved.
    let new_end = end + n - oldlen;
    if n > oldlen && new_end > max_bytes {
        return promote(buf, index, count);
    }
    if new_end > end {
        buf.resize(new_end + 1, 0);
    }
    if let Some(next) = next {
        buf.copy_within(next..end, next + n - oldlen);
    }
    buf.truncate(new_end + 1);
    buf[new_end] = 0;
    buf[p..p + n].copy_from_slice(&seq[..n]);
    end = new_end;

    merge_adjacent(buf, prev.unwrap_or(HLL_HDR_SIZE), end);
    Ok(true)
}

/// Step 4 of `hllSparseSet`: from `p` (the opcode before the one updated), up to five opcodes on, two
/// adjacent VAL opcodes of one value that fit one opcode become one. Then the cached cardinality is
/// marked invalid.
fn merge_adjacent(buf: &mut Vec<u8>, mut p: usize, mut end: usize) {
    let mut scan = 5;
    while p < end {
        if scan == 0 {
            break;
        }
        scan -= 1;
        let b = buf[p];
        if is_xzero(b) {
            p += 2;
            continue;
        } else if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(buf[p + 1]) {
            let (v1, v2) = (val_value(b), val_value(buf[p + 1]));
            let len = val_len(b) + val_len(buf[p + 1]);
            if v1 == v2 && len <= VAL_MAX_LEN {
                buf[p + 1] = val_op(v1, len);
                // The terminator moves down with the rest, then is written again.
                buf.copy_within(p + 1..=end, p);
                end -= 1;
                buf.truncate(end + 1);
                buf[end] = 0;
                continue;
            }
        }
        p += 1;
    }
    invalidate_cache(buf);
}

/// The `promote` exit of `hllSparseSet`: `buf` (value and terminator) converted to dense and the
/// register set there.
fn promote(buf: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    let end = buf.len() - 1;
    // The terminator is in `buf`, so an XZERO cut short reads it as Redis does.
    let mut dense = dense_of(buf, Ops::terminated(buf, end))?;
    dense.push(0);
    *buf = dense;
    Ok(dense::raise(&mut buf[HLL_HDR_SIZE..], index, count))
}
