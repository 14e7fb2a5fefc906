//! The stream commands: XADD XTRIM XDEL XLEN XRANGE XREVRANGE XSETID XREAD (BLOCK too), with Redis
//! 7.0's argument rules, replies and error texts. An entry is `[id, [field, value, ...]]`; XREAD's reply
//! is `[[key, entries]...]` in RESP2 and a map from key to entries in RESP3.
//!
//! XREAD BLOCK waits as the blocking pops do (`blocked`): an XADD to a key it waits on serves it with
//! the entries after the id it gave (`$`: the stream's last id when it blocked). Inside EXEC it does not
//! block; inside a script BLOCK is refused, as in Redis.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hopless_kv::store::{TrimSpec, XAdd, XSetId};
use hopless_kv::types::stream::{Entry, IdSpec, Stream, StreamId, Trim};
use hopless_kv::{Kind, KvAlloc, Store};

use super::blocking::block_on;
use super::command::{int_arg, Command, Ctx};
use crate::blocked::BlockedOp;
use crate::codec::{Proto, Reply};
use crate::errors::{wrong_args, CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("xadd", -5, "write denyoom fast", xadd).keys(1, 1, 1),
    Command::new("xtrim", -4, "write", xtrim).keys(1, 1, 1),
    Command::new("xdel", -3, "write fast", xdel).keys(1, 1, 1),
    Command::new("xlen", 2, "readonly fast", xlen).keys(1, 1, 1),
    Command::new("xrange", -4, "readonly", xrange).keys(1, 1, 1),
    Command::new("xrevrange", -4, "readonly", xrevrange).keys(1, 1, 1),
    Command::new("xsetid", -3, "write denyoom fast", xsetid).keys(1, 1, 1),
    Command::new("xread", -4, "readonly blocking movablekeys", xread).keys(0, 0, 0),
];

pub(super) const INVALID_ID: CmdError =
    CmdError::Static("ERR Invalid stream ID specified as stream command argument");

/// XREAD BLOCK's entries a wake-up serves when it gave no COUNT (Redis's `XREAD_BLOCKED_DEFAULT_COUNT`).
pub(super) const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// An id argument (`-` and `+` too unless `strict`).
pub(super) fn id_arg(b: &[u8], missing_seq: u64, strict: bool) -> Result<StreamId, CmdError> {
    StreamId::parse(b, missing_seq, strict).ok_or(INVALID_ID)
}

/// An id as Redis writes it, `<ms>-<seq>`, without allocating.
pub(super) fn id_bulk(out: &mut Reply, id: StreamId) {
    let mut buf = [0u8; 41];
    let mut w = &mut buf[..];
    let _ = std::io::Write::write_fmt(&mut w, format_args!("{id}"));
    let n = 41 - w.len();
    out.bulk(&buf[..n]);
}

/// One entry: `[id, [field, value, ...]]`.
pub(super) fn entry_reply<A: KvAlloc>(out: &mut Reply, e: &Entry<'_, A>) {
    out.array(2);
    id_bulk(out, e.id);
    out.array(e.fields() * 2);
    for (f, v) in e.pairs() {
        out.bulk(f);
        out.bulk(v);
    }
}

/// The entries from `start` to `end` (descending when `rev`), at most `count` (0: all), as an array.
pub(super) fn range_reply<A: KvAlloc>(
    out: &mut Reply,
    s: &Stream<A>,
    start: StreamId,
    end: StreamId,
    count: usize,
    rev: bool,
) {
    let mut body = Reply::new(out.proto);
    let mut n = 0;
    s.range(start, end, rev, |e| {
        entry_reply(&mut body, &e);
        n += 1;
        count == 0 || n < count
    });
    out.array(n);
    out.buf.extend_from_slice(&body.buf);
}

/// The clock for `*` ids, in Unix milliseconds.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// XADD's and XTRIM's options, parsed from argument 2 on as Redis parses them; for XADD, the index
/// of the id argument (the end when there is none) and the id.
struct AddTrimArgs {
    trim: Option<TrimSpec>,
    nomkstream: bool,
    id: IdSpec,
    /// XADD: the index of the id argument; the fields follow it.
    id_at: usize,
    /// XADD: an id whose sequence was given (`0-0` is refused then).
    seq_given: bool,
}

