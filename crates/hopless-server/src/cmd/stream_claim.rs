//! Claiming a consumer group's pending entries: XCLAIM and XAUTOCLAIM, with Redis 7.0's options,
//! replies and error texts.

use bytes::Bytes;
use hopless_kv::types::stream::{Claim, Claimed, StreamId};
use hopless_kv::KvAlloc;

use super::command::{Command, Ctx};
use super::stream::{bound, entry_reply, id_arg, id_bulk, now_ms};
use super::stream_group::no_key_or_group;
use crate::codec::Reply;
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("xclaim", -6, "write fast", xclaim).keys(1, 1, 1),
    Command::new("xautoclaim", -6, "write fast", xautoclaim).keys(1, 1, 1),
];

/// A claimed entry's reply: the entry, or its id alone (JUSTID).
fn claimed_reply<A: KvAlloc>(out: &mut Reply, c: Claimed<'_, A>) {
    match c {
        Claimed::Entry(e) => entry_reply(out, &e),
        Claimed::Id(id) => id_bulk(out, id),
    }
}

/// An integer option of XCLAIM's, with its own error text.
fn claim_int(b: &[u8], what: &'static str) -> Result<i64, CmdError> {
    hopless_kv::store::parse_i64(b).ok_or(CmdError::Static(what))
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms] [RETRYCOUNT count]
/// [FORCE] [JUSTID] [LASTID lastid]
fn xclaim(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (key, group) = (&a[1], &a[2]);
    let store = &c.shared.store;
    if store.read_stream(key, |s| s.group(group).is_some())? != Some(true) {
        return Err(no_key_or_group(key, group));
    }
    let min_idle = claim_int(&a[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0) as u64;
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match StreamId::parse(&a[j], 0, true) {
            Some(id) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = now_ms();
    let (mut delivered, mut retry, mut force, mut justid, mut last_id) = (None, None, false, false, None);
    while j < a.len() {
        let more = a.len() - 1 - j;
        let o = &a[j][..];
        if eq(o, "force") {
            force = true;
        } else if eq(o, "justid") {
            justid = true;
        } else if eq(o, "idle") && more > 0 {
            j += 1;
            let idle = claim_int(&a[j], "ERR Invalid IDLE option argument for XCLAIM")?;
            delivered = Some(now as i64 - idle);
        } else if eq(o, "time") && more > 0 {
            j += 1;
            delivered = Some(claim_int(&a[j], "ERR Invalid TIME option argument for XCLAIM")?);
        } else if eq(o, "retrycount") && more > 0 {
            j += 1;
            retry = Some(claim_int(
                &a[j],
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?);
        } else if eq(o, "lastid") && more > 0 {
            j += 1;
            last_id = Some(id_arg(&a[j], 0, true)?);
        } else {
            return Err(CmdError::Msg(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(o)
            )));
        }
        j += 1;
    }
    let delivered = match delivered {
        Some(d) if d >= 0 && d <= now as i64 => d as u64,
        _ => now,
    };
    let claim = Claim {
        min_idle_ms: min_idle,
        delivered_ms: delivered,
        // A negative count is Redis's "not given".
        retry: retry.and_then(|r| u64::try_from(r).ok()),
        force,
        justid,
        now_ms: now,
    };
    let out = &mut *c.out;
    store.write_stream(key, false, |s| {
        if let (Some(id), Some(g)) = (last_id, s.group_mut(group)) {
            if id > g.last_id {
                g.last_id = id;
            }
        }
        let mut body = Reply::new(out.proto);
        let mut n = 0;
        s.claim(group, &a[3], &ids, &claim, |cl| {
            claimed_reply(&mut body, cl);
            n += 1;
        });
        out.array(n);
        out.buf.extend_from_slice(&body.buf);
        Ok(())
    })?;
    Ok(())
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
fn xautoclaim(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let min_idle = claim_int(&a[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0) as u64;
    let (mut start, ex) = bound(&a[5], 0)?;
    if ex {
        start = start
            .next()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?;
    }
    let mut count = 100usize;
    let mut justid = false;
    let mut j = 6;
    while j < a.len() {
        if eq(&a[j], "count") && j + 1 < a.len() {
            let max = i64::MAX / 16;
            count = match hopless_kv::store::parse_i64(&a[j + 1]) {
                Some(n) if (1..=max).contains(&n) => n as usize,
                _ => return Err(CmdError::Static("ERR COUNT must be > 0")),
            };
            j += 2;
        } else if eq(&a[j], "justid") {
            justid = true;
            j += 1;
        } else {
            return Err(SYNTAX);
        }
    }
    let (key, group) = (&a[1], &a[2]);
    let store = &c.shared.store;
    if store.read_stream(key, |s| s.group(group).is_some())? != Some(true) {
        return Err(no_key_or_group(key, group));
    }
    let out = &mut *c.out;
    let now = now_ms();
    store.write_stream(key, false, |s| {
        let mut body = Reply::new(out.proto);
        let mut n = 0;
        let (next, deleted) = s.autoclaim(group, &a[3], start, min_idle, count, justid, now, |cl| {
            claimed_reply(&mut body, cl);
            n += 1;
        });
        out.array(3);
        id_bulk(out, next);
        out.array(n);
        out.buf.extend_from_slice(&body.buf);
        out.array(deleted.len());
        for id in deleted {
            id_bulk(out, id);
        }
        Ok(())
    })?;
    Ok(())
}
