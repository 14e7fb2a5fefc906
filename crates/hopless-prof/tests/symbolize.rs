//! Symbolization against a module that is really there: this test binary, mapped as /proc/self/maps
//! says, with locations inside two functions of its own.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use hopless_prof::{collapsed, file, report, top, Builder, Options, Stacks};

/// The "allocation site" of the test profile: its name is what the report must find.
#[inline(never)]
fn prof_test_inner_allocator(n: usize) -> Vec<u64> {
    (0..black_box(n) as u64).map(|i| i * 3 + 1).collect()
}

/// Its caller; a body unlike the inner one's, so the two are not merged into one function.
#[inline(never)]
fn prof_test_outer_caller(n: usize) -> u64 {
    let v = prof_test_inner_allocator(n);
    v.iter().fold(7, |a, b| a.rotate_left(5) ^ b)
}

/// The executable's mappings from /proc/self/maps: (start, limit, file offset).
fn exe_mappings() -> (PathBuf, Vec<(u64, u64, u64)>) {
    let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut out = Vec::new();
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || Path::new(fields[5]) != exe {
            continue;
        }
        let (start, end) = fields[0].split_once('-').unwrap();
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        out.push((hex(start), hex(end), hex(fields[2])));
    }
    assert!(!out.is_empty(), "{} not in /proc/self/maps", exe.display());
    (exe, out)
}

/// A hopless heap profile of two stacks: inner called from outer (2 KiB in use), and outer alone
/// (100 B in use), with the module's build id as given.
fn profile(build_id: &str) -> hopless_prof::proto::Profile {
    profile_of(&exe_mappings().0, build_id)
}

/// The same profile with the executable's mappings naming `module` as their file.
fn profile_of(module: &Path, build_id: &str) -> hopless_prof::proto::Profile {
    assert_eq!(
        black_box(prof_test_outer_caller(black_box(3))),
        prof_test_outer_caller(3)
    );
    let (_, maps) = exe_mappings();
    let mut b = Builder::hopless_heap(512 * 1024);
    let ids: Vec<(u64, u64, u64)> = maps
        .iter()
        .map(|&(start, end, off)| {
            (
                b.mapping(start, end, off, module.to_str().unwrap(), build_id),
                start,
                end,
            )
        })
        .collect();
    let mut location = |f: usize| {
        // One byte into the function: inside it, as a call site's address would be.
        let address = f as u64 + 1;
        let &(id, ..) = ids
            .iter()
            .find(|&&(_, start, end)| (start..end).contains(&address))
            .expect("the function lies in a mapping of the executable");
        b.location(id, address)
    };
    let inner = location(prof_test_inner_allocator as *const () as usize);
    let outer = location(prof_test_outer_caller as *const () as usize);
    b.sample(&[inner, outer], &[3, 3000, 2, 2048]);
    b.sample(&[outer], &[1, 100, 1, 100]);
    b.finish()
}

fn name_of(rows: &[top::FunctionRow], i: usize) -> &str {
    &rows[i].name
}

#[test]
fn the_report_names_both_functions_with_their_values_in_order() {
    let p = profile("");
    let stacks = Stacks::new(&p, None).unwrap();
    assert_eq!(stacks.sample_type, "inuse_space");
    assert_eq!(stacks.total, 2148);
    assert!(stacks.unreadable.is_empty(), "{:?}", stacks.unreadable);

    let flat = top::by_flat(&stacks);
    assert_eq!(flat.len(), 2, "{flat:?}");
    assert!(
        name_of(&flat, 0).ends_with("prof_test_inner_allocator"),
        "{flat:?}"
    );
    assert!(name_of(&flat, 1).ends_with("prof_test_outer_caller"), "{flat:?}");
    assert_eq!((flat[0].flat, flat[0].cum), (2048, 2048));
    assert_eq!((flat[1].flat, flat[1].cum), (100, 2148));
    // Named by the symbol table in full: line-tables-only DWARF gives the bare name.
    assert_eq!(name_of(&flat, 0), "symbolize::prof_test_inner_allocator");
    let cum = top::by_cum(&stacks);
    assert!(name_of(&cum, 0).ends_with("prof_test_outer_caller"), "{cum:?}");

    // The symbolizer found source lines for them: this file.
    let site = &top::sites(&stacks)[0];
    assert_eq!(site.value, 2048);
    let src = site.frames[0].source().unwrap_or_default();
    assert!(src.contains("symbolize.rs:"), "{src}");

    let text = report::text(&stacks, "test.pb.gz", 20);
    let line = |name: &str, table: usize| -> String {
        text.split("\n\n")
            .nth(table)
            .and_then(|t| t.lines().find(|l| l.ends_with(name)))
            .unwrap_or_else(|| panic!("no {name} in table {table} of\n{text}"))
            .to_owned()
    };
    // The flat table: inner first (2.0 KiB, 95.3%), outer second (100 B flat, 2.1 KiB cum).
    let flat_table = text.split("\n\n").nth(1).unwrap();
    let inner_at = flat_table.find("prof_test_inner_allocator").unwrap();
    let outer_at = flat_table.find("prof_test_outer_caller").unwrap();
    assert!(inner_at < outer_at, "{text}");
    let l = line("prof_test_inner_allocator", 1);
    assert!(l.trim_start().starts_with("2.0 KiB  95.3%  95.3%"), "{l}");
    let l = line("prof_test_outer_caller", 1);
    assert!(l.contains("100 B   4.7% 100.0%"), "{l}");
    assert!(l.contains("2.1 KiB 100.0%"), "{l}");
    assert!(text.contains("Total: 2.1 KiB in 2 samples"), "{text}");
}

