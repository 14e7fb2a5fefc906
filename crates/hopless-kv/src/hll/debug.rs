//! PFDEBUG's subcommands on one value: GETREG, DECODE, ENCODING, TODENSE.

use std::fmt::Write;

use super::error::HllError;
use super::header::{validate, Encoding, HLL_HDR_SIZE, HLL_REGISTERS};
use super::sparse::{Op, Ops};
use super::{dense, sparse};

/// PFDEBUG GETREG's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetReg {
    /// The [`HLL_REGISTERS`] registers, one byte each (the reply's integers).
    pub registers: Vec<u8>,
    /// The value converted to dense, when it was sparse: Redis stores it in the key (and counts a write).
    pub converted: Option<Vec<u8>>,
}

/// PFDEBUG GETREG: the registers, converting a sparse value to dense first.
/// [`HllError::Corrupt`] when a sparse value does not convert.
pub fn getreg(value: &[u8]) -> Result<GetReg, HllError> {
    let converted = todense(value)?;
    let dense = converted.as_deref().unwrap_or(value);
    let regs = &dense[HLL_HDR_SIZE..];
    let registers = (0..HLL_REGISTERS).map(|i| dense::get(regs, i)).collect();
    Ok(GetReg { registers, converted })
}

/// PFDEBUG DECODE: a sparse value's opcodes as Redis prints them, `Z:len` (XZERO), `z:len` (ZERO) and
/// `v:value,len` (VAL), separated by single spaces; the opcodes are printed as they are, covering the
/// registers or not. [`HllError::NotSparse`] for a dense value.
pub fn decode(value: &[u8]) -> Result<String, HllError> {
    if validate(value)? != Encoding::Sparse {
        return Err(HllError::NotSparse);
    }
    let mut out = String::new();
    for op in Ops::new(value) {
        if !out.is_empty() {
            out.push(' ');
        }
        // Writing into a String cannot fail.
        let _ = match op {
            Op::Zero(len) => write!(out, "z:{len}"),
            Op::XZero(len) => write!(out, "Z:{len}"),
            Op::Val { value, len } => write!(out, "v:{value},{len}"),
        };
    }
    Ok(out)
}

/// PFDEBUG ENCODING: `sparse` or `dense` ([`Encoding::as_str`]).
pub fn encoding(value: &[u8]) -> Result<Encoding, HllError> {
    validate(value)
}

/// PFDEBUG TODENSE: the value converted to dense when it was sparse (the reply is 1 and Redis stores it,
/// counting a write), `None` when it was dense already (the reply is 0).
/// [`HllError::Corrupt`] when a sparse value does not convert.
pub fn todense(value: &[u8]) -> Result<Option<Vec<u8>>, HllError> {
    match validate(value)? {
        Encoding::Dense => Ok(None),
        Encoding::Sparse => sparse::to_dense(value).map(Some),
    }
}
