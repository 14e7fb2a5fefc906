//! The multi-part append-only file's manifest, as Redis 7.0 writes and reads it: one line a file,
//! `file <name> seq <n> type <b|h|i>`: the base (a snapshot, or commands), the history (files a
//! rewrite replaced, deleted once the new manifest is safe) and the increments (commands since the
//! base), in that order. Names that need it are quoted as Redis quotes them (`sdscatrepr`).

use std::fmt::Write as _;

/// What a file of the set holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Base,
    History,
    Incr,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::History => 'h',
            Kind::Incr => 'i',
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub seq: u64,
    pub kind: Kind,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<Part>,
    pub history: Vec<Part>,
    pub incrs: Vec<Part>,
}

/// Redis's longest manifest line.
const MAX_LINE: usize = 1024;

impl Manifest {
    /// The manifest's text.
    pub fn format(&self) -> String {
        let mut out = String::new();
        let parts = self.base.iter().chain(&self.history).chain(&self.incrs);
        for p in parts {
            let _ = writeln!(
                out,
                "file {} seq {} type {}",
                quoted(&p.name),
                p.seq,
                p.kind.letter()
            );
        }
        out
    }

    /// Reads a manifest's text; the error is Redis's wording where it has one.
    pub fn parse(text: &[u8]) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        let mut rest = text;
        while !rest.is_empty() {
            let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                return Err("The AOF manifest file is invalid format".into());
            };
            let line = &rest[..end];
            rest = &rest[end + 1..];
            if line.len() > MAX_LINE {
                return Err("The AOF manifest file contains too long line".into());
            }
            if line.first() == Some(&b'#') || line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let words = crate::codec::split_args(line)
                .ok_or_else(|| "Invalid AOF manifest file format".to_string())?;
            if words.len() < 6 || words.len() % 2 != 0 {
                return Err("Invalid AOF manifest file format".into());
            }
            let (mut name, mut seq, mut kind) = (None, None, None);
            for kv in words.chunks_exact(2) {
                match &kv[0][..] {
                    b"file" => name = Some(String::from_utf8_lossy(&kv[1]).into_owned()),
                    b"seq" => seq = std::str::from_utf8(&kv[1]).ok().and_then(|s| s.parse().ok()),
                    b"type" => {
                        kind = match &kv[1][..] {
                            b"b" => Some(Kind::Base),
                            b"h" => Some(Kind::History),
                            b"i" => Some(Kind::Incr),
                            _ => None,
                        }
                    }
                    // Keys of later versions are passed over, as Redis passes them.
                    _ => {}
                }
            }
            let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
                return Err("Invalid AOF manifest file format".into());
            };
            if name.contains('/') || name.is_empty() {
                return Err("File can't be a path, just a filename".into());
            }
            let part = Part { name, seq, kind };
            match kind {
                Kind::Base if m.base.is_some() => return Err("Found duplicate base file information".into()),
                Kind::Base => m.base = Some(part),
                Kind::History => m.history.push(part),
                Kind::Incr => {
                    if m.incrs.last().is_some_and(|l| l.seq >= seq) {
                        return Err("Found a non-monotonic sequence number".into());
                    }
                    m.incrs.push(part)
                }
            }
        }
        Ok(m)
    }

    /// The next increment's sequence number.
    pub fn next_incr_seq(&self) -> u64 {
        self.incrs.last().map_or(1, |p| p.seq + 1)
    }

    /// The next base's sequence number.
    pub fn next_base_seq(&self) -> u64 {
        self.base.as_ref().map_or(1, |p| p.seq + 1)
    }
}

/// The names of a set's files, from `appendfilename`.
pub struct Names<'a>(pub &'a str);

impl Names<'_> {
    pub fn base(&self, seq: u64, rdb: bool) -> String {
        let ext = if rdb { "rdb" } else { "aof" };
        format!("{}.{seq}.base.{ext}", self.0)
    }

    pub fn incr(&self, seq: u64) -> String {
        format!("{}.{seq}.incr.aof", self.0)
    }

    pub fn manifest(&self) -> String {
        format!("{}.manifest", self.0)
    }

    pub fn temp_manifest(&self) -> String {
        format!("temp-{}.manifest", self.0)
    }
}

/// `name` as Redis's manifest writes it: as is, or quoted with escapes when it has a space, a quote or
/// a byte outside printable ASCII.
fn quoted(name: &str) -> String {
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'' && b != b'\\');
    if plain {
        return name.to_string();
    }
    let mut out = String::from("\"");
    for b in name.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            b if b.is_ascii_graphic() || b == b' ' => out.push(b as char),
            b => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(name: &str, seq: u64, kind: Kind) -> Part {
        Part {
            name: name.into(),
            seq,
            kind,
        }
    }

    #[test]
    fn writes_and_reads_redis_s_lines() {
        let m = Manifest {
            base: Some(part("appendonly.aof.2.base.rdb", 2, Kind::Base)),
            history: vec![part("appendonly.aof.1.base.rdb", 1, Kind::History)],
            incrs: vec![
                part("appendonly.aof.3.incr.aof", 3, Kind::Incr),
                part("my file.aof", 4, Kind::Incr),
            ],
        };
        let text = m.format();
        assert_eq!(
            text,
            "file appendonly.aof.2.base.rdb seq 2 type b\n\
             file appendonly.aof.1.base.rdb seq 1 type h\n\
             file appendonly.aof.3.incr.aof seq 3 type i\n\
             file \"my file.aof\" seq 4 type i\n"
        );
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), m);
        assert_eq!(m.next_incr_seq(), 5);
        assert_eq!(m.next_base_seq(), 3);
    }

    #[test]
    fn refuses_what_redis_refuses() {
        for bad in [
            &b"file a seq 1 type b"[..],
            b"file a seq 1\n",
            b"file a seq x type i\n",
            b"file a seq 1 type q\n",
            b"file a seq 1 type b\nfile b seq 2 type b\n",
            b"file a seq 2 type i\nfile b seq 1 type i\n",
            b"file ../a seq 1 type i\n",
            b"file \"a seq 1 type i\n",
        ] {
            assert!(
                Manifest::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let ok = Manifest::parse(b"# comment\nfile a seq 1 type b extra 7\n").unwrap();
        assert_eq!(ok.base.unwrap().name, "a");
    }
}
