//! `hopless bench alloc --c-abi`: the allocators as C programs see them, through the exported `malloc` and
//! `free` of `libhopless.so`, Debian's `libjemalloc.so.2`, `libtcmalloc_minimal.so.4`,
//! `libmimalloc.so.2`, and glibc's own.
//!
//! # How each allocator is loaded, and why that is fair
//!
//! Every run is a fresh child process (`crate::child`): this same executable, re-run as `hopless bench
//! alloc --child LIB:WORKLOAD:SCALE`, with `LD_PRELOAD` set to the library under test (glibc: no preload, and any
//! inherited `LD_PRELOAD` removed). The measured loops call `malloc` and `free` declared `extern "C"` here,
//! so every allocator is reached the same way: one call through the executable's PLT to whichever object
//! the dynamic linker bound `malloc` to, exactly as in a C program linked against libc and run under
//! `LD_PRELOAD`. No allocator is inlined or called through a different stub, and each starts from a fresh
//! process (its heap, its thread caches, its first-touch page faults). The child checks that `malloc`
//! really resolves into the library asked for (`dlsym` + `dladdr`), and the parent refuses a run that
//! does not.
//!
//! The executable's own Rust global allocator (hopless, statically linked) serves the harness (argument
//! parsing, queues, thread spawns); that is set up before the clock starts, and the timed loops allocate
//! nothing but through `malloc`. Each block is touched the same way for every allocator: its first word is
//! written when allocated (as real programs do) and, in the cross-thread workloads, read by the thread that
//! frees it.
//!
//! Workloads (an "op" is one `malloc` and its `free`):
//! - `pair-N`: `malloc(N)`, write, `free` at once, N in 16, 64, 256, 1024, 4096;
//! - `lifo-100`: 100 blocks of 16..=256 bytes, freed newest first;
//! - `batch-100`: 100 blocks of 64 bytes, freed in allocation order (oldest first);
//! - `random-churn`: 10 000 live slots; each op frees a random slot's block and allocates 8..=4096 bytes
//!   (the same fixed sequence as the Rust view);
//! - `producer-consumer-N`: one thread allocates 64-byte blocks and hands them round-robin over bounded
//!   queues to N consumer threads that free them (every free is a cross-thread free), N = 1, 3 and 15 (2, 4
//!   and 16 threads);
//! - `handoff-N`: the same with the queue's cost taken out: the producer fills a buffer of 1024 fresh
//!   64-byte blocks and hands the whole buffer to the next of N consumers (1, 3, 15), which frees them
//!   all; what is left is the allocator's cross-thread path (flush, transfer or lock, refill);
//! - `all-to-all-N`: N threads (4 and 16) each put fresh 16..=256-byte blocks into random slots of one
//!   shared array of 4096, freeing the block each swaps out (allocated, N-1 times in N, by another thread);
//! - `large-churn`: 32 live large blocks; each op frees a random one and allocates 256 KiB..8 MiB in its
//!   place, writing every page (a fixed sequence): what the allocator does with freed large memory
//!   (keeps it, gives it back and faults it in again, or maps fresh) is most of the cost.
//!
//! The allocators alternate: in run r, for each workload, the libraries go in an order rotated by r.

use std::ffi::{c_void, CStr};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use crossbeam_queue::ArrayQueue;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::report::{c_abi_table, write_c_abi_json, CAbiResult};
use super::workloads::{ChurnPlan, CHURN_LIVE};
use crate::child::{self, Child};
use crate::progress::progress;
use crate::stats::median;

/// The allocator's C entry points, and the dynamic linker's lookups that say where `malloc` resolved.
mod c {
    use std::ffi::{c_char, c_int, c_void};

    /// glibc's `Dl_info`.
    #[repr(C)]
    pub struct DlInfo {
        pub fname: *const c_char,
        pub fbase: *mut c_void,
        pub sname: *const c_char,
        pub saddr: *mut c_void,
    }

    extern "C" {
        pub fn malloc(size: usize) -> *mut c_void;
        pub fn free(p: *mut c_void);
        pub fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
        pub fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
    }
}

