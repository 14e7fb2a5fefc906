//! The memory limit (`HOPLESS_LIMIT`, [`crate::Hopless::set_limit`]): the bytes the program's blocks
//! occupy stay at or under a set number, and an allocation that would pass it fails cleanly (null, and
//! `ENOMEM` from the C calls) after the slow path has tried a trim.
//!
//! What counts is what the program's blocks hold of memory, at the grain the heap takes it in: every slab
//! lent to a size class (a slab's whole slot, from the moment a class takes it from its pool until it
//! gives it back empty; blocks cached in thread magazines keep their slabs lent), and the usable bytes of
//! every large block in use. Free memory hopless keeps for reuse (empty slabs waiting out the purge delay,
//! cached large mappings, free arena slices) and its own metadata (thread caches, segment headers) are
//! not counted: a trim gives the first back, and the second is a few percent of the heap.
//!
//! The count is one atomic the slow paths move: a class taking a slab from its pool, a slab going back,
//! a large block placed, resized or freed. The magazine pop and push never touch it. A request reserves
//! its bytes (a compare-and-swap while a limit is set) before it takes memory and gives them back when
//! it fails, so two threads racing for the last bytes under the limit never both get them.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// No limit.
pub const NONE: usize = usize::MAX;

/// The limit in bytes ([`NONE`]: none).
static LIMIT: AtomicUsize = AtomicUsize::new(NONE);
/// Bytes counted now (see the module's doc).
static HELD: AtomicUsize = AtomicUsize::new(0);
/// Requests refused because they would have passed the limit (each slab or large block once; a request
/// retried after a trim and refused again counts twice).
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Sets the limit ([`NONE`] to lift it). Blocks already handed out stay; a lower limit than what is held
/// refuses every request that needs new memory until enough is freed.
pub fn set(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The limit ([`NONE`] when there is none).
pub fn get() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// Whether a limit is set.
#[inline]
pub fn is_set() -> bool {
    get() != NONE
}

/// Bytes counted now.
pub fn held() -> usize {
    HELD.load(Ordering::Relaxed)
}

/// Requests refused so far.
pub fn refused() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// Reserves `bytes` for memory about to be taken; false (nothing reserved, the refusal counted) when that
/// would pass the limit.
#[inline]
pub fn take(bytes: usize) -> bool {
    let limit = LIMIT.load(Ordering::Relaxed);
    if limit == NONE {
        HELD.fetch_add(bytes, Ordering::Relaxed);
        return true;
    }
    let fits = |held: usize| held.checked_add(bytes).filter(|&after| after <= limit);
    if HELD
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, fits)
        .is_err()
    {
        REFUSED.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    true
}

/// Gives back `bytes` reserved by [`take`] (the memory went back, or the request failed).
#[inline]
pub fn give(bytes: usize) {
    HELD.fetch_sub(bytes, Ordering::Relaxed);
}

/// Replaces a reservation of `reserved` bytes by the `actual` bytes the memory turned out to be (a large
/// block's usable size is its request rounded up to pages or slices).
#[inline]
pub fn settle(reserved: usize, actual: usize) {
    if actual >= reserved {
        HELD.fetch_add(actual - reserved, Ordering::Relaxed);
    } else {
        HELD.fetch_sub(reserved - actual, Ordering::Relaxed);
    }
}

/// Reads a size as `HOPLESS_LIMIT` takes it: a number of bytes with an optional unit, `k`, `m`, `g` or
/// `t` (powers of 1024, either case, optionally followed by `b` or `ib`), e.g. `4g`, `512MiB`, `1048576`.
/// `None` for anything else, for 0, and for a size past `usize`.
pub fn parse_size(text: &[u8]) -> Option<usize> {
    let digits = text.iter().take_while(|c| c.is_ascii_digit()).count();
    let (number, unit) = text.split_at_checked(digits)?;
    if number.is_empty() {
        return None;
    }
    let mut n: usize = 0;
    for &d in number {
        n = n.checked_mul(10)?.checked_add(usize::from(d - b'0'))?;
    }
    let lower = |i: usize| unit.get(i).map(u8::to_ascii_lowercase);
    let (shift, rest) = match lower(0) {
        None => (0, 0),
        Some(b'b') => (0, 1),
        Some(b'k') => (10, 1),
        Some(b'm') => (20, 1),
        Some(b'g') => (30, 1),
        Some(b't') => (40, 1),
        Some(_) => return None,
    };
    let tail_ok = match (shift, unit.len() - rest) {
        (_, 0) => true,
        (s, 1) => s > 0 && lower(rest) == Some(b'b'),
        (s, 2) => s > 0 && lower(rest) == Some(b'i') && lower(rest + 1) == Some(b'b'),
        _ => false,
    };
    if !tail_ok || n == 0 {
        return None;
    }
    n.checked_mul(1usize << shift)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_as_the_option_documents() {
        assert_eq!(parse_size(b"1048576"), Some(1 << 20));
        assert_eq!(parse_size(b"4g"), Some(4 << 30));
        assert_eq!(parse_size(b"4G"), Some(4 << 30));
        assert_eq!(parse_size(b"512MiB"), Some(512 << 20));
        assert_eq!(parse_size(b"512mb"), Some(512 << 20));
        assert_eq!(parse_size(b"64k"), Some(64 << 10));
        assert_eq!(parse_size(b"2t"), Some(2 << 40));
        assert_eq!(parse_size(b"100b"), Some(100));
        for bad in [
            &b""[..],
            b"g",
            b"0",
            b"0g",
            b"4x",
            b"4gx",
            b"4bb",
            b"4ib",
            b"-1",
            b" 4g",
            b"4 g",
            b"99999999999999999999",
            b"99999999999t",
        ] {
            assert_eq!(parse_size(bad), None, "{:?}", core::str::from_utf8(bad));
        }
    }
}
