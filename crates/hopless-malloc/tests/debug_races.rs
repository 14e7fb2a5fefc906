//! Two races on a store's values, in C under `LD_PRELOAD=libhopless.so HOPLESS_DEBUG=1`: a value freed
//! by two paths at once, and a value used after another thread freed it. Both must abort with a report.

mod common;

#[global_allocator]
static GLOBAL: hl::Hopless = hl::Hopless;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

#[test]
fn races_on_a_freed_value_are_caught_under_preload_in_debug_mode() {
    let so = common::libhopless();
    let dir = common::scratch("races");
    let bin = dir.join("races");
    common::cc_program("races", &bin, &[]);
    let run = |mode: &str| {
        let out = Command::new(&bin)
            .arg(mode)
            .env("LD_PRELOAD", &so)
            .env("HOPLESS_DEBUG", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGABRT),
            "{mode}: should abort; stderr:\n{err}"
        );
        let victim = err
            .lines()
            .find_map(|l| l.strip_prefix("victim "))
            .expect("victim line")
            .to_string();
        assert!(err.contains(&format!("pointer: {victim}")), "{mode}: {err}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), err)
    };
    let (_, err) = run("double");
    assert!(err.contains("hopless debug: fatal: double free"), "{err}");
    assert!(
        err.contains(" free  by thread"),
        "the first free is in the history: {err}"
    );
    let (out, err) = run("uaf");
    assert!(
        out.contains("read: dddddddddddddddd"),
        "the reader sees poison, not stale data: {out}"
    );
    assert!(
        err.contains("write after free") && err.contains("damaged byte at offset: 5"),
        "{err}"
    );
    // Without debug mode the same program runs to the end: the check is what catches it.
    let out = Command::new(&bin)
        .arg("uaf")
        .env("LD_PRELOAD", &so)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("not caught"));
}
