//! The sampled heap profile of a C program built `-O2 -g` without frame pointers, under the preload
//! with `HOPLESS_PROF=1`: the leak report at exit and the pprof dump name the functions that keep
//! memory, with sizes within the sampling error, for a program's own allocations, its threads (which
//! exit with sampled blocks alive), a forked child (a profile of its own through `%p`) and a dump on a
//! signal. `hopless prof` (the `hopless-prof` crate) reads every dump; `go tool pprof` does too when Go
//! is installed (required under `CI=true`).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The scratch directory, one for the whole test binary.
fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| common::scratch("profile"))
}

/// The program, built once per test binary.
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let exe = dir().join("prof");
        common::cc(&[
            &format!("{}/tests/c/prof.c", env!("CARGO_MANIFEST_DIR")),
            "-O2",
            "-g",
            "-fomit-frame-pointer",
            "-pthread",
            "-o",
            exe.to_str().unwrap(),
        ]);
        exe
    })
}

fn run(mode: &str, dump: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(program());
    c.arg(mode)
        .env("LD_PRELOAD", common::libhopless())
        .env("HOPLESS_PROF", "1")
        .env("HOPLESS_PROF_LEAKS", "1")
        .env("HOPLESS_PROF_DUMP", dump);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    common::assert_ok(&out, mode);
    out
}

/// The leak report's sites: the innermost frame's function → bytes, summed.
fn leaks(stderr: &str) -> HashMap<String, u64> {
    let mut sites = HashMap::new();
    let mut bytes = None;
    for line in stderr.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() >= 5 && w[1] == "bytes" && w[4] == "blocks," {
            bytes = Some(w[0].parse::<u64>().unwrap());
        } else if let (Some(b), true) = (bytes, line.trim_start().starts_with("#0 ")) {
            let func = w.get(2).map_or("?", |f| f.split('+').next().unwrap());
            *sites.entry(func.to_string()).or_insert(0) += b;
            bytes = None;
        }
    }
    sites
}

fn assert_near(sites: &HashMap<String, u64>, func: &str, want: u64, tolerance: f64, report: &str) {
    let got = *sites
        .get(func)
        .unwrap_or_else(|| panic!("no site in {func}: {report}"));
    let err = (got as f64 - want as f64).abs() / want as f64;
    assert!(
        err <= tolerance,
        "{func}: {got} bytes, {want} expected (±{tolerance}): {report}"
    );
}

/// What `hopless prof` reads in a dump: bytes in use by the innermost named function of each stack
/// (its folded stacks, summed).
fn hopless_prof(dump: &Path) -> HashMap<String, u64> {
    let mut o = hopless_prof::Options::new(dump);
    o.collapsed = true;
    let folded = hopless_prof::run(&o).unwrap_or_else(|e| panic!("hopless prof {}: {e}", dump.display()));
    let mut sites = HashMap::new();
    for line in folded.lines() {
        let (stack, value) = line.rsplit_once(' ').unwrap();
        let inner = stack.rsplit(';').next().unwrap();
        *sites.entry(inner.to_string()).or_insert(0) += value.parse::<u64>().unwrap();
    }
    sites
}

/// `go tool pprof -top` of a dump, when Go is installed.
fn pprof_top(exe: &Path, dump: &Path) -> Option<String> {
    let out = match Command::new("go")
        .args(["tool", "pprof", "-top", "-sample_index=inuse_space"])
        .arg(exe)
        .arg(dump)
        .env("HOME", dir())
        .output()
    {
        Ok(out) => out,
        Err(_) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "go is not installed and CI=true (apt-get install golang-go)"
            );
            eprintln!("skipped the pprof check: go is not installed");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "pprof failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_programs_leaks_are_named_with_their_sizes() {
    let dir = dir();
    let dump = dir.join("leak.pb.gz");
    let _ = std::fs::remove_file(&dump);
    let out = run("leak", &dump, &[("HOPLESS_PROF_SAMPLE", "16k")]);
    let report = String::from_utf8_lossy(&out.stderr);
    let sites = leaks(&report);
    // 4 KiB blocks sampled with p = 1 - e^-(1/4) = 0.22: about 220 samples, 6% standard error.
    assert_near(&sites, "leak_small_blocks", 1000 * 4096, 0.25, &report);
    assert_near(&sites, "leak_big_blocks", 10 << 20, 0.02, &report);
    assert!(!sites.contains_key("churn"), "freed blocks reported: {report}");
    let bytes = std::fs::read(&dump).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "not gzip");
    // The dump says the same as the report, symbolized from the program's DWARF.
    let read = hopless_prof(&dump);
    let text = format!("{read:?}");
    assert_near(&read, "leak_small_blocks", 1000 * 4096, 0.25, &text);
    assert_near(&read, "leak_big_blocks", 10 << 20, 0.02, &text);
    assert!(!read.contains_key("churn"), "{text}");
    assert_eq!(
        read.get("leak_small_blocks"),
        sites.get("leak_small_blocks"),
        "{text} {report}"
    );
    if let Some(top) = pprof_top(program(), &dump) {
        for f in ["leak_small_blocks", "leak_big_blocks"] {
            assert!(top.contains(f), "pprof does not name {f}:\n{top}");
        }
        assert!(!top.contains("churn"), "pprof counts freed blocks in use:\n{top}");
    }
}

