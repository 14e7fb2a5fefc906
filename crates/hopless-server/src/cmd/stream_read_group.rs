//! Reading through a consumer group: XREADGROUP, new entries (`>`) or a consumer's pending history, with
//! Redis 7.0's argument rules, replies and error texts.
//!
//! XREADGROUP BLOCK waits as XREAD BLOCK does: an XADD to a key it waits on serves it the entries after
//! its group's last delivered id, if any are left when its turn comes (a reader of the same group
//! before it may have taken them); a group gone meanwhile (XGROUP DESTROY, the key deleted or made
//! another type) answers it with Redis's NOGROUP error.

use bytes::Bytes;
use hopless_kv::types::stream::{Stream, StreamId};
use hopless_kv::{Kind, KvAlloc, Store};

use super::command::{Command, Ctx};
use super::stream::{
    entry_reply, id_bulk, key_header, now_ms, one_key_header, read_args, served_or_blocked, ReadArgs,
    BLOCKED_DEFAULT_COUNT, INVALID_ID,
};
use super::stream_group::NO_LONGER;
use crate::blocked::BlockedOp;
use crate::codec::Reply;
use crate::errors::{CmdError, CmdResult};

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("xreadgroup", -7, "write blocking movablekeys", xreadgroup).keys(0, 0, 0),
];

/// What a blocked XREADGROUP waits for: new entries for its group, on any of its keys.
struct ReadGroup {
    group: Bytes,
    consumer: Bytes,
    count: usize,
    noack: bool,
}

impl BlockedOp for ReadGroup {
    fn kind(&self) -> Kind {
        Kind::Stream
    }

    fn serve(&self, store: &Store, key: &[u8], out: &mut Reply) -> Result<bool, hopless_kv::Error> {
        let r = store.write_stream(key, false, |s| {
            let Some(g) = s.group(&self.group) else {
                return Err(hopless_kv::Error::Msg(NO_LONGER));
            };
            if s.is_empty() || s.last_entry_id() <= g.last_id {
                return Ok(false);
            }
            one_key_header(out, key);
            read_new_reply(out, s, &self.group, &self.consumer, self.count, self.noack);
            Ok(true)
        })?;
        // The group's state after the read goes into the append-only file whole (see
        // `aof::propagate`).
        if r == Some(true) && crate::aof::stage::armed() {
            crate::aof::propagate::state_of(store, key);
        }
        Ok(r == Some(true))
    }

    /// A reader of another group may still want what this one read.
    fn consumes(&self) -> bool {
        false
    }

    /// The key deleted or turned into another type takes the group with it.
    fn gone(&self) -> Option<&'static str> {
        Some(NO_LONGER)
    }
}

/// The entries XREADGROUP `>` delivers, as an array.
fn read_new_reply<A: KvAlloc>(
    out: &mut Reply,
    s: &mut Stream<A>,
    group: &[u8],
    consumer: &[u8],
    count: usize,
    noack: bool,
) {
    let mut body = Reply::new(out.proto);
    let mut n = 0;
    s.read_new(group, consumer, count, noack, now_ms(), |e| {
        entry_reply(&mut body, &e);
        n += 1;
    });
    out.array(n);
    out.buf.extend_from_slice(&body.buf);
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key [key ...] id [id ...]
fn xreadgroup(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let ReadArgs {
        block,
        count,
        streams_at,
        group: names,
        noack,
    } = read_args(c, a, true)?;
    let Some((group, consumer)) = names else {
        return Err(CmdError::Static("ERR Missing GROUP option for XREADGROUP"));
    };
    let n = (a.len() - streams_at) / 2;
    let store = &c.shared.store;
    // Per key: None for `>`, else the id the history read starts after.
    let mut reads: Vec<(Bytes, Option<StreamId>)> = Vec::with_capacity(n);
    for k in 0..n {
        let key = &a[streams_at + k];
        let id = &a[streams_at + n + k][..];
        if store.read_stream(key, |s| s.group(&group).is_some())? != Some(true) {
            return Err(CmdError::Msg(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(&group)
            )));
        }
        let after = match id {
            b"$" => return Err(CmdError::Static(
                "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of \
                     this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID \
                     would just return an empty result set.",
            )),
            b">" => None,
            _ => Some(StreamId::parse(id, 0, true).ok_or(INVALID_ID)?),
        };
        reads.push((key.clone(), after));
    }
    let mut body = Reply::new(c.out.proto);
    let mut served = 0;
    let now = now_ms();
    for (key, after) in &reads {
        store.write_stream(key, false, |s| {
            let history = after.is_some();
            let new =
                !history && !s.is_empty() && s.group(&group).is_some_and(|g| s.last_entry_id() > g.last_id);
            if !history && !new {
                return Ok(());
            }
            served += 1;
            key_header(&mut body, key);
            match after {
                Some(gt) => history_reply(&mut body, s, &group, &consumer, *gt, count, now),
                None => read_new_reply(&mut body, s, &group, &consumer, count, noack),
            }
            Ok(())
        })?;
    }
    let keys = reads.into_iter().map(|(k, _)| k).collect();
    let count = if count == 0 { BLOCKED_DEFAULT_COUNT } else { count };
    served_or_blocked(c, served, &body, block, keys, || {
        Box::new(ReadGroup {
            group,
            consumer,
            count,
            noack,
        })
    })
}

/// A history read's reply: each pending id from after `gt`, with its entry, or a null array for one
/// deleted since.
fn history_reply<A: KvAlloc>(
    out: &mut Reply,
    s: &mut Stream<A>,
    group: &[u8],
    consumer: &[u8],
    gt: StreamId,
    count: usize,
    now: u64,
) {
    let mut body = Reply::new(out.proto);
    let mut n = 0;
    if let Some(start) = gt.next() {
        s.read_history(group, consumer, start, count, now, |id, e| {
            match e {
                Some(e) => entry_reply(&mut body, &e),
                None => {
                    body.array(2);
                    id_bulk(&mut body, id);
                    body.null_array();
                }
            }
            n += 1;
        });
    }
    out.array(n);
    out.buf.extend_from_slice(&body.buf);
}
