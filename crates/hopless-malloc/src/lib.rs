//! # libhopless: the C malloc family on hopless
//!
//! Built as `libhopless.so` (for `LD_PRELOAD=.../libhopless.so program`, or `-lhopless`) and
//! `libhopless.a`. Exports `malloc`, `free`, `calloc`, `realloc`, `reallocarray`, `posix_memalign`,
//! `aligned_alloc`, `memalign`, `valloc`, `pvalloc`, `malloc_usable_size`, `cfree` and glibc's `__libc_*`
//! aliases, with glibc's edge-case semantics (see each function).
//!
//! Nothing here allocates while setting up: thread caches come from hopless's own pages, the thread-exit
//! hook is a pthread key destructor, environment options are read with `getenv` (no allocation), the fork
//! handlers are registered by hopless at the first allocation, and the exit report runs from `.fini_array`.
//!
//! Pointers hopless did not allocate are recognised exactly (`Hopless::owns`): `free` and `realloc` of
//! one report it and abort, as glibc does for an invalid pointer, and `malloc_usable_size` reports 0.
//!
//! # Layout
//! Everything is in this file: the exports, errno handling, foreign pointers, and process hooks.

// C ABI: each function's contract is the C standard's / glibc's.
#![allow(clippy::missing_safety_doc)]
// Built with `panic = "abort"` (the release profile) on Linux (x86-64 and aarch64), where `hopless` needs no `std`,
// the library is `no_std` (see `without_std`): it then links neither `std` nor `libgcc_s`, and every
// process it is preloaded into loads less (README, "What a preloaded library costs every process").
// Builds that unwind (tests, debug) keep `std`, which unwinding needs.
#![cfg_attr(
    all(
        panic = "abort",
        any(target_arch = "x86_64", target_arch = "aarch64"),
        target_os = "linux"
    ),
    no_std
)]

use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};

use hl::experiment::platform::os_page_size;
use hl::Hopless;

/// The alignment glibc's malloc guarantees on x86-64 (blocks of 8 bytes or less get 8: their class).
const MALLOC_ALIGN: usize = 16;

/// What `std` would otherwise provide the library. An rlib built this way carries the panic handler, so
/// link it only into programs without `std` (the cdylib and staticlib are what C programs use).
#[cfg(all(
    panic = "abort",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_os = "linux",
    not(test)
))]
mod without_std {
    use hl::Hopless;

    /// A Rust panic inside the library. `scripts/check/no_panic.sh` checks that no exported function
    /// can reach one; should one happen all the same, it is reported with its location through a raw
    /// `write(2)` (nothing is allocated or formatted) and the process aborts, as for any fatal report.
    #[panic_handler]
    fn on_panic(info: &core::panic::PanicInfo<'_>) -> ! {
        let mut m = hl::experiment::report::Msg::new();
        m.str("hopless: internal error (a Rust panic)");
        if let Some(loc) = info.location() {
            m.str(" at ").str(loc.file()).str(":").dec(u64::from(loc.line()));
        }
        m.str("\n").fatal()
    }

    /// Built together with crates that need `alloc` (Cargo unifies features: `allocator-api2`'s
    /// `alloc`), the library links `alloc` too, which then needs a global allocator: hopless itself.
    /// Nothing in the library allocates through it (`scripts/check/no_panic.sh` walks every export).
    #[global_allocator]
    static RUST_ALLOCATOR: Hopless = Hopless;

    // Without `std`, nothing asks the linker for the C library (`std` does it for itself): ask here, so
    // the library names `libc.so.6` as needed and binds to its versioned symbols.
    #[link(name = "c")]
    extern "C" {}