#[test]
fn the_default_interval_sees_the_big_blocks() {
    let dir = dir();
    let dump = dir.join("default.pb.gz");
    let out = run("leak", &dump, &[]);
    let report = String::from_utf8_lossy(&out.stderr);
    // 1 MiB blocks at a 512 KiB interval: each sampled with p = 0.86; 10 of them within 40%.
    assert_near(&leaks(&report), "leak_big_blocks", 10 << 20, 0.4, &report);
    assert!(dump.exists());
}

#[test]
fn threads_that_exit_keep_their_samples() {
    let dir = dir();
    let dump = dir.join("threads.pb.gz");
    let out = run("threads", &dump, &[("HOPLESS_PROF_SAMPLE", "16k")]);
    let report = String::from_utf8_lossy(&out.stderr);
    assert_near(&leaks(&report), "thread_leak", 8 << 20, 0.2, &report);
    let read = hopless_prof(&dump);
    assert_near(&read, "thread_leak", 8 << 20, 0.2, &format!("{read:?}"));
}

#[test]
fn a_forked_child_writes_a_profile_of_its_own() {
    let dir = dir();
    let template = dir.join("fork.%p.pb.gz");
    let out = run("fork", &template, &[("HOPLESS_PROF_SAMPLE", "16k")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let pid_of = |word: &str| -> String {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(word))
            .unwrap_or_else(|| panic!("no {word:?} in {stdout}"))
            .trim()
            .to_string()
    };
    let (child, parent) = (pid_of("child "), pid_of("pid "));
    let child_dump = dir.join(format!("fork.{child}.pb.gz"));
    let parent_dump = dir.join(format!("fork.{parent}.pb.gz"));
    assert!(child_dump.exists() && parent_dump.exists(), "{stdout}");
    // Both reports went to the same stderr: the child's first (the parent waited for it).
    let report = String::from_utf8_lossy(&out.stderr);
    let (first, second) = report
        .split_once("\nhopless profile:")
        .unwrap_or_else(|| panic!("two reports expected: {report}"));
    let (child_sites, parent_sites) = (leaks(first), leaks(second));
    assert_near(&child_sites, "child_leak", 512 * 4096, 0.25, &report);
    // The child inherits what its parent had sampled.
    assert_near(&child_sites, "leak_small_blocks", 1000 * 4096, 0.25, &report);
    assert!(!parent_sites.contains_key("child_leak"), "{report}");
    assert_near(&parent_sites, "leak_small_blocks", 1000 * 4096, 0.25, &report);
    let (child_read, parent_read) = (hopless_prof(&child_dump), hopless_prof(&parent_dump));
    assert_eq!(
        child_read.get("child_leak"),
        child_sites.get("child_leak"),
        "{child_read:?}"
    );
    assert!(!parent_read.contains_key("child_leak"), "{parent_read:?}");
    if let Some(top) = pprof_top(program(), &child_dump) {
        assert!(top.contains("child_leak"), "{top}");
    }
}

#[test]
fn a_signal_asks_for_a_dump() {
    let dir = dir();
    let base = dir.join("signal.pb.gz");
    let first = dir.join("signal.pb.gz.1");
    let _ = std::fs::remove_file(&first);
    run(
        "signal",
        &base,
        &[("HOPLESS_PROF_SIGNAL", "USR2"), ("HOPLESS_PROF_SAMPLE", "16k")],
    );
    assert!(first.exists(), "no dump on the signal");
    // Taken between the two phases: the small blocks are in it, the big ones not yet.
    let read = hopless_prof(&first);
    assert!(
        read.contains_key("leak_small_blocks") && !read.contains_key("leak_big_blocks"),
        "{read:?}"
    );
    assert!(hopless_prof(&base).contains_key("leak_big_blocks"));
    if let Some(top) = pprof_top(program(), &first) {
        assert!(top.contains("leak_small_blocks"), "{top}");
        assert!(!top.contains("leak_big_blocks"), "{top}");
    }
    if let Some(top) = pprof_top(program(), &base) {
        assert!(top.contains("leak_big_blocks"), "{top}");
    }
}
