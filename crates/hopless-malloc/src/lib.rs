//! # libhopless: the C malloc family on hopless
//!
//! Built as `libhopless.so` (for `LD_PRELOAD=.../libhopless.so program`, or `-lhopless`) and
//! `libhopless.a`. Exports `malloc`, `free`, `calloc`, `realloc`, `reallocarray`, `posix_memalign`,
//! `aligned_alloc`, `memalign`, `valloc`, `pvalloc`, `malloc_usable_size`, `cfree` and glibc's `__libc_*`
//! aliases, with glibc's edge-case semantics (see each function); and glibc's introspection calls,
//! `mallinfo2`, `mallinfo`, `malloc_stats`, `malloc_info` and `mallopt`, answered from hopless's own
//! counts (`introspect`: what each of glibc's fields means here); and hopless's own calls with a
//! `hopless_` prefix, declared in `include/hopless.h` (`extension`): batches, usable size, trim, huge
//! pages, a versioned stats struct and the stats table. `scripts/install.sh PREFIX` installs the
//! libraries, the header and a pkg-config file (`hopless.pc`).
//!
//! Nothing here allocates while setting up: thread caches come from hopless's own pages, the thread-exit
//! hook is a pthread key destructor, environment options are read with `getenv` (no allocation), the fork
//! handlers are registered by hopless at the first allocation, and the exit report runs from `.fini_array`.
//!
//! Pointers hopless did not allocate are recognised exactly (`Hopless::owns`): `free` and `realloc` of
//! one report it and abort, as glibc does for an invalid pointer, and `malloc_usable_size` reports 0.
//!
//! # Layout
//!
//! Layers, top to bottom: each module uses only those listed below it (`scripts/check/layers.py`
//! checks this table against the code).
//!
//! | module | what it holds |
//! |---|---|
//! | `extension` | the `hopless_` calls of `include/hopless.h`, over the `Hopless` API |
//! | `introspect` | glibc's `mallinfo2`, `mallinfo`, `malloc_stats`, `malloc_info` and `mallopt`, from one stats snapshot each |
//! | `malloc` | the malloc family, errno handling, foreign pointers |
//! | `text` | text built on the stack for the reports: no allocation, no `core::fmt` |
//!
//! This file: what a build without `std` needs (`without_std`) and the process hooks (options at load,
//! the stats at exit).

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

use core::sync::atomic::{AtomicBool, Ordering};

use hl::Hopless;

mod extension;
mod introspect;
mod malloc;
mod text;

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
