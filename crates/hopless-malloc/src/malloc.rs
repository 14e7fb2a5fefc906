//! The C malloc family on hopless, with glibc's edge-case semantics (see each function): `malloc`,
//! `free`, `calloc`, `realloc`, `reallocarray`, the aligned allocations, `malloc_usable_size`,
//! `malloc_trim`, C23's sized frees and glibc's `__libc_*` names.
//!
//! `malloc` and `free` are the magazine pop and push (`scripts/check/fastpath_asm.sh` reads them);
//! everything else goes out of line to `alloc_slow`, which sets `errno`.

use core::ffi::c_void;
use core::ptr;

use hl::experiment::platform::os_page_size;
use hl::Hopless;

/// The alignment C's `malloc` gives a block of `size` bytes: glibc's 16 on x86-64, or 8 for blocks of
/// 8 bytes or less (their class).
#[inline(always)]
pub(crate) fn malloc_align(size: usize) -> usize {
    if size <= 8 {
        8
    } else {
        16
    }
}

#[inline(always)]
pub(crate) fn set_errno(e: i32) {
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

#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    if let Some(p) = Hopless::malloc_cached(size) {
        return p.cast();
    }
    alloc_slow(size, malloc_align(size), false)
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
        Some(total) => alloc(total, malloc_align(total), true),
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
    let align = malloc_align(size);
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
    alloc(size, align.max(malloc_align(size)), false)
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
