//! Requests in: the commands clients send, as Redis's `processMultibulkBuffer` and
//! `processInlineBuffer` read them, with their limits and their exact `Protocol error` wording.
//!
//! A request is either a multibulk array of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`, what every
//! client library sends) or an inline line (`GET k\r\n`, what a person types into telnet), split into
//! arguments by Redis's `sdssplitargs` rules (quotes, `\xHH` escapes).
//!
//! The decoder is resumable rather than a `check` then `parse` over the whole frame (which [`Frame`]
//! does for replies): a request of a million arguments arriving in pieces would otherwise be checked
//! again from its start on every read, quadratic in its size. It keeps where it got to (arguments found
//! so far, as ranges into the buffer) and goes on from there. The buffer must only grow between calls
//! until a request is returned; the caller then removes `consumed` bytes from its front.
//!
//! [`Frame`]: super::Frame

use core::fmt;
use core::ops::Range;

use hopless_kv::store::parse_i64;

/// Redis's `PROTO_INLINE_MAX_SIZE`: the longest inline line, and the longest `*`/`$` count line.
const INLINE_MAX: usize = 64 * 1024;
/// Redis's `proto-max-bulk-len` default.
pub(crate) const DEFAULT_MAX_BULK_LEN: usize = 512 << 20;
/// Before AUTH, Redis refuses multibulk counts above 10 and bulk lengths above 16 KiB.
const UNAUTH_MAX_ARGS: i64 = 10;
const UNAUTH_MAX_BULK: i64 = 16 * 1024;

/// A protocol error: Redis replies `-ERR Protocol error: ...` and closes the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    TooBigInline,
    UnbalancedQuotes,
    TooBigMbulkCount,
    InvalidMultibulkLength,
    UnauthenticatedMultibulkLength,
    TooBigBulkCount,
    ExpectedDollar(u8),
    InvalidBulkLength,
    UnauthenticatedBulkLength,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Protocol error: ")?;
        match self {
            ProtocolError::TooBigInline => f.write_str("too big inline request"),
            ProtocolError::UnbalancedQuotes => f.write_str("unbalanced quotes in request"),
            ProtocolError::TooBigMbulkCount => f.write_str("too big mbulk count string"),
            ProtocolError::InvalidMultibulkLength => f.write_str("invalid multibulk length"),
            ProtocolError::UnauthenticatedMultibulkLength => f.write_str("unauthenticated multibulk length"),
            ProtocolError::TooBigBulkCount => f.write_str("too big bulk count string"),
            ProtocolError::ExpectedDollar(c) => write!(f, "expected '$', got '{}'", *c as char),
            ProtocolError::InvalidBulkLength => f.write_str("invalid bulk length"),
            ProtocolError::UnauthenticatedBulkLength => f.write_str("unauthenticated bulk length"),
        }
    }
}

impl std::error::Error for ProtocolError {}

/// A decoded request's arguments.
#[derive(Debug, PartialEq, Eq)]
pub enum Args {
    /// Multibulk: each argument is a range of the request's bytes (no copy).
    Ranges(Vec<Range<usize>>),
    /// Inline: arguments after unquoting.
    Owned(Vec<Vec<u8>>),
}

/// One request: the bytes it took from the front of the buffer, and its arguments (none for an empty
/// line or a `*0`/`*-1` array, which Redis skips without a reply).
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub consumed: usize,
    pub args: Args,
}

/// The resumable request decoder (one per connection).
#[derive(Debug)]
pub struct Decoder {
    max_bulk_len: usize,
    partial: Option<Partial>,
    /// A request's range list given back by [`Decoder::recycle`], for the next request.
    spare: Vec<Range<usize>>,
}

#[derive(Debug)]
struct Partial {
    /// Arguments still to come.
    remaining: usize,
    /// Where the next argument's `$` line starts.
    pos: usize,
    args: Vec<Range<usize>>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(DEFAULT_MAX_BULK_LEN)
    }
}

