//! Values in Redis's RDB format: one key's value written as Redis 7.0 writes it (`write`), and read back
//! from any encoding Redis 7.0 loads (`read`, with streams in `stream_read` and `stream_write`). DUMP's
//! payload is one value with its footer; a snapshot file is many, with the opcodes around them (the
//! store's `persist` and the server's snapshot files put those together).

mod error;
mod read;
mod stream_read;
mod stream_write;
mod write;

pub use error::LoadError;
pub use read::{read_object, Loaded};
pub use write::{object_type, write_object, write_value, Obj};

use crate::alloc::KvAlloc;
use crate::rdb;
use crate::rdb::decode::Decoder;
use crate::rdb::encode::Encoder;
use crate::types::Limits;

/// DUMP's payload of one value: the type byte and body, the RDB version and the CRC64 of it all.
/// `compress`: long strings go LZF-compressed (`rdbcompression`), as Redis's DUMP does.
pub fn dump_payload<A: KvAlloc>(obj: Obj<'_, A>, limits: &Limits, compress: bool) -> Vec<u8> {
    let mut e = Encoder::new(compress);
    write_object(&mut e, obj, limits);
    let mut out = e.take();
    rdb::dump_footer(&mut out);
    out
}

/// The value in a DUMP payload (RESTORE), after its footer is checked.
pub fn read_payload<A: KvAlloc>(payload: &[u8], alloc: &A, limits: &Limits) -> Result<Loaded<A>, LoadError> {
    let body = rdb::check_dump_footer(payload).map_err(|_| LoadError::Footer)?;
    let mut d = Decoder::new(body);
    let t = d.u8()?;
    read_object(t, &mut d, alloc, limits)
}
