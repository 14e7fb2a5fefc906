//! The value's header (magic, encoding, cached cardinality), the representation's constants, and the
//! check that a string is a HyperLogLog at all.

use super::error::HllError;

/// Bits of the hash that pick the register.
pub const HLL_P: u32 = 14;
/// Bits of the hash left for the run of zeros.
pub const HLL_Q: u32 = 64 - HLL_P;
/// The number of registers.
pub const HLL_REGISTERS: usize = 1 << HLL_P;
pub(super) const HLL_P_MASK: usize = HLL_REGISTERS - 1;
/// Bits per register in the dense encoding.
pub const HLL_BITS: usize = 6;
/// The largest value a register holds.
pub const HLL_REGISTER_MAX: u8 = (1 << HLL_BITS) - 1;
/// The header's length.
pub const HLL_HDR_SIZE: usize = 16;
/// A dense value's length: the header and the packed registers.
pub const HLL_DENSE_SIZE: usize = HLL_HDR_SIZE + (HLL_REGISTERS * HLL_BITS).div_ceil(8);
/// The encoding byte of a dense value.
pub const HLL_DENSE: u8 = 0;
/// The encoding byte of a sparse value.
pub const HLL_SPARSE: u8 = 1;
/// The header's first four bytes.
pub const MAGIC: &[u8; 4] = b"HYLL";
/// Where the cached cardinality starts in the header (8 bytes, little-endian).
pub const CARD_OFFSET: usize = 8;
/// `hll-sparse-max-bytes`' default: a sparse value that would grow past it turns dense.
pub const HLL_SPARSE_MAX_BYTES: usize = 3000;

/// How a value holds its registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

impl Encoding {
    /// PFDEBUG ENCODING's reply: `dense` or `sparse`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// Redis's `isHLLObjectOrReply` on a string value: its encoding, or [`HllError::Invalid`].
pub fn validate(value: &[u8]) -> Result<Encoding, HllError> {
    if value.len() < HLL_HDR_SIZE || &value[..4] != MAGIC {
        return Err(HllError::Invalid);
    }
    match value[4] {
        HLL_DENSE if value.len() == HLL_DENSE_SIZE => Ok(Encoding::Dense),
        HLL_SPARSE => Ok(Encoding::Sparse),
        _ => Err(HllError::Invalid),
    }
}

/// Marks the cached cardinality invalid (`HLL_INVALIDATE_CACHE`).
pub(super) fn invalidate_cache(value: &mut [u8]) {
    if let Some(b) = value.get_mut(HLL_HDR_SIZE - 1) {
        *b |= 0x80;
    }
}
