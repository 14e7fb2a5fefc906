//! `fork`: hopless's handlers, registered at load time (see `global`), take every lock before the fork
//! and give them back after it, in the parent and in the child, where the forking thread's caches get
//! the child's thread id. A handler the program registered earlier may allocate: its calls come after
//! ours in the prepare order, from the thread that holds every lock, which `lock` lets through.

use crate::fast::{current, empty, hardened_cache_of_thread};
use crate::global::HEAP;

pub(crate) extern "C" fn fork_prepare() {
    HEAP.lock_all();
    crate::lock::set_fork_holder();
}

pub(crate) extern "C" fn fork_parent() {
    crate::lock::clear_fork_holder();
    // SAFETY: runs once after `fork_prepare`, in the forking thread, which holds every lock.
    unsafe { HEAP.unlock_all() }
}

pub(crate) extern "C" fn fork_child() {
    crate::lock::clear_fork_holder();
    let tc = current();
    if tc != empty() {
        // SAFETY: the child's only thread and its own cache; the registry lock is held (by it).
        unsafe { HEAP.adopt_after_fork(tc, crate::platform::current_tid()) };
    }
    {
        let tc = hardened_cache_of_thread();
        if !tc.is_null() {
            // SAFETY: as above.
            unsafe { HEAP.adopt_after_fork(tc, crate::platform::current_tid()) };
        }
    }
    // SAFETY: the child's only thread, a copy of the forking one, holds every lock.
    unsafe { HEAP.unlock_all() }
}
