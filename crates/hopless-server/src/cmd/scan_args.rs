//! The arguments SCAN, HSCAN, SSCAN and ZSCAN share: the cursor (an unsigned 64-bit number, else "invalid
//! cursor"), then MATCH pattern and COUNT n in any order (and SCAN's TYPE), as Redis's
//! `scanGenericCommand` reads them; and the reply they share.

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
    /// SCAN's TYPE filter, the name as given (a collection scan has none: TYPE is a syntax error there).
    pub(super) type_name: Option<&'a [u8]>,
}

/// Reads a collection scan's `a[cursor_at]` and the options after it.
pub(super) fn parse<'a>(a: &'a [Bytes], cursor_at: usize) -> Result<ScanArgs<'a>, CmdError> {
    parse_options(a, cursor_at, false)
}

/// Reads SCAN's cursor (`a[1]`) and options, TYPE among them.
pub(super) fn parse_keyspace(a: &[Bytes]) -> Result<ScanArgs<'_>, CmdError> {
    parse_options(a, 1, true)
}

fn parse_options(a: &[Bytes], cursor_at: usize, with_type: bool) -> Result<ScanArgs<'_>, CmdError> {
    let cursor = parse_cursor(&a[cursor_at]).ok_or(CmdError::Static("ERR invalid cursor"))?;
    let mut s = ScanArgs {
        cursor,
        count: 10,
        pattern: None,
        type_name: None,
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
        } else if with_type && eq(&a[i], "type") {
            s.type_name = Some(&v[..]);
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    Ok(s)
}

/// A cursor as Redis reads it (`strtoul` in base 10, then: no leading space, nothing after the digits,
/// no overflow): an optional sign, a negative number wrapping round (`-1` is 2^64 - 1), and the empty
/// string as 0.
fn parse_cursor(b: &[u8]) -> Option<u64> {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        // strtoul read nothing: the end pointer stays at the start, so only "" passes.
        return b.is_empty().then_some(0);
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { n.wrapping_neg() } else { n })
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

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursors_read_as_strtoul_reads_them() {
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b"18446744073709551616"[..],
            b" 1",
            b"1 ",
            b"-",
            b"+",
            b"1x",
            b"0x10",
        ] {
            assert_eq!(parse_cursor(bad), None, "{bad:?}");
        }
    }
}
