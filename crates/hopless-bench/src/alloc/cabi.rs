//! `hopless bench alloc --c-abi`: the allocators as C programs see them, through the exported `malloc` and
//! `free` of `libhopless.so`, Debian's `libjemalloc.so.2`, `libtcmalloc_minimal.so.4`,
//! `libmimalloc.so.2`, and glibc's own, on the workloads of `workloads.rs` (this view's list is
//! [`C_WORKLOADS`]).
//!
//! # How each allocator is loaded, and why that is fair
//!
//! Every run is a fresh child process (`crate::child`): this same executable, re-run as `hopless bench
//! alloc --child LIB:WORKLOAD:SCALE`, with `LD_PRELOAD` set to the library under test (glibc: no preload,
//! and any inherited `LD_PRELOAD` removed). The measured loops call `malloc` and `free` declared
//! `extern "C"` (`cabi/malloc.rs`), so every allocator is reached the same way: one call through the
//! executable's PLT to whichever object the dynamic linker bound `malloc` to, exactly as in a C program
//! linked against libc and run under `LD_PRELOAD`. No allocator is inlined or called through a different
//! stub, and each starts from a fresh process (its heap, its thread caches, its first-touch page faults).
//! The child checks that `malloc` really resolves into the library asked for (`dlsym` + `dladdr`), and
//! the parent refuses a run that does not.
//!
//! The executable's own Rust global allocator (hopless, statically linked) serves the harness (argument
//! parsing, queues, thread spawns); that is set up before the clock starts, and the timed loops allocate
//! nothing but through `malloc`. Each block is touched the same way for every allocator
//! ([`TaggedWord`]): its first word is written when allocated (as real programs do) and, in the
//! cross-thread workloads, read by the thread that frees it.
//!
//! The allocators alternate: in run r, for each workload, the libraries go in an order rotated by r.
//!
//! `--variant NAME=KEY=VALUE` adds a column: `libhopless.so` again, with `KEY=VALUE` in the child's
//! environment (an option such as `HOPLESS_OWNED_SLABS=1` measured beside the default in the same
//! alternating runs); `NAME:LIB=KEY=VALUE` does the same for another library of the table (the peers'
//! heap profiling: `jemalloc-prof:jemalloc=MALLOC_CONF=prof:true,lg_prof_sample:19`). `--before PATH` adds another build of the library as the column `before` (a change
//! measured against the build without it). `--lib-dir` says where the other libraries are, for a machine
//! without Debian's packages.

mod malloc;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::report::{c_abi_cost_table, c_abi_table, write_c_abi_json, CAbiResult};
use super::touch::TaggedWord;
use super::workloads::{self, ChurnPlan, GridCell};
use crate::child::{self, Child};
use crate::progress::progress;
use crate::stats::{median, min_max};
use malloc::{malloc_from, Malloc};

/// Workload names, in table order.
pub const C_WORKLOADS: [&str; 26] = [
    "pair-16",
    "pair-64",
    "pair-256",
    "pair-1024",
    "pair-4096",
    "lifo-100",
    "batch-100",
    "random-churn",
    "fifo-lifo-25",
    "fifo-lifo-100",
    "fifo-lifo-400",
    "fifo-lifo-1600",
    "mixed-sizes",
    "exchange-2",
    "exchange-4",
    "exchange-16",
    "queue-churn",
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

/// One allocator under test: its name, the library to preload (`None`: glibc) and what to add to the
/// child's environment.
#[derive(Clone, Debug)]
struct Lib {
    name: String,
    path: Option<PathBuf>,
    env: Vec<(String, String)>,
}

impl Lib {
    /// A library with nothing added to its children's environment.
    fn plain(name: &str, path: Option<PathBuf>) -> Lib {
        Lib {
            name: name.to_string(),
            path,
            env: Vec::new(),
        }
    }
}

/// A `--variant`: another column of a library of the table (`libhopless.so` unless named), with one
/// variable set in its children's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    /// The library it runs (a name of [`LIBS`]).
    pub base: String,
    pub key: String,
    pub value: String,
}

impl std::str::FromStr for Variant {
    type Err = String;

