//! Errors, worded as Redis words them (a server can send them as they are).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The stored value is not a base-10 64-bit integer (INCR and friends), or an argument is not one.
    NotInteger,
    /// INCRBY/DECRBY would overflow 64 bits.
    Overflow,
    /// A key or value longer than the configured maximum.
    TooLarge,
    /// maxmemory reached and the policy is noeviction (or nothing could be evicted).
    OutOfMemory,
    /// An expire time that is not positive or overflows.
    InvalidExpire,
    /// Options that cannot go together (NX with XX, GT with LT or NX, ...).
    Syntax,
    /// The allocator had no memory.
    AllocFailed,
    /// INCRBYFLOAT: the stored value or the increment is not a number.
    NotFloat,
    /// INCRBYFLOAT: the result would be NaN or infinite.
    NanOrInfinity,
    /// RENAME: the source key does not exist.
    NoSuchKey,
    /// The key holds another kind of value than the command works on.
    WrongType,
    /// Any other of Redis's fixed error texts, whole (`"ERR index out of range"`, `"ERR hash value is not
    /// an integer"`...): a collection command's own errors, sent as they are.
    Msg(&'static str),
}

impl Error {
    /// Redis's text of the error, code first (what [`fmt::Display`] writes).
    pub const fn text(&self) -> &'static str {
        match self {
            Error::NotInteger => "ERR value is not an integer or out of range",
            Error::Overflow => "ERR increment or decrement would overflow",
            Error::TooLarge => "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
            Error::OutOfMemory => "OOM command not allowed when used memory > 'maxmemory'.",
            Error::InvalidExpire => "ERR invalid expire time",
            Error::Syntax => "ERR syntax error",
            Error::AllocFailed => "ERR out of memory (allocation failed)",
            Error::NotFloat => "ERR value is not a valid float",
            Error::NanOrInfinity => "ERR increment would produce NaN or Infinity",
            Error::NoSuchKey => "ERR no such key",
            Error::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value",
            Error::Msg(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
