//! glibc's introspection calls from C (`tests/c/api.c`): `mallinfo2`, `mallinfo`, `malloc_stats`,
//! `malloc_info` and `mallopt` answer from hopless's counts, preloaded and linked, from several threads
//! at once, before anything is allocated, and with glibc's answers to `mallopt`.

mod common;

#[global_allocator]
static GLOBAL: hl::Hopless = hl::Hopless;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `tests/c/api.c` compiled into a scratch directory of the test's (`name`): plain, for the preload, and
/// linked. Warnings are errors, but for `mallinfo`'s deprecation, which is what is tested.
fn programs(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let so = common::libhopless();
    let dir = common::scratch(name);
    let plain = dir.join("api");
    let warnings = ["-Wall", "-Wextra", "-Werror", "-Wno-deprecated-declarations"];
    common::cc_program("api", &plain, &warnings);
    let lib_dir = so.parent().unwrap().to_str().unwrap().to_string();
    let linked = dir.join("api_linked");
    let (search, rpath) = (format!("-L{lib_dir}"), format!("-Wl,-rpath,{lib_dir}"));
    let mut args = warnings.to_vec();
    args.extend([search.as_str(), "-lhopless", rpath.as_str()]);
    common::cc_program("api", &linked, &args);
    (so, plain, linked)
}

fn preloaded(so: &Path, program: &Path, mode: &str) -> Output {
    Command::new(program)
        .arg(mode)
        .env("LD_PRELOAD", so)
        .output()
        .unwrap()
}

fn linked(program: &Path, mode: &str) -> Output {
    // cargo's LD_LIBRARY_PATH may name another copy of the library; the rpath must decide.
    Command::new(program)
        .arg(mode)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap()
}

#[test]
fn counts_follow_what_the_program_allocates_and_frees() {
    let (so, plain, linked_program) = programs("c-api-counts");
    for (what, out) in [
        ("preloaded", preloaded(&so, &plain, "basic")),
        ("linked", linked(&linked_program, "basic")),
    ] {
        common::assert_ok(&out, what);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{what}");
    }
}

#[test]
fn mallopt_and_malloc_info_answer_bad_arguments_as_glibc_does() {
    let (so, plain, linked_program) = programs("c-api-mallopt");
    let glibc = Command::new(&plain)
        .arg("mallopt")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    common::assert_ok(&glibc, "glibc");
    for (what, out) in [
        ("preloaded", preloaded(&so, &plain, "mallopt")),
        ("linked", linked(&linked_program, "mallopt")),
    ] {
        common::assert_ok(&out, what);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&glibc.stdout),
            "{what}: hopless's answers (left) against glibc's"
        );
    }
}

#[test]
fn the_calls_run_from_several_threads_while_others_allocate() {
    let (so, plain, _) = programs("c-api-threads");
    for mode in [None, Some("HOPLESS_HARDENED"), Some("HOPLESS_OWNED_SLABS")] {
        let mut cmd = Command::new(&plain);
        cmd.arg("threads").env("LD_PRELOAD", &so);
        if let Some(m) = mode {
            cmd.env(m, "1");
        }
        let out = cmd.output().unwrap();
        common::assert_ok(&out, mode.unwrap_or("default"));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    }
}

#[test]
fn malloc_stats_prints_before_anything_is_allocated() {
    let (so, plain, linked_program) = programs("c-api-empty");
    for (what, out) in [
        ("preloaded", preloaded(&so, &plain, "empty")),
        ("linked", linked(&linked_program, "empty")),
    ] {
        common::assert_ok(&out, what);
        let err = String::from_utf8_lossy(&out.stderr);
        let labels: Vec<&str> = err.lines().map(|l| l.split('=').next().unwrap()).collect();
        assert_eq!(
            labels,
            [
                "Arena 0:",
                "system bytes     ",
                "in use bytes     ",
                "Total (incl. mmap):",
                "system bytes     ",
                "in use bytes     ",
                "max mmap regions ",
                "max mmap bytes   "
            ],
            "{what}: {err}"
        );
        for line in err.lines().filter(|l| l.contains('=')) {
            let n = line.split('=').nth(1).unwrap();
            assert_eq!(n.len(), 11, "{what}: %10u: {line:?}");
            n.trim().parse::<u64>().unwrap();
        }
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("uordblks "));
    }
}