    /// `NAME=KEY=VALUE` (of `libhopless.so`) or `NAME:LIB=KEY=VALUE`, e.g. `owned=HOPLESS_OWNED_SLABS=1`.
    fn from_str(s: &str) -> Result<Variant, String> {
        let mut parts = s.splitn(3, '=');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(label), Some(key), Some(value)) if !label.is_empty() && !key.is_empty() => {
                let (name, base) = label.split_once(':').unwrap_or((label, "hopless"));
                if name.is_empty() || name == "before" || LIBS.iter().any(|(n, _)| *n == name) {
                    return Err(format!(
                        "variant name {name:?} is empty or a library's; choose another"
                    ));
                }
                if !LIBS.iter().any(|(n, _)| *n == base) {
                    return Err(format!("variant {name:?}: no library {base:?} in the table"));
                }
                Ok(Variant {
                    name: name.to_string(),
                    base: base.to_string(),
                    key: key.to_string(),
                    value: value.to_string(),
                })
            }
            _ => Err(format!(
                "bad variant {s:?}: expected NAME=KEY=VALUE or NAME:LIB=KEY=VALUE, e.g. \
                 owned=HOPLESS_OWNED_SLABS=1"
            )),
        }
    }
}

/// The libraries that are installed (`lib_dir`, by default Debian's multiarch directory; `libhopless.so`
/// next to this executable), then `before` (another build of it) if given, then one `libhopless.so`
/// column per variant, and a note for each library that is not there.
fn installed_libs(
    exe: &Path,
    lib_dir: Option<&Path>,
    before: Option<&Path>,
    variants: &[Variant],
) -> (Vec<Lib>, Vec<String>) {
    let system = lib_dir.map_or_else(
        || PathBuf::from(format!("/usr/lib/{}-linux-gnu", std::env::consts::ARCH)),
        Path::to_path_buf,
    );
    let mut libs = Vec::new();
    let mut skipped = Vec::new();
    for (name, file) in LIBS {
        let Some(file) = file else {
            libs.push(Lib::plain(name, None));
            continue;
        };
        let path = if name == "hopless" {
            exe.parent().unwrap_or(Path::new(".")).join(file)
        } else {
            system.join(file)
        };
        if path.exists() {
            libs.push(Lib::plain(name, Some(path)));
        } else {
            let hint = if name == "hopless" {
                "cargo build --release -p hopless-malloc"
            } else {
                "not installed"
            };
            skipped.push(format!("{name}: {} not found ({hint})", path.display()));
        }
    }
    if let Some(b) = before {
        if b.exists() {
            libs.push(Lib::plain("before", Some(b.to_path_buf())));
        } else {
            skipped.push(format!("before: {} not found", b.display()));
        }
    }
    for v in variants {
        if let Some(base) = libs.iter().find(|l| l.name == v.base).cloned() {
            libs.push(Lib {
                env: vec![(v.key.clone(), v.value.clone())],
                ..Lib::plain(&v.name, base.path.clone())
            });
        }
    }
    (libs, skipped)
}

/// What one child reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ChildResult {
    ns_per_op: f64,
    /// Page faults (minor) and voluntary context switches of the whole process during the measured run:
    /// what purging too early costs (faults) and what a lock or an `madvise` that makes threads wait
    /// costs (switches).
    faults: u64,
    switches: u64,
    /// The object `malloc` resolved to in the child.
    malloc_from: String,
}

/// One workload on one library: every run's result.
#[derive(Clone, Default)]
struct Cell {
    ns: Vec<f64>,
    faults: Vec<f64>,
    switches: Vec<f64>,
    malloc_from: String,
}

/// What the C-ABI view is asked for, beyond the workloads.
#[derive(Clone, Debug, Default)]
pub struct CAbiOptions<'a> {
    pub quick: bool,
    pub runs: usize,
    pub json: Option<&'a Path>,
    /// Where the other libraries are (default: Debian's multiarch directory).
    pub lib_dir: Option<&'a Path>,
    /// Another build of `libhopless.so`, as the column `before`.
    pub before: Option<&'a Path>,
    /// More `libhopless.so` columns, each with a variable set.
    pub variants: &'a [Variant],
}

