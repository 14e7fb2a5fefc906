//! Any RESP2 or RESP3 value, as mini-redis's `Frame`: [`Frame::check`] tells whether a whole frame is in
//! the buffer without allocating (`Incomplete` apart from protocol errors), [`Frame::parse`] then builds
//! it, [`Frame::encode`] writes it. The server writes its replies with `Reply` (no
//! intermediate values); frames are for clients of the server (tests, load generators) and for fuzzing.

use core::fmt;

use bytes::Bytes;

/// Nesting deeper than this is refused (a hostile `*1\r\n*1\r\n...` must not overflow the stack).
const MAX_DEPTH: usize = 128;

#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Simple(String),
    Error(String),
    Integer(i64),
    Bulk(Bytes),
    /// RESP2's `$-1`/`*-1`, RESP3's `_`.
    Null,
    Array(Vec<Frame>),
    /// RESP3.
    Map(Vec<(Frame, Frame)>),
    Set(Vec<Frame>),
    Double(f64),
    Boolean(bool),
    BigNumber(String),
    /// RESP3 verbatim string: format (3 bytes) and text.
    Verbatim(String, Bytes),
    Push(Vec<Frame>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// More bytes are needed.
    Incomplete,
    /// Not RESP.
    Protocol(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Incomplete => f.write_str("incomplete frame"),
            FrameError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl std::error::Error for FrameError {}

fn proto<T>(m: &str) -> Result<T, FrameError> {
    Err(FrameError::Protocol(m.to_string()))
}

/// A read position in a byte slice.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Result<u8, FrameError> {
        let b = *self.buf.get(self.pos).ok_or(FrameError::Incomplete)?;
        self.pos += 1;
        Ok(b)
    }

    /// The bytes up to the next CRLF, which is consumed.
    fn line(&mut self) -> Result<&'a [u8], FrameError> {
        let rest = &self.buf[self.pos..];
        let Some(i) = rest.windows(2).position(|w| w == b"\r\n") else {
            return Err(FrameError::Incomplete);
        };
        self.pos += i + 2;
        Ok(&rest[..i])
    }

    fn int(&mut self) -> Result<i64, FrameError> {
        let l = self.line()?;
        let s = core::str::from_utf8(l).or_else(|_| proto("integer is not ASCII"))?;
        s.parse::<i64>().or_else(|_| proto("invalid integer"))
    }

    fn len(&mut self) -> Result<Option<usize>, FrameError> {
        match self.int()? {
            -1 => Ok(None),
            n if n < 0 => proto("invalid length"),
            n => usize::try_from(n).map(Some).or_else(|_| proto("invalid length")),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        let end = self.pos.checked_add(n).ok_or(FrameError::Incomplete)?;
        if self.buf.len() < end.checked_add(2).ok_or(FrameError::Incomplete)? {
            return Err(FrameError::Incomplete);
        }
        if &self.buf[end..end + 2] != b"\r\n" {
            return proto("bulk data not followed by CRLF");
        }
        let b = &self.buf[self.pos..end];
        self.pos = end + 2;
        Ok(b)
    }
}

impl Frame {
    /// Whether `buf` starts with a whole frame: its length if so.
    pub fn check(buf: &[u8]) -> Result<usize, FrameError> {
        let mut c = Cursor { buf, pos: 0 };
        walk(&mut c, 0)?;
        Ok(c.pos)
    }

    /// Parses the frame at the front of `buf` (call after [`Frame::check`]): the frame and its length.
    pub fn parse(buf: &[u8]) -> Result<(Frame, usize), FrameError> {
        let mut c = Cursor { buf, pos: 0 };
        let f = parse(&mut c, 0)?;
        Ok((f, c.pos))
    }

