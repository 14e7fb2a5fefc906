//! Sampled heap profiling: which call stacks allocated the memory a program holds, and everything it
//! allocated since the start, estimated from a sample of its allocations, cheap enough to leave on in
//! production.
//!
//! Every thread counts down the bytes it allocates (`sampler`); the allocation that runs the count
//! out is sampled (`crate::sample`): its call stack is walked (`platform::unwind`), the block is served
//! as a large block of its own, whose header names its [`table`] record, and the stack's site counts
//! what it stands for. Its free finds the header (a sampled block never lies in a slab, so the C free's
//! fast path, which only takes slab blocks, passes it on untouched) and takes it off its site. A sized
//! free (`GlobalAlloc::dealloc`) of a small block cannot tell, so once a block has been sampled
//! ([`SEEN`]), sized frees go the unsized way: one test of a flag on that path.
//!
//! Controls: `HOPLESS_PROF=1` (on from the start), `HOPLESS_PROF_SAMPLE=BYTES` (the mean interval,
//! 512 KiB by default), `HOPLESS_PROF_DUMP=PATH` (written at exit; `%p` is the process id),
//! `HOPLESS_PROF_SIGNAL=SIG` (a dump on that signal, to `PATH.N`, N counting from 1),
//! `HOPLESS_PROF_LEAKS=1` (a leak report on standard error at exit); [`start`], [`stop`] and [`dump`]
//! from code. A thread that is not sampling (profiling off) still counts, in steps of `OFF_INTERVAL`
//! (64 KiB), so a [`start`] reaches it within that much more allocation.
//!
//! | file | what it holds |
//! |---|---|
//! | `sampler.rs` | the countdown's draws and what one sample stands for |
//! | `table.rs` | the sites (call stacks and their counts) and the records of sampled blocks in use |
//! | `pprof.rs` | the dump: pprof's gzip'd protobuf, written without allocating |
//! | `leaks.rs` | the leak report at exit |

mod leaks;
mod pprof;
pub(crate) mod sampler;
pub(crate) mod table;

use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use crate::lock::SpinLock;

/// The mean sampling interval unless told otherwise: about one sample per 512 KiB allocated.
pub const DEFAULT_INTERVAL: usize = 512 << 10;
/// The countdown's step while profiling is off: a thread takes the out-of-line path once per this
/// many bytes (a few nanoseconds per 64 KiB allocated), so a [`start`] reaches every thread within
/// that much more allocation.
pub(crate) const OFF_INTERVAL: usize = 64 << 10;

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// A sampled block has been handed out: sized frees must look at the pointer (see the module's docs).
/// Set for good.
pub(crate) static SEEN: AtomicBool = AtomicBool::new(false);
static INTERVAL: AtomicUsize = AtomicUsize::new(DEFAULT_INTERVAL);
static LEAKS: AtomicBool = AtomicBool::new(false);
/// Signal dumps written so far (their file names count from 1).
static SIGNAL_DUMPS: AtomicU32 = AtomicU32::new(0);
/// A signal asked for a dump while the tables were held; the holder writes it.
static PENDING: AtomicBool = AtomicBool::new(false);

/// A file path, NUL-terminated in `b`.
struct Path {
    b: [u8; 1024],
    n: usize,
}

/// `HOPLESS_PROF_DUMP`'s path (empty: none), set at start-up.
static DUMP_PATH: SpinLock<Path> = SpinLock::new(Path { b: [0; 1024], n: 0 });

/// Whether sampling is on.
#[inline]
pub fn is_active() -> bool {
    active()
}

#[inline]
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// The mean sampling interval in bytes.
pub fn interval() -> usize {
    INTERVAL.load(Ordering::Relaxed)
}

/// Turns sampling on with a mean interval of `bytes` (1: every allocation), from now on. With glibc
/// this may load the unwinder (`libgcc_s.so.1`) if no module has it yet; without one, samples are
/// taken with empty stacks.
pub fn start(bytes: usize) {
    crate::platform::unwind::resolve();
    activate(bytes);
}

