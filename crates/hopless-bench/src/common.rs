//! What every bench command shares: the `--quick`, `--rounds` and `--json` options, the progress bar,
//! the `--json` write, a process's RSS, and the seed's operation mix.

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

/// Resident and peak-resident bytes (VmRSS, VmHWM) of process `pid`, or of this one; 0 if unreadable.
pub fn rss_of(pid: Option<u32>) -> (u64, u64) {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// `n` operations of the seed's mix over `keys` keys: a Zipf(0.99) key index, scattered over the
/// keyspace so hot keys do not share a shard, and a value length (60% SETs of 32..=512 B; 0: a GET).
pub fn seed_ops(keys: usize, n: usize, seed: u64) -> Vec<(u32, u16)> {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    use rand_distr::{Distribution, Zipf};
    let zipf = Zipf::new(keys as u64, 0.99).expect("valid zipf");
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let rank = zipf.sample(&mut rng) as u64 - 1;
            let k = (rank.wrapping_mul(0x9E37_79B9) % keys as u64) as u32;
            let len = if rng.gen_ratio(6, 10) {
                rng.gen_range(32..=512u16)
            } else {
                0
            };
            (k, len)
        })
        .collect()
}
