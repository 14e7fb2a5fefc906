//! # hopless-prof
//!
//! The reader of hopless's heap profiles, behind `hopless prof FILE`. A profile is pprof's format (a
//! gzip'd protobuf `Profile`, what `go tool pprof` reads) with unsymbolized locations: runtime
//! addresses and the mappings they fall in. This crate reads one, symbolizes it from the module files
//! on disk (DWARF with inlined frames, else the ELF symbol tables; `module+0xOFFSET` when a file is
//! gone), and reports the top functions by flat and cumulative value and the top allocation sites, as
//! text, as folded stacks for flame graphs, or as a bar chart. It also writes profiles ([`Builder`],
//! [`file::write`]).
//!
//! ```no_run
//! let report = hopless_prof::run(&hopless_prof::Options::new("heap.pb.gz"))?;
//! print!("{report}");
//! # Ok::<(), hopless_prof::Error>(())
//! ```
//!
//! # Layout
//!
//! Layers, top to bottom: a module names only modules listed below it (`scripts/check/layers.py`
//! checks this).
//!
//! | module | what it holds |
//! |---|---|
//! | `command` | `hopless prof`: its [`Options`] and [`run`] |
//! | `chart` | `--svg`: the top functions as a horizontal bar chart |
//! | `report` | the text report: header, total, the two function tables, the sites |
//! | `collapsed` | `--collapsed`: folded stacks for flame-graph tools |
//! | `top` | functions by flat and cumulative value, whole stacks by value |
//! | `units` | bytes as KiB/MiB/GiB, counts as integers, percentages |
//! | `stacks` | one sample type's samples as symbolized stacks ([`Stacks`]) |
//! | `symbolize` | locations to frames: recorded lines, else mapping, module file, offset |
//! | `module` | a module file: its segments (file offset to address), DWARF and symbols |
//! | `frame` | a frame ([`Frame`]) and the short forms of its names |
//! | `file` | profile files: gzip'd or plain in, gzip'd out, and the format's checks |
//! | `builder` | building a profile in memory ([`Builder`]) |
//! | `proto` | pprof's `Profile` message as prost structs |
//! | `error` | what goes wrong ([`Error`]) |

pub mod builder;
pub mod chart;
pub mod collapsed;
pub mod command;
pub mod error;
pub mod file;
pub mod frame;
pub mod module;
pub mod proto;
pub mod report;
pub mod stacks;
pub mod symbolize;
pub mod top;
pub mod units;

pub use builder::Builder;
pub use command::{run, Options};
pub use error::Error;
pub use frame::Frame;
pub use stacks::Stacks;
