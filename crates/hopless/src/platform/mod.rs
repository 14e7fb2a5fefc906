//! The platform layer: where hopless gets pages from, and how it talks to the OS without allocating.
//!
//! Everything that makes a system call lives here, behind [`PageSource`]: the heap above it never calls
//! `mmap` itself. [`OsPages`] is the real source (anonymous `mmap`, `madvise(MADV_DONTNEED)`, `munmap`);
//! [`SystemPages`] serves the same contract from `std::alloc::System`, so the whole heap can run under Miri
//! or inside a test without touching the OS.
//!
//! The rest of the core goes through this module alone; its files are one contract's parts:
//!
//! | file | what it holds |
//! |---|---|
//! | `source.rs` | the contract: [`PageSource`], the heap's page unit ([`PAGE_SIZE`]) and the kernel's, what a reservation holds |
//! | `huge.rs` | the transparent-huge-page policy: the setting, which reservations ask, the mark [`HugePages::Auto`] waits for |
//! | `pages.rs` | the sources: [`OsPages`] (`mmap`, `madvise`, `mremap`) and [`SystemPages`] (the C library's allocator) |
//! | `threads.rs` | thread ids and liveness, the futex, thread keys, a detached thread |
//! | `stack.rs` | call stacks for the checked modes' reports, walked by `unwind` |
//! | `place.rs` | what an address is: its module (`dladdr`), its function (`elf_symbols`), whether it is hopless's own |
//! | `unwind.rs` | the C runtime's unwinder (heap profiles, and the checked modes through `stack`), hopless's own frames left out |
//! | `elf_symbols.rs` | a code address's function from its module file's symbol table (`.symtab`) |
//! | `os.rs` | `errno` kept, stderr, the clock, abort, the environment, `AT_RANDOM`, fork handlers, signals |

mod elf_symbols;
mod huge;
mod os;
mod pages;
pub mod place;
mod source;
pub mod stack;
mod threads;
pub mod unwind;

pub use huge::{huge_page_size, huge_pages, set_huge_pages, HugeCatchUp, HugePages};
pub use os::{
    abort, env_bytes, env_flag, env_setting, keeping_errno, now_ms, on_signal, process_random,
    register_fork_handlers, signal_number, write_stderr,
};
pub use pages::{OsPages, SystemPages};
pub use source::{os_page_size, PageSource, Reservation, PAGE_SIZE};
pub use threads::{
    create_thread_key, current_tid, futex_wait, futex_wait_ms, futex_wake_one, set_thread_value,
    spawn_detached, thread_self, yield_now,
};
