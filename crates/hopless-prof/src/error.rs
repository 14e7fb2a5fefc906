//! What goes wrong reading a profile: each error says which file and what is wrong with it.

use std::fmt;
use std::path::PathBuf;

/// A profile that cannot be read or reported.
#[derive(Debug)]
pub enum Error {
    /// The file could not be read or written.
    Io { path: PathBuf, source: std::io::Error },
    /// The file starts with gzip's magic but does not decompress (truncated or corrupt).
    Gzip(std::io::Error),
    /// The bytes are not a protobuf `Profile` message (truncated, or another kind of file).
    Decode(prost::DecodeError),
    /// The message decodes but breaks a rule of the format (an index or id that points nowhere).
    Invalid(String),
    /// The sample type asked for is not in the profile.
    NoSampleType { asked: String, available: Vec<String> },
    /// The chart could not be drawn.
    Chart(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Gzip(e) => write!(f, "not a valid gzip stream: {e}"),
            Error::Decode(e) => write!(f, "not a pprof profile (protobuf decode failed: {e})"),
            Error::Invalid(what) => write!(f, "malformed profile: {what}"),
            Error::NoSampleType { asked, available } => write!(
                f,
                "the profile has no sample type {asked:?} (it has: {})",
                available.join(", ")
            ),
            Error::Chart(e) => write!(f, "chart: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Gzip(e) => Some(e),
            Error::Decode(e) => Some(e),
            _ => None,
        }
    }
}
