//! Loading a snapshot file as Redis 7.0 loads `dump.rdb`: any RDB version from 1 to 10 (its aux fields,
//! size hints and idle/frequency opcodes read and passed over), the function libraries, database 0's
//! keys with their deadlines (keys already past theirs are left out, as a master leaves them out), and
//! the CRC64 at the end checked unless it is 0.
//!
//! Anything hopless cannot take whole is an error that names it: a corrupt value, a bad checksum, a
//! module's value or aux data, the keys of another database, a truncated file. The caller (start-up,
//! DEBUG RELOAD) does not serve what a failed load left behind.

use std::fs::File;
use std::path::Path;

use hopless_kv::persist::LoadError;
use hopless_kv::rdb::crc64::crc64;
use hopless_kv::rdb::decode::Decoder;
use hopless_kv::rdb::{self, Corrupt};
use hopless_kv::Store;

/// What a load found besides the keys.
#[derive(Default)]
pub struct Loaded {
    pub keys: u64,
    /// Keys past their deadline, left out.
    pub expired: u64,
    /// Collections with no element (an older Redis could write them), left out as Redis leaves them.
    pub empty: u64,
    /// The function libraries' code, to load in order.
    pub libraries: Vec<Vec<u8>>,
    pub rdb_version: u16,
}

/// Why a snapshot was not loaded.
#[derive(Debug)]
pub enum LoadFailure {
    Io(std::io::Error),
    /// Not an RDB file, or a version past 10.
    Header(String),
    /// The bytes at `offset` are not what the format allows there.
    Corrupt {
        offset: usize,
        what: String,
    },
    Checksum {
        stored: u64,
        computed: u64,
    },
}

impl std::fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadFailure::Io(e) => write!(f, "{e}"),
            LoadFailure::Header(s) => f.write_str(s),
            LoadFailure::Corrupt { offset, what } => write!(f, "{what} (at byte {offset})"),
            LoadFailure::Checksum { stored, computed } => write!(
                f,
                "wrong RDB checksum (a damaged or truncated file): it says {stored:016x}, its bytes give {computed:016x}"
            ),
        }
    }
}

