//! This process's `malloc` and `free`, reached as a C program reaches them: declared `extern "C"` and
//! called through the executable's PLT, bound by the dynamic linker to whichever object provides them (the
//! `LD_PRELOAD`ed library, or glibc); and where the linker bound `malloc` (`dlsym` + `dladdr`).

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::alloc::blocks::Blocks;

/// glibc's `Dl_info`.
#[repr(C)]
struct DlInfo {
    fname: *const c_char,
    fbase: *mut c_void,
    sname: *const c_char,
    saddr: *mut c_void,
}

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
}

/// The process's `malloc` and `free`, as a workload's [`Blocks`].
pub struct Malloc;

impl Blocks for Malloc {
    type Request = usize;
    /// `free` finds the size from the pointer.
    type Size = ();

    #[inline(always)]
    fn request(bytes: usize) -> usize {
        bytes
    }

    #[inline(always)]
    fn size(_: usize) {}

    /// `malloc(bytes)`; aborts on failure.
    #[inline(always)]
    unsafe fn alloc(&self, bytes: usize) -> *mut u8 {
        // SAFETY: malloc takes any size.
        let p = unsafe { malloc(bytes) }.cast::<u8>();
        if p.is_null() {
            std::process::abort();
        }
        p
    }

    #[inline(always)]
    unsafe fn free(&self, p: *mut u8, _: ()) {
        // SAFETY: per the contract, a live malloc block given up here.
        unsafe { free(p.cast::<c_void>()) }
    }
}

/// The file of the object `malloc` resolves to in this process ("?" if the linker cannot say).
pub fn malloc_from() -> String {
    let mut info = DlInfo {
        fname: std::ptr::null(),
        fbase: std::ptr::null_mut(),
        sname: std::ptr::null(),
        saddr: std::ptr::null_mut(),
    };
    // SAFETY: RTLD_DEFAULT is the null handle on glibc; the name is a NUL-terminated string; `info` is a
    // valid Dl_info to fill, and `fname`, when set, points at a NUL-terminated string the loader owns.
    unsafe {
        let sym = dlsym(std::ptr::null_mut(), c"malloc".as_ptr());
        if sym.is_null() || dladdr(sym, &mut info) == 0 || info.fname.is_null() {
            return "?".into();
        }
        CStr::from_ptr(info.fname).to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malloc_resolves_to_a_loaded_object() {
        assert_ne!(malloc_from(), "?");
    }
}
