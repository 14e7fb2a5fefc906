//! Helpers shared by the preload tests: where libhopless.so is, a scratch directory, running commands.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The libhopless.so under test: `HOPLESS_SO` when set (CI points it at the release build, the one that
/// ships: built with `panic = "abort"`, without `std`, which a test build never is), else the one cargo
/// built beside this test binary (target/<profile>/deps/..).
pub fn libhopless() -> PathBuf {
    if let Some(so) = std::env::var_os("HOPLESS_SO") {
        let so = PathBuf::from(so);
        assert!(so.exists(), "HOPLESS_SO={} does not exist", so.display());
        return std::fs::canonicalize(so).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for dir in [deps, deps.parent().unwrap()] {
        let p = dir.join("libhopless.so");
        if p.exists() {
            return p;
        }
    }
    panic!("libhopless.so not found next to {}", exe.display());
}

/// A fresh scratch directory under the target directory.
pub fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .unwrap()
        .join(format!("scratch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles one of the C test programs (`tests/c/NAME.c`) to `out`, with `extra` arguments last.
pub fn cc_program(name: &str, out: &std::path::Path, extra: &[&str]) {
    let src = format!("{}/tests/c/{name}.c", env!("CARGO_MANIFEST_DIR"));
    let out = out.to_str().expect("utf-8 path");
    let mut args = vec![
        src.as_str(),
        "-O1",
        "-pthread",
        "-Wno-alloc-size-larger-than",
        "-o",
        out,
        "-ldl",
    ];
    args.extend_from_slice(extra);
    cc(&args);
}

pub fn cc(args: &[&str]) {
    let out = Command::new("cc")
        .args(args)
        .output()
        .expect("a C compiler (cc) is needed for this test");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