/// The file's bytes, mapped read-only (a snapshot may be many GiB: it is not copied into memory).
struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapped {
    fn open(path: &Path) -> std::io::Result<Mapped> {
        use std::os::fd::AsRawFd;
        let f = File::open(path)?;
        let len = f.metadata()?.len() as usize;
        if len == 0 {
            return Ok(Mapped {
                ptr: core::ptr::null_mut(),
                len,
            });
        }
        // SAFETY: a private read-only mapping of a file we opened, of its length; checked for failure.
        let ptr = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapped { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` maps `len` readable bytes until `drop` unmaps them; the slice borrows `self`.
        unsafe { core::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping `open` made, unmapped once; no slice of it outlives `self`.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}

/// Loads the snapshot at `path` into `store` (keys added over what it holds). `now_ms` decides which
/// keys are past their deadline.
pub fn load_file(path: &Path, store: &Store, now_ms: u64) -> Result<Loaded, LoadFailure> {
    let map = Mapped::open(path).map_err(LoadFailure::Io)?;
    load_bytes(map.bytes(), store, now_ms)
}

fn corrupt(d: &Decoder<'_>, what: impl Into<String>) -> LoadFailure {
    LoadFailure::Corrupt {
        offset: d.pos(),
        what: what.into(),
    }
}

/// The RDB version of the header at the start of `bytes`.
fn header(bytes: &[u8]) -> Result<u16, LoadFailure> {
    if bytes.len() < 9 || &bytes[..5] != b"REDIS" {
        return Err(LoadFailure::Header("not an RDB file (no REDIS signature)".into()));
    }
    std::str::from_utf8(&bytes[5..9])
        .ok()
        .and_then(|v| v.parse::<u16>().ok())
        .filter(|v| (1..=rdb::RDB_VERSION).contains(v))
        .ok_or_else(|| {
            LoadFailure::Header(format!(
                "can't handle RDB format version {}",
                String::from_utf8_lossy(&bytes[5..9])
            ))
        })
}

/// Loads a whole snapshot held in `bytes`.
pub fn load_bytes(bytes: &[u8], store: &Store, now_ms: u64) -> Result<Loaded, LoadFailure> {
    let version = header(bytes)?;
    // The checksum first, so that a damaged file is refused before any key of it is in the store.
    let body_end = if version >= 5 {
        let end =
            bytes.len().checked_sub(8).filter(|&e| e > 9).ok_or_else(|| {
                LoadFailure::Header("truncated: shorter than its header and checksum".into())
            })?;
        let stored = u64::from_le_bytes(bytes[end..].try_into().unwrap_or_default());
        if stored != 0 {
            let computed = crc64(0, &bytes[..end]);
            if computed != stored {
                return Err(LoadFailure::Checksum { stored, computed });
            }
        }
        end
    } else {
        bytes.len()
    };
    let mut d = Decoder::new(&bytes[9..body_end]);
    let out = load_body(&mut d, version, store, now_ms)?;
    Ok(out)
}

/// Loads the snapshot at the start of `bytes` that more follows (an append-only file's RDB preamble);
/// what it held, and its length. Its checksum is checked once its end is found, after its keys are in
/// the store (the caller refuses the start on an error).
pub fn load_prefix(bytes: &[u8], store: &Store, now_ms: u64) -> Result<(Loaded, usize), LoadFailure> {
    let version = header(bytes)?;
    let mut d = Decoder::new(&bytes[9..]);
    let out = load_body(&mut d, version, store, now_ms)?;
    let end = 9 + d.pos();
    if version < 5 {
        return Ok((out, end));
    }
    let stored = bytes
        .get(end..end + 8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .ok_or_else(|| LoadFailure::Header("truncated: no checksum after the snapshot".into()))?;
    if stored != 0 {
        let computed = crc64(0, &bytes[..end]);
        if computed != stored {
            return Err(LoadFailure::Checksum { stored, computed });
        }
    }
    Ok((out, end + 8))
}

/// The records of a snapshot after its header, up to and with its EOF opcode.
fn load_body(d: &mut Decoder<'_>, version: u16, store: &Store, now_ms: u64) -> Result<Loaded, LoadFailure> {
    let mut out = Loaded {
        rdb_version: version,
        ..Loaded::default()
    };
    let mut deadline: Option<u64> = None;
    let mut db = 0u64;
    let short = |d: &Decoder<'_>, _: Corrupt| corrupt(d, "unexpected end or a bad length");
    loop {
        let t = d.u8().map_err(|c| short(d, c))?;
        match t {
            rdb::RDB_OPCODE_EXPIRETIME => {
                let s = d.secs().map_err(|c| short(d, c))?;
                deadline = Some((i64::from(s) * 1000).max(0) as u64);
            }
            rdb::RDB_OPCODE_EXPIRETIME_MS => {
                let ms = d.millis().map_err(|c| short(d, c))?;
                deadline = Some(ms.max(0) as u64);
            }
            rdb::RDB_OPCODE_FREQ => {
                d.u8().map_err(|c| short(d, c))?;
            }
            rdb::RDB_OPCODE_IDLE => {
                d.length().map_err(|c| short(d, c))?;
            }
            rdb::RDB_OPCODE_EOF => break,
            rdb::RDB_OPCODE_SELECTDB => db = d.length().map_err(|c| short(d, c))?,
            rdb::RDB_OPCODE_RESIZEDB => {
                d.length().map_err(|c| short(d, c))?;
                d.length().map_err(|c| short(d, c))?;
            }
            rdb::RDB_OPCODE_AUX => {
                // redis-ver, ctime, used-mem, repl-*, aof-base, lua scripts of Redis 6: nothing here
                // depends on them.
                d.string().map_err(|c| short(d, c))?;
                d.string().map_err(|c| short(d, c))?;
            }
            rdb::RDB_OPCODE_MODULE_AUX => {
                return Err(corrupt(d, "a module's data: hopless has no modules"));
            }
            rdb::RDB_OPCODE_FUNCTION => {
                return Err(corrupt(d, "functions in Redis 7.0's pre-release format"));
            }
            rdb::RDB_OPCODE_FUNCTION2 => {
                let code = d.string().map_err(|c| short(d, c))?;
                out.libraries.push(code.into_owned());
            }
            t => {
                let at = d.pos();
                let key = d.string().map_err(|c| short(d, c))?.into_owned();
                let value = match store.read_value(t, d) {
                    Ok(v) => Some(v),
                    Err(LoadError::Empty) => None,
                    Err(e) => {
                        return Err(LoadFailure::Corrupt {
                            offset: at,
                            what: format!(
                                "key {:?}: {}",
                                String::from_utf8_lossy(&key),
                                match e {
                                    LoadError::Module => "a module's value: hopless has no modules".into(),
                                    LoadError::UnknownType(t) => format!("unknown value type {t}"),
                                    LoadError::NoMemory => "out of memory".into(),
                                    _ => "a corrupt value".to_string(),
                                }
                            ),
                        })
                    }
                };
                if db != 0 {
                    return Err(corrupt(
                        d,
                        format!("keys of database {db}: hopless serves database 0 only"),
                    ));
                }
                let d_at = deadline.take();
                match value {
                    None => out.empty += 1,
                    Some(_) if d_at.is_some_and(|x| x <= now_ms) => out.expired += 1,
                    Some(v) => {
                        store
                            .restore(&key, v, d_at, true)
                            .map_err(|e| LoadFailure::Corrupt {
                                offset: at,
                                what: e.to_string(),
                            })?;
                        out.keys += 1;
                    }
                }
            }
        }
    }
    Ok(out)
}
