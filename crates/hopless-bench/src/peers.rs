//! The allocators under test. Each is called directly through its `GlobalAlloc` impl (not as the
//! process's global allocator), so one binary can measure all four side by side.

use std::alloc::{GlobalAlloc, System};

/// One allocator under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    System,
    Jemalloc,
    Mimalloc,
    Hopless,
    /// hopless called through a function that is never inlined, as the C allocators are called: shows
    /// how much of hopless's lead in the micro-benchmarks is inlining.
    HoplessCall,
}

impl Peer {
    pub const ALL: [Peer; 4] = [Peer::System, Peer::Jemalloc, Peer::Mimalloc, Peer::Hopless];

    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Peer::System => "system",
            Peer::Jemalloc => "jemalloc",
            Peer::Mimalloc => "mimalloc",
            Peer::Hopless => "hopless",
            Peer::HoplessCall => "hopless-call",
        }
    }

    /// Calls `f` with this allocator as a concrete `GlobalAlloc` type, so the workload is monomorphised
    /// for it (as it would be when the allocator is the global one).
    pub fn with<R>(self, f: impl WithAlloc<R>) -> R {
        match self {
            Peer::System => f.call(&System),
            Peer::Jemalloc => f.call(&tikv_jemallocator::Jemalloc),
            Peer::Mimalloc => f.call(&mimalloc::MiMalloc),
            Peer::Hopless => f.call(&hopless::Hopless),
            Peer::HoplessCall => f.call(&Called),
        }
    }
}

/// A computation generic over the allocator (a closure cannot be generic, so workloads implement this).
pub trait WithAlloc<R> {
    fn call<A: GlobalAlloc + Sync>(self, a: &A) -> R;
}

/// hopless behind calls that are never inlined.
pub struct Called;

// SAFETY: forwards every call to hopless.
unsafe impl GlobalAlloc for Called {
    #[inline(never)]
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { hopless::Hopless.alloc(l) }
    }
    #[inline(never)]
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: forwarded contract.
        unsafe { hopless::Hopless.dealloc(p, l) }
    }
}
