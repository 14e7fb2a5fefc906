//! The blocking pops: BLPOP BRPOP BRPOPLPUSH BLMOVE BLMPOP BZPOPMIN BZPOPMAX BZMPOP.
//!
//! Each tries at once; with nothing to pop it blocks its client on its keys (`blocked`) until a push
//! serves it, its timeout passes (a null array), CLIENT UNBLOCK, or the client leaves. Inside EXEC it
//! never blocks: nothing to pop answers as a timeout does at once (BLMOVE and BRPOPLPUSH: a null bulk
//! in RESP2, as Redis).

use std::time::Duration;

use bytes::Bytes;
use hopless_kv::types::list::End;
use hopless_kv::types::zset::parse_score;
use hopless_kv::{Kind, Store};

use super::command::{Command, Ctx};
use super::list::{end_arg, lmpop_args};
use super::zset::{pairs_reply, score, zmpop_args};
use crate::aof::stage;
use crate::blocked::{BlockedOp, Tried};
use crate::codec::Reply;
use crate::errors::{CmdError, CmdResult};
use crate::keyspace_events::{LIST, ZSET};
use crate::state::BlockWait;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("blpop", -3, "write noscript blocking", blpop).keys(1, -2, 1),
    Command::new("brpop", -3, "write noscript blocking", brpop).keys(1, -2, 1),
    Command::new("brpoplpush", 4, "write denyoom noscript blocking", brpoplpush).keys(1, 2, 1),
    Command::new("blmove", 6, "write denyoom noscript blocking", blmove).keys(1, 2, 1),
    Command::new("blmpop", -5, "write blocking movablekeys", blmpop).keys(0, 0, 0),
    Command::new("bzpopmin", -3, "write noscript blocking fast", bzpopmin).keys(1, -2, 1),
    Command::new("bzpopmax", -3, "write noscript blocking fast", bzpopmax).keys(1, -2, 1),
    Command::new("bzmpop", -5, "write blocking movablekeys", bzmpop).keys(0, 0, 0),
];

const NOT_FLOAT: CmdError = CmdError::Static("ERR timeout is not a float or out of range");
const NEGATIVE: CmdError = CmdError::Static("ERR timeout is negative");

/// A timeout in seconds as Redis reads it (`getTimeoutFromObjectOrReply`): a float, milliseconds
/// rounded up; one too large for a 64-bit count of milliseconds wraps negative in Redis and is refused
/// so. None: 0, wait forever (which `-0.0001` also rounds to).
fn timeout_arg(b: &[u8]) -> Result<Option<Duration>, CmdError> {
    let secs = parse_score(b).ok_or(NOT_FLOAT)?;
    let ms = (secs * 1000.0).ceil();
    if !(0.0..9_223_372_036_854_775_807.0).contains(&ms) {
        return Err(NEGATIVE);
    }
    Ok((ms > 0.0).then(|| Duration::from_millis(ms as u64)))
}

/// What a blocked pop does with a ready key: the reply shapes are Redis's.
enum Pop {
    /// BLPOP, BRPOP: `[key, element]`.
    One(End),
    /// BLMPOP: `[key, [elements]]`.
    Many(End, usize),
    /// BLMOVE, BRPOPLPUSH: the element moved.
    Move { dst: Bytes, from: End, to: End },
    /// BZPOPMIN, BZPOPMAX: `[key, member, score]`.
    ZOne { max: bool },
    /// BZMPOP: `[key, [[member, score]...]]`.
    ZMany { max: bool, count: usize },
}

impl BlockedOp for Pop {
    fn kind(&self) -> Kind {
        match self {
            Pop::One(_) | Pop::Many(..) | Pop::Move { .. } => Kind::List,
            Pop::ZOne { .. } | Pop::ZMany { .. } => Kind::ZSet,
        }
    }

    fn serve(&self, store: &Store, key: &[u8], out: &mut Reply) -> Result<bool, hopless_kv::Error> {
        let side = |e: &End| match e {
            End::Left => &b"LEFT"[..],
            End::Right => b"RIGHT",
        };
        let pop = |e: &End| match e {
            End::Left => &b"LPOP"[..],
            End::Right => b"RPOP",
        };
        let zpop = |max: bool| if max { &b"ZPOPMAX"[..] } else { b"ZPOPMIN" };
        // Each pop made is recorded for the append-only file as the command that makes it without
        // blocking, as Redis records it (nothing is built when the log is off).
        let logged = stage::armed();
        match self {
            Pop::One(end) => Ok(store
                .list_pop(key, *end)?
                .map(|v| {
                    if logged {
                        stage::record(&[pop(end), key]);
                    }
                    out.array(2);
                    out.bulk(key);
                    out.bulk(&v);
                })
                .is_some()),
            Pop::Many(end, count) => Ok(store
                .list_pop_many(key, *end, *count)?
                .map(|v| {
                    if logged {
                        stage::record(&[pop(end), key, v.len().to_string().as_bytes()]);
                    }
                    out.array(2);
                    out.bulk(key);
                    out.bulks(v.iter().map(|e| &e[..]));
                })
                .is_some()),
            Pop::Move { dst, from, to } => Ok(store
                .lmove(key, dst, *from, *to)?
                .map(|v| {
                    if logged {
                        stage::record(&[&b"LMOVE"[..], key, dst, side(from), side(to)]);
                    }
                    out.bulk(&v)
                })
                .is_some()),
            Pop::ZOne { max } => {
                let pairs = store.zpop(key, 1, *max)?;
                let Some((m, s)) = pairs.first() else {
                    return Ok(false);
                };
                if logged {
                    stage::record(&[zpop(*max), key]);
                }
                out.array(3);
                out.bulk(key);
                out.bulk(m);
                score(out, *s);
                Ok(true)
            }
            Pop::ZMany { max, count } => {
                let pairs = store.zpop(key, *count, *max)?;
                if pairs.is_empty() {
                    return Ok(false);
                }
                if logged {
                    stage::record(&[zpop(*max), key, pairs.len().to_string().as_bytes()]);
                }
                out.array(2);
                out.bulk(key);
                pairs_reply(out, &pairs, true);
                Ok(true)
            }
        }
    }

