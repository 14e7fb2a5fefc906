//! Fuzzes the RESP codec of hopless-server (no network: the codec does no I/O).
//!
//! - Requests: the input, as a client's byte stream, is decoded once whole and once cut into chunks (cut
//!   points drawn from the input's first bytes), the way a connection feeds the decoder; both must give
//!   the same requests and the same protocol error, every `consumed` within the buffer, and nothing may
//!   panic or allocate by a length the input claims.
//! - Frames: `Frame::check` and `Frame::parse` must agree (same length, or both incomplete, or both a
//!   protocol error), and a parsed frame must encode to bytes that parse back to the same frame.

#![no_main]

use hopless_server::codec::{Args, Decoder, Frame, FrameError};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
enum Outcome {
    Requests(Vec<Vec<Vec<u8>>>),
    Error(String, Vec<Vec<Vec<u8>>>),
}

/// Decodes `chunks` fed one after another into a growing buffer, as a connection does.
fn decode(chunks: &[&[u8]], authenticated: bool) -> Outcome {
    let mut d = Decoder::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    for c in chunks {
        buf.extend_from_slice(c);
        loop {
            match d.decode(&buf, authenticated) {
                Ok(Some(r)) => {
                    assert!(r.consumed > 0 && r.consumed <= buf.len());
                    let args = match r.args {
                        Args::Ranges(rs) => rs
                            .into_iter()
                            .map(|x| {
                                assert!(x.end <= r.consumed);
                                buf[x].to_vec()
                            })
                            .collect(),
                        Args::Owned(o) => o,
                    };
                    out.push(args);
                    buf.drain(..r.consumed);
                }
                Ok(None) => break,
                Err(e) => return Outcome::Error(e.to_string(), out),
            }
        }
    }
    Outcome::Requests(out)
}

fn frames(data: &[u8]) {
    let checked = Frame::check(data);
    let parsed = Frame::parse(data);
    match (&checked, &parsed) {
        (Ok(n), Ok((f, m))) => {
            assert_eq!(n, m);
            let mut enc = Vec::new();
            f.encode(&mut enc);
            let (back, len) = Frame::parse(&enc).expect("an encoded frame parses");
            assert_eq!(len, enc.len());
            // NaN is never equal to itself; compare the encodings instead.
            let mut again = Vec::new();
            back.encode(&mut again);
            assert_eq!(enc, again);
        }
        (Err(FrameError::Incomplete), Err(FrameError::Incomplete)) => {}
        (Err(FrameError::Protocol(_)), Err(FrameError::Protocol(_))) => {}
        _ => panic!("check and parse disagree: {checked:?} vs {parsed:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let (cuts, stream) = data.split_at(data.len().min(4));
    let authenticated = cuts.first().is_none_or(|c| c & 1 == 0);
    let whole = decode(&[stream], authenticated);
    let mut chunks = Vec::new();
    let mut rest = stream;
    for &c in cuts {
        let at = (c as usize).min(rest.len());
        let (a, b) = rest.split_at(at);
        chunks.push(a);
        rest = b;
    }
    chunks.push(rest);
    assert_eq!(whole, decode(&chunks, authenticated));
    frames(stream);
});
