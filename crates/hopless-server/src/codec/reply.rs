//! Replies out: a writer that appends RESP to a connection's output buffer, in RESP2 or (after
//! `HELLO 3`) RESP3. Commands write their replies straight into it: no intermediate values.

use std::sync::Arc;

use bytes::BytesMut;

use crate::error_stats::ErrorStats;

/// The protocol a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Proto {
    #[default]
    Resp2,
    Resp3,
}

/// A connection's output buffer.
#[derive(Debug, Default)]
pub struct Reply {
    pub buf: BytesMut,
    pub proto: Proto,
    /// Where error replies are counted (INFO errorstats): every error a connection sends passes here.
    pub errors: Option<Arc<ErrorStats>>,
}

impl Reply {
    pub fn new(proto: Proto) -> Self {
        Reply {
            buf: BytesMut::with_capacity(16 * 1024),
            proto,
            errors: None,
        }
    }

    pub fn resp3(&self) -> bool {
        self.proto == Proto::Resp3
    }

    /// A type byte, a number, CRLF: every integer reply and bulk, array and map header (itoa, not
    /// `fmt`, which costs more than the rest of a short reply).
    fn header(&mut self, t: u8, n: i64) {
        let mut digits = itoa::Buffer::new();
        let d = digits.format(n).as_bytes();
        self.buf.reserve(d.len() + 3);
        self.buf.extend_from_slice(&[t]);
        self.buf.extend_from_slice(d);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A simple string (must not hold CR or LF).
    pub fn simple(&mut self, s: &str) {
        self.buf.extend_from_slice(b"+");
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error; `msg` starts with its code (`ERR ...`). CR and LF become spaces, as Redis does.
    pub fn error(&mut self, msg: &str) {
        if let Some(e) = &self.errors {
            e.count(msg.as_bytes());
        }
        self.buf.extend_from_slice(b"-");
        self.buf.extend(
            msg.bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, i: i64) {
        self.header(b':', i);
    }

    pub fn bulk(&mut self, b: &[u8]) {
        self.header(b'$', b.len() as i64);
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// The null bulk string (RESP3: null).
    pub fn null(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3() { b"_\r\n" } else { b"$-1\r\n" });
    }

    /// The null array (RESP3: null).
    pub fn null_array(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3() { b"_\r\n" } else { b"*-1\r\n" });
    }

    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// A push frame of `n` elements (RESP3 only: pub/sub messages).
    pub fn push(&mut self, n: usize) {
        self.header(b'>', n as i64);
    }

    /// A map of `n` pairs (RESP2: a flat array of 2n).
    pub fn map(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'%', n as i64);
        } else {
            self.header(b'*', 2 * n as i64);
        }
    }

    /// A set (RESP2: an array).
    pub fn set(&mut self, n: usize) {
        self.header(if self.resp3() { b'~' } else { b'*' }, n as i64);
    }

    /// A double (RESP2: a bulk string).
    pub fn double(&mut self, d: f64) {
        let s = format_double(d);
        if self.resp3() {
            self.buf.extend_from_slice(b",");
            self.buf.extend_from_slice(s.as_bytes());
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s.as_bytes());
        }
    }

    /// Text for a person (INFO, CLIENT LIST): RESP3 verbatim `txt`, RESP2 a bulk string.
    pub fn verbatim(&mut self, text: &[u8]) {
        self.verbatim_as(b"txt", text);
    }

    /// RESP3 verbatim text of a three-letter `format` (`txt`, `mkd`); RESP2 a bulk string.
    pub fn verbatim_as(&mut self, format: &[u8], text: &[u8]) {
        if self.resp3() {
            self.header(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(format.get(..3).unwrap_or(b"txt"));
            self.buf.extend_from_slice(b":");
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// Bulk strings, as an array.
    pub fn bulks<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a [u8]>) {
        self.array(items.len());
        for i in items {
            self.bulk(i);
        }
    }
}

/// A double as replies print it (`inf`, `-inf`, `nan`; otherwise the shortest text that reads back as
/// the same `f64`, where Redis prints `%.17g`: the same number, sometimes written differently).
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d.is_infinite() {
        if d > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{d}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_and_resp3_shapes() {
        let mut r = Reply::new(Proto::Resp2);
        r.null();
        r.map(1);
        r.int(1);
        r.double(1.5);
        r.error("ERR a\r\nb");
        assert_eq!(&r.buf[..], b"$-1\r\n*2\r\n:1\r\n$3\r\n1.5\r\n-ERR a  b\r\n");
        let mut r = Reply::new(Proto::Resp3);
        r.null();
        r.map(1);
        r.int(1);
        r.double(1.5);
        r.verbatim(b"hi");
        assert_eq!(&r.buf[..], b"_\r\n%1\r\n:1\r\n,1.5\r\n=6\r\ntxt:hi\r\n");
    }

    #[test]
    fn integers_at_the_ends_of_the_range() {
        let mut r = Reply::new(Proto::Resp2);
        for i in [0, -1, 10, i64::MIN, i64::MAX] {
            r.int(i);
        }
        r.array(0);
        r.bulk(b"");
        let want = format!(
            ":0\r\n:-1\r\n:10\r\n:{}\r\n:{}\r\n*0\r\n$0\r\n\r\n",
            i64::MIN,
            i64::MAX
        );
        assert_eq!(&r.buf[..], want.as_bytes());
    }
}