    fn pushes_to(&self) -> Option<&Bytes> {
        match self {
            Pop::Move { dst, .. } => Some(dst),
            _ => None,
        }
    }

    fn events(&self) -> Option<(u32, &'static str, Option<&'static str>)> {
        let side = |e: &End, left: &'static str, right: &'static str| match e {
            End::Left => left,
            End::Right => right,
        };
        Some(match self {
            Pop::One(e) | Pop::Many(e, _) => (LIST, side(e, "lpop", "rpop"), None),
            Pop::Move { from, to, .. } => {
                (LIST, side(from, "lpop", "rpop"), Some(side(to, "lpush", "rpush")))
            }
            Pop::ZOne { max } | Pop::ZMany { max, .. } => {
                (ZSET, if *max { "zpopmax" } else { "zpopmin" }, None)
            }
        })
    }
}

/// Pops from the first ready key, or blocks the client on all of them (inside EXEC: answers as a
/// timeout at once).
fn pop_or_block(c: &mut Ctx<'_>, keys: &[Bytes], timeout: Option<Duration>, pop: Pop) -> CmdResult {
    let store = &c.shared.store;
    if c.in_exec {
        for k in keys {
            if pop.serve(store, k, c.out)? {
                return Ok(());
            }
        }
        match pop {
            // Redis answers these with a null bulk here (RESP3: null either way).
            Pop::Move { .. } => c.out.null(),
            _ => c.out.null_array(),
        }
        return Ok(());
    }
    block_on(c, keys.to_vec(), Box::new(pop), timeout)
}

/// Tries `op` on `keys` once more with the registry locked, then blocks the client on them until a
/// write serves it or `timeout` passes (None: forever); the connection waits for the reply.
pub(super) fn block_on(
    c: &mut Ctx<'_>,
    keys: Vec<Bytes>,
    op: Box<dyn BlockedOp>,
    timeout: Option<Duration>,
) -> CmdResult {
    let tried = c
        .shared
        .blocked
        .try_or_block(&c.shared.store, c.conn.id(), keys, op, c.out)?;
    if let Tried::Blocked(reply) = tried {
        let deadline = timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
        c.conn.block = Some(BlockWait {
            reply,
            deadline,
            silenced: false,
            slow: None,
        });
    }
    Ok(())
}

/// BLPOP / BRPOP key [key ...] timeout.
fn pop_one(c: &mut Ctx<'_>, a: &[Bytes], end: End) -> CmdResult {
    let timeout = timeout_arg(&a[a.len() - 1])?;
    pop_or_block(c, &a[1..a.len() - 1], timeout, Pop::One(end))
}

fn blpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop_one(c, a, End::Left)
}

fn brpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    pop_one(c, a, End::Right)
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
fn blmove(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (from, to) = (end_arg(&a[3])?, end_arg(&a[4])?);
    let timeout = timeout_arg(&a[5])?;
    let dst = a[2].clone();
    pop_or_block(c, &a[1..2], timeout, Pop::Move { dst, from, to })
}

/// BRPOPLPUSH source destination timeout.
fn brpoplpush(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let timeout = timeout_arg(&a[3])?;
    let dst = a[2].clone();
    let pop = Pop::Move {
        dst,
        from: End::Right,
        to: End::Left,
    };
    pop_or_block(c, &a[1..2], timeout, pop)
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]: LMPOP's checks first, then the
/// timeout's, as Redis.
fn blmpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (at, end, count) = lmpop_args(&a[1..])?;
    let timeout = timeout_arg(&a[1])?;
    pop_or_block(c, &a[3..at + 1], timeout, Pop::Many(end, count))
}

/// BZPOPMIN / BZPOPMAX key [key ...] timeout.
fn bzpop(c: &mut Ctx<'_>, a: &[Bytes], max: bool) -> CmdResult {
    let timeout = timeout_arg(&a[a.len() - 1])?;
    pop_or_block(c, &a[1..a.len() - 1], timeout, Pop::ZOne { max })
}

fn bzpopmin(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bzpop(c, a, false)
}

fn bzpopmax(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bzpop(c, a, true)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
fn bzmpop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let (at, max, count) = zmpop_args(&a[1..])?;
    let timeout = timeout_arg(&a[1])?;
    pop_or_block(c, &a[3..at + 1], timeout, Pop::ZMany { max, count })
}
