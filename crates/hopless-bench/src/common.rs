//! The options every bench command takes: `--quick`, `--rounds` and `--json`.

use std::path::PathBuf;

use serde::Serialize;

use crate::json;

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
            json::write_results(path, results).map_err(|e| format!("writing {}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
        Ok(())
    }
}
