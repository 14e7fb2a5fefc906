//! What can be wrong with a value, worded as Redis replies.

use std::fmt;

/// What can be wrong with a value, worded as Redis replies ([`HllError::text`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HllError {
    /// The string is not a HyperLogLog: too short, another magic, an unknown encoding, or a dense
    /// value of the wrong length.
    Invalid,
    /// A sparse value whose opcodes do not cover the registers exactly, found while decoding it.
    Corrupt,
    /// PFDEBUG DECODE of a dense value.
    NotSparse,
}

impl HllError {
    /// Redis's reply, code first.
    pub const fn text(&self) -> &'static str {
        match self {
            HllError::Invalid => "WRONGTYPE Key is not a valid HyperLogLog string value.",
            HllError::Corrupt => "INVALIDOBJ Corrupted HLL object detected",
            HllError::NotSparse => "ERR HLL encoding is not sparse",
        }
    }
}

impl fmt::Display for HllError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for HllError {}

impl From<HllError> for crate::error::Error {
    fn from(e: HllError) -> Self {
        crate::error::Error::Msg(e.text())
    }
}
