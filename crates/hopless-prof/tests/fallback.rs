//! Frames that do not come from a module's debug info: a module file that is gone, a location without
//! a mapping, and locations the profile already symbolized. Also which sample type is reported.

use hopless_prof::{collapsed, report, top, Builder, Error, Stacks};

const GONE: &str = "/nonexistent/hopless-prof-test/libgone.so";

/// Two stacks through a module that is not on disk, one location outside any mapping, and one
/// location the profile symbolized itself (two frames: an inlined one, then its caller).
fn profile() -> hopless_prof::proto::Profile {
    let mut b = Builder::hopless_heap(4096);
    let m = b.mapping(0x7f00_0000_0000, 0x7f00_0001_0000, 0x2000, GONE, "");
    let site = b.location(m, 0x7f00_0000_0234);
    let caller = b.location(m, 0x7f00_0000_0400);
    let loose = b.location(0, 0xdead_beef);
    let inlined = b.function("app::cache::Entry::new", "/src/app/src/cache.rs");
    let outer = b.function("app::cache::Cache::insert", "/src/app/src/cache.rs");
    // Recorded frames win even over a mapping: the profile's lines are used as they are.
    let symbolized = b.symbolized_location(m, 0x7f00_0000_0800, &[(inlined, 12), (outer, 40)]);
    b.sample(&[site, caller], &[5, 5000, 3, 3072]);
    b.sample(&[loose], &[1, 16, 1, 16]);
    b.sample(&[symbolized, caller], &[2, 200, 2, 2 << 20]);
    b.finish()
}

#[test]
fn a_missing_module_names_frames_by_file_offset() {
    let p = profile();
    let stacks = Stacks::new(&p, None).unwrap();
    let names: Vec<&str> = stacks.samples[0]
        .frames
        .iter()
        .map(|f| f.function.as_str())
        .collect();
    // memory_start + 0x234 at file offset 0x2000: offset 0x2234 in the file.
    assert_eq!(names, ["libgone.so+0x2234", "libgone.so+0x2400"]);
    assert_eq!(stacks.unreadable.len(), 1);
    assert!(stacks.unreadable[0].starts_with(GONE), "{:?}", stacks.unreadable);
    let text = report::text(&stacks, "p", 20);
    assert!(text.contains("Note: 1 module could not be read"), "{text}");
}

#[test]
fn a_location_without_a_mapping_is_its_address() {
    let p = profile();
    let stacks = Stacks::new(&p, None).unwrap();
    assert_eq!(stacks.samples[1].frames[0].function, "0xdeadbeef");
}

#[test]
fn recorded_lines_are_used_as_they_are() {
    let p = profile();
    let stacks = Stacks::new(&p, None).unwrap();
    let frames = &stacks.samples[2].frames;
    let names: Vec<&str> = frames.iter().map(|f| f.function.as_str()).collect();
    assert_eq!(
        names,
        [
            "app::cache::Entry::new",
            "app::cache::Cache::insert",
            "libgone.so+0x2400"
        ]
    );
    assert_eq!(frames[0].source().as_deref(), Some("app/src/cache.rs:12"));

    // The inlined frame holds the flat value; its caller and the module frame hold it as cum.
    let flat = top::by_flat(&stacks);
    assert_eq!(flat[0].name, "app::cache::Entry::new");
    assert_eq!((flat[0].flat, flat[0].cum), (2 << 20, 2 << 20));
    let cum = top::by_cum(&stacks);
    assert_eq!(cum[0].name, "libgone.so+0x2400");
    assert_eq!(cum[0].cum, (2 << 20) + 3072);

    let folded = collapsed::folded(&stacks);
    assert!(
        folded.contains(&format!(
            "libgone.so+0x2400;app::cache::Cache::insert;app::cache::Entry::new {}\n",
            2 << 20
        )),
        "{folded}"
    );
}

#[test]
fn the_sample_type_is_the_default_or_the_one_asked_for() {
    let p = profile();
    let total = |sample: Option<&str>| {
        let s = Stacks::new(&p, sample).unwrap();
        (s.sample_type, s.unit, s.total)
    };
    let inuse = (
        "inuse_space".to_string(),
        "bytes".to_string(),
        3072 + 16 + (2 << 20),
    );
    assert_eq!(total(None), inuse);
    assert_eq!(total(Some("inuse")), inuse);
    assert_eq!(total(Some("inuse_objects")).2, 6);
    assert_eq!(total(Some("alloc")).2, 5216);
    assert_eq!(
        total(Some("alloc_objects")),
        ("alloc_objects".into(), "count".into(), 8)
    );

    // No default: the last sample type.
    let mut p2 = p.clone();
    p2.default_sample_type = 0;
    p2.sample_type.swap(0, 3);
    for s in &mut p2.sample {
        s.value.swap(0, 3);
    }
    assert_eq!(Stacks::new(&p2, None).unwrap().sample_type, "alloc_objects");

    match Stacks::new(&p, Some("cpu")) {
        Err(Error::NoSampleType { asked, available }) => {
            assert_eq!(asked, "cpu");
            assert_eq!(
                available,
                ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"]
            );
        }
        other => panic!("{:?}", other.map(|s| s.sample_type)),
    }
}

