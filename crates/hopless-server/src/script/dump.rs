//! FUNCTION DUMP's payload, as Redis 7.0 writes and reads it: for each library the RDB opcode
//! `FUNCTION2` (245) and its code as an RDB string, then the RDB version (10, two bytes little-endian)
//! and the CRC64 (Jones, reflected, as Redis's `crc64`) of everything before it, little-endian.
//! Written here without compression; read with any of the RDB string encodings Redis writes (plain,
//! LZF-compressed, integers).

const FUNCTION2: u8 = 245;
const RDB_VERSION: u16 = 10;
const WRONG: &str = "ERR DUMP payload version or checksum are wrong";
const BAD: &str = "ERR payload is not a valid functions payload";

/// Redis's CRC64: polynomial 0xad93d23594c935a9, reflected, initial value 0, no final xor.
pub fn crc64(data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5; // 0xad93d23594c935a9, bit-reversed
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ POLY } else { crc >> 1 };
        }
    }
    crc
}

/// RDB's length encoding.
fn put_len(out: &mut Vec<u8>, len: usize) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u32::MAX as usize {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// The payload of libraries with these codes.
pub fn payload<'a>(codes: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(FUNCTION2);
        put_len(&mut out, code.len());
        out.extend_from_slice(code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

struct Reader<'a> {
    s: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let b = self.s.get(self.at..self.at + n).ok_or(BAD)?;
        self.at += n;
        Ok(b)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// A length, or the special encoding (`Err(kind)` in the `Ok`) an RDB string may use instead.
    fn len(&mut self) -> Result<Result<usize, u8>, String> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Ok(usize::from(b & 0x3f)),
            1 => Ok((usize::from(b & 0x3f) << 8) | usize::from(self.byte()?)),
            2 if b == 0x80 => Ok(u32::from_be_bytes(self.take(4)?.try_into().map_err(|_| BAD)?) as usize),
            2 if b == 0x81 => Ok(u64::from_be_bytes(self.take(8)?.try_into().map_err(|_| BAD)?) as usize),
            3 => Err(b & 0x3f),
            _ => return Err(BAD.into()),
        })
    }

    fn plain_len(&mut self) -> Result<usize, String> {
        self.len()?.map_err(|_| BAD.to_string())
    }

    /// An RDB string in any of its encodings.
    fn string(&mut self) -> Result<Vec<u8>, String> {
        match self.len()? {
            Ok(n) => Ok(self.take(n)?.to_vec()),
            Err(0) => Ok((self.byte()? as i8).to_string().into_bytes()),
            Err(1) => Ok(i16::from_le_bytes(self.take(2)?.try_into().map_err(|_| BAD)?)
                .to_string()
                .into_bytes()),
            Err(2) => Ok(i32::from_le_bytes(self.take(4)?.try_into().map_err(|_| BAD)?)
                .to_string()
                .into_bytes()),
            Err(3) => {
                let compressed = self.plain_len()?;
                let len = self.plain_len()?;
                lzf_decompress(self.take(compressed)?, len).ok_or_else(|| BAD.to_string())
            }
            Err(_) => Err(BAD.into()),
        }
    }
}

/// The library codes of a payload, or Redis's error.
pub fn libraries(payload: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    if payload.len() < 10 {
        return Err(WRONG.into());
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..10].try_into().map_err(|_| WRONG)?);
    if version > RDB_VERSION || crc64(&payload[..payload.len() - 8]) != crc {
        return Err(WRONG.into());
    }
    let mut r = Reader { s: body, at: 0 };
    let mut codes = Vec::new();
    while r.at < body.len() {
        if r.byte()? != FUNCTION2 {
            return Err("ERR given type is not a function".into());
        }
        codes.push(r.string()?);
    }
    Ok(codes)
}

/// LZF decompression (liblzf's format, which Redis's RDB strings use): `None` for a corrupt input.
fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let run = input.get(i..i + ctrl + 1)?;
            out.extend_from_slice(run);
            i += ctrl + 1;
        } else {
            // A back reference.
            let mut n = ctrl >> 5;
            if n == 7 {
                n += usize::from(*input.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            let from = out.len().checked_sub(back)?;
            for k in 0..n + 2 {
                let b = out[from + k];
                out.push(b);
            }
        }
        if out.len() > len {
            return None;
        }
    }
    (out.len() == len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_crc64() {
        // Redis's own test vector (crc64.c).
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn a_payload_reads_back() {
        let p = payload([&b"#!lua name=a\n"[..], b"#!lua name=b\n"].into_iter());
        assert_eq!(
            libraries(&p).unwrap(),
            vec![b"#!lua name=a\n".to_vec(), b"#!lua name=b\n".to_vec()]
        );
        let mut bad = p.clone();
        bad[3] ^= 1;
        assert_eq!(libraries(&bad), Err(WRONG.to_string()));
    }

    #[test]
    fn lzf_reads_literals_and_back_references() {
        // "abcabcabc": the literal "abc", then a back reference of 6 bytes 3 back.
        assert_eq!(
            lzf_decompress(&[2, b'a', b'b', b'c', 0x80, 2], 9).unwrap(),
            b"abcabcabc"
        );
        assert_eq!(lzf_decompress(&[2, b'a', b'b'], 3), None);
    }
}
