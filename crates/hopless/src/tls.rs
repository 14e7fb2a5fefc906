//! The thread's words: thread-local storage that reading never allocates or registers anything for.
//!
//! Six words per thread, all zero in a new thread:
//! - [`CACHE`]: the thread's cache pointer (null stands for the empty cache; see `process`);
//! - [`SEGMENT_END`]: the last small or medium segment the C free path found in the segment map, as the
//!   segment's last byte address, 0 for none (see `process::segment_end` and `fast::free_unsized`);
//! - [`HARDENED`]: hardened mode's cache for the checked paths (the fast path's stays the empty one);
//! - [`RETIRED`]: non-zero once the thread's exit destructor has run: later allocations of the thread go
//!   uncached;
//! - [`THREAD_NUMBER`]: a small number naming the thread in debug reports, 0 until first asked for;
//! - [`HOLDS_FORK_LOCKS`]: non-zero while the thread holds every allocator lock across a `fork` (see
//!   `lock`). A word of the forking thread's own, not a global: a global written on both sides of every
//!   fork costs a copy-on-write fault of its page in the parent and another in the child.
//!
//! On Linux (x86-64 and aarch64) they are 48 bytes of the initial-exec TLS model, reached with a load
//! relative to the thread pointer (`%fs` on x86-64, `tpidr_el0` on aarch64): rustc's `thread_local!` in
//! a shared object would use the general-dynamic model, a call to `__tls_get_addr` on every malloc and
//! free of `libhopless.so`. This needs nothing from `std`, so the crate builds there without it
//! (`lib.rs`): `libhopless.so` then links neither `std` nor, through it, `libgcc_s`. Under Miri the words
//! are a `const`-initialised `thread_local!` of a type without `Drop`.

