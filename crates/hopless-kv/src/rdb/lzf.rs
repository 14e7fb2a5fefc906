//! LZF, the compression RDB applies to long strings (liblzf 3.6 as Redis carries it in `lzf_c.c` and
//! `lzf_d.c`).
//!
//! The stream is a sequence of runs:
//!
//! | first byte | then | means |
//! |---|---|---|
//! | `000LLLLL` | `L+1` bytes | a literal run of 1 to 32 bytes |
//! | `LLLooooo` (`L` 1 to 6) | `oooooooo` | copy `L+2` bytes from `o+1` bytes back (1 to 8192) |
//! | `111ooooo` | `LLLLLLLL oooooooo` | copy `L+9` bytes from `o+1` bytes back |
//!
//! [`compress`] is liblzf's compressor with Redis's settings (`HLOG` 16, `VERY_FAST`): the same hash,
//! the same greedy matching, the same output-budget checks. Its table starts empty on every call, where
//! liblzf's lives uninitialised on the stack and may offer stale candidates from an earlier call, so
//! the output is Redis's for the same input whenever Redis's table held no such stale match (both are
//! valid streams either way). [`decompress`] is `lzf_decompress` with its input checks on, written over
//! slices: a malformed stream is `None`, never a read out of bounds.

use std::cell::Cell;

/// log2 of the hash table's size.
const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
/// The longest literal run.
const MAX_LIT: usize = 1 << 5;
/// How far back a copy reaches.
const MAX_OFF: usize = 1 << 13;
/// The longest copy.
const MAX_REF: usize = (1 << 8) + (1 << 3);
/// The most output one input byte can stand for: a 3-byte long copy of [`MAX_REF`] bytes.
const MAX_EXPANSION: usize = MAX_REF / 3;

/// The compressor's hash table, kept per thread between calls. A slot holds `base + position` of the
/// last input position whose three bytes hashed there; a value below `base` was written by an earlier
/// call and reads as empty, so a call sees a table as empty as a fresh one without clearing 512 KiB.
struct Table {
    slots: Box<[usize]>,
    base: usize,
}

thread_local! {
    static TABLE: Cell<Option<Box<Table>>> = const { Cell::new(None) };
}

/// Compresses `input` and appends the stream to `out`, as Redis's `rdbSaveLzfStringObject` does: only
/// when it saves at least four bytes. It runs liblzf with an output budget of `input.len() - 4` bytes
/// and gives up (returns false, `out` unchanged) when the stream would not fit, or when the input is 4
/// bytes or shorter. Redis only tries this for strings longer than 20 bytes, and only with
/// `rdbcompression yes`; those choices are the caller's.
pub fn compress(input: &[u8], out: &mut Vec<u8>) -> bool {
    if input.len() <= 4 {
        return false;
    }
    let budget = input.len() - 4;
    let start = out.len();
    out.resize(start + budget, 0);
    let mut table = TABLE.with(Cell::take).unwrap_or_else(|| {
        Box::new(Table {
            slots: vec![0; HSIZE].into_boxed_slice(),
            base: 1,
        })
    });
    let written = compress_into(input, &mut out[start..], &mut table);
    match table.base.checked_add(input.len() + 1) {
        Some(b) => table.base = b,
        None => {
            table.slots.fill(0);
            table.base = 1;
        }
    }
    TABLE.with(|t| t.set(Some(table)));
    match written {
        Some(n) => {
            out.truncate(start + n);
            true
        }
        None => {
            out.truncate(start);
            false
        }
    }
}

/// liblzf's hash of the three bytes at a position, kept rolling in `h` (`FRST`, `NEXT`, `IDX`).
#[inline(always)]
fn first(ip: &[u8], i: usize) -> u32 {
    ((ip[i] as u32) << 8) | ip[i + 1] as u32
}

#[inline(always)]
fn next(h: u32, ip: &[u8], i: usize) -> u32 {
    (h << 8) | ip[i + 2] as u32
}

#[inline(always)]
fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