fn add_trim_args(c: &Ctx<'_>, a: &[Bytes], xadd: bool) -> Result<AddTrimArgs, CmdError> {
    let mut trim: Option<Trim> = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut nomkstream = false;
    let mut id = IdSpec::Auto;
    let mut seq_given = false;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = &a[i][..];
        if xadd && opt == b"*" {
            break;
        } else if (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0 {
            if trim.is_some() {
                return Err(CmdError::Static(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            approx = false;
            if more >= 2 && (&a[i + 1][..] == b"~" || &a[i + 1][..] == b"=") {
                approx = &a[i + 1][..] == b"~";
                i += 1;
            }
            let v = &a[i + 1][..];
            trim = Some(if eq(opt, "maxlen") {
                let n = int_arg(v)?;
                if n < 0 {
                    return Err(CmdError::Static("ERR The MAXLEN argument must be >= 0."));
                }
                Trim::MaxLen(n as u64)
            } else {
                Trim::MinId(id_arg(v, 0, true)?)
            });
            i += 1;
        } else if eq(opt, "limit") && more > 0 {
            let n = int_arg(&a[i + 1])?;
            if n < 0 {
                return Err(CmdError::Static("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            i += 1;
        } else if xadd && eq(opt, "nomkstream") {
            nomkstream = true;
        } else if xadd {
            id = StreamId::parse_spec(opt, 0, true, true).ok_or(INVALID_ID)?;
            seq_given = !matches!(id, IdSpec::Ms(_));
            break;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    if limit.is_some_and(|n| n != 0) && trim.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && trim.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    let limit = match (limit, approx) {
        (Some(_), false) => {
            return Err(CmdError::Static(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ))
        }
        (Some(n), true) => n as u64,
        // At most 100 nodes' worth a trim, as Redis caps it.
        (None, true) => (100 * c.shared.store.limits().stream_node_entries).clamp(1, 1_000_000) as u64,
        (None, false) => 0,
    };
    Ok(AddTrimArgs {
        trim: trim.map(|trim| TrimSpec { trim, approx, limit }),
        nomkstream,
        id,
        id_at: i,
        seq_given,
    })
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
fn xadd(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let p = add_trim_args(c, a, true)?;
    let fields = a.len().saturating_sub(p.id_at + 1);
    if fields < 2 || fields % 2 == 1 {
        return Err(wrong_args(c.name));
    }
    if p.seq_given && p.id == IdSpec::Exact(StreamId::MIN) {
        return Err(CmdError::Static(
            "ERR The ID specified in XADD must be greater than 0-0",
        ));
    }
    let pairs: Vec<&[u8]> = a[p.id_at + 1..].iter().map(|b| &b[..]).collect();
    let added = c.shared.store.xadd(
        &a[1],
        &XAdd {
            id: p.id,
            pairs: &pairs,
            nomkstream: p.nomkstream,
            trim: p.trim,
            now_ms: now_ms(),
        },
    )?;
    match added {
        Some(added) => id_bulk(c.out, added.id),
        None => c.out.null(),
    }
    Ok(())
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
fn xtrim(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let p = add_trim_args(c, a, false)?;
    let trim = p.trim.expect("XTRIM's arguments name a strategy");
    let n = c.shared.store.xtrim(&a[1], &trim)?;
    c.out.int(n as i64);
    Ok(())
}

/// XDEL key id [id ...]
fn xdel(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let ids = a[2..]
        .iter()
        .map(|b| id_arg(b, 0, true))
        .collect::<Result<Vec<_>, _>>()?;
    let n = c.shared.store.xdel(&a[1], &ids)?;
    c.out.int(n as i64);
    Ok(())
}

/// XLEN key
fn xlen(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let n = c.shared.store.xlen(&a[1])?;
    c.out.int(n as i64);
    Ok(())
}

/// A range bound: `(` excludes it; an incomplete id's sequence is `missing_seq`.
pub(super) fn bound(b: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if b.len() > 1 && b[0] == b'(' {
        Ok((id_arg(&b[1..], missing_seq, true)?, true))
    } else {
        Ok((id_arg(b, missing_seq, false)?, false))
    }
}

/// XRANGE key start end [COUNT count], and XREVRANGE key end start [COUNT count].
fn range(c: &mut Ctx<'_>, a: &[Bytes], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev { (&a[3], &a[2]) } else { (&a[2], &a[3]) };
    let (mut start, ex) = bound(start_arg, 0)?;
    if ex {
        start = start
            .next()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?;
    }
    let (mut end, ex) = bound(end_arg, u64::MAX)?;
    if ex {
        end = end
            .prev()
            .ok_or(CmdError::Static("ERR invalid end ID for the interval"))?;
    }
    let mut count: Option<i64> = None;
    let mut i = 4;
    while i < a.len() {
        if eq(&a[i], "count") && i + 1 < a.len() {
            count = Some(int_arg(&a[i + 1])?.max(0));
            i += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let out = &mut *c.out;
    let found = c.shared.store.read_stream(&a[1], |s| {
        if count == Some(0) {
            out.null_array();
        } else {
            range_reply(out, s, start, end, count.unwrap_or(0) as usize, rev);
        }
    })?;
    if found.is_none() {
        out.array(0);
    }
    Ok(())
}

fn xrange(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range(c, a, false)
}

fn xrevrange(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    range(c, a, true)
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
fn xsetid(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let last = id_arg(&a[2], 0, true)?;
    let mut entries_added = None;
    let mut max_deleted = None;
    let mut i = 3;
    while i < a.len() {
        let more = a.len() - 1 - i;
        if eq(&a[i], "entriesadded") && more > 0 {
            let n = int_arg(&a[i + 1])?;
            if n < 0 {
                return Err(CmdError::Static("ERR entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if eq(&a[i], "maxdeletedid") && more > 0 {
            let id = id_arg(&a[i + 1], 0, true)?;
            if last < id {
                return Err(CmdError::Static(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            max_deleted = Some(id);
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    c.shared.store.xsetid(
        &a[1],
        &XSetId {
            last,
            entries_added,
            max_deleted,
        },
    )?;
    c.out.ok();
    Ok(())
}

/// XREAD BLOCK's timeout in milliseconds as Redis reads it: an integer, not negative. None: forever (0).
pub(super) fn block_arg(b: &[u8]) -> Result<Option<Duration>, CmdError> {
    let ms = hopless_kv::store::parse_i64(b)
        .ok_or(CmdError::Static("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms as u64)))
}

/// What a blocked XREAD waits for: per key, the id the entries must be above.
struct ReadAfter {
    after: Vec<(Bytes, StreamId)>,
    count: usize,
}

impl BlockedOp for ReadAfter {
    fn kind(&self) -> Kind {
        Kind::Stream
    }

    /// Serves the reader when the stream has an entry above the id it waits above: a one-key reply (an
    /// array of one `[key, entries]`; RESP3: a map of one). Never an empty one: a stream whose newer
    /// entries were deleted keeps its reader waiting, as Redis does since it stopped replying `{key {}}`.
    fn serve(&self, store: &Store, key: &[u8], out: &mut Reply) -> Result<bool, hopless_kv::Error> {
        let Some(&(_, gt)) = self.after.iter().find(|(k, _)| &k[..] == key) else {
            return Ok(false);
        };
        let served = store.read_stream(key, |s| {
            if s.is_empty() || s.last_entry_id() <= gt {
                return false;
            }
            one_key_reply(out, key, s, gt, self.count);
            true
        })?;
        Ok(served == Some(true))
    }

    /// A read leaves the stream as it was: every blocked reader it has something for is served.
    fn consumes(&self) -> bool {
        false
    }
}

/// Opens a blocked reader's reply, which holds one key: an array of one `[key, ` (RESP3: a map of one).
pub(super) fn one_key_header(out: &mut Reply, key: &[u8]) {
    match out.proto {
        Proto::Resp2 => out.array(1),
        _ => out.map(1),
    }
    key_header(out, key);
}

/// XREAD's reply for one key, on its own.
fn one_key_reply<A: KvAlloc>(out: &mut Reply, key: &[u8], s: &Stream<A>, gt: StreamId, count: usize) {
    one_key_header(out, key);
    if let Some(start) = gt.next() {
        range_reply(out, s, start, StreamId::MAX, count, false);
    } else {
        out.array(0);
    }
}

/// XREAD's and XREADGROUP's options, parsed as Redis parses them.
pub(super) struct ReadArgs {
    /// BLOCK's timeout (None inside: forever); None: no BLOCK.
    pub(super) block: Option<Option<Duration>>,
    /// COUNT (0: none).
    pub(super) count: usize,
    /// Where the keys start (the ids are the second half of what follows).
    pub(super) streams_at: usize,
    /// XREADGROUP's GROUP: the group and the consumer.
    pub(super) group: Option<(Bytes, Bytes)>,
    pub(super) noack: bool,
}

/// Parses XREAD's options (`group`: XREADGROUP's, which takes GROUP and NOACK too).
pub(super) fn read_args(c: &Ctx<'_>, a: &[Bytes], group: bool) -> Result<ReadArgs, CmdError> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        streams_at: 0,
        group: None,
        noack: false,
    };
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let o = &a[i][..];
        if eq(o, "block") && more > 0 {
            if c.conn.in_script {
                let name = String::from_utf8_lossy(&a[0]);
                return Err(CmdError::Msg(format!(
                    "ERR {name} command is not allowed with BLOCK option from scripts"
                )));
            }
            r.block = Some(block_arg(&a[i + 1])?);
            i += 1;
        } else if eq(o, "count") && more > 0 {
            r.count = int_arg(&a[i + 1])?.max(0) as usize;
            i += 1;
        } else if eq(o, "streams") && more > 0 {
            r.streams_at = i + 1;
            if (a.len() - r.streams_at) % 2 != 0 {
                return Err(CmdError::Static(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            break;
        } else if eq(o, "group") && more >= 2 {
            if !group {
                return Err(CmdError::Static(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some((a[i + 1].clone(), a[i + 2].clone()));
            i += 2;
        } else if eq(o, "noack") {
            if !group {
                return Err(CmdError::Static(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.noack = true;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    if r.streams_at == 0 {
        return Err(SYNTAX);
    }
    Ok(r)
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
fn xread(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let ReadArgs {
        block,
        count,
        streams_at,
        ..
    } = read_args(c, a, false)?;
    let n = (a.len() - streams_at) / 2;
    let store = &c.shared.store;
    let mut after = Vec::with_capacity(n);
    for k in 0..n {
        let key = &a[streams_at + k];
        let id = &a[streams_at + n + k][..];
        // The type is checked for every key before any is read, as Redis checks it.
        let last = store.read_stream(key, |s| s.last_id())?;
        let gt = match id {
            b"$" => last.unwrap_or(StreamId::MIN),
            b">" => {
                return Err(CmdError::Static(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ))
            }
            _ => id_arg(id, 0, true)?,
        };
        after.push((key.clone(), gt));
    }
    // Served at once: every key with an entry above its id.
    let mut body = Reply::new(c.out.proto);
    let mut served = 0;
    for (key, gt) in &after {
        store.read_stream(key, |s| {
            if !s.is_empty() && s.last_entry_id() > *gt {
                served += 1;
                key_header(&mut body, key);
                if let Some(start) = gt.next() {
                    range_reply(&mut body, s, start, StreamId::MAX, count, false);
                }
            }
        })?;
    }
    let keys = after.iter().map(|(k, _)| k.clone()).collect();
    let count = if count == 0 { BLOCKED_DEFAULT_COUNT } else { count };
    served_or_blocked(c, served, &body, block, keys, || {
        Box::new(ReadAfter { after, count })
    })
}

/// Opens one key's part of XREAD's or XREADGROUP's reply: `[key, ` in RESP2, the map key in RESP3.
pub(super) fn key_header(body: &mut Reply, key: &[u8]) {
    if body.proto == Proto::Resp2 {
        body.array(2);
    }
    body.bulk(key);
}

/// XREAD's and XREADGROUP's ending: the `served` keys' replies (in `body`) as one array (RESP3: a map);
/// none served, a null array, or with BLOCK (outside EXEC) the client blocked on `keys` with the op
/// `op` makes.
pub(super) fn served_or_blocked(
    c: &mut Ctx<'_>,
    served: usize,
    body: &Reply,
    block: Option<Option<Duration>>,
    keys: Vec<Bytes>,
    op: impl FnOnce() -> Box<dyn BlockedOp>,
) -> CmdResult {
    if served > 0 {
        match c.out.proto {
            Proto::Resp2 => c.out.array(served),
            _ => c.out.map(served),
        }
        c.out.buf.extend_from_slice(&body.buf);
        return Ok(());
    }
    match block {
        Some(timeout) if !c.in_exec => block_on(c, keys, op(), timeout),
        _ => {
            c.out.null_array();
            Ok(())
        }
    }
}
