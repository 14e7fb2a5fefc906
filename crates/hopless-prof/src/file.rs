//! Profile files: gzip'd or plain protobuf in, gzip'd protobuf out, and the checks that let the rest of
//! the crate trust every index and id in a profile it is handed.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use prost::Message;

use crate::error::Error;
use crate::proto::Profile;

/// The first two bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Reads and checks the profile at `path`.
pub fn read(path: &Path) -> Result<Profile, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    decode(&bytes)
}

/// Decodes and checks a profile: gzip'd when `bytes` starts with gzip's magic, plain protobuf otherwise.
pub fn decode(bytes: &[u8]) -> Result<Profile, Error> {
    let profile = if bytes.starts_with(&GZIP_MAGIC) {
        let mut plain = Vec::new();
        MultiGzDecoder::new(bytes)
            .read_to_end(&mut plain)
            .map_err(Error::Gzip)?;
        Profile::decode(plain.as_slice())
    } else {
        Profile::decode(bytes)
    }
    .map_err(Error::Decode)?;
    check(&profile)?;
    Ok(profile)
}

/// The profile as gzip'd protobuf, as pprof writes it.
pub fn encode(profile: &Profile) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(&profile.encode_to_vec());
    gz.finish().unwrap_or_default()
}

/// Writes the profile to `path`, gzip'd.
pub fn write(path: &Path, profile: &Profile) -> Result<(), Error> {
    std::fs::write(path, encode(profile)).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// The rules of the format that the reader relies on. Random bytes often decode as a protobuf message
/// of unknown fields, so an empty string table, or none, is taken as "not a profile".
fn check(p: &Profile) -> Result<(), Error> {
    let bad = |what: String| Err(Error::Invalid(what));
    match p.string_table.first() {
        None => return bad("no string table (is this a pprof profile?)".into()),
        Some(s) if !s.is_empty() => return bad("string_table[0] is not the empty string".into()),
        Some(_) => {}
    }
    if p.sample_type.is_empty() {
        return bad("no sample types".into());
    }
    let n = p.string_table.len();
    let string = |what: &str, i: i64| -> Result<(), Error> {
        if (0..n as i64).contains(&i) {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "{what}: string index {i} past the table's {n}"
            )))
        }
    };
    for t in p.sample_type.iter().chain(&p.period_type) {
        string("sample type", t.r#type)?;
        string("sample type unit", t.unit)?;
    }
    for &c in &p.comment {
        string("comment", c)?;
    }
    string("default_sample_type", p.default_sample_type)?;
    let mut mappings = HashSet::new();
    for m in &p.mapping {
        string("mapping filename", m.filename)?;
        string("mapping build_id", m.build_id)?;
        if m.id == 0 || !mappings.insert(m.id) {
            return bad(format!("mapping id {} is zero or repeated", m.id));
        }
    }
    let mut functions = HashSet::new();
    for f in &p.function {
        string("function name", f.name)?;
        string("function system_name", f.system_name)?;
        string("function filename", f.filename)?;
        if f.id == 0 || !functions.insert(f.id) {
            return bad(format!("function id {} is zero or repeated", f.id));
        }
    }
    let mut locations = HashSet::new();
    for l in &p.location {
        if l.id == 0 || !locations.insert(l.id) {
            return bad(format!("location id {} is zero or repeated", l.id));
        }
        if l.mapping_id != 0 && !mappings.contains(&l.mapping_id) {
            return bad(format!(
                "location {} names mapping {}, which is not in the profile",
                l.id, l.mapping_id
            ));
        }
        if let Some(line) = l.line.iter().find(|x| !functions.contains(&x.function_id)) {
            return bad(format!(
                "location {} names function {}, which is not in the profile",
                l.id, line.function_id
            ));
        }
    }
    for (i, s) in p.sample.iter().enumerate() {
        if s.value.len() != p.sample_type.len() {
            return bad(format!(
                "sample {i} has {} values for {} sample types",
                s.value.len(),
                p.sample_type.len()
            ));
        }
        if let Some(id) = s.location_id.iter().find(|id| !locations.contains(*id)) {
            return bad(format!(
                "sample {i} names location {id}, which is not in the profile"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::Builder;

    fn sample_profile() -> Profile {
        let mut b = Builder::hopless_heap(512 * 1024);
        let m = b.mapping(
            0x5555_0000_0000,
            0x5555_0010_0000,
            0x1000,
            "/usr/bin/app",
            "abcd12",
        );
        let inner = b.location(m, 0x5555_0000_1234);
        let outer = b.location(m, 0x5555_0000_5678);
        b.sample(&[inner, outer], &[10, 10_240, 4, 4096]);
        b.sample(&[outer], &[1, 64, 0, 0]);
        b.time_nanos(1_700_000_000_000_000_000);
        b.finish()
    }

    #[test]
    fn a_gzipped_profile_reads_back_the_same() {
        let p = sample_profile();
        let bytes = encode(&p);
        assert_eq!(&bytes[..2], &GZIP_MAGIC);
        let back = decode(&bytes).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.sample[0].value, vec![10, 10_240, 4, 4096]);
        assert_eq!(back.sample[0].location_id, vec![1, 2]);
        assert_eq!(
            back.string_table[back.default_sample_type as usize],
            "inuse_space"
        );
        assert_eq!(back.period, 512 * 1024);
        assert_eq!(
            back.string_table[back.comment[0] as usize],
            "hopless heap profile"
        );
    }

    #[test]
    fn a_plain_protobuf_profile_reads_too() {
        let p = sample_profile();
        assert_eq!(decode(&p.encode_to_vec()).unwrap(), p);
    }

    #[test]
    fn a_written_file_reads_back() {
        let path = std::env::temp_dir().join(format!("hopless-prof-file-{}.pb.gz", std::process::id()));
        let p = sample_profile();
        write(&path, &p).unwrap();
        assert_eq!(read(&path).unwrap(), p);
        let _ = std::fs::remove_file(&path);
        let missing = read(&path).unwrap_err().to_string();
        assert!(missing.contains("hopless-prof-file"), "{missing}");
    }

    #[test]
    fn truncated_files_are_errors_not_panics() {
        let p = sample_profile();
        let gz = encode(&p);
        for cut in [2, 10, gz.len() / 2, gz.len() - 1] {
            let e = decode(&gz[..cut]).unwrap_err();
            assert!(matches!(e, Error::Gzip(_)), "cut at {cut}: {e}");
        }
        let plain = p.encode_to_vec();
        for cut in 1..plain.len() {
            // A cut between two fields decodes to a shorter message, which the checks may still
            // take; a cut inside one is an error. Neither may panic.
            let _ = decode(&plain[..cut]);
        }
        let e = decode(&plain[..plain.len() - 3]).unwrap_err();
        assert!(matches!(e, Error::Decode(_) | Error::Invalid(_)), "{e}");
    }

    #[test]
    fn other_files_are_not_profiles() {
        for bytes in [
            &b""[..],
            b"this is a text file, not a profile\n",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
            &[0xff; 64],
        ] {
            let e = decode(bytes).unwrap_err();
            assert!(matches!(e, Error::Decode(_) | Error::Invalid(_)), "{e}");
        }
    }

    #[test]
    fn dangling_ids_and_indices_are_named() {
        let mut p = sample_profile();
        p.sample[0].location_id.push(99);
        let e = decode(&p.encode_to_vec()).unwrap_err().to_string();
        assert!(e.contains("location 99"), "{e}");

        let mut p = sample_profile();
        p.location[0].mapping_id = 7;
        let e = decode(&p.encode_to_vec()).unwrap_err().to_string();
        assert!(e.contains("mapping 7"), "{e}");

        let mut p = sample_profile();
        p.mapping[0].filename = 1000;
        let e = decode(&p.encode_to_vec()).unwrap_err().to_string();
        assert!(e.contains("string index 1000"), "{e}");

        let mut p = sample_profile();
        p.sample[1].value.pop();
        let e = decode(&p.encode_to_vec()).unwrap_err().to_string();
        assert!(e.contains("3 values for 4 sample types"), "{e}");
    }
}