#[test]
fn byte_values_read_as_mib_and_counts_as_integers() {
    let p = profile();
    let text = report::text(&Stacks::new(&p, None).unwrap(), "p", 1);
    assert!(text.contains("Total: 2.0 MiB in 3 samples"), "{text}");
    assert!(text.contains("Top 1 of 5 functions by flat"), "{text}");
    let text = report::text(&Stacks::new(&p, Some("alloc_objects")).unwrap(), "p", 20);
    assert!(text.contains("Total: 8 in 3 samples"), "{text}");
}

#[test]
fn drop_frames_cuts_the_allocators_own_frames() {
    let mut b = Builder::hopless_heap(4096);
    let sampled = b.function("hopless::sample::sampled", "/src/hopless/src/sample.rs");
    let shim = b.function("__rust_alloc", "");
    let user = b.function("app::load", "/src/app/src/main.rs");
    let main = b.function("app::main", "/src/app/src/main.rs");
    let inner = b.symbolized_location(0, 0x1000, &[(sampled, 1), (shim, 0)]);
    let outer = b.symbolized_location(0, 0x2000, &[(user, 7)]);
    let top_frame = b.symbolized_location(0, 0x3000, &[(main, 3)]);
    let pattern = b.string("__rust_alloc|hopless::.*");
    b.sample(&[inner, outer, top_frame], &[1, 64, 1, 64]);
    // A stack without the allocator's frames keeps all of its own.
    b.sample(&[outer, top_frame], &[1, 32, 1, 32]);
    let mut p = b.finish();
    p.drop_frames = pattern;
    let stacks = Stacks::new(&p, None).unwrap();
    let names = |i: usize| -> Vec<String> {
        stacks.samples[i]
            .frames
            .iter()
            .map(|f| f.function.clone())
            .collect()
    };
    assert_eq!(names(0), ["app::load", "app::main"]);
    assert_eq!(names(1), ["app::load", "app::main"]);
    assert_eq!(top::by_flat(&stacks)[0].name, "app::load");
    // A pattern that does not compile drops nothing.
    p.drop_frames = b_string(&mut p, "(unclosed");
    assert_eq!(Stacks::new(&p, None).unwrap().samples[0].frames.len(), 4);
}

/// Adds `s` to `p`'s string table; its index.
fn b_string(p: &mut hopless_prof::proto::Profile, s: &str) -> i64 {
    p.string_table.push(s.to_string());
    p.string_table.len() as i64 - 1
}

#[test]
fn the_allocators_inlined_frames_go_by_their_files() {
    let mut b = Builder::hopless_heap(4096);
    let pop = b.function("counted_pop", "/work/main/crates/hopless/src/fast.rs");
    let small = b.function(
        "alloc_small",
        "/home/u/.cargo/registry/src/index/hopless-0.1.0/src/fast.rs",
    );
    let user = b.function("app::load", "/src/app/src/main.rs");
    let other = b.function("push", "/src/hopless-kv/src/list.rs");
    // One location: the allocator's code inlined into the program's function.
    let inlined = b.symbolized_location(0, 0x1000, &[(pop, 1), (small, 2), (user, 7)]);
    let kv = b.symbolized_location(0, 0x2000, &[(other, 3)]);
    b.sample(&[inlined], &[1, 64, 1, 64]);
    b.sample(&[kv, inlined], &[1, 32, 1, 32]);
    // Nothing but the allocator's frames: kept, rather than an empty stack.
    let only = b.symbolized_location(0, 0x3000, &[(pop, 1)]);
    b.sample(&[only], &[1, 16, 1, 16]);
    let p = b.finish();
    let stacks = Stacks::new(&p, None).unwrap();
    let names = |i: usize| -> Vec<String> {
        stacks.samples[i]
            .frames
            .iter()
            .map(|f| f.function.clone())
            .collect()
    };
    assert_eq!(names(0), ["app::load"]);
    // Only the innermost run goes: a crate whose name starts alike (hopless-kv) stays.
    assert_eq!(names(1), ["push", "counted_pop", "alloc_small", "app::load"]);
    assert_eq!(names(2), ["counted_pop"]);
}
