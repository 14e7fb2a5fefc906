//! The transparent-huge-page policy: the setting ([`HugePages`]), which reservations ask for huge pages
//! under it, the mark past which [`HugePages::Auto`] asks, and the size of the kernel's huge page.
//! [`OsPages`](super::OsPages) gives the advice this decides.

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::source::{os_page_size, PageSource, Reservation};

/// The transparent-huge-page setting: which reservations ask the kernel for huge pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// None (`HOPLESS_HUGE_PAGES=0`, `Hopless::set_huge_pages(false)`).
    Off,
    /// The default: segments of [`Reservation::Slabs`] and [`Reservation::Arena`]s, once the heap holds
    /// [`HUGE_AUTO_FROM`] of either kind of memory ([`PageSource::note_dense_bytes`]). What a program
    /// touches of those is dense, so a huge page wastes at most the untouched part of the newest one of
    /// each, a few MiB against at least 64 MiB; a heap that size is where the TLB's reach runs out.
    /// Segments of [`Reservation::SparseSlabs`] and large mappings keep small pages.
    Auto,
    /// Every segment, arena and large mapping (`HOPLESS_HUGE_PAGES=1`, `Hopless::set_huge_pages(true)`).
    On,
}

/// The setting ([`MODE_MASK`]: [`MODE_AUTO`], [`MODE_OFF`] or [`MODE_ON`]), [`HUGE_BIG`] once the
/// heap was seen holding [`HUGE_AUTO_FROM`] of dense memory, and [`HUGE_USED`] once any reservation
/// asked: reservations advised then keep leaving huge pages where they decommit after the setting
/// changes. Never-cleared bits in one atomic, so a thread that saw a reservation advised sees
/// [`HUGE_USED`].
static HUGE_PAGES: AtomicU8 = AtomicU8::new(MODE_AUTO);
const MODE_MASK: u8 = 3;
const MODE_AUTO: u8 = 0;
const MODE_OFF: u8 = 1;
const MODE_ON: u8 = 2;
const HUGE_USED: u8 = 4;
const HUGE_BIG: u8 = 8;

/// The dense memory (segments of [`Reservation::Slabs`], or large blocks in use) from which
/// [`HugePages::Auto`] has dense reservations ask for huge pages: 64 MiB. A heap that stays below it keeps
/// small pages throughout, however large the rest of the process is.
pub const HUGE_AUTO_FROM: usize = 64 << 20;

/// Sets which reservations made from now on ask for transparent huge pages (see
/// [`PageSource::advise_huge`] and [`HugePages`]). A huge page is backed whole once any byte of it is
/// touched, so a partly used region keeps up to 2 MiB more resident; programs with large heaps and
/// random access (a cache of millions of keys) gain from the TLB reach.
pub fn set_huge_pages(setting: HugePages) {
    let mode = match setting {
        HugePages::Off => MODE_OFF,
        HugePages::Auto => MODE_AUTO,
        HugePages::On => MODE_ON,
    };
    let _ = HUGE_PAGES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v & !MODE_MASK | mode)
    });
}

/// The setting.
pub fn huge_pages() -> HugePages {
    match HUGE_PAGES.load(Ordering::Relaxed) & MODE_MASK {
        MODE_OFF => HugePages::Off,
        MODE_ON => HugePages::On,
        _ => HugePages::Auto,
    }
}

/// One heap's record that its regions reserved before [`HugePages::Auto`]'s mark have had the advice
/// given to those reserved after it (the segments in `Heap`, the arenas in `LargeCache`).
#[derive(Debug, Default)]
pub struct HugeCatchUp(AtomicBool);

impl HugeCatchUp {
    pub const fn new() -> Self {
        HugeCatchUp(AtomicBool::new(false))
    }

    /// True once, to the one caller that then advises the earlier regions, after `source` passed its
    /// mark ([`PageSource::dense_mark_passed`]); one relaxed load on every later call.
    #[inline]
    pub fn due<P: PageSource>(&self, source: &P) -> bool {
        !self.0.load(Ordering::Relaxed) && source.dense_mark_passed() && !self.0.swap(true, Ordering::Relaxed)
    }
}

/// Whether a reservation holding `what`, made now, asks for huge pages.
pub(super) fn wants_huge(what: Reservation) -> bool {
    let v = HUGE_PAGES.load(Ordering::Relaxed);
    match v & MODE_MASK {
        MODE_ON => true,
        MODE_AUTO => matches!(what, Reservation::Slabs | Reservation::Arena) && v & HUGE_BIG != 0,
        _ => false,
    }
}

/// Records that a reservation asked for huge pages ([`HUGE_USED`], never cleared).
#[inline]
pub(super) fn note_used() {
    HUGE_PAGES.fetch_or(HUGE_USED, Ordering::Relaxed);
}

/// Whether any reservation asked for huge pages.
#[inline]
pub(super) fn used() -> bool {
    HUGE_PAGES.load(Ordering::Relaxed) & HUGE_USED != 0
}

/// Notes the heap's dense memory ([`PageSource::note_dense_bytes`]): [`HUGE_BIG`] once it reaches
/// [`HUGE_AUTO_FROM`].
#[inline]
pub(super) fn note_dense_bytes(bytes: usize) {
    if bytes >= HUGE_AUTO_FROM && HUGE_PAGES.load(Ordering::Relaxed) & HUGE_BIG == 0 {
        HUGE_PAGES.fetch_or(HUGE_BIG, Ordering::Relaxed);
    }
}

/// Whether [`HugePages::Auto`] is the setting and the heap passed its mark
/// ([`PageSource::dense_mark_passed`]).
#[inline]
pub(super) fn dense_mark_passed() -> bool {
    HUGE_PAGES.load(Ordering::Relaxed) & (MODE_MASK | HUGE_BIG) == MODE_AUTO | HUGE_BIG
}

/// The size of the kernel's transparent huge page: what one page-table page of the kernel's pages maps
/// (2 MiB with 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with 64 KiB).
pub fn huge_page_size() -> usize {
    let page = os_page_size();
    page * (page / core::mem::size_of::<u64>())
}