    // `core` comes precompiled with unwind tables that name Rust's personality routine, which `std`
    // would define. Nothing unwinds through this library (it is built with `panic = "abort"`, and it
    // calls no code of the program's), so the routine is never called; if it ever were, aborting is the
    // only answer an allocator can give. It is hidden: the link resolves core's references to it, and a
    // program's own `rust_eh_personality` (a Rust program with a shared `std`) is never interposed by
    // this one.
    #[cfg(target_arch = "x86_64")]
    macro_rules! tail_call {
        () => {
            "jmp {abort}"
        };
    }
    #[cfg(target_arch = "aarch64")]
    macro_rules! tail_call {
        () => {
            "b {abort}"
        };
    }
    core::arch::global_asm!(
        ".pushsection .text.rust_eh_personality,\"ax\",%progbits",
        ".globl rust_eh_personality",
        ".hidden rust_eh_personality",
        ".type rust_eh_personality, %function",
        "rust_eh_personality:",
        tail_call!(),
        ".size rust_eh_personality, . - rust_eh_personality",
        ".popsection",
        abort = sym abort_now,
    );

    extern "C" fn abort_now() -> ! {
        hl::experiment::platform::abort()
    }
}

#[inline(always)]
fn set_errno(e: i32) {
    // SAFETY: __errno_location returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

#[inline(always)]
fn alloc(size: usize, align: usize, zeroed: bool) -> *mut c_void {
    if !zeroed {
        if let Some(p) = Hopless::alloc_cached(size, align) {
            return p.cast();
        }
    }
    alloc_slow(size, align, zeroed)
}

/// Everything past the magazine pop, out of line so that `malloc`'s fast path saves nothing.
#[cold]
#[inline(never)]
fn alloc_slow(size: usize, align: usize, zeroed: bool) -> *mut c_void {
    let p = Hopless::alloc_bytes(size.max(1), align, zeroed);
    if p.is_null() {
        set_errno(libc::ENOMEM);
    }
    p.cast()
}

// ------------------------------------------------------------------------------------------------------
// malloc family

#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    if let Some(p) = Hopless::malloc_cached(size) {
        return p.cast();
    }
    alloc_slow(size, if size <= 8 { 8 } else { MALLOC_ALIGN }, false)
}

#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: the program gives up a block or null (which `Hopless::free` ignores); anything that is not
    // a live hopless block (a double free, an interior, stack or foreign pointer, a header) is reported
    // and stops the process, as glibc's "free(): invalid pointer" does.
    unsafe { Hopless::free(p.cast()) }
}

#[no_mangle]
pub unsafe extern "C" fn cfree(p: *mut c_void) {
    // SAFETY: same contract as free.
    unsafe { free(p) }
}

/// C23's sized free. The size is not needed (the slab header knows the class) and not checked: a
/// wrong one is the program's undefined behaviour, as in C23. Exported ahead of glibc 2.43, whose own
/// would otherwise take hopless's blocks to glibc's free.
#[no_mangle]
pub unsafe extern "C" fn free_sized(p: *mut c_void, _size: usize) {
    // SAFETY: same contract as free.
    unsafe { free(p) }
}

/// C23's sized free of a block from `aligned_alloc` (see [`free_sized`]).
#[no_mangle]
pub unsafe extern "C" fn free_aligned_sized(p: *mut c_void, _align: usize, _size: usize) {
    // SAFETY: same contract as free.
    unsafe { free(p) }
}

#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        Some(total) => alloc(total, if total <= 8 { 8 } else { MALLOC_ALIGN }, true),
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        // SAFETY: malloc has no preconditions.
        return unsafe { malloc(size) };
    }
    if size == 0 {
        // glibc: realloc(p, 0) frees p and returns NULL.
        // SAFETY: p is a live block the program gives up.
        unsafe { free(p) };
        return ptr::null_mut();
    }
    let align = if size <= 8 { 8 } else { MALLOC_ALIGN };
    // SAFETY: a live block of this allocator (anything else is reported); size > 0.
    let q = unsafe { Hopless::realloc_unsized(p.cast(), size, align) };
    if q.is_null() {
        set_errno(libc::ENOMEM); // the old block is untouched, as C requires
    }
    q.cast()
}

#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        // SAFETY: same contract as realloc.
        Some(total) => unsafe { realloc(p, total) },
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

/// Allocation aligned to `align` (a power of two, at least the malloc alignment).
fn aligned(align: usize, size: usize) -> *mut c_void {
    alloc(size, align.max(if size <= 8 { 8 } else { MALLOC_ALIGN }), false)
}

