//! What every bench command shares: the `--quick`, `--rounds` and `--json` options, the progress bar,
//! and the `--json` write.

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::report;

/// The options every bench command takes.
#[derive(Clone, Debug, Default)]
pub struct Common {
    /// Fewer ops and rounds.
    pub quick: bool,
    /// Rounds; `None`: the command's default for a quick or a full run.
    pub rounds: Option<usize>,
    /// Write the results as JSON to this path.
    pub json: Option<PathBuf>,
}

impl Common {
    /// `--rounds` if given (at least 1), else `default`.
    pub fn rounds_or(&self, default: usize) -> usize {
        self.rounds.unwrap_or(default).max(1)
    }

    /// With `--json`, writes `{"results": [...]}` there and says so.
    pub fn write_json<T: Serialize>(&self, results: &[T]) -> Result<(), String> {
        if let Some(path) = &self.json {
            report::write_json(path, results).map_err(|e| format!("writing {}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
        Ok(())
    }
}

/// A progress bar of `len` runs, labelled `what`.
pub fn progress(len: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>12} [{bar:40}] {pos}/{len} runs, {elapsed} elapsed, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}
