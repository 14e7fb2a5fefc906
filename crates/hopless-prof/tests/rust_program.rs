//! The heap profile of a Rust program through `#[global_allocator]` (`hopless::profile`): the blocks it
//! keeps, by the function that allocated them, within the sampling error; a vector grown by pushes
//! (reallocs that move or grow large blocks in place) counts at its full size; freed blocks leave the
//! in-use profile and stay in the allocation profile; sized frees and reallocs of sampled blocks work.
//! Own binary, one test: sampling is the process's. Here rather than in `hopless`, so that the
//! allocator's tests on other targets (musl, aarch64 under qemu) do not build this crate.

use std::collections::HashMap;
use std::ffi::CString;
use std::hint::black_box;

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

#[inline(never)]
fn keep_small_blocks(keep: &mut Vec<Vec<u8>>) {
    for _ in 0..1000 {
        keep.push(black_box(vec![1u8; 4096]));
    }
}

#[inline(never)]
fn keep_big_blocks(keep: &mut Vec<Vec<u8>>) {
    for _ in 0..10 {
        keep.push(black_box(vec![1u8; 1 << 20]));
    }
}

#[inline(never)]
fn grow_by_pushes(keep: &mut Vec<Vec<u8>>) {
    let mut v = Vec::new();
    for i in 0..(4usize << 20) {
        v.push(i as u8);
    }
    keep.push(v);
}

#[inline(never)]
fn churn() -> usize {
    let mut sum = 0;
    for i in 0..100_000usize {
        let v = black_box(vec![0u8; 100 + i % 900]);
        sum += v.len();
    }
    sum
}

/// The dump's stacks as `hopless prof --collapsed` prints them, for one sample type: the bytes of the
/// stacks that pass through each of `names`.
fn bytes_through(dump: &std::path::Path, sample: &str, names: &[&str]) -> HashMap<String, u64> {
    let mut o = hopless_prof::Options::new(dump);
    o.collapsed = true;
    o.sample = Some(sample.to_string());
    let folded = hopless_prof::run(&o).unwrap();
    let mut out = HashMap::new();
    for line in folded.lines() {
        let (stack, value) = line.rsplit_once(' ').unwrap();
        for n in names {
            if stack.split(';').any(|f| f.contains(n)) {
                *out.entry(n.to_string()).or_insert(0) += value.parse::<u64>().unwrap();
            }
        }
    }
    out
}

fn assert_near(got: &HashMap<String, u64>, name: &str, want: u64, tolerance: f64) {
    let g = *got
        .get(name)
        .unwrap_or_else(|| panic!("no stack through {name}: {got:?}"));
    let err = (g as f64 - want as f64).abs() / want as f64;
    assert!(
        err <= tolerance,
        "{name}: {g} bytes, {want} expected (±{tolerance}): {got:?}"
    );
}

#[test]
fn a_rust_programs_heap_by_call_site() {
    hopless::profile::start(16 << 10);
    assert!(hopless::profile::is_active());
    let mut keep = Vec::with_capacity(2000);
    keep_small_blocks(&mut keep);
    keep_big_blocks(&mut keep);
    grow_by_pushes(&mut keep);
    let churned = churn();
    // Sampled blocks freed through sized frees (and a realloc of each) while sampling goes on.
    let mut freed: Vec<Vec<u8>> = (0..2000).map(|_| vec![2u8; 700]).collect();
    for v in &mut freed {
        v.resize(5000, 3);
        assert!(v[..700].iter().all(|&b| b == 2) && v[700..].iter().all(|&b| b == 3));
    }
    drop(freed);

    let dir = std::env::temp_dir().join(format!("hopless-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join("heap.pb.gz");
    let path = CString::new(dump.to_str().unwrap()).unwrap();
    hopless::profile::dump(&path).unwrap();
    hopless::profile::stop();

    let names = ["keep_small_blocks", "keep_big_blocks", "grow_by_pushes", "churn"];
    let inuse = bytes_through(&dump, "inuse_space", &names);
    // 4 KiB blocks at a 16 KiB interval: about 220 samples, 6% standard error.
    assert_near(&inuse, "keep_small_blocks", 1000 * 4096, 0.25);
    assert_near(&inuse, "keep_big_blocks", 10 << 20, 0.02);
    // The final 4 MiB buffer (its last growth is always sampled: 4 MiB is 256 intervals).
    assert_near(&inuse, "grow_by_pushes", 4 << 20, 0.05);
    assert!(!inuse.contains_key("churn"), "freed blocks in use: {inuse:?}");
    let alloc = bytes_through(&dump, "alloc_space", &names);
    // 100 000 blocks of 100..1000 bytes: about 3400 samples, 2% standard error.
    assert_near(&alloc, "churn", churned as u64, 0.1);
    drop(keep);
    let _ = std::fs::remove_dir_all(&dir);
}