#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> i32 {
    if !align.is_power_of_two() || align % core::mem::size_of::<*mut c_void>() != 0 {
        return libc::EINVAL;
    }
    // posix_memalign reports through its return value and leaves errno alone on success.
    // SAFETY: __errno_location is this thread's errno.
    let saved = unsafe { *libc::__errno_location() };
    let p = aligned(align, size);
    if p.is_null() {
        set_errno(saved);
        return libc::ENOMEM;
    }
    // SAFETY: the caller passes a valid out-pointer.
    unsafe { *out = p };
    0
}

#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    // glibc (2.38+) rejects alignments that are not powers of two with EINVAL.
    if !align.is_power_of_two() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    aligned(align, size)
}

#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    // glibc's memalign rounds an alignment that is not a power of two up to the next one.
    let align = if align.is_power_of_two() {
        align
    } else {
        match align.checked_next_power_of_two() {
            Some(a) => a,
            None => {
                set_errno(libc::EINVAL);
                return ptr::null_mut();
            }
        }
    };
    aligned(align, size)
}

#[no_mangle]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    aligned(os_page_size(), size)
}

#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let page = os_page_size();
    match size.max(1).checked_next_multiple_of(page) {
        Some(rounded) => aligned(page, rounded),
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() || !Hopless::owns(p.cast()) {
        return 0;
    }
    // SAFETY: a live hopless block (the C contract).
    unsafe { Hopless::usable_size(p.cast()) }
}

/// glibc's `malloc_trim`: the calling thread's cached blocks go back to their slabs, then every fully
/// free slab and cached large mapping goes back to the OS. Returns 1 if slabs were given back, else 0
/// (also when only cached large mappings went back: they are not counted). `pad` is ignored: hopless
/// keeps no top-of-heap to leave padding in.
#[no_mangle]
pub extern "C" fn malloc_trim(_pad: usize) -> i32 {
    let before = Hopless::stats();
    Hopless::trim();
    let after = Hopless::stats();
    let resident = |s: &hl::Stats| s.classes.iter().map(|c| c.slabs).sum::<u64>();
    i32::from(after.purged_slabs > before.purged_slabs || resident(&after) < resident(&before))
}

// glibc's internal names, which some programs and libraries call directly.

#[no_mangle]
pub unsafe extern "C" fn __libc_malloc(size: usize) -> *mut c_void {
    // SAFETY: same contract.
    unsafe { malloc(size) }
}

#[no_mangle]
pub unsafe extern "C" fn __libc_free(p: *mut c_void) {
    // SAFETY: same contract.
    unsafe { free(p) }
}

#[no_mangle]
pub unsafe extern "C" fn __libc_calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: same contract.
    unsafe { calloc(n, size) }
}

#[no_mangle]
pub unsafe extern "C" fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: same contract.
    unsafe { realloc(p, size) }
}

#[no_mangle]
pub unsafe extern "C" fn __libc_memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: same contract.
    unsafe { memalign(align, size) }
}

#[no_mangle]
pub unsafe extern "C" fn __libc_valloc(size: usize) -> *mut c_void {
    // SAFETY: same contract.
    unsafe { valloc(size) }
}

#[no_mangle]
pub unsafe extern "C" fn __libc_pvalloc(size: usize) -> *mut c_void {
    // SAFETY: same contract.
    unsafe { pvalloc(size) }
}

#[no_mangle]
pub unsafe extern "C" fn __posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> i32 {
    // SAFETY: same contract.
    unsafe { posix_memalign(out, align, size) }
}

// ------------------------------------------------------------------------------------------------------
// Process hooks: options, fork, exit.

static SHOW_STATS: AtomicBool = AtomicBool::new(false);

extern "C" fn on_load() {
    // The fork handlers are registered by hopless itself at the first allocation.
    SHOW_STATS.store(
        hl::experiment::platform::env_flag(c"HOPLESS_SHOW_STATS"),
        Ordering::Relaxed,
    );
    if hl::experiment::platform::env_flag(c"HOPLESS_VERBOSE") {
        Hopless::print_config();
    }
}

extern "C" fn on_unload() {
    if SHOW_STATS.load(Ordering::Relaxed) {
        Hopless::print_stats();
    }
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = on_unload;

// ------------------------------------------------------------------------------------------------------
