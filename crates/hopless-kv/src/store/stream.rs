//! The store's stream commands, over [`Store::read_coll`] and [`Store::write_coll`] (`collections.rs`);
//! the data structure is `crate::types::stream`. Each method validates everything before it changes
//! anything; argument parsing (and its error texts) is the server's.

use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::stream::{AddError, IdSpec, Stream, StreamId, Trim};
use crate::types::{Collection, Kind};

/// How XADD and XTRIM trim: the strategy, whether by whole nodes (`~`), and the most entries to remove
/// (0: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimSpec {
    pub trim: Trim,
    pub approx: bool,
    pub limit: u64,
}

/// XADD's arguments.
#[derive(Debug, Clone, Copy)]
pub struct XAdd<'a> {
    pub id: IdSpec,
    /// Field names and values in turn (at least one pair).
    pub pairs: &'a [&'a [u8]],
    /// NOMKSTREAM: a missing key stays missing.
    pub nomkstream: bool,
    pub trim: Option<TrimSpec>,
    /// The clock, in Unix milliseconds, for `*` ids.
    pub now_ms: u64,
}

/// XSETID's arguments (checked against each other by the caller).
#[derive(Debug, Clone, Copy)]
pub struct XSetId {
    pub last: StreamId,
    pub entries_added: Option<u64>,
    pub max_deleted: Option<StreamId>,
}

/// XADD's outcome: the new entry's id, and how many entries its trim removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    pub id: StreamId,
    pub trimmed: u64,
}

fn stream<A: KvAlloc>(c: &Collection<A>) -> &Stream<A> {
    match c {
        Collection::Stream(s) => s,
        _ => unreachable!("a stream key holds a stream"),
    }
}

fn stream_mut<A: KvAlloc>(c: &mut Collection<A>) -> &mut Stream<A> {
    match c {
        Collection::Stream(s) => s,
        _ => unreachable!("a stream key holds a stream"),
    }
}

const EXHAUSTED: Error =
    Error::Msg("ERR The stream has exhausted the last possible ID, unable to add more items");
const ID_TOO_SMALL: Error =
    Error::Msg("ERR The ID specified in XADD is equal or smaller than the target stream top item");
const TOO_LARGE: Error = Error::Msg("ERR Elements are too large to be stored");

impl<A: KvAlloc> Store<A> {
    /// XADD: `Ok(None)` when the key is missing and `nomkstream`.
    pub fn xadd(&self, key: &[u8], a: &XAdd<'_>) -> Result<Option<Added>> {
        self.write_coll(key, Kind::Stream, !a.nomkstream, |c, limits| {
            let s = stream_mut(c);
            if s.last_id() == StreamId::MAX {
                return Err(EXHAUSTED);
            }
            let id = s.add(a.id, a.pairs, a.now_ms, limits).map_err(|e| match e {
                AddError::IdTooSmall => ID_TOO_SMALL,
                AddError::TooLarge => TOO_LARGE,
            })?;
            let trimmed = a.trim.map_or(0, |t| s.trim(t.trim, t.approx, t.limit));
            Ok(Added { id, trimmed })
        })
    }

    /// XTRIM: how many entries went (0 for a missing key).
    pub fn xtrim(&self, key: &[u8], t: &TrimSpec) -> Result<u64> {
        let r = self.write_coll(key, Kind::Stream, false, |c, _| {
            Ok(stream_mut(c).trim(t.trim, t.approx, t.limit))
        })?;
        Ok(r.unwrap_or(0))
    }

    /// XDEL: how many of `ids` had a live entry (each removed).
    pub fn xdel(&self, key: &[u8], ids: &[StreamId]) -> Result<usize> {
        let r = self.write_coll(key, Kind::Stream, false, |c, _| {
            let s = stream_mut(c);
            Ok(ids.iter().filter(|&&id| s.delete(id)).count())
        })?;
        Ok(r.unwrap_or(0))
    }

    /// XLEN (0 for a missing key).
    pub fn xlen(&self, key: &[u8]) -> Result<usize> {
        Ok(self
            .read_coll(key, Kind::Stream, |c| stream(c).len())?
            .unwrap_or(0))
    }

    /// Runs `f` on the stream at `key` under the read lock (XRANGE, XREAD, XINFO): `Ok(None)` for a
    /// missing key.
    pub fn read_stream<R>(&self, key: &[u8], f: impl FnOnce(&Stream<A>) -> R) -> Result<Option<R>> {
        self.read_coll(key, Kind::Stream, |c| f(stream(c)))
    }

    /// Runs `f` on the stream at `key` under the write lock (the consumer-group commands): `Ok(None)` for
    /// a missing key, unless `create`, when `f` runs on a new empty stream that stays (XGROUP CREATE
    /// MKSTREAM). An error from `f` must come before any change.
    pub fn write_stream<R>(
        &self,
        key: &[u8],
        create: bool,
        f: impl FnOnce(&mut Stream<A>) -> Result<R>,
    ) -> Result<Option<R>> {
        self.write_coll(key, Kind::Stream, create, |c, _| f(stream_mut(c)))
    }

    /// XSETID: `Err(NoSuchKey)` for a missing key; Redis's errors when the last id is below the last
    /// entry's, or the entries added below the length.
    pub fn xsetid(&self, key: &[u8], a: &XSetId) -> Result<()> {
        let r = self.write_coll(key, Kind::Stream, false, |c, _| {
            let s = stream_mut(c);
            if !s.is_empty() {
                if a.last < s.last_entry_id() {
                    return Err(Error::Msg(
                        "ERR The ID specified in XSETID is smaller than the target stream top item",
                    ));
                }
                if a.entries_added.is_some_and(|n| n < s.len() as u64) {
                    return Err(Error::Msg(
                        "ERR The entries_added specified in XSETID is smaller than the target stream length",
                    ));
                }
            }
            s.set_ids(
                a.last,
                a.entries_added,
                a.max_deleted.filter(|&id| id != StreamId::MIN),
            );
            Ok(())
        })?;
        r.ok_or(Error::NoSuchKey)
    }
}
