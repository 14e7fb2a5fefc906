//! Writing a snapshot file as Redis 7.0 writes `dump.rdb`: the `REDIS0010` header, the aux fields, the
//! function libraries, database 0's keys (with their deadlines) and the end, then the CRC64 of it all
//! (0 under `rdbchecksum no`, which Redis's loader then does not check).
//!
//! The file is written to a temporary name beside the target, flushed to disk, renamed over the target
//! and the directory flushed too: a crash at any point leaves the previous snapshot whole.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use hopless_kv::persist::{object_type, write_value, Obj};
use hopless_kv::rdb::crc64::crc64;
use hopless_kv::rdb::encode::Encoder;
use hopless_kv::rdb::{self};
use hopless_kv::store::Frozen;
use hopless_kv::Limits;

use crate::version::REDIS_VERSION;

/// The encoder's buffer goes to the file (and the checksum) each time it passes this many bytes.
const FLUSH_AT: usize = 1 << 16;

/// What a snapshot holds besides the keys, read before the store is frozen.
pub struct Extras {
    /// The function libraries' code, each as FUNCTION LOAD took it.
    pub libraries: Vec<Vec<u8>>,
    /// The snapshot is an append-only file's base (`aof-base` 1).
    pub aof_base: bool,
    /// `used-mem`'s value.
    pub used_memory: u64,
    /// `ctime`'s value, Unix seconds.
    pub now_secs: u64,
}

/// What writing the file needs of the settings.
#[derive(Clone, Copy)]
pub struct Format {
    pub compress: bool,
    pub checksum: bool,
}

/// The bytes so far, on their way to a file, with their running checksum.
struct Sink<W: Write> {
    out: W,
    crc: u64,
    checksum: bool,
}

impl<W: Write> Sink<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.checksum {
            self.crc = crc64(self.crc, bytes);
        }
        self.out.write_all(bytes)
    }

    fn drain(&mut self, e: &mut Encoder, at_least: usize) -> io::Result<()> {
        if e.out.len() >= at_least {
            let b = e.take();
            self.put(&b)?;
        }
        Ok(())
    }
}

fn aux(e: &mut Encoder, key: &str, value: &[u8]) {
    e.u8(rdb::RDB_OPCODE_AUX);
    e.string(key.as_bytes());
    e.string(value);
}

/// Writes the whole snapshot of `frozen` and `extras` to `out`.
pub fn write_rdb<W: Write>(
    out: W,
    frozen: &Frozen<'_, hopless::Hopless>,
    extras: &Extras,
    limits: &Limits,
    fmt: Format,
) -> io::Result<W> {
    let mut sink = Sink {
        out,
        crc: 0,
        checksum: fmt.checksum,
    };
    let mut e = Encoder::new(fmt.compress);
    e.bytes(format!("REDIS{:04}", rdb::RDB_VERSION).as_bytes());
    aux(&mut e, "redis-ver", REDIS_VERSION.as_bytes());
    aux(&mut e, "redis-bits", b"64");
    aux(&mut e, "ctime", extras.now_secs.to_string().as_bytes());
    aux(&mut e, "used-mem", extras.used_memory.to_string().as_bytes());
    aux(&mut e, "aof-base", if extras.aof_base { b"1" } else { b"0" });
    for code in &extras.libraries {
        e.u8(rdb::RDB_OPCODE_FUNCTION2);
        e.string(code);
    }
    let (keys, expires) = frozen.sizes();
    if keys > 0 {
        e.u8(rdb::RDB_OPCODE_SELECTDB);
        e.len(0);
        e.u8(rdb::RDB_OPCODE_RESIZEDB);
        e.len(keys as u64);
        e.len(expires as u64);
    }
    let mut failed = Ok(());
    frozen.for_each(|key, obj: Obj<'_, hopless::Hopless>, deadline| {
        if failed.is_err() {
            return;
        }
        if let Some(d) = deadline {
            e.u8(rdb::RDB_OPCODE_EXPIRETIME_MS);
            e.millis(d as i64);
        }
        e.u8(object_type(&obj));
        e.string(key);
        write_value(&mut e, obj, limits);
        failed = sink.drain(&mut e, FLUSH_AT);
    });
    failed?;
    e.u8(rdb::RDB_OPCODE_EOF);
    sink.drain(&mut e, 0)?;
    let crc = if fmt.checksum { sink.crc } else { 0 };
    sink.out.write_all(&crc.to_le_bytes())?;
    Ok(sink.out)
}

/// Writes a snapshot to `target` through a temporary file in the same directory (`temp-<pid>.rdb`, as
/// Redis names it), flushed and renamed over `target`, the directory flushed after.
pub fn save_to(
    target: &Path,
    frozen: &Frozen<'_, hopless::Hopless>,
    extras: &Extras,
    limits: &Limits,
    fmt: Format,
) -> io::Result<()> {
    let temp = format!("temp-{}.rdb", std::process::id());
    write_through_temp(target, &temp, |w| write_rdb(w, frozen, extras, limits, fmt))
}

/// Writes `target` as `fill` writes it, through `temp` in the same directory: flushed, renamed over
/// `target`, the directory flushed after, so a crash leaves the old file or the new one whole; `temp`
/// is removed if anything fails.
pub fn write_through_temp(
    target: &Path,
    temp: &str,
    fill: impl FnOnce(io::BufWriter<File>) -> io::Result<io::BufWriter<File>>,
) -> io::Result<()> {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp = dir.join(temp);
    let written = (|| {
        let w = fill(io::BufWriter::with_capacity(1 << 20, File::create(&temp)?))?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&temp, target)?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