impl Decoder {
    pub fn new(max_bulk_len: usize) -> Self {
        Decoder {
            max_bulk_len,
            partial: None,
            spare: Vec::new(),
        }
    }

    /// Gives back a request's range list once its arguments are taken, so that the next request's
    /// does not allocate (one kept; not one grown past a thousand arguments).
    pub fn recycle(&mut self, mut ranges: Vec<Range<usize>>) {
        if ranges.capacity() <= 1024 {
            ranges.clear();
            self.spare = ranges;
        }
    }

    /// Decodes the next request at the front of `buf`: `Ok(None)` when more bytes are needed,
    /// `Err` on a protocol error (the connection should reply with it and close). `authenticated`: false
    /// applies Redis's tighter limits for clients that still owe an AUTH.
    pub fn decode(&mut self, buf: &[u8], authenticated: bool) -> Result<Option<Request>, ProtocolError> {
        if self.partial.is_none() {
            let Some(&first) = buf.first() else {
                return Ok(None);
            };
            if first != b'*' {
                return decode_inline(buf);
            }
            let Some((n, next)) = count_line(buf, 0, ProtocolError::TooBigMbulkCount)? else {
                return Ok(None);
            };
            let n = parse_i64(n).ok_or(ProtocolError::InvalidMultibulkLength)?;
            if n > i32::MAX as i64 {
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            if !authenticated && n > UNAUTH_MAX_ARGS {
                return Err(ProtocolError::UnauthenticatedMultibulkLength);
            }
            if n <= 0 {
                return Ok(Some(Request {
                    consumed: next,
                    args: Args::Ranges(Vec::new()),
                }));
            }
            let mut args = std::mem::take(&mut self.spare);
            // Never trust the count for an allocation: a million-argument header costs nothing.
            args.reserve((n as usize).min(1024));
            self.partial = Some(Partial {
                remaining: n as usize,
                pos: next,
                args,
            });
        }
        let max_bulk = self.max_bulk_len;
        let p = self.partial.as_mut().expect("set above");
        while p.remaining > 0 {
            let Some((len, data)) = count_line(buf, p.pos, ProtocolError::TooBigBulkCount)? else {
                return Ok(None);
            };
            if buf[p.pos] != b'$' {
                let c = buf[p.pos];
                self.partial = None;
                return Err(ProtocolError::ExpectedDollar(c));
            }
            let len = match parse_i64(len) {
                Some(l) if l >= 0 && l as u64 <= max_bulk as u64 => l,
                _ => {
                    self.partial = None;
                    return Err(ProtocolError::InvalidBulkLength);
                }
            };
            if !authenticated && len > UNAUTH_MAX_BULK {
                self.partial = None;
                return Err(ProtocolError::UnauthenticatedBulkLength);
            }
            let end = data + len as usize;
            // Like Redis, the two bytes after the data are skipped, not checked.
            if buf.len() < end + 2 {
                return Ok(None);
            }
            p.args.push(data..end);
            p.pos = end + 2;
            p.remaining -= 1;
        }
        let p = self.partial.take().expect("set above");
        Ok(Some(Request {
            consumed: p.pos,
            args: Args::Ranges(p.args),
        }))
    }
}

/// A `*N` or `$N` line starting at `start`: the digits after the type byte and where the next line
/// starts, None while the `\r` and the byte after it have not arrived. As in Redis, the line ends at
/// the first `\r` and the byte after it is skipped.
fn count_line(
    buf: &[u8],
    start: usize,
    too_big: ProtocolError,
) -> Result<Option<(&[u8], usize)>, ProtocolError> {
    let rest = &buf[start..];
    match rest.iter().position(|&b| b == b'\r') {
        // Also when the whole line came at once: the answer must not depend on how the bytes arrived.
        Some(cr) if cr > INLINE_MAX => Err(too_big),
        // `cr == 0`: a line that is only "\r\n" where a `$` was due (the caller reports the byte).
        Some(cr) if cr + 1 < rest.len() => Ok(Some((rest.get(1..cr).unwrap_or_default(), start + cr + 2))),
        Some(_) => Ok(None),
        None if rest.len() > INLINE_MAX => Err(too_big),
        None => Ok(None),
    }
}

fn decode_inline(buf: &[u8]) -> Result<Option<Request>, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > INLINE_MAX {
            Err(ProtocolError::TooBigInline)
        } else {
            Ok(None)
        };
    };
    if nl > INLINE_MAX {
        return Err(ProtocolError::TooBigInline);
    }
    let line = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
    let args = split_args(line).ok_or(ProtocolError::UnbalancedQuotes)?;
    Ok(Some(Request {
        consumed: nl + 1,
        args: Args::Owned(args),
    }))
}

