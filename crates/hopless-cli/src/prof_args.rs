//! `hopless prof`'s arguments, and the hopless-prof options they become.

use std::path::PathBuf;

use clap::Args;

/// `hopless prof FILE [--sample TYPE] [--top N] [--svg PATH] [--collapsed]`.
#[derive(Args, Debug)]
pub struct ProfArgs {
    /// The heap profile: pprof's format, gzip'd or plain protobuf.
    #[arg(value_name = "FILE")]
    path: PathBuf,
    /// The value to report (default: the profile's default, inuse_space for hopless's profiles);
    /// `inuse` is inuse_space, `alloc` alloc_space.
    #[arg(
        long,
        value_name = "TYPE",
        value_parser = ["inuse_space", "inuse_objects", "alloc_space", "alloc_objects", "inuse", "alloc"]
    )]
    sample: Option<String>,
    /// Rows in each table (and bars in the chart).
    #[arg(long, value_name = "N", default_value_t = 20)]
    top: usize,
    /// Also draw the top functions by flat value as a horizontal bar chart (SVG; PNG when PATH ends in
    /// .png).
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
    /// Print folded stacks (`outer;...;inner value`, one a line) for flame-graph tools instead of the
    /// report.
    #[arg(long)]
    collapsed: bool,
}

impl From<ProfArgs> for hopless_prof::Options {
    fn from(a: ProfArgs) -> hopless_prof::Options {
        hopless_prof::Options {
            path: a.path,
            sample: a.sample,
            top: a.top,
            svg: a.svg,
            collapsed: a.collapsed,
        }
    }
}