/// `lzf_compress` into `out` (its whole length is the budget): the stream's length, or `None` when it
/// does not fit. Positions are indices; `op` may pass `out.len()` by one while a literal run is
/// reserved, as liblzf's pointer does, and every write is behind the same checks liblzf makes.
fn compress_into(input: &[u8], out: &mut [u8], table: &mut Table) -> Option<usize> {
    let n = input.len();
    let out_end = out.len();
    let base = table.base;
    let htab = &mut table.slots;
    if n == 0 || out_end == 0 {
        return None;
    }
    let mut ip = 0usize;
    // The literal run being built: its control byte is reserved at `op - lit - 1`.
    let mut lit = 0usize;
    let mut op = 1usize;
    let mut hval = if n >= 2 { first(input, 0) } else { 0 };
    while ip + 2 < n {
        hval = next(hval, input, ip);
        let slot = idx(hval);
        let stored = htab[slot];
        htab[slot] = base + ip;
        // A candidate from this call (slots below `base` are an earlier call's), not at position 0
        // (liblzf's `ref > in_data`), within reach, whose three bytes match.
        let r = stored.wrapping_sub(base);
        let hit = stored >= base
            && r > 0
            && r < ip
            && ip - r - 1 < MAX_OFF
            && input[r + 2] == input[ip + 2]
            && input[r..r + 2] == input[ip..ip + 2];
        if hit {
            let off = ip - r - 1;
            let mut len = 2usize;
            let maxlen = (n - ip - len).min(MAX_REF);
            if op + 3 + 1 >= out_end && op - usize::from(lit == 0) + 3 + 1 >= out_end {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop the run
            op -= usize::from(lit == 0); // undo it if empty
            'extend: {
                if maxlen > 16 {
                    // liblzf's unrolled sixteen steps: they may end one or two past `maxlen`.
                    for _ in 0..16 {
                        len += 1;
                        if input[r + len] != input[ip + len] {
                            break 'extend;
                        }
                    }
                }
                loop {
                    len += 1;
                    if !(len < maxlen && input[r + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2; // the stream stores the length less 2
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1; // start a run
            ip += len + 1;
            if ip + 2 >= n {
                break;
            }
            // VERY_FAST: hash the last two positions of the match, then go on after it.
            ip -= 2;
            hval = first(input, ip);
            hval = next(hval, input, ip);
            htab[idx(hval)] = base + ip;
            ip += 1;
            hval = next(hval, input, ip);
            htab[idx(hval)] = base + ip;
            ip += 1;
        } else {
            if op >= out_end {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    // At most three bytes can be missing here.
    if op + 3 > out_end {
        return None;
    }
    while ip < n {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1); // end the run
    op -= usize::from(lit == 0);
    Some(op)
}

/// Decompresses an LZF stream that must expand to exactly `expected_len` bytes (the length RDB stores
/// beside it). `None` on anything malformed: a run past the end of the input, a copy from before the
/// start of the output, output past `expected_len`, or less of it. The output grows with what the
/// stream actually produces, so a claimed length the input cannot produce (more than 88 output bytes
/// per input byte) is refused before anything is allocated for it.
pub fn decompress(input: &[u8], expected_len: usize) -> Option<Vec<u8>> {
    if expected_len > input.len().saturating_mul(MAX_EXPANSION) {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(expected_len.min(input.len().saturating_mul(4) + 64));
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 1 << 5 {
            let run = ctrl + 1;
            if out.len() + run > expected_len {
                return None;
            }
            out.extend_from_slice(input.get(ip..ip + run)?);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            let mut back = ((ctrl & 0x1f) << 8) + 1;
            if len == 7 {
                len += *input.get(ip)? as usize;
                ip += 1;
            }
            back += *input.get(ip)? as usize;
            ip += 1;
            let count = len + 2;
            if out.len() + count > expected_len || back > out.len() {
                return None;
            }
            let from = out.len() - back;
            if back >= count {
                out.extend_from_within(from..from + count);
            } else {
                // Overlapping: each byte may be one this copy wrote.
                for i in from..from + count {
                    let b = out[i];
                    out.push(b);
                }
            }
        }
    }
    (out.len() == expected_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    fn round_trip(data: &[u8]) -> Option<usize> {
        let mut out = b"prefix".to_vec();
        if !compress(data, &mut out) {
            assert_eq!(out, b"prefix");
            return None;
        }
        assert_eq!(&out[..6], b"prefix");
        let c = &out[6..];
        assert!(c.len() + 4 <= data.len());
        assert_eq!(decompress(c, data.len()).as_deref(), Some(data));
        Some(c.len())
    }

    #[test]
    fn redis_compressed_a200() {
        // `DUMP a200` after `SET a200 <200 a's>` on redis-server 7.0.15: 0xC3, clen 9, len 200, stream.
        let stream = b"\x01aa\xe0\xbb\x00\x01aa";
        assert_eq!(decompress(stream, 200).unwrap(), vec![b'a'; 200]);
        assert_eq!(decompress(stream, 199), None);
        assert_eq!(decompress(stream, 201), None);
        let mut out = Vec::new();
        assert!(compress(&[b'a'; 200], &mut out));
        assert_eq!(out, stream);
    }

    #[test]
    fn round_trips() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        // Incompressible: refused.
        let random: Vec<u8> = (0..5000).map(|_| xorshift(&mut seed) as u8).collect();
        assert_eq!(round_trip(&random), None);
        // Repetitive and mixed, all lengths around the runs' edges.
        for len in (0..300).chain([1000, 4096, 8192, 8193, 70_000]) {
            let rep: Vec<u8> = (0..len).map(|i| b"abcabcabd"[i % 9]).collect();
            let zeros = vec![0u8; len];
            let text: Vec<u8> = (0..len)
                .map(|i| {
                    if xorshift(&mut seed) % 4 == 0 {
                        b'x'
                    } else {
                        b"hello world "[i % 12]
                    }
                })
                .collect();
            for d in [&rep, &zeros, &text] {
                round_trip(d);
            }
            if len > 30 {
                assert!(
                    round_trip(&rep).is_some() && round_trip(&zeros).is_some(),
                    "len {len}"
                );
            }
        }
        // A small alphabet: matches of every length and offset.
        for _ in 0..200 {
            let len = (xorshift(&mut seed) % 20_000) as usize;
            let d: Vec<u8> = (0..len)
                .map(|_| b"ab"[(xorshift(&mut seed) % 2) as usize])
                .collect();
            round_trip(&d);
        }
        // Far-apart repeats beyond the 8 KiB window.
        let block: Vec<u8> = (0..10_000).map(|_| xorshift(&mut seed) as u8).collect();
        let twice = [&block[..], &block[..]].concat();
        assert!(round_trip(&twice).is_none());
        let near = [&block[..4000], &block[..4000]].concat();
        assert!(round_trip(&near).unwrap() < 4200);
    }

    #[test]
    fn same_output_whatever_came_before() {
        let d: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8 ^ (i / 7) as u8).collect();
        let mut a = Vec::new();
        assert!(compress(&d, &mut a));
        let mut junk = Vec::new();
        compress(&d[..1500], &mut junk);
        compress(&[7u8; 9000], &mut junk);
        let mut b = Vec::new();
        assert!(compress(&d, &mut b));
        assert_eq!(a, b);
    }

    #[test]
    fn short_inputs_are_refused() {
        for len in 0..=4 {
            let mut out = vec![1];
            assert!(!compress(&vec![0u8; len], &mut out));
            assert_eq!(out, [1]);
        }
        // Redis never tries below 21 bytes; the rule itself still holds. liblzf's budget checks are
        // conservative: 12 bytes would fit in 8, but it wants room for 3 more before its tail.
        let mut out = Vec::new();
        assert!(!compress(&[b'z'; 12], &mut out));
        assert!(compress(&[b'z'; 16], &mut out));
        assert_eq!(decompress(&out, 16).unwrap(), [b'z'; 16]);
    }

    #[test]
    fn malformed_streams() {
        assert_eq!(decompress(b"", 0), Some(Vec::new()));
        assert_eq!(decompress(b"", 1), None);
        // A literal run past the input's end.
        assert_eq!(decompress(b"\x03ab", 4), None);
        // A copy before the output's start.
        assert_eq!(decompress(b"\x00a\x20\x01", 4), None);
        // A copy with its offset byte missing, and a long copy with its length byte missing.
        assert_eq!(decompress(b"\x00a\x20", 3), None);
        assert_eq!(decompress(b"\x00a\xe0", 3), None);
        assert_eq!(decompress(b"\x00a\xe0\x00", 3), None);
        // Output past the expected length.
        assert_eq!(decompress(b"\x01ab", 1), None);
        // A claimed length the input cannot produce: refused before allocating.
        assert_eq!(decompress(b"\x00a", usize::MAX), None);
        assert_eq!(decompress(b"\x00a\xe0\xff\x00", 1 << 40), None);
    }

    #[test]
    fn adversarial_streams_never_panic() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut good = Vec::new();
        let text: Vec<u8> = (0..2000)
            .map(|i| b"the quick brown fox "[i % 20] ^ (i / 300) as u8)
            .collect();
        assert!(compress(&text, &mut good));
        for cut in 0..good.len() {
            let _ = decompress(&good[..cut], text.len());
        }
        for _ in 0..3000 {
            let mut bad = good.clone();
            for _ in 0..1 + xorshift(&mut seed) % 4 {
                let i = (xorshift(&mut seed) as usize) % bad.len();
                bad[i] ^= 1 << (xorshift(&mut seed) % 8);
            }
            let want = text.len() + (xorshift(&mut seed) % 3) as usize - 1;
            if let Some(v) = decompress(&bad, want) {
                assert_eq!(v.len(), want);
            }
        }
        for _ in 0..3000 {
            let len = (xorshift(&mut seed) % 64) as usize;
            let junk: Vec<u8> = (0..len).map(|_| xorshift(&mut seed) as u8).collect();
            let _ = decompress(&junk, (xorshift(&mut seed) % 3000) as usize);
        }
    }
}