fn activate(bytes: usize) {
    INTERVAL.store(bytes.max(1), Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Relaxed);
}

/// From the library's constructor, where loading a library is safe: finds the unwinder when
/// `HOPLESS_PROF` turned sampling on at set-up (which may run inside an allocation, where it is not).
pub(crate) fn after_load() {
    if active() && !crate::platform::unwind::resolve() {
        crate::platform::write_stderr(
            b"hopless: no unwinder (libgcc_s.so.1) for the heap profile's call stacks; samples have none\n",
        );
    }
}

/// Turns sampling off; what was sampled stays, and its frees are still counted.
pub fn stop() {
    ACTIVE.store(false, Ordering::Relaxed);
}

/// The bytes a thread allocates before its next sample (see `sampler`), drawn with its generator.
pub(crate) fn next_countdown(state: &mut u64) -> usize {
    if active() {
        sampler::next_interval(state, interval())
    } else {
        OFF_INTERVAL
    }
}

/// Reads the environment (at the process's set-up, which allocates nothing).
pub(crate) fn configure() {
    let Some(on) = crate::platform::env_setting(c"HOPLESS_PROF") else {
        return;
    };
    if !on {
        return;
    }
    let mut bytes = DEFAULT_INTERVAL;
    if let Some(text) = crate::platform::env_bytes(c"HOPLESS_PROF_SAMPLE") {
        match crate::limit::parse_size(text) {
            Some(n) if n > 0 => bytes = n,
            _ => crate::platform::write_stderr(
                b"hopless: HOPLESS_PROF_SAMPLE is not a size (bytes, or with k, m or g: 512k); \
                  sampling every 512 KiB\n",
            ),
        }
    }
    if let Some(path) = crate::platform::env_bytes(c"HOPLESS_PROF_DUMP") {
        let mut p = DUMP_PATH.lock();
        if path.len() < p.b.len() {
            if let Some(dst) = p.b.get_mut(..path.len()) {
                dst.copy_from_slice(path);
            }
            p.n = path.len();
        } else {
            crate::platform::write_stderr(
                b"hopless: HOPLESS_PROF_DUMP is too long a path; no dump at exit\n",
            );
        }
    }
    LEAKS.store(
        crate::platform::env_flag(c"HOPLESS_PROF_LEAKS"),
        Ordering::Relaxed,
    );
    if let Some(sig) = crate::platform::env_bytes(c"HOPLESS_PROF_SIGNAL") {
        match crate::platform::signal_number(sig) {
            Some(n) => crate::platform::on_signal(n, on_dump_signal),
            None => crate::platform::write_stderr(
                b"hopless: HOPLESS_PROF_SIGNAL is not a signal (a name such as USR2, or a number); \
                  no dump on a signal\n",
            ),
        }
    }
    activate(bytes);
}

/// Remembers a sampled block of `size` bytes allocated from `frames` (innermost first); the record
/// that names it, 0 when it could not be remembered.
pub(crate) fn remember(frames: &[usize], size: usize) -> u32 {
    let id = table::record(frames, size, interval());
    SEEN.store(true, Ordering::Relaxed);
    after_unlock();
    id
}

/// The sampled block named by record `id` is freed.
pub(crate) fn forget(id: u32) {
    table::forget(id);
    after_unlock();
}

/// Writes the profile to `path`: pprof's format (a gzip'd protobuf, for `pprof`, `go tool pprof` and
/// `hopless prof`), through a temporary file renamed when complete. Allocates nothing.
pub fn dump(path: &CStr) -> Result<(), DumpError> {
    let t = table::lock();
    let r = pprof::write_file(path, &t, interval());
    drop(t);
    after_unlock();
    r.map_err(DumpError)
}

/// Why [`dump`] failed: the OS's error number (`std::io::Error::from_raw_os_error` makes it an
/// `io::Error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpError(i32);

