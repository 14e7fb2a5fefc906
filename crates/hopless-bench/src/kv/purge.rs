//! Asking each allocator to give back to the OS what it can, so that memory can be read a second time
//! after the fill: jemalloc and mimalloc keep freed pages for a while (decay) and purge them later, glibc
//! keeps free memory at the top of its heaps, hopless gives slabs back when they empty.

use std::ffi::CStr;

/// glibc: `malloc_trim(0)` (every arena, free pages in the middle of the heaps too).
#[cfg(target_env = "gnu")]
pub fn system() {
    // SAFETY: malloc_trim takes no pointers and may be called at any time.
    unsafe { libc::malloc_trim(0) };
}

/// Other C libraries (musl's malloc): no call to ask; what they gave back on free is what there is.
#[cfg(not(target_env = "gnu"))]
pub fn system() {}

/// jemalloc's `MALLCTL_ARENAS_ALL` (a macro in jemalloc.h, not exported by tikv-jemalloc-sys).
const MALLCTL_ARENAS_ALL: u32 = 4096;

/// jemalloc: `mallctl("arena.<MALLCTL_ARENAS_ALL>.purge")`, every arena's dirty and muzzy pages.
pub fn jemalloc() {
    let name = format!("arena.{MALLCTL_ARENAS_ALL}.purge\0");
    let name = CStr::from_bytes_with_nul(name.as_bytes()).expect("one trailing nul");
    // SAFETY: a nul-terminated name; "arena.<i>.purge" reads and writes nothing, so null old and new
    // pointers with zero lengths are what it takes.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    debug_assert_eq!(rc, 0, "mallctl arena purge");
}

/// mimalloc: `mi_collect(true)` (frees abandoned segments and purges what is free).
pub fn mimalloc() {
    // SAFETY: mi_collect takes no pointers and may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// hopless: `Hopless::trim()` (flushes this thread's cache, returns every empty slab and cached mapping).
pub fn hopless() {
    hopless::Hopless::trim();
}
