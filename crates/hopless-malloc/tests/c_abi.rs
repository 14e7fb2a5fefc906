//! The C ABI, from C: a program compiled with `cc` during the test exercises every exported symbol and
//! glibc edge case, threads that free each other's blocks and exit, and fork from a threaded process. It
//! runs twice: with libhopless.so preloaded, and linked against it.

mod common;

#[global_allocator]
static GLOBAL: hl::Hopless = hl::Hopless;

use std::process::Command;

#[test]
fn c_program_passes_under_preload_and_when_linked() {
    let so = common::libhopless();
    let dir = common::scratch("c-abi");
    let plain = dir.join("malloc_test");
    common::cc_program("malloc_test", &plain, &[]);
    let out = Command::new(&plain).env("LD_PRELOAD", &so).output().unwrap();
    common::assert_ok(&out, "preloaded");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");

    let lib_dir = so.parent().unwrap().to_str().unwrap().to_string();
    let linked = dir.join("malloc_test_linked");
    let (search, rpath) = (format!("-L{lib_dir}"), format!("-Wl,-rpath,{lib_dir}"));
    common::cc_program("malloc_test", &linked, &[&search, "-lhopless", &rpath]);
    let ldd = Command::new("ldd")
        .arg(&linked)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ldd.stdout).contains("libhopless.so"),
        "linked against libhopless"
    );
    // cargo's LD_LIBRARY_PATH may name another copy of the library; the rpath must decide.
    let out = Command::new(&linked)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    common::assert_ok(&out, "linked");

    // The same program, every check on: debug mode and hardened mode find nothing wrong in it.
    for mode in ["HOPLESS_DEBUG", "HOPLESS_HARDENED"] {
        let out = Command::new(&plain)
            .env("LD_PRELOAD", &so)
            .env(mode, "1")
            .output()
            .unwrap();
        common::assert_ok(&out, mode);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    }

    // The options: stats at exit and the configuration at start, written without allocating.
    let out = Command::new(&plain)
        .env("LD_PRELOAD", &so)
        .env("HOPLESS_SHOW_STATS", "1")
        .env("HOPLESS_VERBOSE", "1")
        .output()
        .unwrap();
    common::assert_ok(&out, "with options");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hopless: libhopless loaded"), "{err}");
    assert!(err.contains("alloc_fast") && err.contains("large:"), "{err}");
}