#[test]
fn collapsed_stacks_run_outer_to_inner() {
    let p = profile("");
    let stacks = Stacks::new(&p, Some("alloc_objects")).unwrap();
    let folded = collapsed::folded(&stacks);
    let lines: Vec<&str> = folded.lines().collect();
    assert_eq!(lines.len(), 2, "{folded}");
    let both = lines
        .iter()
        .find(|l| l.contains(';'))
        .unwrap_or_else(|| panic!("{folded}"));
    let (stack, value) = both.rsplit_once(' ').unwrap();
    let (outer, inner) = stack.split_once(';').unwrap();
    assert!(outer.ends_with("prof_test_outer_caller"), "{folded}");
    assert!(inner.ends_with("prof_test_inner_allocator"), "{folded}");
    assert_eq!(value, "3");
    let alone = lines.iter().find(|l| !l.contains(';')).unwrap();
    assert!(alone.ends_with("prof_test_outer_caller 1"), "{folded}");
}

#[test]
fn a_module_of_another_build_is_not_trusted() {
    let p = profile("00112233445566778899aabbccddeeff00112233");
    let stacks = Stacks::new(&p, None).unwrap();
    assert_eq!(stacks.unreadable.len(), 1, "{:?}", stacks.unreadable);
    assert!(
        stacks.unreadable[0].contains("build id"),
        "{:?}",
        stacks.unreadable
    );
    let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
    let base = exe.file_name().unwrap().to_str().unwrap();
    for s in &stacks.samples {
        for f in &s.frames {
            assert!(f.function.starts_with(&format!("{base}+0x")), "{}", f.function);
        }
    }
}

#[test]
fn the_command_reads_a_file_and_draws_the_chart() {
    let dir = std::env::temp_dir().join(format!("hopless-prof-cmd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("heap.pb.gz");
    file::write(&path, &profile("")).unwrap();
    let mut o = Options::new(&path);
    o.sample = Some("alloc".into());
    o.svg = Some(dir.join("top.svg"));
    match hopless_prof::run(&o) {
        Ok(text) => {
            assert!(text.contains("Type: alloc_space (bytes)"), "{text}");
            assert!(text.contains("Total: 3.0 KiB"), "{text}");
            let svg = std::fs::read_to_string(dir.join("top.svg")).unwrap();
            assert!(svg.starts_with("<svg"), "{svg}");
            assert!(svg.contains("prof_test_inner_allocator"));
            assert!(svg.contains("alloc_space"));
        }
        Err(e) => assert!(e.to_string().contains("font"), "{e}"),
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_dwarf_the_symbol_table_names_the_functions() {
    let dir = std::env::temp_dir().join(format!("hopless-prof-strip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stripped = dir.join("stripped");
    let status = std::process::Command::new("objcopy")
        .arg("--strip-debug")
        .arg(&exe_mappings().0)
        .arg(&stripped)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("objcopy (binutils) not available: the symbol-table fallback is not tested");
        return;
    }
    let p = profile_of(&stripped, "");
    let stacks = Stacks::new(&p, None).unwrap();
    let flat = top::by_flat(&stacks);
    assert_eq!(flat[0].name, "symbolize::prof_test_inner_allocator", "{flat:?}");
    assert_eq!(flat[1].name, "symbolize::prof_test_outer_caller", "{flat:?}");
    // A symbol has a name and no line.
    assert_eq!(top::sites(&stacks)[0].frames[0].source(), None);
    let _ = std::fs::remove_dir_all(dir);
}
