//! # hopless-prof
//!
//! The reader of hopless's heap profiles. A profile is pprof's format (a gzip'd protobuf `Profile`, what
//! `go tool pprof` reads) with unsymbolized locations: runtime addresses and the mappings they fall in.
//! This crate reads and checks one, and writes one ([`Builder`], [`file::write`]).
//!
//! # Layout
//!
//! Layers, top to bottom: a module names only modules listed below it (`scripts/check/layers.py`
//! checks this).
//!
//! | module | what it holds |
//! |---|---|
//! | `file` | profile files: gzip'd or plain in, gzip'd out, and the format's checks |
//! | `builder` | building a profile in memory ([`Builder`]) |
//! | `proto` | pprof's `Profile` message as prost structs |
//! | `error` | what goes wrong ([`Error`]) |

pub mod builder;
pub mod error;
pub mod file;
pub mod proto;

pub use builder::Builder;
pub use error::Error;
