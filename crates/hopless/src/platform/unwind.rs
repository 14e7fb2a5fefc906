//! Call stacks for heap profiles: the return addresses of the calling thread, walked by the C runtime's
//! unwinder (`_Unwind_Backtrace`: libgcc's with glibc, the bundled libunwind with musl), which reads the
//! unwind tables (`.eh_frame`) every program built for a distribution carries: right without frame
//! pointers, as `-O2 -g` builds are.
//!
//! With glibc the unwinder is found when profiling starts ([`resolve`]), not linked: `libhopless.so`
//! needs `libc.so.6` alone, and loading `libgcc_s.so.1` costs every process about 90 µs, profiled or
//! not. It is looked up among the loaded modules first (every Rust and C++ program has it), else
//! `libgcc_s.so.1` is loaded then, from the library's constructor or a call to start profiling, never
//! from an allocation. With musl (static programs) it is linked in, as Rust's `std` links it.
//!
//! libgcc's walk neither allocates nor takes a lock on glibc 2.35 and later, where it finds a frame's
//! tables with `_dl_find_object`; with older C libraries it calls `dl_iterate_phdr`, which takes the
//! loader's lock (a recursive one; no allocation path of hopless holds a lock of its own meanwhile).
//! Unwind tables registered by hand (`__register_frame_info`, as some JITs do) make libgcc sort them on
//! first use, which allocates: the sampler marks the thread first, so that allocation is served like
//! any other and not sampled again.
//!
//! Where hopless is a library of its own (`libhopless.so`), the frames inside it are left out by
//! address: [`own_library`] finds its range once.

use core::sync::atomic::{AtomicUsize, Ordering};

#[repr(C)]
struct UnwindContext {
    _opaque: [u8; 0],
}

type TraceFn = extern "C" fn(*mut UnwindContext, *mut libc::c_void) -> libc::c_int;
type BacktraceFn = unsafe extern "C" fn(TraceFn, *mut libc::c_void) -> libc::c_int;
type GetIpFn = unsafe extern "C" fn(*mut UnwindContext) -> usize;

#[cfg(all(target_env = "musl", not(miri)))]
extern "C" {
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut libc::c_void) -> libc::c_int;
    fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
}

/// The unwinder's two functions, 0 until [`resolve`] found them.
static BACKTRACE: AtomicUsize = AtomicUsize::new(0);
static GET_IP: AtomicUsize = AtomicUsize::new(0);

/// Finds the unwinder (see the module's docs); false when there is none. Call it where loading a
/// library is safe: not from inside an allocation.
pub fn resolve() -> bool {
    if BACKTRACE.load(Ordering::Acquire) != 0 {
        return true;
    }
    let Some((bt, ip)) = find_unwinder() else {
        return false;
    };
    GET_IP.store(ip, Ordering::Relaxed);
    BACKTRACE.store(bt, Ordering::Release);
    true
}

#[cfg(all(target_env = "musl", not(miri)))]
fn find_unwinder() -> Option<(usize, usize)> {
    Some((
        _Unwind_Backtrace as BacktraceFn as usize,
        _Unwind_GetIP as GetIpFn as usize,
    ))
}

#[cfg(miri)]
fn find_unwinder() -> Option<(usize, usize)> {
    None
}

#[cfg(all(not(target_env = "musl"), not(miri)))]
fn find_unwinder() -> Option<(usize, usize)> {
    let lookup = |handle: *mut libc::c_void| {
        // SAFETY: NUL-terminated names; `dlsym` accepts RTLD_DEFAULT or a handle from `dlopen`.
        let (bt, ip) = unsafe {
            (
                libc::dlsym(handle, c"_Unwind_Backtrace".as_ptr()),
                libc::dlsym(handle, c"_Unwind_GetIP".as_ptr()),
            )
        };
        (!bt.is_null() && !ip.is_null()).then(|| (bt.addr(), ip.addr()))
    };
    if let Some(found) = lookup(libc::RTLD_DEFAULT) {
        return Some(found);
    }
    // SAFETY: a NUL-terminated name; the handle is kept for the process's life (never closed).
    let handle = unsafe { libc::dlopen(c"libgcc_s.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return None;
    }
    lookup(handle)
}

/// `_URC_NO_REASON`: go on to the next frame.
const CONTINUE: libc::c_int = 0;
/// `_URC_END_OF_STACK`: stop here.
const STOP: libc::c_int = 5;

struct Walk<'a> {
    out: &'a mut [usize],
    n: usize,
    skip: usize,
    own: (usize, usize),
}

