//! HyperLogLog values as Redis 7.0 encodes them (`hyperloglog.c`), byte for byte: PFADD, PFCOUNT,
//! PFMERGE, PFDEBUG and PFSELFTEST as pure functions over the byte string a key holds. The store applies
//! them under its locks and stores what they return.
//!
//! # The value
//!
//! A HyperLogLog is a string: a 16-byte header, then the registers.
//!
//! | bytes | what |
//! |---|---|
//! | 0..4 | the magic `HYLL` |
//! | 4 | the encoding: [`HLL_DENSE`] (0) or [`HLL_SPARSE`] (1) |
//! | 5..8 | unused (0 when Redis writes them; kept as they are) |
//! | 8..16 | the cached cardinality, little-endian; the top bit of byte 15 set means the cache is invalid |
//!
//! There are [`HLL_REGISTERS`] (2^[`HLL_P`]) registers of 6 bits. An element is hashed with
//! [`murmur_hash64a`] (seed [`HASH_SEED`]): the low 14 bits of the hash pick the register, and the
//! length of the run of zeros above them, plus one (1 to 51), is what the register keeps the maximum of.
//!
//! - Dense: the registers packed 6 bits each, low bits first, in 12288 bytes ([`HLL_DENSE_SIZE`] in
//!   all); see `dense.rs`.
//! - Sparse: a run-length code of ZERO, XZERO and VAL opcodes (see `sparse.rs`), a few bytes for a few
//!   elements. A new value is sparse ([`new_sparse`]: one XZERO of all 16384 registers). It turns dense
//!   when a register must hold more than [`HLL_SPARSE_VAL_MAX_VALUE`] or an update would make it longer
//!   than `hll-sparse-max-bytes` ([`HLL_SPARSE_MAX_BYTES`] by default); it never turns back.
//!
//! PFCOUNT of one key answers from the cache when valid, else estimates from the histogram of register
//! values (Ertl's estimator, `count.rs`) and hands back the cache bytes to store. Several keys, and
//! PFMERGE, go through a byte per register ([`RawRegisters`]).
//!
//! # Commands
//!
//! | command | call |
//! |---|---|
//! | PFADD on a key that does not exist | [`add_new`]; the reply is 1 |
//! | PFADD | [`add`]; the reply is 1 when it returns true (the key was written) |
//! | PFCOUNT of one key | [`count`], then [`Count::store_cache`] when [`Count::cache`] is set (a write) |
//! | PFCOUNT of several keys | [`count_union`] over the values of the keys that exist |
//! | PFMERGE | [`merge`] |
//! | PFDEBUG GETREG, DECODE, ENCODING, TODENSE | [`getreg`], [`decode`], [`encoding`], [`todense`] |
//! | PFSELFTEST | [`self_test`] |
//!
//! A key that holds something other than a string is the caller's `WRONGTYPE`, as are PFDEBUG's own
//! errors: `ERR The specified key does not exist`, `ERR Unknown PFDEBUG subcommand '<sub>'` and
//! `ERR Wrong number of arguments for the '<sub>' subcommand`.
//!
//! # Errors
//!
//! [`validate`] is Redis's `isHLLObjectOrReply`: too short, another magic, an unknown encoding, or a
//! dense value of the wrong length is [`HllError::Invalid`] (`WRONGTYPE`). A sparse value whose opcodes
//! do not cover the registers exactly is found while decoding: [`HllError::Corrupt`] (`INVALIDOBJ`).
//! Nothing here panics on any bytes.
//!
//! Reading a sparse value (PFCOUNT, PFMERGE, the conversion to dense) follows redis-server 7.0.15 with
//! the run-length bounds checks of its HyperLogLog security fix (CVE-2025-32023), as distributions
//! ship it: an opcode whose run passes the last register makes the value corrupt, even after runs that
//! covered every register, and run lengths never wrap. One corner differs: a value whose last opcode
//! is an XZERO cut short by the end reads its missing byte as 0 here, where Redis reads its string's
//! terminator, which a PFADD on such a value may have overwritten (within one call the terminator is
//! carried as Redis carries it).

mod add;
mod count;
mod debug;
mod dense;
mod error;
mod hash;
mod header;
mod merge;
mod selftest;
mod sparse;

pub use add::{add, add_new};
pub use count::{count, count_union, Count, RawRegisters};
pub use debug::{decode, encoding, getreg, todense, GetReg};
pub use error::HllError;
pub use hash::{murmur_hash64a, pattern_len, HASH_SEED};
pub use header::{
    validate, Encoding, CARD_OFFSET, HLL_BITS, HLL_DENSE, HLL_DENSE_SIZE, HLL_HDR_SIZE, HLL_P, HLL_Q,
    HLL_REGISTERS, HLL_REGISTER_MAX, HLL_SPARSE, HLL_SPARSE_MAX_BYTES, MAGIC,
};
pub use merge::merge;
pub use selftest::self_test;
pub use sparse::{new_sparse, HLL_SPARSE_VAL_MAX_VALUE};

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
