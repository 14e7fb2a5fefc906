//! What a key holds: [`Kind`], TYPE's answer.

/// What a key holds (TYPE's answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    String = 0,
    List = 1,
    Hash = 2,
    Set = 3,
    ZSet = 4,
    Stream = 5,
}

impl Kind {
    /// The name TYPE replies with.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::List => "list",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }

    /// The kind TYPE names `name` (as SCAN's TYPE filter reads it, case-insensitively).
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        [
            Kind::String,
            Kind::List,
            Kind::Hash,
            Kind::Set,
            Kind::ZSet,
            Kind::Stream,
        ]
        .into_iter()
        .find(|k| k.name().as_bytes().eq_ignore_ascii_case(name))
    }

    pub(crate) fn from_bits(b: u32) -> Kind {
        match b {
            1 => Kind::List,
            2 => Kind::Hash,
            3 => Kind::Set,
            4 => Kind::ZSet,
            5 => Kind::Stream,
            _ => Kind::String,
        }
    }
}