/// Workload names, in table order.
pub const C_WORKLOADS: [&str; 17] = [
    "pair-16",
    "pair-64",
    "pair-256",
    "pair-1024",
    "pair-4096",
    "lifo-100",
    "batch-100",
    "random-churn",
    "producer-consumer-1",
    "producer-consumer-3",
    "producer-consumer-15",
    "handoff-1",
    "handoff-3",
    "handoff-15",
    "all-to-all-4",
    "all-to-all-16",
    "large-churn",
];

/// The libraries, in table order: name and Debian file name (`None`: glibc, no preload).
const LIBS: [(&str, Option<&str>); 5] = [
    ("glibc", None),
    ("jemalloc", Some("libjemalloc.so.2")),
    ("tcmalloc", Some("libtcmalloc_minimal.so.4")),
    ("mimalloc", Some("libmimalloc.so.2")),
    ("hopless", Some("libhopless.so")),
];

/// One allocator under test: its name and the library to preload (`None`: glibc).
#[derive(Clone, Debug)]
struct Lib {
    name: &'static str,
    path: Option<PathBuf>,
}

/// The libraries that are installed (Debian's multiarch directory; `libhopless.so` next to this
/// executable), and a note for each that is not.
fn installed_libs(exe: &Path) -> (Vec<Lib>, Vec<String>) {
    let system = PathBuf::from(format!("/usr/lib/{}-linux-gnu", std::env::consts::ARCH));
    let mut libs = Vec::new();
    let mut skipped = Vec::new();
    for (name, file) in LIBS {
        let Some(file) = file else {
            libs.push(Lib { name, path: None });
            continue;
        };
        let path = if name == "hopless" {
            exe.parent().unwrap_or(Path::new(".")).join(file)
        } else {
            system.join(file)
        };
        if path.exists() {
            libs.push(Lib {
                name,
                path: Some(path),
            });
        } else {
            let hint = if name == "hopless" {
                "cargo build --release -p hopless-malloc"
            } else {
                "not installed"
            };
            skipped.push(format!("{name}: {} not found ({hint})", path.display()));
        }
    }
    (libs, skipped)
}

/// What one child reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ChildResult {
    ns_per_op: f64,
    /// The object `malloc` resolved to in the child.
    malloc_from: String,
}

