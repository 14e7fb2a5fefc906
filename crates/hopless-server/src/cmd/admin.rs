//! Administration: DEBUG SLEEP (block a worker, as in Redis), DEBUG
//! SET-ACTIVE-EXPIRE (the background expiry off or on), DEBUG OBJECT (a key's value described as Redis
//! describes it) and TIME.

use bytes::Bytes;

use super::command::{Command, Ctx};
use super::object::{encoding_of, refcount_of};
use super::persist::alone;
use crate::errors::{unknown_sub, CmdError, CmdResult, SYNTAX};
use crate::snapshot::save::reload;
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("debug", -2, "admin noscript loading stale", debug)
        .subs(&["object", "sleep", "set-active-expire", "reload", "loadaof", "help"]),
    Command::new("time", 1, "loading stale fast", time),
];

/// TIME: seconds and microseconds since the Unix epoch, as two bulk strings.
fn time(c: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    c.out.array(2);
    c.out.bulk(now.as_secs().to_string().as_bytes());
    c.out.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(())
}

fn debug(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if eq(&a[1], "sleep") && a.len() == 3 {
        let secs: f64 = String::from_utf8_lossy(&a[2]).parse().map_err(|_| SYNTAX)?;
        if secs > 0.0 && secs.is_finite() {
            // Blocks this worker, as DEBUG SLEEP blocks Redis.
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        c.out.ok();
        return Ok(());
    }
    if eq(&a[1], "set-active-expire") && a.len() == 3 {
        // Redis reads it with atoi: anything but a nonzero number turns it off.
        let on = String::from_utf8_lossy(&a[2]).trim().parse::<i64>().unwrap_or(0) != 0;
        c.shared.store.set_active_expiry(on);
        c.out.ok();
        return Ok(());
    }
    if eq(&a[1], "object") && a.len() == 3 {
        return debug_object(c, &a[2]);
    }
    if eq(&a[1], "reload") {
        return debug_reload(c, &a[2..]);
    }
    if eq(&a[1], "loadaof") && a.len() == 2 {
        return debug_loadaof(c);
    }
    Err(unknown_sub(c.name, &a[1]))
}

/// DEBUG LOADAOF: the append-only file synced, the dataset and the function libraries emptied, the
/// set loaded back (without recording what it runs), as Redis does.
fn debug_loadaof(c: &mut Ctx<'_>) -> CmdResult {
    let (table, run) = (c.table, c.run);
    super::persist::alone(c, |c| {
        let sh = c.shared;
        sh.aof.sync_all();
        sh.store.flush();
        sh.functions.lock().unwrap_or_else(|e| e.into_inner()).flush();
        crate::aof::load::find_set(sh)?;
        crate::aof::load::load_set(sh, &mut |sh, conn, args| {
            super::command::replay(table, sh, conn, args, run)
        })
        .map(|_| ())
    })?
    .map_err(|e| {
        tracing::warn!("DEBUG LOADAOF: {e}");
        CmdError::Msg(format!("ERR Error loading the append only file: {e}"))
    })?;
    tracing::info!("Append Only File loaded by DEBUG LOADAOF");
    c.out.ok();
    Ok(())
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: saves the snapshot, empties the dataset and loads the file
/// back, as Redis does (MERGE is taken: keys loaded over existing ones replace them either way).
fn debug_reload(c: &mut Ctx<'_>, opts: &[Bytes]) -> CmdResult {
    let (mut save, mut flush) = (true, true);
    for o in opts {
        if eq(o, "nosave") {
            save = false;
        } else if eq(o, "noflush") {
            flush = false;
        } else if !eq(o, "merge") {
            return Err(CmdError::Static(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    alone(c, |c| reload(c.shared, save, flush))?.map_err(CmdError::Static)?;
    c.out.ok();
    Ok(())
}

/// DEBUG OBJECT: Redis's one-line description of a key's value, `Value at:<address> refcount:<n>
/// encoding:<name> serializedlength:<bytes> lru:<clock> lru_seconds_idle:<seconds>`. The encoding and
/// refcount are OBJECT's; the address is where a string's bytes are (its item's block: an INCR that
/// rewrites the value in place keeps it, one that makes a new item does not), and 0x0 for a collection
/// (the store hands out no address of one). serializedlength is the length of the value's text for a
/// string (Redis's RDB length, which compresses, can be smaller) and MEMORY USAGE for a collection
/// (hopless writes no RDB). The store keeps a logical access clock, not a time: lru and the idle seconds
/// read 0.
fn debug_object(c: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let store = &c.shared.store;
    let Some(encoding) = encoding_of(store, key) else {
        return Err(CmdError::Static("ERR no such key"));
    };
    let (at, length) = match store.get(key) {
        Ok(Some(v)) => (v.as_ptr() as usize, v.len()),
        _ => (0, store.memory_usage(key).unwrap_or(0)),
    };
    let refcount = refcount_of(store, key);
    let line = format!(
        "Value at:{at:#x} refcount:{refcount} encoding:{encoding} serializedlength:{length} lru:0 \
         lru_seconds_idle:0"
    );
    c.out.simple(&line);
    Ok(())
}
