//! Call stacks for the checked modes' reports: the return addresses of the calling thread, walked by
//! the C runtime's unwinder (`platform::unwind`: libgcc's `_Unwind_Backtrace`, which reads the unwind
//! tables, `.eh_frame`, every program built for a distribution carries: right without frame pointers);
//! a report names each address with `platform::place`.
//!
//! With glibc the unwinder may have to be loaded (`dlopen` of `libgcc_s`), which allocates. So nothing
//! is taken until [`warm`] has found it from a place that holds no allocator lock: the allocations the
//! loader makes run as the program's would (and take no stack). From then on a walk neither allocates
//! nor takes a lock an allocation path holds. Where no unwinder is found (and under Miri) stacks are
//! empty.

use core::sync::atomic::{AtomicU8, Ordering};

/// Return addresses kept per stack.
pub const FRAMES: usize = 12;

/// A call stack: `pcs[..len]`, innermost first.
#[derive(Clone, Copy)]
pub struct Stack {
    pub pcs: [usize; FRAMES],
    pub len: usize,
}

impl Stack {
    pub const EMPTY: Stack = Stack {
        pcs: [0; FRAMES],
        len: 0,
    };

    /// The addresses, innermost first.
    pub fn frames(&self) -> &[usize] {
        self.pcs.get(..self.len).unwrap_or_default()
    }
}

const COLD: u8 = 0;
const WARMING: u8 = 1;
const WARM: u8 = 2;
/// Whether `backtrace` has been called once (see the module's docs).
static STATE: AtomicU8 = AtomicU8::new(COLD);

/// Finds the unwinder, if no caller has yet: the caller holds no allocator lock. Concurrent callers
/// (and the allocations a first `dlopen` makes) go on without waiting: they take no stacks until it is
/// done.
pub fn warm() {
    if STATE.load(Ordering::Acquire) != COLD
        || STATE
            .compare_exchange(COLD, WARMING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    super::unwind::resolve();
    STATE.store(WARM, Ordering::Release);
}

/// The calling thread's stack (return addresses), the innermost `skip` frames left out; empty before
/// [`warm`] is done or where there is no unwinder.
#[inline(never)]
pub fn capture(skip: usize) -> Stack {
    if STATE.load(Ordering::Acquire) != WARM {
        return Stack::EMPTY;
    }
    let mut s = Stack::EMPTY;
    // This frame too: `capture` is never inlined.
    s.len = super::unwind::walk(&mut s.pcs, skip + 1);
    // The walk gives call sites (each return address less one): back to return addresses, which the
    // report names by the byte before them.
    for pc in s.pcs.iter_mut().take(s.len) {
        *pc += 1;
    }
    s
}
