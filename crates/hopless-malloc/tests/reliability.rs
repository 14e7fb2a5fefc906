//! Reliability regressions, from C (`tests/c/reliability.c`, one subcommand per case) and Python: large
//! blocks churned through a few slots, fork with atfork handlers that allocate, many pthread keys, double and
//! invalid frees (each must abort with a report naming the pointer), no false positives, aligned blocks
//! (many at once, page tables, huge alignments), realloc growth, requests that cannot be met, memory per
//! thread, and foreign pages inside a large block's slot.
//!
//! Every case is its own child process with a deadline (some of these defects deadlock): under
//! `LD_PRELOAD=libhopless.so`, and the main ones also linked with `-lhopless`. The program is compiled once.

mod common;

#[global_allocator]
static GLOBAL: hl::Hopless = hl::Hopless;

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long one child may run before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(60);

/// Warnings on, minus the ones the bad frees provoke on purpose.
const WARNINGS: &[&str] = &[
    "-Wall",
    "-Wno-free-nonheap-object",
    "-Wno-use-after-free",
    "-Wno-stringop-overflow",
];

struct Programs {
    so: PathBuf,
    /// For `LD_PRELOAD` (and for glibc alone).
    plain: PathBuf,
    /// Linked with `-lhopless`, found through its rpath.
    linked: PathBuf,
}

fn programs() -> &'static Programs {
    static PROGRAMS: OnceLock<Programs> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let so = common::libhopless();
        let dir = common::scratch("reliability");
        let plain = dir.join("reliability");
        common::cc_program("reliability", &plain, WARNINGS);
        let lib_dir = so.parent().unwrap().to_str().unwrap().to_string();
        let linked = dir.join("reliability_linked");
        let (search, rpath) = (format!("-L{lib_dir}"), format!("-Wl,-rpath,{lib_dir}"));
        let mut extra: Vec<&str> = WARNINGS.to_vec();
        extra.extend_from_slice(&[search.as_str(), "-lhopless", rpath.as_str()]);
        common::cc_program("reliability", &linked, &extra);
        Programs { so, plain, linked }
    })
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum How {
    /// `LD_PRELOAD=libhopless.so`.
    Preload,
    /// Linked against libhopless.so.
    Linked,
    /// glibc's malloc, for comparison.
    Glibc,
}

