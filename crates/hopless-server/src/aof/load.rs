//! Loading the append-only set as Redis 7.0 loads it: the manifest, then the base (a snapshot, or a
//! snapshot followed by commands, or commands) and each increment in order, their commands run by a
//! client of the loader's own. A set of Redis before 7.0 (one `appendonly.aof` beside the snapshot) is
//! moved into the directory as the base of a new manifest first.
//!
//! Nothing expires while the set loads (the store's clock reads 0 meanwhile): a record that touches a
//! key whose deadline has since passed finds it as the server that wrote the record found it. A last
//! command cut short (a crash in the middle of a write) is dropped and the file cut back to the command
//! before it when `aof-load-truncated` says so, with a transaction left open at the end; anything else
//! that is not a command, or a command this server does not know, refuses the start.

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::files::{make_dir, persist_manifest};
use super::manifest::{Kind, Manifest, Names, Part};
use crate::snapshot::load::{load_bytes, load_prefix, LoadFailure};
use crate::state::{ClientEntry, ConnState, Shared};

/// Runs one command of the file for the loader's client; Err: the command is unknown.
pub type Replay<'a> = &'a mut dyn FnMut(&Shared, &mut ConnState, &[Bytes]) -> Result<(), String>;

/// What a load found.
#[derive(Default, Debug)]
pub struct Loaded {
    pub keys_from_base: u64,
    pub commands: u64,
    pub truncated: bool,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Reads the manifest (or moves a set of Redis before 7.0 into the directory) into the log's state;
/// whether there is a set to load.
pub fn find_set(shared: &Shared) -> io::Result<bool> {
    let aof = &shared.aof;
    let s = aof.settings();
    let names = Names(&s.filename);
    let mut log = aof.log();
    let dir = log.dir.clone();
    match std::fs::read(dir.join(names.manifest())) {
        Ok(text) => {
            log.manifest = Manifest::parse(&text).map_err(|e| bad(format!("{e} ({})", names.manifest())))?;
            return Ok(log.manifest.base.is_some() || !log.manifest.incrs.is_empty());
        }
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    let old = parent.join(&s.filename);
    if !old.is_file() {
        return Ok(false);
    }
    make_dir(&dir)?;
    std::fs::rename(&old, dir.join(&s.filename))?;
    let m = Manifest {
        base: Some(Part {
            name: s.filename.clone(),
            seq: 1,
            kind: Kind::Base,
        }),
        ..Manifest::default()
    };
    persist_manifest(&dir, &names, &m)?;
    tracing::info!("Successfully migrated an old-style AOF into the AOF directory");
    log.manifest = m;
    Ok(true)
}

/// Loads the set the log's manifest names into the (empty) store. `replay` runs its commands.
pub fn load_set(shared: &Shared, replay: Replay<'_>) -> io::Result<Loaded> {
    let aof = &shared.aof;
    let s = aof.settings();
    let (dir, m) = {
        let log = aof.log();
        (log.dir.clone(), log.manifest.clone())
    };
    let mut conn = ConnState::new(
        std::sync::Arc::new(ClientEntry::new(
            u64::MAX,
            ([0, 0, 0, 0], 0).into(),
            ([0, 0, 0, 0], 0).into(),
            -1,
        )),
        0,
        true,
    );
    let mut out = Loaded::default();
    aof.loading.store(true, Ordering::Release);
    let files: Vec<&Part> = m.base.iter().chain(&m.incrs).collect();
    let result = (|| {
        for (n, p) in files.iter().enumerate() {
            let last = n + 1 == files.len();
            let path = dir.join(&p.name);
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                // An increment Redis lists before it writes to it may be missing; an empty one is fine.
                Err(e) if e.kind() == io::ErrorKind::NotFound && p.kind == Kind::Incr => continue,
                Err(e) => return Err(bad(format!("can't open the append only file {}: {e}", p.name))),
            };
            let mut at = 0;
            if bytes.starts_with(b"REDIS") {
                let (loaded, used) = if p.kind == Kind::Base && p.name.ends_with(".rdb") {
                    (load_bytes(&bytes, &shared.store, 0), bytes.len())
                } else {
                    match load_prefix(&bytes, &shared.store, 0) {
                        Ok((l, used)) => (Ok(l), used),
                        Err(e) => (Err(e), 0),
                    }
                };
                let loaded = loaded.map_err(|e: LoadFailure| {
                    bad(format!("can't load the RDB preamble of {}: {e}", p.name))
                })?;
                crate::snapshot::save::load_libraries(shared, &loaded.libraries)
                    .map_err(|e| bad(format!("{} ({})", e, p.name)))?;
                out.keys_from_base += loaded.keys;
                at = used;
            }
            let (commands, cut) = run_commands(shared, &mut conn, &bytes[at..], &mut *replay)
                .map_err(|e| bad(format!("{e} reading the append only file {}", p.name)))?;
            out.commands += commands;
            if let Some(valid) = cut {
                if !(last && s.load_truncated) {
                    return Err(bad(format!(
                        "Unexpected end of file reading the append only file {}. You can: 1) Make a backup \
                         of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) \
                         Alternatively you can set the 'aof-load-truncated' configuration option to yes \
                         and restart the server.",
                        p.name
                    )));
                }
                tracing::warn!("!!! Warning: short read while loading the AOF file {}!!!", p.name);
                let keep = (at + valid) as u64;
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .and_then(|f| f.set_len(keep).and_then(|()| f.sync_all()))
                    .map_err(|e| bad(format!("can't cut the truncated AOF {} back: {e}", p.name)))?;
                tracing::warn!(
                    "AOF {} loaded anyway because aof-load-truncated is enabled",
                    p.name
                );
                out.truncated = true;
            }
        }
        Ok(())
    })();
    aof.loading.store(false, Ordering::Release);
    result.map(|()| out)
}

/// Runs the commands of `bytes`; how many, and where the valid commands end if the last one (or a
/// transaction left open) is cut short. A transaction's commands run at its EXEC, so that one cut short
/// leaves nothing of it behind.
fn run_commands(
    shared: &Shared,
    conn: &mut ConnState,
    bytes: &[u8],
    replay: Replay<'_>,
) -> Result<(u64, Option<usize>), String> {
    let mut at = 0;
    let mut n = 0;
    // The offset of an open transaction's MULTI, and its commands so far.
    let mut multi: Option<(usize, Vec<Vec<Bytes>>)> = None;
    let mut args: Vec<Bytes> = Vec::new();
    loop {
        if at == bytes.len() {
            // A transaction with no EXEC: what came before its MULTI is what loads.
            return Ok((n, multi.map(|(start, _)| start)));
        }
        let start = at;
        match read_command(bytes, &mut at, &mut args)? {
            None => return Ok((n, Some(multi.map_or(start, |(m, _)| m)))),
            Some(false) => continue,
            Some(true) => {}
        }
        n += 1;
        if crate::words::eq(&args[0], "multi") {
            if multi.is_none() {
                multi = Some((start, Vec::new()));
            }
        } else if crate::words::eq(&args[0], "exec") {
            for queued in multi.take().map(|(_, q)| q).unwrap_or_default() {
                replay(shared, conn, &queued)?;
            }
        } else if let Some((_, queued)) = &mut multi {
            queued.push(std::mem::take(&mut args));
        } else {
            replay(shared, conn, &args)?;
        }
    }
}

/// Reads the command at `*at` into `args`: Some(true) read, Some(false) an annotation line (`#...`)
/// passed over, None cut short; Err for bytes that are not a command.
fn read_command(bytes: &[u8], at: &mut usize, args: &mut Vec<Bytes>) -> Result<Option<bool>, String> {
    let bad = || "Bad file format".to_string();
    let Some(line) = read_line(bytes, at) else {
        return Ok(None);
    };
    match line.first() {
        Some(b'#') => return Ok(Some(false)),
        Some(b'*') => {}
        _ => return Err(bad()),
    }
    let argc: usize = parse_len(&line[1..]).filter(|&n| n >= 1).ok_or_else(bad)?;
    args.clear();
    for _ in 0..argc {
        let Some(line) = read_line(bytes, at) else {
            return Ok(None);
        };
        if line.first() != Some(&b'$') {
            return Err(bad());
        }
        let len = parse_len(&line[1..]).ok_or_else(bad)?;
        if bytes.len() - *at < len + 2 {
            return Ok(None);
        }
        if &bytes[*at + len..*at + len + 2] != b"\r\n" {
            return Err(bad());
        }
        args.push(Bytes::copy_from_slice(&bytes[*at..*at + len]));
        *at += len + 2;
    }
    Ok(Some(true))
}

/// The line at `*at` without its `\r\n`, moving past it; None if it is not complete.
fn read_line<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let rest = &bytes[*at..];
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    *at += end + 2;
    Some(&rest[..end])
}

