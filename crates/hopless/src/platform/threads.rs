//! Threads: the calling thread's ids, whether another thread still exists, the futex the class lock
//! sleeps on, and thread keys, whose destructors run at a thread's exit. None of them allocates (glibc's
//! `pthread_setspecific` does for keys past the first 32: see `process`).

use core::ptr;

use super::os::keeping_errno;

/// The calling thread's `pthread_self()` (never 0 for a running thread).
#[inline]
pub fn thread_self() -> usize {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as usize }
}

/// The calling thread's kernel thread id.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Whether a thread of this process with kernel id `tid` exists (a dead thread's id is reused only after
/// the kernel's pid counter wraps). Leaves `errno` as it was.
pub fn thread_alive(tid: i32) -> bool {
    if tid <= 0 {
        return true;
    }
    keeping_errno(|| {
        // SAFETY: tgkill with signal 0 only checks the target; __errno_location is this thread's errno.
        unsafe {
            let rc = libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0);
            !(rc != 0 && *libc::__errno_location() == libc::ESRCH)
        }
    })
}

/// One private futex operation on `word` (`timeout`: a relative one for FUTEX_WAIT, null for none).
/// Leaves `errno` as it was.
fn futex(word: &core::sync::atomic::AtomicU32, op: libc::c_int, val: u32, timeout: *const libc::timespec) {
    keeping_errno(|| {
        // SAFETY: `word` is a live, aligned 32-bit atomic for the call's length; FUTEX_WAIT only reads it
        // and FUTEX_WAKE touches no memory; `timeout` is null ("none"; FUTEX_WAKE ignores it) or a
        // valid timespec the kernel only reads.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                timeout,
            )
        }
    });
}

/// Sleeps while `word` holds `expected` (the kernel checks it atomically with going to sleep), until a
/// [`futex_wake_one`] on it, or a spurious return. Leaves `errno` as it was.
pub fn futex_wait(word: &core::sync::atomic::AtomicU32, expected: u32) {
    futex(word, libc::FUTEX_WAIT, expected, ptr::null());
}

/// [`futex_wait`] for at most `ms` milliseconds.
pub fn futex_wait_ms(word: &core::sync::atomic::AtomicU32, expected: u32, ms: u32) {
    // SAFETY: a timespec is plain integers, for which all zeros is a value.
    let mut timeout: libc::timespec = unsafe { core::mem::zeroed() };
    timeout.tv_sec = (ms / 1000) as _;
    timeout.tv_nsec = ((ms % 1000) * 1_000_000) as _;
    futex(word, libc::FUTEX_WAIT, expected, &timeout);
}

/// Starts a detached thread named `name` (at most 15 bytes) running `main`, with a `stack`-byte stack and
/// every signal blocked (a signal for the process never runs the program's handler on it). False when
/// the thread could not be made. `pthread_create` may call `malloc` (glibc allocates the new thread's
/// thread-local vector): the caller holds no allocator lock and its own state is settled, so such a call
/// is an ordinary one.
pub fn spawn_detached(
    main: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    stack: usize,
    name: &core::ffi::CStr,
) -> bool {
    keeping_errno(|| {
        // SAFETY: every pointer passed is to a local that outlives the call (`attr`, `all`, `old`,
        // `thread`); the attribute object is initialised before use and destroyed after; the signal
        // mask is restored on every path before returning; `main` is an `extern "C"` fn that takes a
        // null argument.
        unsafe {
            let mut attr: libc::pthread_attr_t = core::mem::zeroed();
            if libc::pthread_attr_init(&mut attr) != 0 {
                return false;
            }
            libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
            libc::pthread_attr_setstacksize(&mut attr, stack.max(libc::PTHREAD_STACK_MIN));
            let mut all: libc::sigset_t = core::mem::zeroed();
            let mut old: libc::sigset_t = core::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let mut thread: libc::pthread_t = core::mem::zeroed();
            let made = libc::pthread_create(&mut thread, &attr, main, ptr::null_mut()) == 0;
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut());
            libc::pthread_attr_destroy(&mut attr);
            if made {
                libc::pthread_setname_np(thread, name.as_ptr());
            }
            made
        }
    })
}

/// Wakes one thread sleeping in [`futex_wait`] on `word`. Leaves `errno` as it was.
pub fn futex_wake_one(word: &core::sync::atomic::AtomicU32) {
    futex(word, libc::FUTEX_WAKE, 1, ptr::null());
}

/// Gives the rest of the time slice away.
#[inline]
pub fn yield_now() {
    // SAFETY: `sched_yield` takes no arguments and touches no memory of ours.
    unsafe {
        libc::sched_yield();
    }
}

/// A destructor run for a thread's non-null key value when the thread exits.
pub type KeyDestructor = unsafe extern "C" fn(*mut libc::c_void);

/// Creates a thread key whose destructor gets each thread's value at its exit; `None` if none is left.
pub fn create_thread_key(destructor: KeyDestructor) -> Option<u32> {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer; the destructor is an `extern "C"` fn. Creating a key does
    // not allocate.
    (unsafe { libc::pthread_key_create(&mut key, Some(destructor)) } == 0).then_some(key)
}

/// Sets the calling thread's value of `key` (false on failure: no memory for the key's slot).
///
/// # Safety
///
/// `value` is what `key`'s destructor expects to be given when the thread exits.
pub unsafe fn set_thread_value(key: u32, value: *mut libc::c_void) -> bool {
    // SAFETY: setting a key's value reads no memory; an invalid key only returns EINVAL. The destructor
    // gets `value` later, per the caller.
    unsafe { libc::pthread_setspecific(key, value) == 0 }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use core::sync::atomic::AtomicU32;

    /// A futex call that fails (the word does not hold the value: EAGAIN) and one with nobody to wake
    /// leave `errno` as the program set it.
    #[test]
    fn futex_calls_leave_errno_alone() {
        // SAFETY: this thread's errno.
        let errno = || unsafe { *libc::__errno_location() };
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = 1234 };
        let word = AtomicU32::new(7);
        super::futex_wait(&word, 8);
        assert_eq!(errno(), 1234);
        super::futex_wake_one(&word);
        assert_eq!(errno(), 1234);
        if !cfg!(miri) {
            // (Miri has no tgkill.)
            assert!(super::thread_alive(super::current_tid()));
            assert_eq!(errno(), 1234);
        }
    }
}