extern "C" fn each_frame(ctx: *mut UnwindContext, arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Walk` that `walk` passed, alive for the whole walk, used by this thread only.
    let w = unsafe { &mut *arg.cast::<Walk<'_>>() };
    // SAFETY: a walk runs only once `resolve` stored both functions; `ctx` is the unwinder's context for
    // the current frame, valid during this callback.
    let ip = unsafe {
        let get_ip: GetIpFn = core::mem::transmute::<usize, GetIpFn>(GET_IP.load(Ordering::Relaxed));
        get_ip(ctx)
    };
    if ip == 0 {
        return STOP;
    }
    if w.skip > 0 {
        w.skip -= 1;
        return CONTINUE;
    }
    // hopless's own frames, at the innermost end, when it is a library of its own.
    if w.n == 0 && ip >= w.own.0 && ip < w.own.1 {
        return CONTINUE;
    }
    match w.out.get_mut(w.n) {
        Some(slot) => {
            // A return address: the call is the instruction before it. `- 1` names the call's own line
            // (and its inlined frames) when the address is symbolized.
            *slot = ip - 1;
            w.n += 1;
            CONTINUE
        }
        None => STOP,
    }
}

/// Fills `out` with the calling thread's return addresses minus one (call sites), outermost last,
/// leaving out the innermost `skip` frames after this function's own, then any frames inside hopless's
/// own library; returns how many were written. Empty until [`resolve`] found the unwinder (and under
/// Miri).
#[inline(never)]
pub fn walk(out: &mut [usize], skip: usize) -> usize {
    let bt = BACKTRACE.load(Ordering::Acquire);
    if bt == 0 {
        return 0;
    }
    let mut w = Walk {
        out,
        n: 0,
        // This function's own frame comes first.
        skip: skip + 1,
        own: own_library(),
    };
    // SAFETY: `bt` is `_Unwind_Backtrace` (stored by `resolve`); `each_frame` matches its callback
    // type and only touches `w`, which outlives the call.
    unsafe {
        let backtrace: BacktraceFn = core::mem::transmute::<usize, BacktraceFn>(bt);
        backtrace(each_frame, (&raw mut w).cast());
    }
    w.n
}

static OWN_LO: AtomicUsize = AtomicUsize::new(0);
static OWN_HI: AtomicUsize = AtomicUsize::new(0);
/// 0: not looked for yet; 1: looked for (the range is `OWN_LO..OWN_HI`, empty when hopless is part of
/// the program itself).
static OWN_FOUND: AtomicUsize = AtomicUsize::new(0);

/// The address range of hopless's own module when it is a library of its own (`libhopless.so`), else
/// an empty range: when hopless is linked into the program (a Rust `#[global_allocator]`), its frames
/// are the program's and the profile's `drop_frames` names them instead. Found once, with `dladdr` and
/// `dl_iterate_phdr`, neither of which allocates.
pub fn own_library() -> (usize, usize) {
    if OWN_FOUND.load(Ordering::Acquire) == 0 {
        let (lo, hi) = find_own_library();
        OWN_LO.store(lo, Ordering::Relaxed);
        OWN_HI.store(hi, Ordering::Relaxed);
        OWN_FOUND.store(1, Ordering::Release);
    }
    (OWN_LO.load(Ordering::Relaxed), OWN_HI.load(Ordering::Relaxed))
}

fn find_own_library() -> (usize, usize) {
    if cfg!(miri) {
        return (0, 0);
    }
    let here = super::place::place_of(own_library as fn() -> (usize, usize) as usize);
    // SAFETY: getauxval has no preconditions; AT_ENTRY is the program's entry point (or 0).
    let program = super::place::place_of(unsafe { libc::getauxval(libc::AT_ENTRY) } as usize);
    let base = match (here, program) {
        (Some(h), Some(p)) if h.base != p.base => h.base,
        _ => return (0, 0),
    };
    struct Find {
        base: usize,
        end: usize,
    }
    unsafe extern "C" fn each_module(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        arg: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `arg` is the `Find` passed below; `info` is the loader's record of one module, its
        // program headers `dlpi_phnum` entries long, valid during the callback.
        unsafe {
            let f = &mut *arg.cast::<Find>();
            let info = &*info;
            if info.dlpi_addr as usize != f.base {
                return 0;
            }
            for i in 0..info.dlpi_phnum as usize {
                let ph = &*info.dlpi_phdr.add(i);
                if ph.p_type == libc::PT_LOAD {
                    f.end = f.end.max(f.base + (ph.p_vaddr + ph.p_memsz) as usize);
                }
            }
            1
        }
    }
    let mut f = Find { base, end: 0 };
    // SAFETY: `each_module` matches the callback type and only touches `f`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each_module), (&raw mut f).cast()) };
    if f.end > base {
        (base, f.end)
    } else {
        (0, 0)
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[inline(never)]
    fn inner(out: &mut [usize]) -> usize {
        core::hint::black_box(walk(out, 0))
    }

    #[test]
    fn walks_this_threads_stack_through_its_callers() {
        assert!(resolve(), "no unwinder");
        let mut out = [0usize; 64];
        let n = inner(&mut out);
        assert!(n >= 3, "only {n} frames");
        // The innermost frame is `inner`'s call into `walk` (named through `dladdr`, which a static musl
        // program does not have).
        if cfg!(target_env = "musl") {
            return;
        }
        let at = super::super::place::place_of(out[0]).expect("a loaded module holds the frame");
        let (name, _) = super::super::place::function_of(&at, out[0]).expect("a function name");
        let name = core::str::from_utf8(name).unwrap();
        assert!(name.contains("inner"), "innermost frame is {name}");
    }

    #[test]
    fn stops_at_the_room_it_is_given() {
        assert!(resolve(), "no unwinder");
        let mut out = [0usize; 2];
        assert_eq!(inner(&mut out), 2);
    }
}