fn parse_len(b: &[u8]) -> Option<usize> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(bytes: &[u8]) -> Result<(Vec<Vec<String>>, Option<usize>), String> {
        let mut at = 0;
        let mut out = Vec::new();
        let mut args = Vec::new();
        loop {
            if at == bytes.len() {
                return Ok((out, None));
            }
            match read_command(bytes, &mut at, &mut args)? {
                None => return Ok((out, Some(at))),
                Some(false) => {}
                Some(true) => out.push(
                    args.iter()
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect(),
                ),
            }
        }
    }

    #[test]
    fn reads_commands_annotations_and_a_cut_tail() {
        let text =
            b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n#TS:1700000000\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n";
        let (cmds, cut) = commands(text).unwrap();
        assert_eq!(cmds, vec![vec!["SELECT", "0"], vec!["SET", "k", "v1"]]);
        assert_eq!(cut, None);
        for end in 1..text.len() {
            let r = commands(&text[..end]);
            assert!(r.is_ok(), "a cut at {end} is a short read, not a bad format");
        }
        for bad in [
            &b"SET k v\r\n"[..],
            b"*x\r\n",
            b"*1\r\n+OK\r\n",
            b"*1\r\n$1\r\nabc\r\n",
            b"*0\r\n",
        ] {
            assert!(commands(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
