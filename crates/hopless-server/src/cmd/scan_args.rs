//! The arguments HSCAN, SSCAN and ZSCAN share: the cursor (an unsigned 64-bit number, else "invalid
//! cursor"), then MATCH pattern and COUNT n in any order, as Redis's `scanGenericCommand` reads them.

use bytes::Bytes;

use super::command::int_arg;
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// A collection scan's request.
pub(super) struct ScanArgs<'a> {
    pub(super) cursor: u64,
    /// Elements to look at in this call (at least 1).
    pub(super) count: usize,
    /// The glob elements must match (`None`: all; `*` reads as none).
    pub(super) pattern: Option<&'a [u8]>,
}

/// Reads `a[cursor_at]` and the options after it.
pub(super) fn parse<'a>(a: &'a [Bytes], cursor_at: usize) -> Result<ScanArgs<'a>, CmdError> {
    let cursor = core::str::from_utf8(&a[cursor_at])
        .ok()
        .and_then(parse_cursor)
        .ok_or(CmdError::Static("ERR invalid cursor"))?;
    let mut s = ScanArgs {
        cursor,
        count: 10,
        pattern: None,
    };
    let mut i = cursor_at + 1;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return Err(SYNTAX);
        };
        if eq(&a[i], "count") {
            let n = int_arg(v)?;
            if n < 1 {
                return Err(SYNTAX);
            }
            s.count = n.min(1 << 20) as usize;
        } else if eq(&a[i], "match") {
            s.pattern = Some(&v[..]).filter(|p| *p != b"*");
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    Ok(s)
}

/// Sends a scan's reply: the next cursor, then the elements.
pub(super) fn reply<'e>(
    out: &mut crate::codec::Reply,
    next: u64,
    elems: impl ExactSizeIterator<Item = &'e [u8]>,
) -> CmdResult {
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.bulks(elems);
    Ok(())
}

/// A cursor as Redis's `parseScanCursorOrReply` reads it with `strtoul`: an optional sign, then decimal
/// digits, within 64 bits; a minus negates modulo 2^64 (`-1` is the largest cursor), and the empty
/// string is 0. No leading space, nothing after the digits.
fn parse_cursor(s: &str) -> Option<u64> {
    if s.is_empty() {
        return Some(0);
    }
    let (neg, digits) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v = digits.parse::<u64>().ok()?;
    Some(if neg { v.wrapping_neg() } else { v })
}
