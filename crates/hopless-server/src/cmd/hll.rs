//! HyperLogLog commands: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST, as Redis 7.0's `hyperloglog.c`
//! answers them, over the store's HyperLogLog methods (`hopless_kv::store::Store::pfadd` and the rest).
//!
//! What each signals to WATCH follows Redis's `signalModifiedKey` calls: PFADD when a register changed
//! (not on `:0`), PFMERGE its destination only, PFCOUNT of one key when it wrote the cached cardinality
//! (a read-only command that still changes the value), PFDEBUG never (its conversion to dense is
//! stored, and not signalled).

use bytes::Bytes;
use hopless_kv::hll;
use hopless_kv::store::{PfDebug, PfDebugReply};

use super::command::{Command, Ctx};
use crate::errors::{CmdError, CmdResult};
use crate::watch::Watches;
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("pfadd", -2, "write denyoom fast", pfadd).keys(1, 1, 1),
    Command::new("pfcount", -2, "readonly", pfcount).keys(1, -1, 1).may_replicate(),
    Command::new("pfmerge", -2, "write denyoom", pfmerge).keys(1, -1, 1),
    Command::new("pfdebug", 3, "write denyoom admin", pfdebug).keys(2, 2, 1),
    Command::new("pfselftest", 1, "admin", pfselftest),
];

/// PFADD key [element ...]: 1 when the key was created or a register changed, else 0.
fn pfadd(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let changed = c.shared.store.pfadd(&a[1], &a[2..])?;
    c.out.int(changed as i64);
    Ok(())
}

/// PFCOUNT key [key ...]: one key's cardinality (its cache written back when it was invalid), or the
/// cardinality of several keys' union.
fn pfcount(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() > 2 {
        let keys: Vec<&[u8]> = a[1..].iter().map(|k| &k[..]).collect();
        let n = c.shared.store.pfcount_union(&keys)?;
        c.out.int(n);
        return Ok(());
    }
    let r = c.shared.store.pfcount(&a[1])?;
    if r.cache_written {
        // Redis signals the change of the cache, which aborts a transaction watching the key.
        Watches::after_write_fence();
        if c.shared.watches.active() {
            c.shared.watches.touch(std::iter::once(&a[1][..]));
        }
    }
    c.out.int(r.cardinality);
    Ok(())
}

/// PFMERGE destkey [sourcekey ...]: the destination (created when missing) becomes the union.
fn pfmerge(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let srcs: Vec<&[u8]> = a[2..].iter().map(|k| &k[..]).collect();
    c.shared.store.pfmerge(&a[1], &srcs)?;
    // Only the destination changed.
    c.changed_keys = Some(&[1]);
    c.out.ok();
    Ok(())
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. As Redis: the key is looked up and checked first (a
/// missing key, a collection, a string that is not a HyperLogLog), then the subcommand.
fn pfdebug(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = if eq(&a[1], "getreg") {
        Some(PfDebug::GetReg)
    } else if eq(&a[1], "decode") {
        Some(PfDebug::Decode)
    } else if eq(&a[1], "encoding") {
        Some(PfDebug::Encoding)
    } else if eq(&a[1], "todense") {
        Some(PfDebug::ToDense)
    } else {
        None
    };
    // An unknown subcommand still meets the key's checks first: ENCODING makes them and changes nothing.
    let reply = c.shared.store.pfdebug(&a[2], sub.unwrap_or(PfDebug::Encoding))?;
    let Some(reply) = reply else {
        return Err(CmdError::Static("ERR The specified key does not exist"));
    };
    if sub.is_none() {
        return Err(CmdError::Msg(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(&a[1])
        )));
    }
    match reply {
        PfDebugReply::Registers(r) => {
            c.out.array(r.len());
            for v in r {
                c.out.int(i64::from(v));
            }
        }
        PfDebugReply::Decoded(s) => c.out.bulk(s.as_bytes()),
        PfDebugReply::Encoding(e) => c.out.simple(e.as_str()),
        PfDebugReply::Converted(conv) => c.out.int(conv as i64),
    }
    Ok(())
}

/// PFSELFTEST: the codec's self-test (about a second), `+OK` or Redis's `ERR TESTFAILED ...`.
fn pfselftest(c: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    let max = usize::try_from(c.shared.store.limits().hll_sparse_max_bytes).unwrap_or(0);
    hll::self_test(hopless_kv::types::random_u64(), max).map_err(CmdError::Msg)?;
    c.out.ok();
    Ok(())
}
