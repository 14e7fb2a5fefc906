//! The C API from C (`tests/c/api.c`): glibc's introspection calls (`mallinfo2`, `mallinfo`,
//! `malloc_stats`, `malloc_info`, `mallopt`) answer from hopless's counts, preloaded and linked, from
//! several threads at once, before anything is allocated, and with glibc's answers to `mallopt`; the
//! calls of `include/hopless.h`, linked and installed with `scripts/install.sh`; the header itself.

mod common;

#[global_allocator]
static GLOBAL: hl::Hopless = hl::Hopless;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `tests/c/api.c` compiled into a scratch directory of the test's (`name`): plain, for the preload, and
/// linked with `hopless.h`. Warnings are errors, but for `mallinfo`'s deprecation, which is tested.
fn programs(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let so = common::libhopless();
    let dir = common::scratch(name);
    let plain = dir.join("api");
    let warnings = ["-Wall", "-Wextra", "-Werror", "-Wno-deprecated-declarations"];
    common::cc_program("api", &plain, &warnings);
    let lib_dir = so.parent().unwrap().to_str().unwrap().to_string();
    let linked = dir.join("api_linked");
    let (search, rpath) = (format!("-L{lib_dir}"), format!("-Wl,-rpath,{lib_dir}"));
    let include = format!("-I{}", include_dir());
    let mut args = warnings.to_vec();
    args.extend(["-DWITH_HOPLESS_H", &include, &search, "-lhopless", &rpath]);
    common::cc_program("api", &linked, &args);
    (so, plain, linked)
}

fn include_dir() -> String {
    format!("{}/include", env!("CARGO_MANIFEST_DIR"))
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

#[test]
fn every_call_of_the_header_runs_and_agrees_with_mallinfo2_and_the_stats_table() {
    let (_, _, linked_program) = programs("c-api-extension");
    let out = linked(&linked_program, "extension");
    common::assert_ok(&out, "linked");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    // The table at exit carries the same totals line.
    let out = Command::new(&linked_program)
        .arg("extension")
        .env_remove("LD_LIBRARY_PATH")
        .env("HOPLESS_SHOW_STATS", "1")
        .output()
        .unwrap();
    common::assert_ok(&out, "with HOPLESS_SHOW_STATS");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("held: ")).count(),
        1,
        "{err}"
    );
}

