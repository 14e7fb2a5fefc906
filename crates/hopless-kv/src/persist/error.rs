//! Why a value in RDB form could not be read ([`LoadError`]).

use crate::rdb::Corrupt;

/// Why a value could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// Bytes that are not a value of the type they claim (out of bounds, inconsistent, duplicated).
    Corrupt,
    /// A collection with no elements (Redis never writes one; its loader skips them in files).
    Empty,
    /// A module's value: hopless has no modules.
    Module,
    /// A type byte no Redis version writes.
    UnknownType(u8),
    /// DUMP's footer: an RDB version past the one hopless reads, or a checksum that does not match.
    Footer,
    /// The allocator had no memory for the value.
    NoMemory,
}

impl From<Corrupt> for LoadError {
    fn from(_: Corrupt) -> Self {
        LoadError::Corrupt
    }
}
