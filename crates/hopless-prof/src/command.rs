//! `hopless prof FILE`: read, symbolize, and print the report or the folded stacks; draw the chart.

use std::path::PathBuf;

use crate::error::Error;
use crate::stacks::Stacks;
use crate::{chart, collapsed, file, report, top};

/// What `hopless prof` is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The profile file (gzip'd or plain protobuf).
    pub path: PathBuf,
    /// The sample type to report (`inuse_space`, `alloc_objects`, ... or `inuse`, `alloc`); `None`: the
    /// profile's default.
    pub sample: Option<String>,
    /// Rows per table (and bars in the chart).
    pub top: usize,
    /// Where to draw the top functions as a bar chart (SVG; PNG when the name ends in `.png`).
    pub svg: Option<PathBuf>,
    /// Print folded stacks instead of the report.
    pub collapsed: bool,
}

impl Options {
    /// The defaults for the profile at `path`: its default sample type, the top 20, text only.
    pub fn new(path: impl Into<PathBuf>) -> Options {
        Options {
            path: path.into(),
            sample: None,
            top: 20,
            svg: None,
            collapsed: false,
        }
    }
}

/// Runs `hopless prof` and returns what it prints.
pub fn run(o: &Options) -> Result<String, Error> {
    let profile = file::read(&o.path)?;
    let stacks = Stacks::new(&profile, o.sample.as_deref())?;
    let mut out = if o.collapsed {
        collapsed::folded(&stacks)
    } else {
        report::text(&stacks, &o.path.display().to_string(), o.top)
    };
    if let Some(svg) = &o.svg {
        let rows = top::by_flat(&stacks);
        chart::functions(svg, &stacks, &rows[..o.top.min(rows.len())])?;
        if !o.collapsed {
            out.push_str(&format!("\nChart: {}\n", svg.display()));
        }
    }
    Ok(out)
}