/// The thread's cache pointer.
pub(crate) const CACHE: usize = 0;
/// The last segment the C free path found, as its last byte address.
pub(crate) const SEGMENT_END: usize = 1;
/// Hardened mode's cache pointer.
pub(crate) const HARDENED: usize = 2;
/// Whether the thread's exit destructor has run.
pub(crate) const RETIRED: usize = 3;
/// The thread's number in debug reports.
pub(crate) const THREAD_NUMBER: usize = 4;
/// Whether the thread holds every lock for a `fork`.
pub(crate) const HOLDS_FORK_LOCKS: usize = 5;
const WORDS: usize = 6;

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
mod raw {
    // Six words in the initial-exec TLS model: their offset from the thread pointer is fixed when the
    // library is loaded (a GOT entry, `R_X86_64_TPOFF64`), so a read is a load of that offset and a load
    // from `%fs`. In an executable the linker relaxes it to a constant offset. A shared object using it
    // must be loaded at start-up (`LD_PRELOAD`, or linked), as the README already requires of
    // libhopless.so; glibc keeps some static TLS spare for a later `dlopen` too.
    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 4",
        ".globl hopless_tls_cache",
        ".hidden hopless_tls_cache",
        ".type hopless_tls_cache, @object",
        ".size hopless_tls_cache, 48",
        "hopless_tls_cache:",
        ".zero 48",
        ".popsection",
    );

    /// The offset of the words from the thread pointer.
    #[inline(always)]
    fn offset() -> usize {
        let t: usize;
        // SAFETY: reads the GOT entry the dynamic linker filled with the words' offset when it loaded
        // this object; it never changes afterwards, so the answer is a constant of the process (hence
        // `pure, nomem`: the compiler may reuse one load for several words). The stack and flags are
        // untouched.
        unsafe {
            core::arch::asm!(
                "mov {t}, qword ptr [rip + hopless_tls_cache@GOTTPOFF]",
                t = out(reg) t,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        t
    }

    #[inline(always)]
    pub(super) fn read_raw<const W: usize>() -> usize {
        const { assert!(W < super::WORDS) };
        let t = offset();
        let v: usize;
        // SAFETY: reads this thread's own word `W` < 6 (`%fs` base plus the offset, plus 8 per word);
        // nothing else is read or written; the stack and flags are untouched.
        unsafe {
            core::arch::asm!(
                "mov {v}, qword ptr fs:[{t} + {w}]",
                t = in(reg) t,
                w = const 8 * W,
                v = lateout(reg) v,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        v
    }

    #[inline(always)]
    pub(super) fn write_raw<const W: usize>(v: usize) {
        const { assert!(W < super::WORDS) };
        let t = offset();
        // SAFETY: writes this thread's own word `W` < 6, found as in `read_raw`; no other memory is touched.
        unsafe {
            core::arch::asm!(
                "mov qword ptr fs:[{t} + {w}], {v}",
                t = in(reg) t,
                w = const 8 * W,
                v = in(reg) v,
                options(nostack, preserves_flags),
            );
        }
    }
}

#[cfg(all(target_arch = "aarch64", target_os = "linux", not(miri)))]
mod raw {
    // The same six words, initial-exec on aarch64: the dynamic linker writes their offset from the
    // thread pointer into a GOT entry (`R_AARCH64_TLS_TPREL64`) when it loads the object, and a read is
    // `tpidr_el0` plus that offset (variant I TLS: the offset is positive, past the 16-byte TCB). In an
    // executable the linker relaxes the GOT load to a `movz`/`movk` constant. As on x86-64, a shared
    // object using it must be loaded at start-up or fit glibc's spare static TLS.
    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",%nobits",
        ".p2align 4",
        ".globl hopless_tls_cache",
        ".hidden hopless_tls_cache",
        ".type hopless_tls_cache, %object",
        ".size hopless_tls_cache, 48",
        "hopless_tls_cache:",
        ".zero 48",
        ".popsection",
    );

    /// The address of this thread's words.
    #[inline(always)]
    fn base() -> usize {
        let a: usize;
        // SAFETY: reads the GOT entry the dynamic linker filled with the words' offset (a constant of the
        // process) and the thread's own `tpidr_el0` (a constant of the thread), and adds them; both
        // reads are `pure, nomem`: the same thread always gets the same answer, and no memory the
        // program can write is read. The stack and flags are untouched.
        unsafe {
            core::arch::asm!(
                "adrp {a}, :gottprel:hopless_tls_cache",
                "ldr {a}, [{a}, #:gottprel_lo12:hopless_tls_cache]",
                "mrs {t}, tpidr_el0",
                "add {a}, {a}, {t}",
                a = out(reg) a,
                t = out(reg) _,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        a
    }

    #[inline(always)]
    pub(super) fn read_raw<const W: usize>() -> usize {
        const { assert!(W < super::WORDS) };
        let v: usize;
        // SAFETY: reads this thread's own word `W` < 6 (the words' address plus 8 per word); nothing else
        // is read or written; the stack and flags are untouched.
        unsafe {
            core::arch::asm!(
                "ldr {v}, [{a}, #{w}]",
                a = in(reg) base(),
                w = const 8 * W,
                v = lateout(reg) v,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        v
    }

    #[inline(always)]
    pub(super) fn write_raw<const W: usize>(v: usize) {
        const { assert!(W < super::WORDS) };
        // SAFETY: writes this thread's own word `W` < 6, found as in `read_raw`; no other memory is touched.
        unsafe {
            core::arch::asm!(
                "str {v}, [{a}, #{w}]",
                a = in(reg) base(),
                w = const 8 * W,
                v = in(reg) v,
                options(nostack, preserves_flags),
            );
        }
    }
}

/// Both architectures' words through `raw`: pointers go out with their provenance exposed and come back
/// with it, the words being plain memory to `asm!`.
#[cfg(all(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_os = "linux",
    not(miri)
))]
mod imp {
    use super::raw::{read_raw, write_raw};

    #[inline(always)]
    pub(super) fn read<const W: usize>() -> *mut u8 {
        core::ptr::with_exposed_provenance_mut(read_raw::<W>())
    }

    #[inline(always)]
    pub(super) fn write<const W: usize>(p: *mut u8) {
        write_raw::<W>(p.expose_provenance());
    }
}

#[cfg(not(all(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_os = "linux",
    not(miri)
)))]
mod imp {
    extern crate std;
    use core::cell::Cell;

    // Pointers keep their provenance here (Miri runs with strict provenance); plain numbers are stored
    // as pointers without one.
    std::thread_local! {
        static WORDS: [Cell<*mut u8>; super::WORDS] =
            const { [const { Cell::new(core::ptr::null_mut()) }; super::WORDS] };
    }

    #[inline(always)]
    pub(super) fn read<const W: usize>() -> *mut u8 {
        const { assert!(W < super::WORDS) };
        WORDS.with(|w| w.get(W).map_or(core::ptr::null_mut(), |c| c.get()))
    }

    #[inline(always)]
    pub(super) fn write<const W: usize>(p: *mut u8) {
        const { assert!(W < super::WORDS) };
        WORDS.with(|w| {
            if let Some(c) = w.get(W) {
                c.set(p);
            }
        });
    }
}

/// Word `W` of the calling thread, as a number.
#[inline(always)]
pub(crate) fn read<const W: usize>() -> usize {
    imp::read::<W>().addr()
}

/// Sets word `W` of the calling thread to a number.
#[inline(always)]
pub(crate) fn write<const W: usize>(v: usize) {
    imp::write::<W>(core::ptr::without_provenance_mut(v))
}

/// Word `W` of the calling thread, as a pointer (one stored with [`write_ptr`]).
#[inline(always)]
pub(crate) fn read_ptr<const W: usize, T>() -> *mut T {
    imp::read::<W>().cast()
}

/// Sets word `W` of the calling thread to a pointer.
#[inline(always)]
pub(crate) fn write_ptr<const W: usize, T>(p: *mut T) {
    imp::write::<W>(p.cast())
}