/// Runs the C-ABI view: `runs` runs of every workload on every installed library, one child process each,
/// the libraries alternating; prints the table and writes `json` if asked.
pub fn run(quick: bool, runs: usize, json: Option<&Path>) -> Result<Vec<CAbiResult>, String> {
    let exe = child::this_exe()?;
    let (libs, skipped) = installed_libs(&exe);
    let scale = if quick { 1.0 } else { 3.0 };
    let bar = progress(runs * C_WORKLOADS.len() * libs.len(), "alloc c-abi");
    let t0 = Instant::now();
    // samples[workload][lib]: (ns/op per run, malloc_from).
    let mut samples: Vec<Vec<(Vec<f64>, String)>> =
        vec![vec![(Vec::new(), String::new()); libs.len()]; C_WORKLOADS.len()];
    for r in 0..runs {
        for (wi, w) in C_WORKLOADS.iter().enumerate() {
            for k in 0..libs.len() {
                let li = (k + r) % libs.len();
                let res = run_child(&exe, &libs[li], w, scale)?;
                let cell = &mut samples[wi][li];
                cell.0.push(res.ns_per_op);
                cell.1 = res.malloc_from;
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let mut results = Vec::new();
    for (wi, w) in C_WORKLOADS.iter().enumerate() {
        let base = libs
            .iter()
            .position(|l| l.name == "mimalloc")
            .map(|m| median(&samples[wi][m].0));
        for (li, l) in libs.iter().enumerate() {
            let (runs, from) = &samples[wi][li];
            let med = median(runs);
            results.push(CAbiResult {
                workload: w.to_string(),
                allocator: l.name.to_string(),
                ns_per_op: med,
                min_ns_per_op: runs.iter().copied().fold(f64::INFINITY, f64::min),
                max_ns_per_op: runs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                ratio_to_mimalloc: base.map(|b| med / b),
                runs: runs.clone(),
                malloc_from: from.clone(),
            });
        }
    }
    let threads = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "hopless bench alloc --c-abi: malloc/free through the C ABI, one process per run under LD_PRELOAD \
         (glibc: none); median of {runs} runs [min-max], allocators alternating; {threads} cores; {:.1} s\n",
        t0.elapsed().as_secs_f64()
    );
    let names: Vec<&str> = libs.iter().map(|l| l.name).collect();
    print!("{}", c_abi_table(&results, &C_WORKLOADS, &names));
    for s in &skipped {
        println!("skipped {s}");
    }
    if let Some(path) = json {
        write_c_abi_json(path, &results, &skipped).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(results)
}

/// Runs one workload on one library in a fresh child process and reads back its result, refusing it if
/// `malloc` did not resolve into that library.
fn run_child(exe: &Path, lib: &Lib, workload: &str, scale: f64) -> Result<ChildResult, String> {
    let spec = format!("{}:{workload}:{scale}", lib.name);
    let r: ChildResult = Child::new(exe, "alloc", &spec)
        .preload(lib.path.as_deref())
        .run()?;
    let expected = lib
        .path
        .as_ref()
        .and_then(|p| p.file_name())
        .map_or("libc.so".to_string(), |f| f.to_string_lossy().into_owned());
    if !r.malloc_from.contains(&expected) {
        return Err(format!(
            "{spec}: malloc resolved to {}, not {expected}",
            r.malloc_from
        ));
    }
    Ok(r)
}

/// The child side (`--child LIB:WORKLOAD:SCALE`): a warm-up at a quarter of the ops, then the measured
/// run; prints one line of JSON.
pub fn child(spec: &str) -> Result<(), String> {
    let mut parts = spec.splitn(3, ':');
    let (_lib, w, scale) = match (parts.next(), parts.next(), parts.next()) {
        (Some(l), Some(w), Some(s)) => (l, w, s),
        _ => return Err(format!("bad child spec {spec:?} (LIB:WORKLOAD:SCALE)")),
    };
    let scale: f64 = scale.parse().map_err(|_| format!("bad scale in {spec:?}"))?;
    if !C_WORKLOADS.contains(&w) {
        return Err(format!("unknown C-ABI workload {w:?}"));
    }
    let plan = ChurnPlan::new();
    measure(w, scale / 4.0, &plan);
    let ns_per_op = measure(w, scale, &plan);
    child::reply(&ChildResult {
        ns_per_op,
        malloc_from: malloc_from(),
    })
}

/// The file of the object `malloc` resolves to in this process.
fn malloc_from() -> String {
    let mut info = c::DlInfo {
        fname: std::ptr::null(),
        fbase: std::ptr::null_mut(),
        sname: std::ptr::null(),
        saddr: std::ptr::null_mut(),
    };
    // SAFETY: RTLD_DEFAULT is the null handle on glibc; the name is a NUL-terminated string; `info` is a
    // valid Dl_info to fill, and `fname`, when set, points at a NUL-terminated string the loader owns.
    unsafe {
        let sym = c::dlsym(std::ptr::null_mut(), c"malloc".as_ptr());
        if sym.is_null() || c::dladdr(sym, &mut info) == 0 || info.fname.is_null() {
            return "?".into();
        }
        CStr::from_ptr(info.fname).to_string_lossy().into_owned()
    }
}

fn ops(base: usize, scale: f64) -> usize {
    ((base as f64 * scale) as usize).max(1)
}

/// One measured run of `workload` in this process, through `malloc`/`free`: nanoseconds per op.
pub fn measure(workload: &str, scale: f64, plan: &ChurnPlan) -> f64 {
    match workload {
        "pair-16" => pair(16, ops(2_000_000, scale)),
        "pair-64" => pair(64, ops(2_000_000, scale)),
        "pair-256" => pair(256, ops(2_000_000, scale)),
        "pair-1024" => pair(1024, ops(2_000_000, scale)),
        "pair-4096" => pair(4096, ops(2_000_000, scale)),
        "lifo-100" => lifo(ops(20_000, scale)),
        "batch-100" => batch(ops(20_000, scale)),
        "random-churn" => churn(plan, ops(1_000_000, scale)),
        "producer-consumer-1" => producer_consumers(1, ops(500_000, scale)),
        "producer-consumer-3" => producer_consumers(3, ops(500_000, scale)),
        "producer-consumer-15" => producer_consumers(15, ops(500_000, scale)),
        "handoff-1" => handoff(1, ops(2_000_000, scale)),
        "handoff-3" => handoff(3, ops(2_000_000, scale)),
        "handoff-15" => handoff(15, ops(2_000_000, scale)),
        "all-to-all-4" => all_to_all(4, ops(1_000_000, scale)),
        "all-to-all-16" => all_to_all(16, ops(1_000_000, scale)),
        "large-churn" => large_churn(ops(1_500, scale)),
        other => panic!("unknown C-ABI workload {other}"),
    }
}

/// `malloc(size)` (at least 8 bytes), its first word written with `tag`; aborts on failure.
#[inline(always)]
fn alloc(size: usize, tag: usize) -> *mut u8 {
    // SAFETY: malloc takes any size.
    let p = unsafe { c::malloc(size) }.cast::<u8>();
    if p.is_null() {
        std::process::abort();
    }
    // SAFETY: a live block of `size` >= 8 bytes, aligned at least to 8 (malloc's guarantee).
    unsafe { p.cast::<usize>().write_volatile(tag) };
    p
}

/// `free(p)`.
///
/// # Safety
/// `p` came from [`alloc`] and is not used again.
#[inline(always)]
unsafe fn release(p: *mut u8) {
    // SAFETY: per the contract, a live malloc block given up here.
    unsafe { c::free(p.cast::<c_void>()) }
}

/// Reads a block's first word (written by [`alloc`]), as a consumer of the block would.
///
/// # Safety
/// `p` came from [`alloc`] and is live.
#[inline(always)]
unsafe fn read(p: *mut u8) -> usize {
    // SAFETY: per the contract, at least 8 live bytes, aligned.
    unsafe { p.cast::<usize>().read_volatile() }
}

#[inline(never)]
fn pair(size: usize, n: usize) -> f64 {
    let t = Instant::now();
    for i in 0..n {
        let p = alloc(black_box(size), i);
        // SAFETY: allocated just above.
        unsafe { release(black_box(p)) };
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn lifo(iters: usize) -> f64 {
    let sizes: [usize; 100] = std::array::from_fn(|i| 16 * (1 + i % 16));
    let mut live = [std::ptr::null_mut::<u8>(); 100];
    let t = Instant::now();
    for _ in 0..iters {
        for (i, (slot, &s)) in live.iter_mut().zip(&sizes).enumerate() {
            *slot = alloc(black_box(s), i);
        }
        for &p in live.iter().rev() {
            // SAFETY: allocated just above, freed once.
            unsafe { release(p) };
        }
    }
    t.elapsed().as_nanos() as f64 / (iters * 100) as f64
}

#[inline(never)]
fn batch(iters: usize) -> f64 {
    let mut live = [std::ptr::null_mut::<u8>(); 100];
    let t = Instant::now();
    for _ in 0..iters {
        for (i, slot) in live.iter_mut().enumerate() {
            *slot = alloc(black_box(64), i);
        }
        for &p in live.iter() {
            // SAFETY: allocated just above, freed once.
            unsafe { release(p) };
        }
    }
    t.elapsed().as_nanos() as f64 / (iters * 100) as f64
}

#[inline(never)]
fn churn(plan: &ChurnPlan, n: usize) -> f64 {
    let mut live: Vec<*mut u8> = (0..CHURN_LIVE).map(|i| alloc(8 + (i * 97) % 4089, i)).collect();
    let steps = &plan.steps[..];
    let t = Instant::now();
    for i in 0..n {
        let (slot, size) = steps[i & (steps.len() - 1)];
        let e = &mut live[slot as usize];
        // SAFETY: the slot's block is live and replaced at once.
        unsafe { release(*e) };
        *e = alloc(size as usize, i);
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    for p in live {
        // SAFETY: live, freed once.
        unsafe { release(p) };
    }
    ns
}

const LARGE_LIVE: usize = 32;

/// Writes one byte in every page of a block, as a program filling it would.
///
/// # Safety
/// `p` is a live block of `size` bytes.
#[inline(always)]
unsafe fn touch(p: *mut u8, size: usize, tag: u8) {
    for off in (0..size).step_by(4096) {
        // SAFETY: inside the block.
        unsafe { p.add(off).write_volatile(tag) };
    }
}

#[inline(never)]
fn large_churn(n: usize) -> f64 {
    let mut rng = SmallRng::seed_from_u64(0x1a26e);
    let sizes = 256 << 10..8 << 20;
    let steps: Vec<(usize, usize)> = (0..n)
        .map(|_| (rng.gen_range(0..LARGE_LIVE), rng.gen_range(sizes.clone())))
        .collect();
    let mut live: Vec<*mut u8> = (0..LARGE_LIVE)
        .map(|i| {
            let size = rng.gen_range(sizes.clone());
            let p = alloc(size, i);
            // SAFETY: a live block of `size` bytes.
            unsafe { touch(p, size, 1) };
            p
        })
        .collect();
    let t = Instant::now();
    for (i, &(slot, size)) in steps.iter().enumerate() {
        // SAFETY: the slot's block is live and replaced at once.
        unsafe { release(live[slot]) };
        let p = alloc(size, i);
        // SAFETY: a live block of `size` bytes.
        unsafe { touch(p, size, i as u8) };
        live[slot] = p;
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    for p in live {
        // SAFETY: live, freed once.
        unsafe { release(p) };
    }
    ns
}

/// Spins, then yields once the wait grows (the machine may have fewer cores than threads).
#[inline(always)]
fn backoff(idle: &mut u32) {
    *idle += 1;
    if *idle > 64 {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// Pushes `v`, waiting (with [`backoff`]) while the queue is full.
#[inline(always)]
fn push_waiting<T>(q: &ArrayQueue<T>, mut v: T) {
    let mut idle = 0;
    while let Err(back) = q.push(v) {
        v = back;
        backoff(&mut idle);
    }
}

#[inline(never)]
fn producer_consumers(consumers: usize, n: usize) -> f64 {
    let queues: Vec<ArrayQueue<usize>> = (0..consumers).map(|_| ArrayQueue::new(1024)).collect();
    let start = Barrier::new(consumers + 1);
    let (t, ends) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..consumers)
            .map(|c| {
                let (q, start) = (&queues[c], &start);
                s.spawn(move || {
                    // Blocks c, c + consumers, ... come to this consumer.
                    let mine = n.saturating_sub(c).div_ceil(consumers);
                    let mut sum = 0usize;
                    start.wait();
                    let (mut got, mut idle) = (0, 0);
                    while got < mine {
                        match q.pop() {
                            Some(p) => {
                                // SAFETY: the producer allocated it and gave it up to this thread.
                                unsafe {
                                    sum = sum.wrapping_add(read(p as *mut u8));
                                    release(p as *mut u8);
                                }
                                got += 1;
                                idle = 0;
                            }
                            None => backoff(&mut idle),
                        }
                    }
                    black_box(sum);
                    Instant::now()
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for i in 0..n {
            push_waiting(&queues[i % consumers], alloc(64, i) as usize);
        }
        let ends: Vec<Instant> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (t, ends)
    });
    let end = ends.into_iter().max().unwrap_or(t);
    end.duration_since(t).as_nanos() as f64 / n as f64
}

#[inline(never)]
fn handoff(consumers: usize, n: usize) -> f64 {
    const BUF: usize = 1024;
    type Buf = Box<[usize; BUF]>;
    let rounds = n.div_ceil(BUF).max(consumers);
    let nbufs = 2 * consumers + 2;
    let full: Vec<ArrayQueue<Buf>> = (0..consumers).map(|_| ArrayQueue::new(nbufs)).collect();
    let empty: ArrayQueue<Buf> = ArrayQueue::new(nbufs);
    for _ in 0..nbufs {
        let _ = empty.push(Box::new([0; BUF]));
    }
    let start = Barrier::new(consumers + 1);
    let (t, ends) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..consumers)
            .map(|c| {
                let (q, empty, start) = (&full[c], &empty, &start);
                s.spawn(move || {
                    // Rounds c, c + consumers, ... come to this consumer.
                    let mine = rounds.saturating_sub(c).div_ceil(consumers);
                    let mut sum = 0usize;
                    start.wait();
                    let (mut got, mut idle) = (0, 0);
                    while got < mine {
                        let Some(buf) = q.pop() else {
                            backoff(&mut idle);
                            continue;
                        };
                        for &p in buf.iter() {
                            // SAFETY: the producer allocated it and gave it up to this thread.
                            unsafe {
                                sum = sum.wrapping_add(read(p as *mut u8));
                                release(p as *mut u8);
                            }
                        }
                        let _ = empty.push(buf);
                        got += 1;
                        idle = 0;
                    }
                    black_box(sum);
                    Instant::now()
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for r in 0..rounds {
            let mut idle = 0;
            let mut buf = loop {
                match empty.pop() {
                    Some(b) => break b,
                    None => backoff(&mut idle),
                }
            };
            for (i, slot) in buf.iter_mut().enumerate() {
                *slot = alloc(64, i) as usize;
            }
            push_waiting(&full[r % consumers], buf);
        }
        let ends: Vec<Instant> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (t, ends)
    });
    let end = ends.into_iter().max().unwrap_or(t);
    end.duration_since(t).as_nanos() as f64 / (rounds * BUF) as f64
}

#[inline(never)]
fn all_to_all(threads: usize, n: usize) -> f64 {
    const SLOTS: usize = 4096;
    let slots: Vec<AtomicUsize> = (0..SLOTS)
        .map(|i| AtomicUsize::new(alloc(16 * (1 + i % 16), i) as usize))
        .collect();
    let start = Barrier::new(threads);
    let per = n.div_ceil(threads);
    let work = |id: usize| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (id as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let mut sum = 0usize;
        start.wait();
        let t = Instant::now();
        for i in 0..per {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let slot = (x as usize) % SLOTS;
            let size = 16 * (1 + (x >> 32) as usize % 16);
            let p = alloc(size, i);
            let old = slots[slot].swap(p as usize, Ordering::AcqRel) as *mut u8;
            // SAFETY: the swap gave this thread the only reference to a live block.
            unsafe {
                sum = sum.wrapping_add(read(old));
                release(old);
            }
        }
        black_box(sum);
        (t, Instant::now())
    };
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|id| s.spawn(move || work(id))).collect();
        let mut spans = vec![work(0)];
        spans.extend(handles.into_iter().map(|h| h.join().unwrap()));
        spans
    });
    let t = spans.iter().map(|s| s.0).min().expect("one thread at least");
    let end = spans.iter().map(|s| s.1).max().expect("one thread at least");
    for s in &slots {
        // SAFETY: every slot holds a live block; the threads are done.
        unsafe { release(s.load(Ordering::Relaxed) as *mut u8) };
    }
    end.duration_since(t).as_nanos() as f64 / (per * threads) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_c_workload_runs_in_process() {
        // In the test process `malloc` is glibc's (or whatever the test was preloaded with).
        let plan = ChurnPlan::new();
        for w in C_WORKLOADS {
            let ns = measure(w, 0.001, &plan);
            assert!(ns.is_finite() && ns > 0.0, "{w}: {ns}");
        }
    }

    #[test]
    fn malloc_resolves_to_a_loaded_object() {
        assert_ne!(malloc_from(), "?");
    }

    #[test]
    fn glibc_is_always_there_and_missing_libraries_are_skipped_with_a_note() {
        let (libs, skipped) = installed_libs(Path::new("/nonexistent/hopless"));
        assert_eq!(libs[0].name, "glibc");
        assert!(libs[0].path.is_none());
        assert!(skipped.iter().any(|s| s.starts_with("hopless:")), "{skipped:?}");
        assert_eq!(libs.len() + skipped.len(), LIBS.len());
    }
}
