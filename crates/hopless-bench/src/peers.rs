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
        }
    }
}

/// A computation generic over the allocator (a closure cannot be generic, so workloads implement this).
pub trait WithAlloc<R> {
    fn call<A: GlobalAlloc + Sync>(self, a: &A) -> R;
}
