//! FUNCTION DUMP's payload, as Redis 7.0 writes and reads it: for each library the RDB opcode
//! `FUNCTION2` (245) and its code as an RDB string, then DUMP's footer (the RDB version and the CRC64 of
//! everything before it). Written without compression; read with any of the RDB string encodings Redis
//! writes (plain, LZF-compressed, integers).

use hopless_kv::rdb::decode::Decoder;
use hopless_kv::rdb::encode::Encoder;
use hopless_kv::rdb::{self};

const WRONG: &str = "ERR DUMP payload version or checksum are wrong";
const BAD: &str = "ERR payload is not a valid functions payload";

/// The payload of libraries with these codes.
pub fn payload<'a>(codes: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut e = Encoder::new(false);
    for code in codes {
        e.u8(rdb::RDB_OPCODE_FUNCTION2);
        e.string(code);
    }
    let mut out = e.take();
    rdb::dump_footer(&mut out);
    out
}

/// The library codes of a payload, or Redis's error.
pub fn libraries(payload: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let body = rdb::check_dump_footer(payload).map_err(|_| WRONG.to_string())?;
    let mut d = Decoder::new(body);
    let mut codes = Vec::new();
    while !d.is_empty() {
        if d.u8().map_err(|_| BAD)? != rdb::RDB_OPCODE_FUNCTION2 {
            return Err("ERR given type is not a function".into());
        }
        codes.push(d.string().map_err(|_| BAD)?.into_owned());
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_compressed_library_reads_back() {
        let code = format!("#!lua name=big\n{}", "-- comment\n".repeat(50));
        let mut e = Encoder::new(true);
        e.u8(rdb::RDB_OPCODE_FUNCTION2);
        e.string(code.as_bytes());
        let mut p = e.take();
        assert_eq!(p[1] >> 6, 3, "the code went LZF-compressed");
        rdb::dump_footer(&mut p);
        assert_eq!(libraries(&p).unwrap(), vec![code.into_bytes()]);
    }
}
