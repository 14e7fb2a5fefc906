//! A base of commands (`aof-use-rdb-preamble no`): the function libraries as `FUNCTION LOAD`, then
//! each key as `RESTORE key <deadline> <payload> ABSTTL` (its DUMP payload, so every type and encoding
//! goes in whole), which Redis's loader and hopless's read as any increment. Written through a
//! temporary file renamed over the target, as the snapshot is.

use std::io::{self, Write};
use std::path::Path;

use hopless_kv::persist::{dump_payload, Obj};
use hopless_kv::store::Frozen;
use hopless_kv::Limits;

use super::stage::encode;
use crate::snapshot::write::{write_through_temp, Extras};

/// Writes the commands that make `frozen`'s dataset (and `extras`' libraries) to `target`.
pub fn write_commands(
    target: &Path,
    frozen: &Frozen<'_, hopless::Hopless>,
    extras: &Extras,
    limits: &Limits,
    compress: bool,
) -> io::Result<()> {
    let temp = format!("temp-{}.aof", std::process::id());
    write_through_temp(target, &temp, |mut w| {
        let mut rec = Vec::new();
        encode(&mut rec, &["SELECT", "0"]);
        for code in &extras.libraries {
            encode(&mut rec, &[&b"FUNCTION"[..], b"LOAD", code]);
        }
        w.write_all(&rec)?;
        let mut failed = Ok(());
        frozen.for_each(|key, obj: Obj<'_, hopless::Hopless>, deadline| {
            if failed.is_err() {
                return;
            }
            rec.clear();
            let payload = dump_payload(obj, limits, compress);
            match deadline {
                Some(d) => {
                    let d = d.to_string();
                    encode(
                        &mut rec,
                        &[&b"RESTORE"[..], key, d.as_bytes(), &payload, b"ABSTTL"],
                    )
                }
                None => encode(&mut rec, &[&b"RESTORE"[..], key, b"0", &payload]),
            }
            failed = w.write_all(&rec);
        });
        failed.map(|()| w)
    })
}