    /// Writes the frame (RESP3 types as RESP3).
    pub fn encode(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        match self {
            Frame::Simple(s) => {
                let _ = write!(out, "+{s}\r\n");
            }
            // A message that holds CR or LF cannot be a simple error: it goes out as a blob error.
            Frame::Error(s) if s.contains(['\r', '\n']) => {
                let _ = write!(out, "!{}\r\n{s}\r\n", s.len());
            }
            Frame::Error(s) => {
                let _ = write!(out, "-{s}\r\n");
            }
            Frame::Integer(i) => {
                let _ = write!(out, ":{i}\r\n");
            }
            Frame::Bulk(b) => {
                let _ = write!(out, "${}\r\n", b.len());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Null => out.extend_from_slice(b"_\r\n"),
            Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => {
                let t = match self {
                    Frame::Array(_) => '*',
                    Frame::Set(_) => '~',
                    _ => '>',
                };
                let _ = write!(out, "{t}{}\r\n", v.len());
                v.iter().for_each(|f| f.encode(out));
            }
            Frame::Map(m) => {
                let _ = write!(out, "%{}\r\n", m.len());
                for (k, v) in m {
                    k.encode(out);
                    v.encode(out);
                }
            }
            Frame::Double(d) => {
                let _ = write!(out, ",{}\r\n", super::reply::format_double(*d));
            }
            Frame::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Frame::BigNumber(n) => {
                let _ = write!(out, "({n}\r\n");
            }
            Frame::Verbatim(fmt, b) => {
                let _ = write!(out, "={}\r\n{fmt}:", b.len() + 4);
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// The bytes of a bulk, simple or verbatim string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Frame::Bulk(b) | Frame::Verbatim(_, b) => Some(b),
            Frame::Simple(s) => Some(s.as_bytes()),
            _ => None,
        }
    }
}

/// Walks over one frame without building it (the grammar [`parse`] follows).
fn walk(c: &mut Cursor<'_>, depth: usize) -> Result<(), FrameError> {
    if depth > MAX_DEPTH {
        return proto("nesting too deep");
    }
    let t = c.byte()?;
    match t {
        b'+' | b'-' | b'(' => {
            c.line()?;
        }
        b':' => {
            c.int()?;
        }
        b',' => {
            let l = c.line()?;
            parse_double(l)?;
        }
        b'#' => {
            let l = c.line()?;
            if l != b"t" && l != b"f" {
                return proto("invalid boolean");
            }
        }
        b'_' => {
            if !c.line()?.is_empty() {
                return proto("invalid null");
            }
        }
        b'$' | b'=' | b'!' => {
            if let Some(n) = c.len()? {
                let b = c.take(n)?;
                if t == b'=' && (b.len() < 4 || b[3] != b':' || !b[..3].is_ascii()) {
                    return proto("invalid verbatim string");
                }
            }
        }
        b'*' | b'~' | b'>' | b'%' => {
            if let Some(n) = c.len()? {
                let n = if t == b'%' {
                    n.checked_mul(2).ok_or(FrameError::Incomplete)?
                } else {
                    n
                };
                for _ in 0..n {
                    walk(c, depth + 1)?;
                }
            }
        }
        other => return proto(&format!("unknown type byte {other:#04x}")),
    }
    Ok(())
}

fn parse_double(l: &[u8]) -> Result<f64, FrameError> {
    let s = core::str::from_utf8(l).or_else(|_| proto("invalid double"))?;
    match s {
        "inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        "nan" => Ok(f64::NAN),
        s => s.parse().or_else(|_| proto("invalid double")),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn parse(c: &mut Cursor<'_>, depth: usize) -> Result<Frame, FrameError> {
    if depth > MAX_DEPTH {
        return proto("nesting too deep");
    }
    let t = c.byte()?;
    Ok(match t {
        b'+' => Frame::Simple(text(c.line()?)),
        b'-' => Frame::Error(text(c.line()?)),
        b'(' => Frame::BigNumber(text(c.line()?)),
        b':' => Frame::Integer(c.int()?),
        b',' => Frame::Double(parse_double(c.line()?)?),
        b'#' => match c.line()? {
            b"t" => Frame::Boolean(true),
            b"f" => Frame::Boolean(false),
            _ => return proto("invalid boolean"),
        },
        b'_' => {
            if !c.line()?.is_empty() {
                return proto("invalid null");
            }
            Frame::Null
        }
        b'$' | b'!' | b'=' => match c.len()? {
            None => Frame::Null,
            Some(n) => {
                let b = c.take(n)?;
                match t {
                    b'$' => Frame::Bulk(Bytes::copy_from_slice(b)),
                    b'!' => Frame::Error(text(b)),
                    _ => {
                        // The format is three ASCII characters (`txt`, `mkd`), then a colon.
                        if b.len() < 4 || b[3] != b':' || !b[..3].is_ascii() {
                            return proto("invalid verbatim string");
                        }
                        Frame::Verbatim(text(&b[..3]), Bytes::copy_from_slice(&b[4..]))
                    }
                }
            }
        },
        b'*' | b'~' | b'>' => match c.len()? {
            None => Frame::Null,
            Some(n) => {
                let mut v = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    v.push(parse(c, depth + 1)?);
                }
                match t {
                    b'*' => Frame::Array(v),
                    b'~' => Frame::Set(v),
                    _ => Frame::Push(v),
                }
            }
        },
        b'%' => match c.len()? {
            None => Frame::Null,
            Some(n) => {
                let mut m = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let k = parse(c, depth + 1)?;
                    let v = parse(c, depth + 1)?;
                    m.push((k, v));
                }
                Frame::Map(m)
            }
        },
        other => return proto(&format!("unknown type byte {other:#04x}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_then_parse_round_trips() {
        let frames = vec![
            Frame::Simple("OK".into()),
            Frame::Error("ERR x".into()),
            Frame::Integer(-42),
            Frame::Bulk(Bytes::from_static(b"a\r\nb")),
            Frame::Null,
            Frame::Array(vec![Frame::Integer(1), Frame::Bulk(Bytes::new())]),
            Frame::Map(vec![(Frame::Simple("k".into()), Frame::Boolean(true))]),
            Frame::Set(vec![Frame::Double(1.5)]),
            Frame::Verbatim("txt".into(), Bytes::from_static(b"hello")),
            Frame::BigNumber("123456789012345678901234567890".into()),
        ];
        for f in frames {
            let mut b = Vec::new();
            f.encode(&mut b);
            assert_eq!(Frame::check(&b), Ok(b.len()));
            assert_eq!(Frame::parse(&b), Ok((f.clone(), b.len())));
            for cut in 0..b.len() {
                assert_eq!(
                    Frame::check(&b[..cut]),
                    Err(FrameError::Incomplete),
                    "{f:?} cut {cut}"
                );
            }
        }
    }

    #[test]
    fn blob_errors_with_line_breaks_and_odd_verbatim_formats_round_trip_or_are_refused() {
        // A blob error holding CRLF stays a blob error, never a simple one (a case from the fuzz target).
        let blob = b"!7\r\nERR a\r\n\r\n";
        let (f, n) = Frame::parse(blob).unwrap();
        assert_eq!((f.clone(), n), (Frame::Error("ERR a\r\n".into()), blob.len()));
        let mut enc = Vec::new();
        f.encode(&mut enc);
        assert_eq!(Frame::parse(&enc), Ok((f, enc.len())));
        // A verbatim format must be three ASCII bytes (a lossy text would change its length).
        let odd = b"=6\r\n\xffab:xy\r\n";
        assert!(matches!(Frame::check(odd), Err(FrameError::Protocol(_))));
        assert!(matches!(Frame::parse(odd), Err(FrameError::Protocol(_))));
    }

    #[test]
    fn bad_frames_are_protocol_errors_not_incomplete() {
        for b in [
            &b"?x\r\n"[..],
            b":abc\r\n",
            b"$3\r\nabcXY",
            b"#x\r\n",
            b"$-5\r\n",
            b"*-2\r\n",
        ] {
            assert!(matches!(Frame::check(b), Err(FrameError::Protocol(_))), "{b:?}");
        }
        let deep = b"*1\r\n".repeat(MAX_DEPTH + 5);
        assert!(matches!(Frame::check(&deep), Err(FrameError::Protocol(_))));
        assert_eq!(Frame::check(b"*1000000\r\n"), Err(FrameError::Incomplete));
        assert_eq!(Frame::check(b"$99999999999\r\n"), Err(FrameError::Incomplete));
    }
}
