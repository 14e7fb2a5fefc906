//! The process's other services from the OS, none of which allocates: `errno` kept as the program left
//! it, standard error, a coarse clock, abort, the environment, the kernel's random bytes, fork handlers.

/// Runs `f` and puts `errno` back as it was: the allocator's own system calls must not change what a
/// successful `malloc` leaves in it.
pub fn keeping_errno<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: __errno_location is this thread's errno, valid for the thread's life.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    let r = f();
    // SAFETY: as above.
    unsafe { *errno = saved };
    r
}

/// Writes all of `bytes` to standard error with raw `write(2)` calls: no buffer, no lock, no allocation.
pub fn write_stderr(bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: `rest` is a valid readable slice for its length.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return;
        }
        rest = rest.get(n as usize..).unwrap_or_default();
    }
}

/// Milliseconds of a coarse monotonic clock (the vDSO's: a few nanoseconds, no system call, and nothing
/// allocated). Under Miri, the plain monotonic clock, which it emulates.
pub fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let clock = if cfg!(miri) {
        libc::CLOCK_MONOTONIC
    } else {
        libc::CLOCK_MONOTONIC_COARSE
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is one Linux has.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1000)
        .wrapping_add(ts.tv_nsec as u64 / 1_000_000)
}

/// Stops the process at once, so a core dump keeps the stack of the fault.
pub fn abort() -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}

/// Whether the environment variable `name` is set to something other than empty or `0` (read with
/// `getenv`, which does not allocate).
pub fn env_flag(name: &core::ffi::CStr) -> bool {
    // SAFETY: getenv reads the environment without allocating; the result is checked for null.
    let v = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: a non-null getenv result is a NUL-terminated string: its first byte is readable.
    !v.is_null() && unsafe { *v } != 0 && unsafe { *v } != b'0' as libc::c_char
}

/// The environment variable `name`: `None` when it is unset or empty, `Some(false)` when it is `0`,
/// `Some(true)` for anything else (read with `getenv`, which does not allocate).
pub fn env_setting(name: &core::ffi::CStr) -> Option<bool> {
    // SAFETY: getenv reads the environment without allocating; the result is checked for null.
    let v = unsafe { libc::getenv(name.as_ptr()) };
    if v.is_null() {
        return None;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string: its first byte is readable.
    match unsafe { *v } {
        0 => None,
        c if c == b'0' as libc::c_char => Some(false),
        _ => Some(true),
    }
}

/// The environment variable `name`'s bytes: `None` when it is unset or empty (read with `getenv`,
/// which does not allocate). The slice lives as long as the environment is not changed.
pub fn env_bytes(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    // SAFETY: getenv reads the environment without allocating; the result is checked for null.
    let v = unsafe { libc::getenv(name.as_ptr()) };
    if v.is_null() {
        return None;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string that stays while the environment is
    // not changed (the caller reads it at once, during set-up).
    let bytes = unsafe { core::ffi::CStr::from_ptr(v) }.to_bytes();
    (!bytes.is_empty()).then_some(bytes)
}

/// A word of the random bytes the kernel gave this process at exec (`AT_RANDOM`), or 0 where there are
/// none (and under Miri).
pub fn process_random() -> usize {
    if cfg!(miri) {
        return 0;
    }
    // SAFETY: getauxval has no preconditions; AT_RANDOM points at 16 random bytes the kernel gave this
    // process, or is 0.
    unsafe {
        let at = libc::getauxval(libc::AT_RANDOM) as *const u8;
        if at.is_null() {
            0
        } else {
            at.cast::<usize>().read_unaligned()
        }
    }
}

/// Registers fork handlers (prepare runs in the parent before the fork, in reverse order of
/// registration; parent and child after it, in order).
pub fn register_fork_handlers(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    // glibc's `pthread_atfork` is not in `libc.so.6`: it lives in `libc_nonshared.a`, a two-line wrapper
    // that passes the calling object's `__dso_handle` to `__register_atfork` (so its handlers go if the
    // object is unloaded). A `libhopless.so` built without `std` ends up with `pthread_atfork` unresolved
    // (on x86-64 the dynamic linker then binds it to an old compatibility symbol; aarch64's `libc.so.6`
    // has none, and loading fails), so on glibc hopless does what the wrapper does. musl has
    // `pthread_atfork` itself, and Miri knows only `pthread_atfork`.
    #[cfg(all(target_env = "gnu", not(miri)))]
    {
        extern "C" {
            /// This object's handle, which the C runtime's start files (`crtbeginS.o`) define in every
            /// executable and shared object.
            static __dso_handle: u8;
            fn __register_atfork(
                prepare: Option<extern "C" fn()>,
                parent: Option<extern "C" fn()>,
                child: Option<extern "C" fn()>,
                dso_handle: *const u8,
            ) -> libc::c_int;
        }
        // SAFETY: plain extern "C" handlers that live as long as the process; `__dso_handle` is only
        // taken by address, as glibc's own `pthread_atfork` does.
        unsafe { __register_atfork(Some(prepare), Some(parent), Some(child), &raw const __dso_handle) };
    }
    #[cfg(any(not(target_env = "gnu"), miri))]
    // SAFETY: plain extern "C" handlers that live as long as the process.
    unsafe {
        libc::pthread_atfork(Some(prepare), Some(parent), Some(child))
    };
}

/// The signal `name` names: a number, or a name with or without `SIG` (`USR2`, `SIGUSR2`); `None` for
/// anything else, and for the signals a program cannot catch.
pub fn signal_number(name: &[u8]) -> Option<libc::c_int> {
    let name = name.strip_prefix(b"SIG").unwrap_or(name);
    let n = if !name.is_empty() && name.iter().all(u8::is_ascii_digit) {
        name.iter().try_fold(0 as libc::c_int, |v, &d| {
            v.checked_mul(10)?.checked_add((d - b'0') as libc::c_int)
        })?
    } else {
        const NAMES: [(&[u8], libc::c_int); 8] = [
            (b"USR1", libc::SIGUSR1),
            (b"USR2", libc::SIGUSR2),
            (b"HUP", libc::SIGHUP),
            (b"PROF", libc::SIGPROF),
            (b"WINCH", libc::SIGWINCH),
            (b"URG", libc::SIGURG),
            (b"TTIN", libc::SIGTTIN),
            (b"TTOU", libc::SIGTTOU),
        ];
        NAMES.iter().find(|(n, _)| *n == name)?.1
    };
    (n > 0 && n < 65 && n != libc::SIGKILL && n != libc::SIGSTOP).then_some(n)
}

/// Installs `handler` for signal `sig` (restarting interrupted system calls), replacing what was there.
pub fn on_signal(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: an all-zero `sigaction` is a valid value (no flags, empty mask) to fill in.
    let mut act: libc::sigaction = unsafe { core::mem::zeroed() };
    act.sa_sigaction = handler as usize;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: `act` is a valid sigaction; a null old action is allowed.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, core::ptr::null_mut());
    }
}
