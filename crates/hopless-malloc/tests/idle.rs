//! Memory back when idle: a C program under the preload frees a burst of 1 GiB (2 M blocks of 256 B,
//! 512 of 1 MiB) and sleeps without calling the allocator; the background thread gives the memory back
//! within a second, in the program and in a child it forks. With `HOPLESS_BACKGROUND=0` the memory stays
//! until the next call, which shows the thread is what gives it back.

mod common;

use std::process::Command;

/// `(who, base, peak, samples)` from the program's lines.
fn parse(out: &str) -> Vec<(String, i64, i64, Vec<i64>)> {
    out.lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!((w[1], w[3], w[5]), ("base", "peak", "after"), "{l}");
            let n = |s: &str| s.parse::<i64>().unwrap();
            (
                w[0].to_string(),
                n(w[2]),
                n(w[4]),
                w[6..].iter().map(|s| n(s)).collect(),
            )
        })
        .collect()
}

#[test]
fn a_freed_burst_goes_back_without_another_call() {
    let so = common::libhopless();
    let dir = common::scratch("idle");
    let exe = dir.join("idle");
    common::cc_program("idle", &exe, &[]);

    let out = Command::new(&exe).env("LD_PRELOAD", &so).output().unwrap();
    common::assert_ok(&out, "idle");
    let text = String::from_utf8_lossy(&out.stdout);
    let runs = parse(&text);
    assert_eq!(runs.len(), 2, "{text}");
    for (who, base, peak, after) in &runs {
        assert!(peak - base > 900 * 1024, "{who}: the burst was resident: {text}");
        // Within a second (the fourth sample), back within 10% of the baseline (the program's own
        // arrays, 16 MiB): what stays is each sleeping segment's first page (its header, granule table
        // and first slab headers: 4 KiB of 4 MiB) and the thread's magazines.
        let second = after[3];
        let kept = second - base;
        assert!(
            kept < base / 10,
            "{who}: {kept} KiB of a {} KiB burst still resident after a second, over a {base} KiB baseline: {text}",
            peak - base
        );
        assert!(
            after.iter().skip(3).all(|&s| s <= second + 256),
            "{who}: grew again: {text}"
        );
    }

    let out = Command::new(&exe)
        .env("LD_PRELOAD", &so)
        .env("HOPLESS_BACKGROUND", "0")
        .output()
        .unwrap();
    common::assert_ok(&out, "idle without the thread");
    let text = String::from_utf8_lossy(&out.stdout);
    // The parent's run (the child starts with the parent's kept pages counted in its baseline).
    for (who, base, peak, after) in parse(&text).into_iter().take(1) {
        assert!(
            after[after.len() - 1] - base > (peak - base) / 20,
            "{who}: without the background thread the pages stay until the next call: {text}"
        );
    }
}
