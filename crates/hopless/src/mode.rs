//! Which mode the allocator runs in: default, debug, hardened (or both checked modes). Read once, from
//! `HOPLESS_DEBUG` / `HOPLESS_HARDENED` at the first allocation, or set by [`set_mode`] before it.
//!
//! Without the `debug` feature every function here is a constant (mode 0), so the checked paths behind
//! them compile away and no other module needs a `cfg` of its own.

use core::sync::atomic::{AtomicU8, Ordering};

const MODE_UNSET: u8 = 0x80;
pub const DEBUG: u8 = 1;
pub const HARDENED: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(MODE_UNSET);

/// The mode bits, reading the environment the first time.
#[inline]
pub fn mode() -> u8 {
    if !cfg!(feature = "debug") {
        return 0;
    }
    let m = MODE.load(Ordering::Relaxed);
    if m & MODE_UNSET == 0 {
        m
    } else {
        init_from_env()
    }
}

/// Whether either checked mode is on, reading the environment the first time: the test of a path that
/// may be the process's first (an allocation, a thread's first cache). The paths that come after the
/// first allocation use [`checked_on`] and [`debug_on`], one load each.
#[inline]
pub fn checked() -> bool {
    mode() & (DEBUG | HARDENED) != 0
}

/// Whether debug checks are on (one relaxed load once set; false while the mode is unread).
#[inline(always)]
pub fn debug_on() -> bool {
    if !cfg!(feature = "debug") {
        return false;
    }
    let m = MODE.load(Ordering::Relaxed);
    m & DEBUG != 0 && m & MODE_UNSET == 0
}

/// Whether either checked mode is on (one relaxed load once set; false while the mode is unread, when no
/// block can have been allocated yet): the slow paths that see it leave the default paths for `heap`'s
/// debug or hardened ones.
#[inline(always)]
pub fn checked_on() -> bool {
    if !cfg!(feature = "debug") {
        return false;
    }
    let m = MODE.load(Ordering::Relaxed);
    m & (DEBUG | HARDENED) != 0 && m & MODE_UNSET == 0
}

/// Whether the hardened mode is on.
#[inline]
pub fn hardened() -> bool {
    mode() & HARDENED != 0
}

#[cold]
fn init_from_env() -> u8 {
    let mut m = 0;
    if crate::platform::env_flag(c"HOPLESS_DEBUG") {
        m |= DEBUG;
    }
    if crate::platform::env_flag(c"HOPLESS_HARDENED") {
        m |= HARDENED;
    }
    match MODE.compare_exchange(MODE_UNSET, m, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => m,
        Err(cur) => cur,
    }
}

/// Sets the modes from code. Only before the first allocation (returns false after it): blocks allocated
/// without redzones cannot be checked later.
pub fn set_mode(debug: bool, hardened: bool) -> bool {
    if !cfg!(feature = "debug") {
        return false;
    }
    let m = (if debug { DEBUG } else { 0 }) | (if hardened { HARDENED } else { 0 });
    MODE.compare_exchange(MODE_UNSET, m, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
}
