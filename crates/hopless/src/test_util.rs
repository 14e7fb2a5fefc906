//! What the unit tests share: loop counts scaled down under Miri, and filling and checking blocks.

/// Miri is ~1000x slower: scale loop counts down there.
pub(crate) fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        native
    }
}
pub(crate) fn fill(p: *mut u8, len: usize, tag: u8) {
    // SAFETY: callers pass live blocks of at least `len` bytes.
    unsafe { core::ptr::write_bytes(p, tag, len) }
}
pub(crate) fn check(p: *mut u8, len: usize, tag: u8) {
    // SAFETY: as for `fill`.
    let s = unsafe { core::slice::from_raw_parts(p, len) };
    assert!(s.iter().all(|&b| b == tag), "block {p:p} lost its contents");
}
/// Like [`check`] for big blocks: every 512th byte and the last, so that Miri gets through them.
pub(crate) fn check_sampled(p: *mut u8, len: usize, tag: u8) {
    for off in (0..len).step_by(512).chain(len.checked_sub(1)) {
        // SAFETY: as for `fill`.
        assert_eq!(unsafe { p.add(off).read() }, tag, "block {p:p} lost byte {off}");
    }
}

/// Makes the magazine of `class` in `tc` one that has only been freed into since its last flush, so
/// that it flushes when full instead of growing (`ThreadCache::grow`): for the tests of the flush.
///
/// # Safety
///
/// `tc` is a live cache of the calling thread; `class < NUM_CLASSES`.
pub(crate) unsafe fn flush_when_full(tc: *mut crate::cache::ThreadCache, class: usize) {
    // SAFETY: per the caller, the magazine is the calling thread's own.
    unsafe { (*crate::cache::ThreadCache::mag(tc, class)).refills = 0 };
}
