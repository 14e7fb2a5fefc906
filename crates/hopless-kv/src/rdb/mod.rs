//! The byte codecs of Redis's RDB format (version 10, as redis-server 7.0 writes it): the pieces a
//! snapshot, a DUMP payload and a RESTORE are made of. Pure functions over bytes; nothing here knows the
//! store or its types.
//!
//! | file | what it holds | Redis source |
//! |---|---|---|
//! | `crc64.rs` | the CRC-64 that ends a snapshot file and a DUMP payload | `crc64.c` |
//! | `lzf.rs` | LZF compression of long strings | `lzf_c.c`, `lzf_d.c` |
//! | `encode.rs` | [`encode::Encoder`]: lengths, strings (integer-encoded, LZF), times, doubles | `rdbSave*` in `rdb.c` |
//! | `decode.rs` | [`decode::Decoder`]: the same read back, never trusting a length | `rdbLoad*` in `rdb.c` |
//! | `listpack.rs` | listpacks, read (validated) and written byte for byte as Redis appends | `listpack.c` |
//! | `ziplist.rs` | ziplists (RDB 9 and older), read and validated | `ziplist.c` |
//! | `intset.rs` | intsets, read and validated | `intset.c` |
//! | `zipmap.rs` | zipmaps (RDB 3 and older hashes), read and validated | `zipmap.c` |
//!
//! A value in RDB is a type byte ([`RDB_TYPE_STRING`]...) and the type's body; a snapshot file is
//! `REDIS` and four version digits, then opcodes ([`RDB_OPCODE_AUX`], [`RDB_OPCODE_SELECTDB`]...) and
//! key/value pairs, then [`RDB_OPCODE_EOF`] and the CRC-64 of everything before it. A DUMP payload is one
//! value followed by the footer [`dump_footer`] writes.
//!
//! Everything that reads checks what Redis's `*ValidateIntegrity` functions check when
//! `sanitize-dump-payload` is on (the deep checks), and returns [`Corrupt`] where Redis would refuse the
//! payload. Nothing here panics or over-reads on any bytes, and no length read from the input allocates
//! more than the rest of the input can hold.

pub mod crc64;
pub mod decode;
pub mod encode;
pub mod intset;
pub mod listpack;
pub mod lzf;
pub mod ziplist;
pub mod zipmap;

use std::fmt;

/// The RDB version this codec writes (and the newest it reads): Redis 7.0's.
pub const RDB_VERSION: u16 = 10;

// Value types: the byte before a value's body.
pub const RDB_TYPE_STRING: u8 = 0;
pub const RDB_TYPE_LIST: u8 = 1;
pub const RDB_TYPE_SET: u8 = 2;
/// A sorted set whose scores are decimal strings ([`decode::Decoder::old_double`]).
pub const RDB_TYPE_ZSET: u8 = 3;
pub const RDB_TYPE_HASH: u8 = 4;
/// A sorted set whose scores are binary doubles.
pub const RDB_TYPE_ZSET_2: u8 = 5;
/// A module value of RDB 8 and older; Redis refuses to load it.
pub const RDB_TYPE_MODULE: u8 = 6;
/// A module value whose contents carry opcodes ([`RDB_MODULE_OPCODE_EOF`]...), so it can be skipped.
pub const RDB_TYPE_MODULE_2: u8 = 7;
pub const RDB_TYPE_HASH_ZIPMAP: u8 = 9;
pub const RDB_TYPE_LIST_ZIPLIST: u8 = 10;
pub const RDB_TYPE_SET_INTSET: u8 = 11;
pub const RDB_TYPE_ZSET_ZIPLIST: u8 = 12;
pub const RDB_TYPE_HASH_ZIPLIST: u8 = 13;
/// A list of ziplist nodes (RDB 7 to 9).
pub const RDB_TYPE_LIST_QUICKLIST: u8 = 14;
pub const RDB_TYPE_STREAM_LISTPACKS: u8 = 15;
pub const RDB_TYPE_HASH_LISTPACK: u8 = 16;
pub const RDB_TYPE_ZSET_LISTPACK: u8 = 17;
/// A list of nodes, each a container ([`QUICKLIST_NODE_CONTAINER_PACKED`] or `_PLAIN`) and a string.
pub const RDB_TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const RDB_TYPE_STREAM_LISTPACKS_2: u8 = 19;

/// Whether `t` is a value type byte (Redis's `rdbIsObjectType`) rather than an opcode.
pub const fn is_object_type(t: u8) -> bool {
    t <= 7 || (t >= 9 && t <= 19)
}

// Opcodes of a snapshot file, where a value type byte would otherwise be.
/// A function library (Redis 7.0's functions).
pub const RDB_OPCODE_FUNCTION2: u8 = 245;
/// A function library in the form of Redis 7.0's release candidates.
pub const RDB_OPCODE_FUNCTION: u8 = 246;
pub const RDB_OPCODE_MODULE_AUX: u8 = 247;
/// The next key's LRU idle time, in seconds (a length).
pub const RDB_OPCODE_IDLE: u8 = 248;
/// The next key's LFU frequency (one byte).
pub const RDB_OPCODE_FREQ: u8 = 249;
/// An auxiliary field: two strings.
pub const RDB_OPCODE_AUX: u8 = 250;
/// The sizes of the database's main and expires tables: two lengths.
pub const RDB_OPCODE_RESIZEDB: u8 = 251;
/// The next key's deadline in Unix milliseconds (8 bytes, little-endian).
pub const RDB_OPCODE_EXPIRETIME_MS: u8 = 252;
/// The next key's deadline in Unix seconds (4 bytes, little-endian).
pub const RDB_OPCODE_EXPIRETIME: u8 = 253;
/// The database number of the keys that follow (a length).
pub const RDB_OPCODE_SELECTDB: u8 = 254;
/// The end of the file; the CRC-64 follows (RDB 5 and newer).
pub const RDB_OPCODE_EOF: u8 = 255;