struct Run {
    what: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "{}: {}\nstdout:\n{}\nstderr:\n{}",
            self.what, self.status, self.stdout, self.stderr
        )
    }

    /// The value of a `name value` line the program wrote to stderr.
    fn measure(&self, name: &str) -> i64 {
        self.stderr
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{name}` line: {}", self.describe()))
    }
}

fn spawn_reader(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// Runs `cmd` in a process group of its own with the deadline; on a timeout, kills the group and fails
/// with "hang".
fn run_cmd(mut cmd: Command, what: String) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: spawn: {e}"));
    let group = child.id() as i32;
    let out = spawn_reader(child.stdout.take().unwrap());
    let err = spawn_reader(child.stderr.take().unwrap());
    let start = Instant::now();
    let finished = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > DEADLINE {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Nothing of the group may outlive the run (a forked child stuck in the allocator, say).
    // SAFETY: kill(2) with no memory arguments, on the process group this run created; a group that is
    // already gone only gets ESRCH.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let status = finished.unwrap_or_else(|| child.wait().unwrap());
    let stdout = String::from_utf8_lossy(&out.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
    let run = Run {
        what,
        status,
        stdout,
        stderr,
    };
    assert!(
        finished.is_some(),
        "hang: still running after {DEADLINE:?}, killed. {}",
        run.describe()
    );
    run
}

/// Runs one subcommand of the C program.
fn run(how: How, args: &[&str], env: &[(&str, &str)]) -> Run {
    let p = programs();
    let mut cmd = Command::new(if how == How::Linked { &p.linked } else { &p.plain });
    cmd.args(args)
        .env_remove("LD_PRELOAD")
        .env_remove("HOPLESS_DEBUG")
        .env_remove("HOPLESS_HARDENED");
    match how {
        How::Preload => {
            cmd.env("LD_PRELOAD", &p.so);
        }
        How::Linked => {
            // cargo's LD_LIBRARY_PATH may name another copy of the library; the rpath must decide.
            cmd.env_remove("LD_LIBRARY_PATH");
        }
        How::Glibc => {}
    }
    cmd.envs(env.iter().copied());
    run_cmd(cmd, format!("{} ({how:?}, env {env:?})", args.join(" ")))
}

/// Runs a subcommand that must succeed ("ok", or "skip" when the case cannot be set up here).
fn expect_ok(how: How, args: &[&str]) -> Run {
    let r = run(how, args, &[]);
    assert!(
        r.status.success() && r.stdout.ends_with("ok\n"),
        "{}",
        r.describe()
    );
    r
}

fn ok_preload_and_linked(args: &[&str]) {
    expect_ok(How::Preload, args);
    expect_ok(How::Linked, args);
}

/// Whether `text` names the pointer `p` ("0x..." in lowercase hex) as a whole word.
fn names(text: &str, p: &str) -> bool {
    text.match_indices(p).any(|(i, _)| {
        !text[i + p.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_hexdigit())
    })
}

/// Runs a bad-free subcommand: it prints the pointer, then must die by SIGABRT with hopless's report naming
/// that pointer and containing one of `words` (any hopless report when `words` is empty).
fn abort_report(how: How, args: &[&str], env: &[(&str, &str)], words: &[&str]) -> Result<(), String> {
    let r = run(how, args, env);
    if r.stdout.starts_with("skip") {
        eprintln!("{}: skipped (no page could be mapped there)", r.what);
        return Ok(());
    }
    let ptr = r.stdout.lines().next().unwrap_or("").trim().to_string();
    if !ptr.starts_with("0x") {
        return Err(format!("no pointer line. {}", r.describe()));
    }
    if r.status.signal() != Some(libc::SIGABRT) {
        return Err(format!("should die by SIGABRT. {}", r.describe()));
    }
    if !r.stderr.contains("hopless") || !names(&r.stderr, &ptr) {
        return Err(format!(
            "the report must be hopless's and name {ptr}. {}",
            r.describe()
        ));
    }
    if !words.is_empty() && !words.iter().any(|w| r.stderr.contains(w)) {
        return Err(format!("the report must say {words:?}. {}", r.describe()));
    }
    Ok(())
}

fn expect_abort(how: How, args: &[&str], words: &[&str]) {
    if let Err(e) = abort_report(how, args, &[], words) {
        panic!("{e}");
    }
}

const DOUBLE: &[&str] = &["double free"];
const INTERIOR: &[&str] = &["not the start of a block"];
const FOREIGN: &[&str] = &["did not allocate"];

fn python3() -> bool {
    let found = Command::new("python3")
        .args(["-c", "pass"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("python3 not found: skipping");
    }
    found
}

fn python_preloaded(script: &str) -> Run {
    let mut cmd = Command::new("python3");
    cmd.args(["-c", script])
        .env("LD_PRELOAD", &programs().so)
        .env_remove("HOPLESS_DEBUG")
        .env_remove("HOPLESS_HARDENED");
    run_cmd(cmd, "python3 (preload)".to_string())
}

// ---------------------------------------------------------------------------------------------------------
// 1. Large blocks churned through a few slots

#[test]
fn large_churn() {
    ok_preload_and_linked(&["large_churn"]);
}

#[test]
fn large_threads() {
    ok_preload_and_linked(&["large_threads"]);
}

#[test]
fn python_large_bytearrays() {
    if !python3() {
        return;
    }
    let r = python_preloaded(
        r#"
import random
random.seed(7)
keep = [None] * 4
for i in range(300):
    b = bytearray(random.randint(300_000, 30_000_000))
    b[0] = 1
    b[-1] = 2
    k = random.randrange(4)
    if keep[k] is not None:
        assert keep[k][0] == 1 and keep[k][-1] == 2
    keep[k] = b
print("ok")
"#,
    );
    assert!(r.status.success() && r.stdout == "ok\n", "{}", r.describe());
}

// ---------------------------------------------------------------------------------------------------------
// 2. fork

#[test]
fn fork_atfork_before() {
    ok_preload_and_linked(&["fork_atfork_before"]);
}

#[test]
fn fork_atfork_after() {
    ok_preload_and_linked(&["fork_atfork_after"]);
}

#[test]
fn fork_beside_busy_threads() {
    ok_preload_and_linked(&["fork_threads"]);
}

// ---------------------------------------------------------------------------------------------------------
// 3. Many pthread keys before the first malloc

#[test]
fn many_keys_40() {
    ok_preload_and_linked(&["many_keys", "40"]);
}

#[test]
fn many_keys_200() {
    ok_preload_and_linked(&["many_keys", "200"]);
}

// ---------------------------------------------------------------------------------------------------------
// 4. Double and invalid frees abort with a report; correct programs never do

#[test]
fn df_immediate() {
    expect_abort(How::Preload, &["df_immediate"], DOUBLE);
    expect_abort(How::Linked, &["df_immediate"], DOUBLE);
}

#[test]
fn df_other_segment() {
    expect_abort(How::Preload, &["df_other_segment"], DOUBLE);
    expect_abort(How::Linked, &["df_other_segment"], DOUBLE);
}

#[test]
fn df_delayed() {
    expect_abort(How::Preload, &["df_delayed"], DOUBLE);
}

#[test]
fn df_after_shift() {
    expect_abort(How::Preload, &["df_after_shift"], DOUBLE);
    expect_abort(How::Linked, &["df_after_shift"], DOUBLE);
}

#[test]
fn df_refilled() {
    expect_abort(How::Preload, &["df_refilled"], DOUBLE);
}

#[test]
fn many_threads() {
    // More threads alive at once than there are cache ids.
    ok_preload_and_linked(&["many_threads"]);
}

#[test]
fn df_no_id() {
    expect_abort(How::Preload, &["df_no_id"], DOUBLE);
}

#[test]
fn df_interleaved() {
    expect_abort(How::Preload, &["df_interleaved"], DOUBLE);
}

#[test]
fn df_cross_thread() {
    expect_abort(How::Preload, &["df_cross_thread"], DOUBLE);
}

#[test]
fn df_after_thread_exit() {
    expect_abort(How::Preload, &["df_after_thread_exit"], DOUBLE);
}

#[test]
fn df_sizes() {
    let failures: Vec<String> = ["1", "8", "24", "100", "1000", "4096", "5000", "100000"]
        .iter()
        .filter_map(|size| abort_report(How::Preload, &["df_sizes", size], &[], DOUBLE).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn df_large() {
    expect_abort(How::Preload, &["df_large"], &[]);
}

#[test]
fn invalid_interior() {
    expect_abort(How::Preload, &["invalid_interior"], INTERIOR);
}

#[test]
fn invalid_stack() {
    expect_abort(How::Preload, &["invalid_stack"], FOREIGN);
    expect_abort(How::Linked, &["invalid_stack"], FOREIGN);
}

#[test]
fn invalid_metadata() {
    expect_abort(How::Preload, &["invalid_metadata"], &[]);
}

#[test]
fn invalid_never_allocated() {
    expect_abort(How::Preload, &["invalid_never_allocated"], &[]);
}

#[test]
fn no_false_positive() {
    ok_preload_and_linked(&["no_false_positive"]);
}

// ---------------------------------------------------------------------------------------------------------
// 5. Aligned blocks

#[test]
fn aligned_many() {
    ok_preload_and_linked(&["aligned_many"]);
}

#[test]
fn aligned_pagetables() {
    let r = expect_ok(How::Preload, &["aligned_pagetables"]);
    eprintln!(
        "VmPTE {} kB -> {} kB",
        r.measure("vmpte_kb_before"),
        r.measure("vmpte_kb_after")
    );
    expect_ok(How::Linked, &["aligned_pagetables"]);
}

#[test]
fn aligned_huge() {
    ok_preload_and_linked(&["aligned_huge"]);
}

// ---------------------------------------------------------------------------------------------------------
// 6. realloc growth

#[test]
fn realloc_grow() {
    for how in [How::Preload, How::Linked] {
        let r = expect_ok(how, &["realloc_grow"]);
        eprintln!("{how:?}: {}", r.stderr.lines().collect::<Vec<_>>().join("; "));
    }
}

// ---------------------------------------------------------------------------------------------------------
// 7. Requests that cannot be met

/// Whether the kernel refuses a mapping it can never back: not under `vm.overcommit_memory = 1`, where
/// every mapping succeeds (glibc's malloc(16 TiB) then succeeds too).
fn kernel_refuses_impossible_mappings() -> bool {
    let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    if mode.trim() == "1" {
        eprintln!("skipped: vm.overcommit_memory = 1 (the kernel backs every mapping on paper)");
        return false;
    }
    true
}

#[test]
fn enomem() {
    if !kernel_refuses_impossible_mappings() {
        return;
    }
    ok_preload_and_linked(&["enomem"]);
}

#[test]
fn python_enomem() {
    if !python3() || !kernel_refuses_impossible_mappings() {
        return;
    }
    let r = python_preloaded(
        "try:\n    bytes(2**44)\n    print('allocated')\nexcept MemoryError:\n    print('MemoryError')\n",
    );
    assert!(
        r.status.success() && r.stdout == "MemoryError\n",
        "{}",
        r.describe()
    );
}

// ---------------------------------------------------------------------------------------------------------
// 8. Threads

#[test]
fn thread_rss() {
    let glibc = expect_ok(How::Glibc, &["thread_rss"]).measure("vmrss_kb");
    let hopless = expect_ok(How::Preload, &["thread_rss"]).measure("vmrss_kb");
    eprintln!("VmRSS after 2000 threads: glibc {glibc} kB, hopless {hopless} kB");
    assert!(
        hopless <= 2 * glibc + 4096,
        "2000 threads: hopless VmRSS {hopless} kB, glibc {glibc} kB (limit 2 x glibc + 4 MB)"
    );
}

/// 2000 short-lived threads, one after another beside a busy one, each checking the contents of its
/// 64 blocks (the time per thread is a benchmark figure: `scripts/bench/reliability.py`).
#[test]
fn thread_churn() {
    ok_preload_and_linked(&["thread_churn"]);
}

/// A SCHED_FIFO thread and an ordinary one pinned to one core, both flushing to the same class: the lock
/// must let a preempted holder run (the old spin-then-yield lock waited forever here). Skipped where a
/// real-time thread cannot be made (no CAP_SYS_NICE).
#[test]
fn realtime_beside_ordinary() {
    for how in [How::Preload, How::Linked] {
        let r = expect_ok(how, &["realtime_beside_ordinary"]);
        if r.stdout.starts_with("skip") {
            eprintln!("realtime_beside_ordinary: skipped (no real-time scheduling here)");
        }
    }
}

/// Frees over many segments from many threads, destructors that allocate and free after the allocator's
/// exit hook, and a forked child freeing the parent's blocks (free's remembered segment).
#[test]
fn segments_threads_fork() {
    ok_preload_and_linked(&["segments_threads_fork"]);
}

#[test]
fn tsd_late_round() {
    for how in [How::Preload, How::Linked] {
        let r = expect_ok(how, &["tsd_late_round"]);
        eprintln!(
            "{how:?}: VmRSS {} kB after 100 threads, {} kB after 2000",
            r.measure("vmrss_kb_after_100"),
            r.measure("vmrss_kb_after_2000")
        );
    }
}

// ---------------------------------------------------------------------------------------------------------
// 9. Foreign pages inside a large block's slot

#[test]
fn foreign_in_slot() {
    let r = expect_ok(How::Preload, &["foreign_in_slot"]);
    if r.stdout.starts_with("skip") {
        eprintln!("foreign_in_slot: skipped (no page could be mapped after the block)");
    }
}

#[test]
fn foreign_free_in_slot() {
    expect_abort(How::Preload, &["foreign_free_in_slot"], FOREIGN);
}

// ---------------------------------------------------------------------------------------------------------
// 10. Debug mode

#[test]
fn debug_foreign_free() {
    if let Err(e) = abort_report(
        How::Preload,
        &["debug_foreign_free"],
        &[("HOPLESS_DEBUG", "1")],
        &[],
    ) {
        panic!("{e}");
    }
}

/// Threads trading unwritten blocks of every size and alignment through shared slots while the process
/// forks: no false double free, no crash, no hang; the same under hardened and debug modes.
#[test]
fn hostile_threads_trading_unwritten_blocks_while_forking() {
    let dir = common::scratch("hostile");
    let bin = dir.join("hostile");
    common::cc_program("hostile", &bin, &["-O2"]);
    for (mode, iters) in [
        (None, "200000"),
        (Some("HOPLESS_HARDENED"), "100000"),
        (Some("HOPLESS_DEBUG"), "10000"),
    ] {
        let mut cmd = Command::new(&bin);
        cmd.arg(iters).env("LD_PRELOAD", &programs().so);
        if let Some(m) = mode {
            cmd.env(m, "1");
        }
        let run = run_cmd(cmd, format!("hostile {mode:?}"));
        assert!(run.status.success() && run.stdout == "ok\n", "{}", run.describe());
    }
}

// ---------------------------------------------------------------------------------------------------------
// Hardened mode: the same bad frees are caught, and correct programs, forks, threads and growth run clean.

#[test]
fn hardened_mode_passes_the_reliability_cases() {
    const HARDENED: &[(&str, &str)] = &[("HOPLESS_HARDENED", "1")];
    let mut failures = Vec::new();
    for (args, words) in [
        (&["df_immediate"][..], DOUBLE),
        (&["df_delayed"], DOUBLE),
        (&["df_interleaved"], DOUBLE),
        (&["df_after_shift"], DOUBLE),
        (&["df_refilled"], DOUBLE),
        (&["df_cross_thread"], DOUBLE),
        (&["df_after_thread_exit"], DOUBLE),
        (&["df_sizes", "24"], DOUBLE),
        (&["df_sizes", "5000"], DOUBLE),
        (&["df_large"], &[]),
        (&["invalid_interior"], INTERIOR),
        (&["invalid_stack"], FOREIGN),
        (&["invalid_metadata"], &[]),
        (&["invalid_never_allocated"], &[]),
    ] {
        if let Err(e) = abort_report(How::Preload, args, HARDENED, words) {
            failures.push(e);
        }
    }
    for args in [
        &["no_false_positive"][..],
        &["large_churn"],
        &["large_threads"],
        &["fork_atfork_before"],
        &["fork_threads"],
        &["many_keys", "40"],
        &["aligned_many"],
        &["realloc_grow"],
        &["tsd_late_round"],
    ] {
        let r = run(How::Preload, args, HARDENED);
        if !(r.status.success() && r.stdout.ends_with("ok\n")) {
            failures.push(r.describe());
        } else if args == ["realloc_grow"] {
            eprintln!("hardened: {}", r.stderr.lines().collect::<Vec<_>>().join("; "));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------------------
// Heap profiling on, sampling every 4 KiB on average (many blocks become sampled large blocks): the same
// bad frees are caught (a sampled block's as a large block's), and the rest runs clean.

#[test]
fn profiling_passes_the_reliability_cases() {
    const PROFILING: &[(&str, &str)] = &[("HOPLESS_PROF", "1"), ("HOPLESS_PROF_SAMPLE", "4k")];
    let mut failures = Vec::new();
    for args in [
        &["df_immediate"][..],
        &["df_delayed"],
        &["df_interleaved"],
        &["df_cross_thread"],
        &["df_after_thread_exit"],
        &["df_sizes", "24"],
        &["df_sizes", "5000"],
        &["df_large"],
        &["invalid_interior"],
        &["invalid_stack"],
        &["invalid_never_allocated"],
    ] {
        if let Err(e) = abort_report(How::Preload, args, PROFILING, &[]) {
            failures.push(e);
        }
    }
    for args in [
        &["no_false_positive"][..],
        &["large_churn"],
        &["large_threads"],
        &["fork_atfork_before"],
        &["fork_atfork_after"],
        &["fork_threads"],
        &["many_keys", "200"],
        &["many_threads"],
        &["thread_churn"],
        &["segments_threads_fork"],
        &["aligned_many"],
        &["realloc_grow"],
        &["tsd_late_round"],
    ] {
        let r = run(How::Preload, args, PROFILING);
        if !(r.status.success() && r.stdout.ends_with("ok\n")) {
            failures.push(r.describe());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
