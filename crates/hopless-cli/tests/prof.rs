//! `hopless prof` as a user runs it: the built binary on a profile file it did not write.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hopless_prof::{file, Builder};

fn hopless(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hopless"))
        .args(args)
        .output()
        .expect("run hopless")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A directory of the test's own: the tests run at once and each removes its directory at the end.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopless-cli-prof-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A hopless heap profile of a module no longer on disk: a 3 MiB site called from `main` (through a
/// frame the profile symbolized), and a 1 MiB one in the module alone.
fn write_profile(path: &Path) {
    let mut b = Builder::hopless_heap(512 * 1024);
    let m = b.mapping(0x5600_0000_0000, 0x5600_0010_0000, 0x1000, "/gone/bin/server", "");
    let main = b.function("server::main", "/src/server/src/main.rs");
    let outer = b.symbolized_location(m, 0x5600_0000_9000, &[(main, 7)]);
    let big = b.location(m, 0x5600_0000_0100);
    let small = b.location(m, 0x5600_0000_0200);
    b.sample(&[big, outer], &[6, 6 << 20, 3, 3 << 20]);
    b.sample(&[small], &[40, 1 << 20, 10, 1 << 20]);
    file::write(path, &b.finish()).unwrap();
}

#[test]
fn prof_prints_the_report_of_a_profile_file() {
    let d = dir("report");
    let path = d.join("heap.pb.gz");
    write_profile(&path);
    let p = path.to_str().unwrap();

    let text = stdout(&hopless(&["prof", p]));
    assert!(
        text.contains("Type: inuse_space (bytes), sampled every 512.0 KiB"),
        "{text}"
    );
    assert!(text.contains("Total: 4.0 MiB in 2 samples"), "{text}");
    // The flat table, largest first: the site at file offset 0x1100, then the one at 0x1200.
    let flat: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Top 3 of 3 functions by flat"))
        .skip(2)
        .take(3)
        .collect();
    assert!(
        flat[0].trim_start().starts_with("3.0 MiB  75.0%  75.0%"),
        "{text}"
    );
    assert!(flat[0].ends_with("server+0x1100"), "{text}");
    assert!(flat[1].ends_with("server+0x1200"), "{text}");
    assert!(flat[2].ends_with("server::main"), "{text}");
    assert!(text.contains("server::main  server/src/main.rs:7"), "{text}");

    let objects = stdout(&hopless(&["prof", p, "--sample", "alloc_objects", "--top", "1"]));
    assert!(objects.contains("Total: 46 in 2 samples"), "{objects}");
    assert!(objects.contains("Top 1 of 3 functions by flat"), "{objects}");
    assert!(
        objects.lines().any(|l| l.starts_with("  40  87.0%  87.0%")),
        "{objects}"
    );

    let folded = stdout(&hopless(&["prof", p, "--collapsed", "--sample", "inuse"]));
    assert_eq!(
        folded,
        format!(
            "server+0x1200 {}\nserver::main;server+0x1100 {}\n",
            1 << 20,
            3 << 20
        )
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn prof_draws_the_chart() {
    let d = dir("chart");
    let path = d.join("heap.pb.gz");
    write_profile(&path);
    let svg = d.join("top.svg");
    let o = hopless(&["prof", path.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && err.contains("font") {
        eprintln!("no font to draw with: {err}");
        return;
    }
    let text = stdout(&o);
    assert!(text.contains(&format!("Chart: {}", svg.display())), "{text}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("server+0x1100"), "{svg}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn prof_refuses_what_is_not_a_profile() {
    let d = dir("bad");
    let bad = d.join("notes.txt");
    std::fs::write(&bad, "not a profile\n").unwrap();
    for (path, says) in [
        (bad.clone(), "not a pprof profile"),
        (d.join("missing.pb.gz"), "No such file"),
    ] {
        let o = hopless(&["prof", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(path.to_str().unwrap()) && err.contains(says),
            "{err}"
        );
    }
    let o = hopless(&["prof", bad.to_str().unwrap(), "--sample", "cpu"]);
    assert!(!o.status.success(), "clap refuses an unknown sample type");
    let _ = std::fs::remove_dir_all(d);
}
