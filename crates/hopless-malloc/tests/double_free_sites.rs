//! The call sites of a double free: a C program built as distributions build them (`-O2 -g`, no frame
//! pointers) frees a block in one static function and again in another; under `HOPLESS_DEBUG=1` the
//! report names the function of the refused free and the function of the earlier one, each with its
//! caller (from the program file's symbol table: no dynamic symbol names them).

mod common;

use std::process::Command;

#[test]
fn a_double_free_report_names_both_functions_that_freed() {
    let so = common::libhopless();
    let dir = common::scratch("double-free-sites");
    let exe = dir.join("double_free_sites");
    // Static functions, no -rdynamic: only the file's symbol table names them.
    common::cc_program("double_free_sites", &exe, &["-O2", "-g", "-fomit-frame-pointer"]);
    let out = Command::new(&exe)
        .env("LD_PRELOAD", &so)
        .env("HOPLESS_DEBUG", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the double free must stop the program: {err}"
    );
    assert!(err.contains("hopless debug: fatal: double free"), "{err}");
    let (now, earlier) = err
        .split_once("the last free of this pointer")
        .unwrap_or_else(|| panic!("no earlier free's stack: {err}"));
    let now = now
        .split_once("this operation, from:")
        .unwrap_or_else(|| panic!("no stack of the refused free: {err}"))
        .1;
    // The innermost frame shown is the program's function that called free, then main.
    let first_line = |s: &str| {
        s.lines()
            .find(|l| l.trim_start().starts_with('#'))
            .unwrap_or("")
            .to_string()
    };
    assert!(first_line(now).contains(" release_the_request_again+0x"), "{err}");
    assert!(first_line(earlier).contains(" release_the_request+0x"), "{err}");
    assert!(now.contains(" main+0x") && earlier.contains(" main+0x"), "{err}");
    // Each frame also says where it is in its module, for addr2line.
    assert!(now.contains("double_free_sites+0x"), "{err}");
}
