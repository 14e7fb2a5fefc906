//! The child-process protocol of the benches that measure in a fresh process: the parent runs this same
//! executable as `hopless bench BENCH --child SPEC [ARGS]` (optionally under a wrapper such as valgrind,
//! or with a library preloaded), and the child runs the one measurement SPEC names and prints its result
//! as one line of JSON on stdout, which the parent reads back.
//!
//! A fresh process per measurement is what makes a figure belong to that measurement alone: its RSS and
//! page faults, the allocator's heap and thread caches, and for `--c-abi` the library `malloc` binds to.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// This executable, to run as the child.
pub fn this_exe() -> Result<PathBuf, String> {
    std::env::current_exe().map_err(|e| e.to_string())
}

/// One child run, being set up.
pub struct Child {
    cmd: Command,
    /// The spec, for error messages.
    spec: String,
}

impl Child {
    /// `exe bench BENCH --child SPEC`.
    pub fn new(exe: &Path, bench: &str, spec: &str) -> Child {
        let mut cmd = Command::new(exe);
        cmd.args(["bench", bench, "--child", spec]);
        Child {
            cmd,
            spec: spec.to_string(),
        }
    }

    /// `WRAPPER WRAPPER_ARGS... exe bench BENCH --child SPEC`: the child run under another program.
    pub fn under<S: AsRef<std::ffi::OsStr>>(
        wrapper: &str,
        wrapper_args: impl IntoIterator<Item = S>,
        exe: &Path,
        bench: &str,
        spec: &str,
    ) -> Child {
        let mut cmd = Command::new(wrapper);
        cmd.args(wrapper_args)
            .arg(exe)
            .args(["bench", bench, "--child", spec]);
        Child {
            cmd,
            spec: spec.to_string(),
        }
    }

    /// More arguments after the spec.
    pub fn args<S: AsRef<std::ffi::OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Child {
        self.cmd.args(args);
        self
    }

    /// One more environment variable for the child.
    pub fn env(mut self, key: &str, value: &str) -> Child {
        self.cmd.env(key, value);
        self
    }

    /// One environment variable removed for the child.
    pub fn env_remove(mut self, key: &str) -> Child {
        self.cmd.env_remove(key);
        self
    }

    /// `LD_PRELOAD=lib`, or with `None` no preload at all (an inherited `LD_PRELOAD` removed).
    pub fn preload(mut self, lib: Option<&Path>) -> Child {
        match lib {
            Some(p) => self.cmd.env("LD_PRELOAD", p),
            None => self.cmd.env_remove("LD_PRELOAD"),
        };
        self
    }

    /// Runs the child to its end and reads back the one line of JSON it printed.
    pub fn run<T: DeserializeOwned>(mut self) -> Result<T, String> {
        let spec = &self.spec;
        let out = self.cmd.output().map_err(|e| format!("running {spec}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{spec} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let line = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(line.trim()).map_err(|e| format!("{spec}: {e}: {line}"))
    }
}

/// The child side: prints the result as the one line of JSON the parent reads back.
pub fn reply<T: Serialize>(result: &T) -> Result<(), String> {
    println!("{}", serde_json::to_string(result).map_err(|e| e.to_string())?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_one_line_of_json_and_reports_failures() {
        let echo = Child::under("sh", ["-c", "echo '[1, 2]'"], Path::new("x"), "b", "s");
        assert_eq!(echo.run::<Vec<u32>>().unwrap(), [1, 2]);
        let fail = Child::under("sh", ["-c", "echo no >&2; exit 3"], Path::new("x"), "b", "s");
        let e = fail.run::<u32>().unwrap_err();
        assert!(e.starts_with("s failed") && e.contains("no"), "{e}");
        let garbled = Child::under("sh", ["-c", "echo x"], Path::new("x"), "b", "s");
        assert!(garbled.run::<u32>().unwrap_err().starts_with("s: "));
    }
}