/// Runs the C-ABI view: `o.runs` runs of each of `workloads` on every installed library and variant, one
/// child process each, the libraries alternating; prints the table and writes `o.json` if asked.
pub fn run(o: &CAbiOptions<'_>, workloads: &[&'static str]) -> Result<Vec<CAbiResult>, String> {
    let (quick, runs, json) = (o.quick, o.runs, o.json);
    let exe = child::this_exe()?;
    let (libs, skipped) = installed_libs(&exe, o.lib_dir, o.before, o.variants);
    let scale = if quick { 1.0 } else { 3.0 };
    let bar = progress(runs * workloads.len() * libs.len(), "alloc c-abi");
    let t0 = Instant::now();
    let mut samples: Vec<Vec<Cell>> = vec![vec![Cell::default(); libs.len()]; workloads.len()];
    for r in 0..runs {
        for (wi, w) in workloads.iter().enumerate() {
            for k in 0..libs.len() {
                let li = (k + r) % libs.len();
                let res = run_child(&exe, &libs[li], w, scale)?;
                let cell = &mut samples[wi][li];
                cell.ns.push(res.ns_per_op);
                cell.faults.push(res.faults as f64);
                cell.switches.push(res.switches as f64);
                cell.malloc_from = res.malloc_from;
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let mut results = Vec::new();
    for (wi, w) in workloads.iter().enumerate() {
        let base = libs
            .iter()
            .position(|l| l.name == "mimalloc")
            .map(|m| median(&samples[wi][m].ns));
        for (li, l) in libs.iter().enumerate() {
            let cell = &samples[wi][li];
            let (runs, from) = (&cell.ns, &cell.malloc_from);
            let med = median(runs);
            let (min, max) = min_max(runs.iter().copied());
            results.push(CAbiResult {
                workload: w.to_string(),
                allocator: l.name.to_string(),
                ns_per_op: med,
                min_ns_per_op: min,
                max_ns_per_op: max,
                ratio_to_mimalloc: base.map(|b| med / b),
                runs: runs.clone(),
                malloc_from: from.clone(),
                faults: median(&cell.faults),
                switches: median(&cell.switches),
            });
        }
    }
    let threads = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "hopless bench alloc --c-abi: malloc/free through the C ABI, one process per run under LD_PRELOAD \
         (glibc: none); median of {runs} runs [min-max], allocators alternating; {threads} cores; {:.1} s\n",
        t0.elapsed().as_secs_f64()
    );
    let names: Vec<&str> = libs.iter().map(|l| l.name.as_str()).collect();
    print!("{}", c_abi_table(&results, workloads, &names));
    print!("\n{}", c_abi_cost_table(&results, workloads, &names));
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
    let mut child = Child::new(exe, "alloc", &spec).preload(lib.path.as_deref());
    for (k, v) in &lib.env {
        child = child.env(k, v);
    }
    let r: ChildResult = child.run()?;
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

/// The share of a measured run's ops that the warm-up before it runs: a quarter, but for `large-churn`
/// a whole run. Its footprint (32 blocks of 256 KiB to 8 MiB and the holes between them) settles only
/// after about as many ops as the measured run: with a quarter, hopless, which packs large blocks low,
/// was still faulting in the pages of its settled footprint in the measured run (5 000 to 7 000 faults
/// at scale 3), while mimalloc had faulted in its own, as large, in the warm-up. Over the whole child
/// process the two took the same faults (56 000 and 58 000); a whole run's warm-up leaves both about
/// none to take in the measured run.
fn warm_up_share(workload: &str) -> f64 {
    if workload == "large-churn" {
        1.0
    } else {
        0.25
    }
}

/// The child side (`--child LIB:WORKLOAD:SCALE`): a warm-up ([`warm_up_share`] of the ops), then the
/// measured run; prints one line of JSON.
pub fn child(spec: &str) -> Result<(), String> {
    let mut parts = spec.splitn(3, ':');
    let (_lib, w, scale) = match (parts.next(), parts.next(), parts.next()) {
        (Some(l), Some(w), Some(s)) => (l, w, s),
        _ => return Err(format!("bad child spec {spec:?} (LIB:WORKLOAD:SCALE)")),
    };
    let scale: f64 = scale.parse().map_err(|_| format!("bad scale in {spec:?}"))?;
    if !C_WORKLOADS.contains(&w) && GridCell::parse(w).is_none() {
        return Err(format!("unknown C-ABI workload {w:?}"));
    }
    let plan = ChurnPlan::new();
    measure(w, scale * warm_up_share(w), &plan);
    let before = usage();
    let ns_per_op = measure(w, scale, &plan);
    let after = usage();
    child::reply(&ChildResult {
        ns_per_op,
        faults: after.0.saturating_sub(before.0),
        switches: after.1.saturating_sub(before.1),
        malloc_from: malloc_from(),
    })
}

/// The process's minor page faults and voluntary context switches so far (`getrusage`).
fn usage() -> (u64, u64) {
    // SAFETY: `getrusage` fills the zeroed struct it is given; nothing else is touched.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    (ru.ru_minflt as u64, ru.ru_nvcsw as u64)
}

/// One measured run of `workload` in this process, through `malloc`/`free`: nanoseconds per op.
fn measure(workload: &str, scale: f64, plan: &ChurnPlan) -> f64 {
    workloads::run_unsized::<Malloc, TaggedWord>(&Malloc, workload, scale, plan)
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
    fn glibc_is_always_there_and_missing_libraries_are_skipped_with_a_note() {
        let owned: Variant = "owned=HOPLESS_OWNED_SLABS=1".parse().unwrap();
        let (libs, skipped) = installed_libs(Path::new("/nonexistent/hopless"), None, None, &[owned]);
        assert_eq!(libs[0].name, "glibc");
        assert!(libs[0].path.is_none());
        assert!(skipped.iter().any(|s| s.starts_with("hopless:")), "{skipped:?}");
        // No libhopless.so, so no variant of it either.
        assert_eq!(libs.len() + skipped.len(), LIBS.len());
    }

    #[test]
    fn a_variant_is_libhopless_again_with_its_variable_set() {
        let dir = std::env::temp_dir().join(format!("hopless-cabi-variant-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libhopless.so"), b"").unwrap();
        std::fs::write(dir.join("libmimalloc.so.2"), b"").unwrap();
        std::fs::write(dir.join("old.so"), b"").unwrap();
        let owned: Variant = "owned=HOPLESS_OWNED_SLABS=1".parse().unwrap();
        let mi: Variant = "mi-verbose:mimalloc=MIMALLOC_VERBOSE=1".parse().unwrap();
        let je: Variant = "je-prof:jemalloc=MALLOC_CONF=prof:true".parse().unwrap();
        let before = dir.join("old.so");
        let (libs, skipped) =
            installed_libs(&dir.join("hopless"), Some(&dir), Some(&before), &[owned, mi, je]);
        let names: Vec<&str> = libs.iter().map(|l| l.name.as_str()).collect();
        // jemalloc is not installed there, so neither is its variant.
        assert_eq!(
            names,
            ["glibc", "mimalloc", "hopless", "before", "owned", "mi-verbose"],
            "{skipped:?}"
        );
        assert_eq!(libs[5].path, libs[1].path);
        assert_eq!(libs[5].env, [("MIMALLOC_VERBOSE".to_string(), "1".to_string())]);
        assert_eq!(libs[3].path.as_deref(), Some(before.as_path()));
        assert!(libs[3].env.is_empty());
        assert_eq!(libs[4].path, libs[2].path);
        assert_eq!(
            libs[4].env,
            [("HOPLESS_OWNED_SLABS".to_string(), "1".to_string())]
        );
        assert!(libs[2].env.is_empty());
        let missing = dir.join("missing.so");
        let (libs, skipped) = installed_libs(&dir.join("hopless"), Some(&dir), Some(&missing), &[]);
        assert!(!libs.iter().any(|l| l.name == "before"));
        assert!(skipped.iter().any(|s| s.starts_with("before:")), "{skipped:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn variants_are_name_key_value_and_never_a_library_name() {
        let v: Variant = "x=K=a=b".parse().unwrap();
        assert_eq!(
            (v.name.as_str(), v.base.as_str(), v.key.as_str(), v.value.as_str()),
            ("x", "hopless", "K", "a=b")
        );
        let v: Variant = "jp:jemalloc=MALLOC_CONF=prof:true,lg_prof_sample:19"
            .parse()
            .unwrap();
        assert_eq!(
            (v.name.as_str(), v.base.as_str(), v.value.as_str()),
            ("jp", "jemalloc", "prof:true,lg_prof_sample:19")
        );
        for bad in [
            "owned",
            "owned=K",
            "=K=1",
            "o=",
            "a:b=K=1",
            ":jemalloc=K=1",
            "hopless=K=1",
            "mimalloc=K=1",
            "before=K=1",
        ] {
            assert!(bad.parse::<Variant>().is_err(), "{bad}");
        }
    }
}