#[test]
fn the_header_is_c89_c99_and_cpp_clean() {
    let dir = common::scratch("c-api-header");
    let src = dir.join("use.c");
    std::fs::write(
        &src,
        "#include <hopless.h>\n\
         int main(void) {\n\
         struct hopless_stats s;\n\
         void *p[2];\n\
         size_t n = hopless_malloc_batch(8, p, 2);\n\
         hopless_free_batch(p, n);\n\
         return hopless_stats(&s, sizeof s) == sizeof s ? 0 : 1;\n\
         }\n",
    )
    .unwrap();
    let include = format!("-I{}", include_dir());
    let src = src.to_str().unwrap();
    for (compiler, std) in [
        ("cc", "-std=c89"),
        ("cc", "-std=c99"),
        ("c++", "-std=c++98"),
        ("c++", "-std=c++17"),
    ] {
        let lang: &[&str] = if compiler == "c++" { &["-x", "c++"] } else { &[] };
        let out = Command::new(compiler)
            .args(lang)
            .args([
                std,
                "-pedantic",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
                &include,
                src,
            ])
            .output()
            .expect("a C and a C++ compiler (cc, c++)");
        assert!(
            out.status.success(),
            "{compiler} {std}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn install_script_installs_what_pkg_config_names() {
    let so = common::libhopless();
    let dir = common::scratch("c-api-install");
    let script = format!("{}/../../scripts/install.sh", env!("CARGO_MANIFEST_DIR"));
    let install = |prefix: &Path| {
        let out = Command::new("bash")
            .arg(&script)
            .arg(prefix)
            .env("HOPLESS_LIB_DIR", so.parent().unwrap())
            .output()
            .unwrap();
        common::assert_ok(&out, "install.sh");
        for f in [
            "lib/libhopless.so",
            "lib/libhopless.a",
            "include/hopless.h",
            "lib/pkgconfig/hopless.pc",
        ] {
            assert!(prefix.join(f).is_file(), "{f} installed");
        }
        std::fs::read_to_string(prefix.join("lib/pkgconfig/hopless.pc")).unwrap()
    };
    // `&` and `|` mean something in sed's replacement: the script escapes them.
    let odd = dir.join("pre&fix|dir");
    let pc = install(&odd);
    assert!(pc.contains(&format!("\nprefix={}\n", odd.display())), "{pc}");

    let prefix = dir.join("prefix");
    let pc = install(&prefix);
    assert!(!pc.contains('@'), "every placeholder filled: {pc}");
    let pkg = |what: &str| {
        let out = Command::new("pkg-config")
            .args([what, "hopless"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
            .output()
            .expect("pkg-config");
        common::assert_ok(&out, what);
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let p = prefix.to_str().unwrap();
    assert_eq!(pkg("--cflags"), format!("-I{p}/include"));
    assert_eq!(pkg("--libs"), format!("-L{p}/lib -lhopless"));
    assert_eq!(pkg("--modversion"), env!("CARGO_PKG_VERSION"));
    // A program built with what pkg-config says runs on the installed library.
    let program = dir.join("api");
    let rpath = format!("-Wl,-rpath,{p}/lib");
    let (cflags, libs) = (pkg("--cflags"), pkg("--libs"));
    let mut args = vec!["-Wno-deprecated-declarations", "-DWITH_HOPLESS_H", &rpath];
    args.extend(cflags.split_whitespace());
    args.extend(libs.split_whitespace());
    common::cc_program("api", &program, &args);
    let out = linked(&program, "extension");
    common::assert_ok(&out, "installed");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    let ldd = Command::new("ldd")
        .arg(&program)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&ldd.stdout).contains(&format!("{p}/lib/libhopless.so")));
}

#[test]
fn the_memory_limit_refuses_what_would_pass_it_with_enomem() {
    let (_, _, linked_program) = programs("c-api-limit");
    let out = Command::new(&linked_program)
        .arg("limit")
        .env_remove("LD_LIBRARY_PATH")
        .env("HOPLESS_LIMIT", "16m")
        .output()
        .unwrap();
    common::assert_ok(&out, "limit");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");

    // A limit that is not a size is refused with a message, and none is set.
    let out = Command::new(&linked_program)
        .arg("limit")
        .env_remove("LD_LIBRARY_PATH")
        .env("HOPLESS_LIMIT", "16 megabytes")
        .output()
        .unwrap();
    assert!(!out.status.success(), "no limit, so the first check fails");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HOPLESS_LIMIT is not a size"), "{err}");
}

#[test]
fn a_heap_profile_from_c() {
    let (_, _, linked_program) = programs("c-api-profile");
    let dump = common::scratch("c-api-profile-dump").join("heap.pb.gz");
    let out = Command::new(&linked_program)
        .arg("profile")
        .env_remove("LD_LIBRARY_PATH")
        .env("PROF_PATH", &dump)
        .output()
        .unwrap();
    common::assert_ok(&out, "profile");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    let mut o = hopless_prof::Options::new(&dump);
    o.collapsed = true;
    let folded = hopless_prof::run(&o).unwrap();
    let kept: u64 = folded
        .lines()
        .filter(|l| l.contains("keep_for_profile"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    // 1000 B blocks at a 4 KiB interval: about 430 samples, 5% standard error.
    let want = 2000.0 * 1000.0;
    assert!(
        (kept as f64 - want).abs() / want < 0.25,
        "{kept} bytes in use, {want} expected:\n{folded}"
    );
}