// The opcodes inside an `RDB_TYPE_MODULE_2` value.
pub const RDB_MODULE_OPCODE_EOF: u64 = 0;
pub const RDB_MODULE_OPCODE_SINT: u64 = 1;
pub const RDB_MODULE_OPCODE_UINT: u64 = 2;
pub const RDB_MODULE_OPCODE_FLOAT: u64 = 3;
pub const RDB_MODULE_OPCODE_DOUBLE: u64 = 4;
pub const RDB_MODULE_OPCODE_STRING: u64 = 5;

// Length encodings: the top two bits of a length's first byte.
pub const RDB_6BITLEN: u8 = 0;
pub const RDB_14BITLEN: u8 = 1;
pub const RDB_32BITLEN: u8 = 0x80;
pub const RDB_64BITLEN: u8 = 0x81;
/// Top bits `11`: the low six bits name a string encoding (`RDB_ENC_*`), not a length.
pub const RDB_ENCVAL: u8 = 3;

// String encodings, after a first byte of `0xC0 | enc`.
pub const RDB_ENC_INT8: u8 = 0;
pub const RDB_ENC_INT16: u8 = 1;
pub const RDB_ENC_INT32: u8 = 2;
pub const RDB_ENC_LZF: u8 = 3;

// A quicklist node's container (`RDB_TYPE_LIST_QUICKLIST_2`).
/// The node is one element stored as a plain string (a large element).
pub const QUICKLIST_NODE_CONTAINER_PLAIN: u64 = 1;
/// The node is a listpack of elements.
pub const QUICKLIST_NODE_CONTAINER_PACKED: u64 = 2;

/// The bytes are not what Redis would have written: a length past the end, a bad encoding, a
/// structure whose headers disagree with its contents. Redis replies `Bad data format` to a RESTORE
/// of such a payload and refuses to load such a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("corrupt RDB data")
    }
}

impl std::error::Error for Corrupt {}

/// What is wrong with a DUMP payload's footer ([`check_dump_footer`]). Redis answers all three with
/// the one reply [`DumpError::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpError {
    /// Fewer than the footer's 10 bytes.
    TooShort,
    /// An RDB version newer than [`RDB_VERSION`].
    Version(u16),
    /// The CRC-64 does not match the bytes before it.
    Checksum,
}

impl DumpError {
    /// Redis's reply to a RESTORE of such a payload.
    pub const fn text(&self) -> &'static str {
        "ERR DUMP payload version or checksum are wrong"
    }
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for DumpError {}

/// Appends DUMP's footer to a value's RDB bytes (Redis's `createDumpPayload`): the RDB version as two
/// little-endian bytes, then the CRC-64 of everything before it (the version included), as eight.
pub fn dump_footer(payload: &mut Vec<u8>) {
    payload.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(0, payload);
    payload.extend_from_slice(&crc.to_le_bytes());
}

/// Checks a DUMP payload's footer as RESTORE does (Redis's `verifyDumpPayload`) and returns the value's
/// bytes before it. An older RDB version is accepted, a newer one is not. The CRC-64 is always checked:
/// Redis writes it into every DUMP payload whatever `rdbchecksum` says (only a snapshot file may carry
/// 0 for "not computed"), and RESTORE skips the check only under `DEBUG SET-SKIP-CHECKSUM-VALIDATION`.
pub fn check_dump_footer(payload: &[u8]) -> Result<&[u8], DumpError> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(DumpError::TooShort);
    };
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(DumpError::Version(version));
    }
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&footer[2..]);
    if crc64::crc64(0, &payload[..body_len + 2]) != u64::from_le_bytes(stored) {
        return Err(DumpError::Checksum);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `DUMP s` after `SET s hello` on redis-server 7.0.15.
    const DUMP_HELLO: &[u8] = b"\x00\x05hello\x0a\x00cr\xdfve4 \x0a";

    #[test]
    fn footer_round_trip_matches_redis() {
        let mut p = b"\x00\x05hello".to_vec();
        dump_footer(&mut p);
        assert_eq!(p, DUMP_HELLO);
        assert_eq!(check_dump_footer(&p), Ok(&b"\x00\x05hello"[..]));
    }

    #[test]
    fn footer_errors() {
        assert_eq!(check_dump_footer(&DUMP_HELLO[..9]), Err(DumpError::TooShort));
        let mut p = DUMP_HELLO.to_vec();
        p[7] = 11;
        assert_eq!(check_dump_footer(&p), Err(DumpError::Version(11)));
        // An older version passes the version check and fails only on the checksum it changed.
        p[7] = 9;
        assert_eq!(check_dump_footer(&p), Err(DumpError::Checksum));
        let mut p = DUMP_HELLO.to_vec();
        p[2] ^= 1;
        assert_eq!(check_dump_footer(&p), Err(DumpError::Checksum));
        // A zero checksum is checked like any other.
        let mut p = DUMP_HELLO.to_vec();
        let n = p.len();
        p[n - 8..].fill(0);
        assert_eq!(check_dump_footer(&p), Err(DumpError::Checksum));
        // The empty body with a right footer is the caller's to refuse.
        let mut p = Vec::new();
        dump_footer(&mut p);
        assert_eq!(check_dump_footer(&p), Ok(&b""[..]));
    }

    #[test]
    fn object_types() {
        for t in 0..=255u8 {
            let want = matches!(t, 0..=7 | 9..=19);
            assert_eq!(is_object_type(t), want, "{t}");
        }
    }
}