/// Redis's `sdssplitargs`: arguments separated by white space; `"..."` with `\n \r \t \b \a \xHH` and
/// `\<any>` escapes; `'...'` with `\'` only; a closing quote must be followed by a space or the end.
/// None for unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i == n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq) = (false, false);
        loop {
            if inq {
                if i == n {
                    return None;
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && line[i + 2].is_ascii_hexdigit()
                    && line[i + 3].is_ascii_hexdigit()
                {
                    let hex = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
                    cur.push(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        o => o,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if i == n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                if i == n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        i += 1;
                        break;
                    }
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(buf: &[u8], r: &Request) -> Vec<Vec<u8>> {
        match &r.args {
            Args::Ranges(rs) => rs.iter().map(|x| buf[x.clone()].to_vec()).collect(),
            Args::Owned(o) => o.clone(),
        }
    }

    type Decoded = Option<(usize, Vec<Vec<u8>>)>;

    fn one(buf: &[u8]) -> Result<Decoded, ProtocolError> {
        let mut d = Decoder::default();
        d.decode(buf, true)
            .map(|o| o.map(|r| (r.consumed, args(buf, &r))))
    }

    fn err(buf: &[u8]) -> String {
        one(buf).unwrap_err().to_string()
    }

    #[test]
    fn multibulk_and_inline_requests_decode() {
        let b = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(one(b), Ok(Some((b.len(), vec![b"GET".to_vec(), b"k".to_vec()]))));
        assert_eq!(one(b"PING\r\n"), Ok(Some((6, vec![b"PING".to_vec()]))));
        assert_eq!(one(b"PING\n"), Ok(Some((5, vec![b"PING".to_vec()]))));
        assert_eq!(one(b"\r\n"), Ok(Some((2, vec![]))));
        assert_eq!(one(b"*0\r\n"), Ok(Some((4, vec![]))));
        assert_eq!(one(b"*-1\r\n"), Ok(Some((5, vec![]))));
    }

    #[test]
    fn values_are_binary_safe() {
        let b = b"*2\r\n$4\r\nECHO\r\n$5\r\n\r\n\0\xff*\r\n";
        assert_eq!(one(b).unwrap().unwrap().1[1], b"\r\n\0\xff*");
    }

    #[test]
    fn truncated_frames_are_incomplete_at_every_cut() {
        let b = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
        for cut in 0..b.len() {
            let mut d = Decoder::default();
            // Feed growing prefixes to one decoder, as a connection does.
            for end in [cut / 2, cut] {
                assert_eq!(d.decode(&b[..end], true), Ok(None), "cut at {end}");
            }
            let r = d.decode(b, true).unwrap().unwrap();
            assert_eq!(r.consumed, b.len());
            assert_eq!(args(b, &r).len(), 3);
        }
    }

    #[test]
    fn pipelined_requests_decode_one_at_a_time() {
        let b = b"*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
        let mut d = Decoder::default();
        let mut pos = 0;
        let mut n = 0;
        while let Some(r) = d.decode(&b[pos..], true).unwrap() {
            pos += r.consumed;
            n += 1;
        }
        assert_eq!((n, pos), (3, b.len()));
    }

    #[test]
    fn malformed_input_gets_redis_protocol_errors() {
        assert_eq!(err(b"*1\r\n+PING\r\n"), "Protocol error: expected '$', got '+'");
        assert_eq!(err(b"*1\r\n:4\r\n"), "Protocol error: expected '$', got ':'");
        // An empty line where a `$` line is due: an error, not a slice panic (a case from the fuzzer).
        assert_eq!(err(b"*7\r\r\r\r"), "Protocol error: expected '$', got '\r'");
        assert_eq!(err(b"*abc\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(err(b"*+1\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(err(b"*01\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(err(b"*1 \r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(
            err(b"*3000000000\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(err(b"*1\r\n$-1\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(err(b"*1\r\n$abc\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(err(b"*1\r\n$04\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(
            err(b"*1\r\n$999999999999\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            err(b"*1\r\n$536870913\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            one(b"*1\r\n$536870912\r\n"),
            Ok(None),
            "512 MB exactly is allowed"
        );
        assert_eq!(
            err(b"set a \"b c\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            err(b"echo \"a\"b\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(err(&[b'x'; 70_000]), "Protocol error: too big inline request");
        let mut big = b"*".to_vec();
        big.extend([b'1'; 70_000]);
        assert_eq!(err(&big), "Protocol error: too big mbulk count string");
        let mut big = b"*1\r\n$".to_vec();
        big.extend([b'1'; 70_000]);
        assert_eq!(err(&big), "Protocol error: too big bulk count string");
    }

    #[test]
    fn a_million_element_header_allocates_nothing_up_front() {
        let mut d = Decoder::default();
        assert_eq!(d.decode(b"*1000000\r\n", true), Ok(None));
        assert!(d.partial.as_ref().unwrap().args.capacity() <= 1024);
    }

    #[test]
    fn missing_crlf_after_data_is_skipped_as_redis_does() {
        let b = b"*2\r\n$4\r\nECHO\r\n$2\r\nhiXY";
        assert_eq!(one(b).unwrap().unwrap().1[1], b"hi");
    }

    #[test]
    fn unauthenticated_clients_get_tighter_limits() {
        let mut d = Decoder::default();
        assert_eq!(
            d.decode(b"*11\r\n", false).unwrap_err().to_string(),
            "Protocol error: unauthenticated multibulk length"
        );
        let mut d = Decoder::default();
        assert_eq!(
            d.decode(b"*1\r\n$16385\r\n", false).unwrap_err().to_string(),
            "Protocol error: unauthenticated bulk length"
        );
    }

    #[test]
    fn inline_arguments_unquote_as_sdssplitargs() {
        let a = |s: &[u8]| split_args(s).unwrap();
        assert_eq!(
            a(b"set k 'a\\x41'"),
            vec![b"set".to_vec(), b"k".to_vec(), b"a\\x41".to_vec()]
        );
        assert_eq!(
            a(b"set k \"a\\x41\\n\""),
            vec![b"set".to_vec(), b"k".to_vec(), b"aA\n".to_vec()]
        );
        assert_eq!(a(b"  a   b  "), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(a(b"'it\\'s'"), vec![b"it's".to_vec()]);
        assert_eq!(a(b"\"\""), vec![Vec::<u8>::new()]);
        assert!(split_args(b"'abc").is_none());
    }

    #[test]
    fn garbage_bytes_never_panic() {
        let mut x: u64 = 0x1234_5678;
        for _ in 0..2000 {
            let len = (x % 64) as usize;
            let mut b = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push(b"*$\r\n0123456789-+:ab \"'\\x"[(x % 24) as usize]);
            }
            let mut d = Decoder::default();
            let mut pos = 0;
            while let Ok(Some(r)) = d.decode(&b[pos..], true) {
                pos += r.consumed;
                assert!(pos <= b.len());
            }
        }
    }
}
