//! Re-running this test binary as a child (the fault tests), through the same runner cargo used.

use std::process::Command;

/// A command that runs this test binary again. When cargo runs tests through a runner
/// (`CARGO_TARGET_<TRIPLE>_RUNNER`: `qemu-aarch64 -L /usr/aarch64-linux-gnu`, say, for the aarch64 tests
/// on an x86-64 machine), the child goes through it too: the kernel cannot run the binary itself, and
/// the runner's options (a 64 KiB page size) must hold for the child as for the parent.
pub fn this_test_binary() -> Command {
    let exe = std::env::current_exe().unwrap();
    let triple = format!(
        "{}_unknown_{}_{}",
        std::env::consts::ARCH,
        std::env::consts::OS,
        if cfg!(target_env = "musl") { "musl" } else { "gnu" }
    );
    let runner = std::env::var(format!("CARGO_TARGET_{}_RUNNER", triple.to_uppercase())).unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut c = Command::new(program);
            c.args(words).arg(exe);
            c
        }
        None => Command::new(exe),
    }
}
