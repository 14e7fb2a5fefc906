//! pprof's `Profile` message (github.com/google/pprof, `proto/profile.proto`), the fields hopless reads
//! and writes, as prost messages derived by hand: no `protoc` and no build script.
//!
//! Field numbers and types are profile.proto's; fields left out here (labels, `keep_frames`, `doc_url`, the mapping's `has_*` flags) are skipped when decoding. Every string is an
//! index into `string_table`, whose entry 0 is the empty string. Ids of mappings, locations and functions
//! are nonzero; 0 means "none".

use prost::Message;

/// A profile: its sample types, samples, and the tables the samples point into.
#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    /// What each sample's values are, one entry per value.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// A regular expression (string index; 0: none): frames whose function's name it matches whole are
    /// left out of every stack, with the frames they called (hopless names its own entry points).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What one sampling period is measured in (hopless: `space`, `bytes`).
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The mean sampling interval, in `period_type` units.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The `type` string index of the sample type a viewer shows first; 0 when unset.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// A value's kind and unit, both string indices (`inuse_space`, `bytes`).
#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One stack and its values.
#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// Location ids, innermost frame (the allocation site) first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per `Profile::sample_type`, in its order.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
}

/// A range of the profiled process's address space mapped from a file.
#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Where the range starts in the process (a runtime address).
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// Where it ends, exclusive.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// The offset in the file that `memory_start` maps.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The file's path (string index), as /proc/PID/maps gives it.
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// The GNU build-id note as hex (string index), or 0 for none.
    #[prost(int64, tag = "6")]
    pub build_id: i64,
}

/// One program counter, and the source lines it stands for once symbolized.
#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping the address falls in, or 0 when unknown.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// A runtime address, already a call site (return address minus one).
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The functions and lines at `address`, innermost inlined frame first; empty when unsymbolized.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// A function and line a location stands for.
#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// A function's names and source file (string indices).
#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The name a person reads (demangled).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// The name as the linker knows it (mangled).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