impl DumpError {
    /// The OS's error number (`errno`).
    pub fn raw_os_error(&self) -> i32 {
        self.0
    }
}

impl core::fmt::Display for DumpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "the heap profile could not be written (OS error {})", self.0)
    }
}

impl core::error::Error for DumpError {}

/// At the process's exit: the dump `HOPLESS_PROF_DUMP` asks for, and the leak report.
pub(crate) fn at_exit() {
    if !SEEN.load(Ordering::Relaxed) && !active() {
        return;
    }
    let mut name = [0u8; 1100];
    if let Some(path) = dump_path(&mut name, 0) {
        if let Err(DumpError(e)) = dump(path) {
            let mut m = crate::report::Msg::new();
            m.str("hopless: the heap profile could not be written to ")
                .bytes(path.to_bytes())
                .str(": error ")
                .dec(e as u64)
                .str("\n")
                .emit();
        }
    }
    if LEAKS.load(Ordering::Relaxed) {
        leaks::report(&table::lock());
    }
}

/// The dump's path with `%p` made the process id and, for `seq > 0`, `.seq` added; `None` when no
/// path was given and none is needed (`seq == 0`). A signal dump without a path goes to
/// `hopless-%p.prof.N`.
fn dump_path(out: &mut [u8; 1100], seq: u32) -> Option<&CStr> {
    let p = DUMP_PATH.try_lock()?;
    let given: &[u8] = p.b.get(..p.n).unwrap_or_default();
    let template: &[u8] = match (given.is_empty(), seq) {
        (true, 0) => return None,
        (true, _) => b"hopless-%p.prof",
        (false, _) => given,
    };
    let mut m = crate::report::Msg::new();
    let mut rest = template;
    while let Some(i) = rest.windows(2).position(|w| w == b"%p") {
        // SAFETY: getpid has no preconditions.
        m.bytes(rest.get(..i).unwrap_or_default())
            .dec(unsafe { libc::getpid() } as u64);
        rest = rest.get(i + 2..).unwrap_or_default();
    }
    m.bytes(rest);
    if seq > 0 {
        m.str(".").dec(seq as u64);
    }
    let b = m.as_bytes();
    if b.len() >= out.len() || b.contains(&0) {
        return None;
    }
    out.get_mut(..b.len())?.copy_from_slice(b);
    *out.get_mut(b.len())? = 0;
    CStr::from_bytes_with_nul(out.get(..=b.len())?).ok()
}

/// A dump asked for by the signal: written here when the tables are free, else by the thread that
/// holds them, when it lets go (a handler must not wait for the thread it may have interrupted).
extern "C" fn on_dump_signal(_sig: libc::c_int) {
    crate::platform::keeping_errno(|| {
        PENDING.store(true, Ordering::Release);
        if let Some(t) = table::try_lock() {
            write_pending(&t);
        }
    });
}

/// Writes the dump a signal asked for, if one is pending; the caller holds the tables.
fn write_pending(t: &table::Tables) {
    if !PENDING.swap(false, Ordering::Acquire) {
        return;
    }
    let seq = SIGNAL_DUMPS.fetch_add(1, Ordering::Relaxed) + 1;
    let mut name = [0u8; 1100];
    if let Some(path) = dump_path(&mut name, seq) {
        let _ = pprof::write_file(path, t, interval());
    }
}

/// After a holder of the tables let go: a dump a signal left pending is written now.
pub(crate) fn after_unlock() {
    if PENDING.load(Ordering::Relaxed) {
        if let Some(t) = table::try_lock() {
            write_pending(&t);
        }
    }
}

/// For `fork`: the tables are held across it (see `table::lock_for_fork`).
pub(crate) fn fork_prepare() {
    table::lock_for_fork();
}

/// After `fork`, in the parent and in the child.
///
/// # Safety
///
/// [`fork_prepare`] ran in this thread (or, in the child, in the thread it copies) before the fork.
pub(crate) unsafe fn fork_release() {
    // SAFETY: per the caller.
    unsafe { table::unlock_after_fork() }
}
