//! The progress bar every bench shows while it runs.

use indicatif::{ProgressBar, ProgressStyle};

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
