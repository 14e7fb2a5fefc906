//! The set's files on disk: the directory, an increment opened for appending, the manifest replaced as
//! Redis replaces it (a temporary file, fsynced, renamed over the old one, the directory fsynced: a
//! crash leaves the old manifest or the new one whole), files a rewrite replaced removed.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use super::manifest::{Manifest, Names};

/// Ends the process after a failure it cannot serve through (a write the `always` policy promised),
/// as Redis exits: the message goes to the log first.
pub fn fatal(msg: &str) -> ! {
    tracing::error!("{msg}");
    eprintln!("{msg}");
    std::process::exit(1)
}

/// Makes the set's directory if it is missing.
pub fn make_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        r => r,
    }
}

/// Opens (or creates) the increment `name` in `dir` for appending (`fresh`: emptied first); its length.
pub fn open_incr(dir: &Path, name: &str, fresh: bool) -> io::Result<(File, u64)> {
    if fresh {
        File::create(dir.join(name))?;
    }
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))?;
    let len = f.metadata()?.len();
    Ok((f, len))
}

/// The length of `name` in `dir` (0 if it is missing).
pub fn len_of(dir: &Path, name: &str) -> u64 {
    std::fs::metadata(dir.join(name)).map_or(0, |m| m.len())
}

/// Replaces the manifest of `names`'s set in `dir` with `m`, safely.
pub fn persist_manifest(dir: &Path, names: &Names<'_>, m: &Manifest) -> io::Result<()> {
    let temp = dir.join(names.temp_manifest());
    let written = (|| {
        let mut f = File::create(&temp)?;
        f.write_all(m.format().as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&temp, dir.join(names.manifest()))?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Removes the files `m` lists as history and drops them from it (the caller persists it).
pub fn remove_history(dir: &Path, m: &mut Manifest) {
    for p in m.history.drain(..) {
        if let Err(e) = std::fs::remove_file(dir.join(&p.name)) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!("can't remove the AOF history file {}: {e}", p.name);
            }
        }
    }
}
