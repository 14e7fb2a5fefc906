//! What the profile remembers: one [`Site`] per distinct call stack that allocated a sampled block
//! (what it allocated since the start, what of it is still in use), and one [`Record`] per sampled
//! block still in use (its site and what it stands for), named by the block's header
//! (`SegmentHeader::sample`) until the block is freed.
//!
//! Both tables live in memory reserved from the OS once, at the first sample, and touched page by page
//! as they fill: the sites an open-addressed hash table of [`SITES`] entries keyed by the stack, the
//! records an array of [`RECORDS`] with a free list. One lock guards both; it is taken for a sample or
//! the free of a sampled block (one in every interval's worth of bytes allocated, 512 KiB by default)
//! and for a dump, never by an ordinary allocation. Nothing here allocates.

use core::ptr;

use super::sampler::weight;
use crate::lock::{SpinGuard, SpinLock};
use crate::platform::{OsPages, PageSource, PAGE_SIZE};

/// Frames kept per stack (the innermost ones).
pub const MAX_DEPTH: usize = 48;
/// Distinct stacks the table holds; past that, samples count under site 0, whose stack is empty.
pub const SITES: usize = 1 << 15;
/// Sampled blocks in use at once that can be remembered; past that, a block is not sampled (counted in
/// [`Tables::dropped`]).
pub const RECORDS: usize = 1 << 20;

/// A call stack that allocated sampled blocks, and the estimates of what it allocated.
#[repr(C)]
pub struct Site {
    /// The stack's hash, 0 while the entry is unused (a real hash of 0 is stored as 1).
    pub hash: u64,
    pub depth: usize,
    /// Call sites, innermost first (`frames[..depth]`).
    pub frames: [usize; MAX_DEPTH],
    /// Blocks (× `sampler::BLOCK_SCALE`) and bytes allocated since the start, and still in use.
    pub alloc_blocks: u64,
    pub alloc_bytes: u64,
    pub live_blocks: u64,
    pub live_bytes: u64,
}

/// A sampled block in use: its site and what it stands for, subtracted from the site when it is freed.
#[repr(C)]
struct Record {
    site: u32,
    /// The next free record while this one is free.
    next_free: u32,
    blocks: u64,
    bytes: u64,
}

pub struct Tables {
    sites: *mut Site,
    records: *mut Record,
    /// Records `1..top` have been used at least once (record 0 is never used: 0 names no record).
    top: u32,
    free: u32,
    /// Sites in use.
    pub sites_used: usize,
    /// Samples not taken because every record was in use.
    pub dropped: u64,
    /// Sampled blocks in use.
    pub live: u64,
}

// SAFETY: the tables are memory of their own, reached only under the lock.
unsafe impl Send for Tables {}

static TABLES: SpinLock<Tables> = SpinLock::new(Tables {
    sites: ptr::null_mut(),
    records: ptr::null_mut(),
    top: 1,
    free: 0,
    sites_used: 0,
    dropped: 0,
    live: 0,
});

const SITES_BYTES: usize = (SITES * core::mem::size_of::<Site>()).next_multiple_of(PAGE_SIZE);
const RECORDS_BYTES: usize = (RECORDS * core::mem::size_of::<Record>()).next_multiple_of(PAGE_SIZE);

fn stack_hash(frames: &[usize]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &f in frames {
        h = (h ^ f as u64).wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    h.max(1)
}

impl Tables {
    /// Reserves the tables on first use; false when the OS has no memory for them.
    fn ready(&mut self) -> bool {
        if !self.records.is_null() {
            return true;
        }
        let sites = OsPages.reserve(SITES_BYTES, PAGE_SIZE);
        if sites.is_null() {
            return false;
        }
        let records = OsPages.reserve(RECORDS_BYTES, PAGE_SIZE);
        if records.is_null() {
            // SAFETY: the reservation just made, unused.
            unsafe { OsPages.release(sites, SITES_BYTES, PAGE_SIZE) };
            return false;
        }
        self.sites = sites.cast();
        self.records = records.cast();
        true
    }

    /// The site of `frames`, added if new; site 0 when the table is full.
    fn site_of(&mut self, frames: &[usize]) -> u32 {
        let frames = frames.get(..MAX_DEPTH).unwrap_or(frames);
        let hash = stack_hash(frames);
        let mut i = (hash as usize) & (SITES - 1);
        // Entry 0 is the overflow site: probing skips it.
        for _ in 0..SITES {
            if i != 0 {
                // SAFETY: `i < SITES`; the table is reserved (`ready`) and reached under the lock only.
                let s = unsafe { &mut *self.sites.add(i) };
                if s.hash == 0 {
                    if self.sites_used * 4 >= SITES * 3 {
                        break; // three quarters full: keep the probes short
                    }
                    s.hash = hash;
                    s.depth = frames.len();
                    if let Some(dst) = s.frames.get_mut(..frames.len()) {
                        dst.copy_from_slice(frames);
                    }
                    self.sites_used += 1;
                    return i as u32;
                }
                if s.hash == hash && s.frames.get(..s.depth) == Some(frames) {
                    return i as u32;
                }
            }
            i = (i + 1) & (SITES - 1);
        }
        0
    }

    /// The sites in use, the overflow site first when it holds anything.
    pub fn sites(&self) -> impl Iterator<Item = &Site> + '_ {
        let n = if self.sites.is_null() { 0 } else { SITES };
        (0..n)
            // SAFETY: `i < SITES` in a reserved table, read under the lock (`self` is the guarded value).
            .map(move |i| unsafe { &*self.sites.add(i) })
            .filter(|s| s.hash != 0 || s.alloc_blocks != 0)
    }
}

/// Remembers a sampled block of `size` bytes, sampled under `interval`, allocated from `frames`;
/// returns the record that names it (0: not remembered, out of room or memory).
pub fn record(frames: &[usize], size: usize, interval: usize) -> u32 {
    let (blocks, bytes) = weight(size, interval);
    let mut t = TABLES.lock();
    if !t.ready() {
        return 0;
    }
    let id = if t.free != 0 {
        let id = t.free;
        // SAFETY: a free record's index is below `top`, inside the reserved array.
        t.free = unsafe { (*t.records.add(id as usize)).next_free };
        id
    } else if (t.top as usize) < RECORDS {
        t.top += 1;
        t.top - 1
    } else {
        t.dropped += 1;
        return 0;
    };
    let site = t.site_of(frames);
    // SAFETY: `site < SITES` and `id < RECORDS`, in the reserved tables, under the lock.
    unsafe {
        let s = &mut *t.sites.add(site as usize);
        s.alloc_blocks = s.alloc_blocks.wrapping_add(blocks);
        s.alloc_bytes = s.alloc_bytes.wrapping_add(bytes);
        s.live_blocks = s.live_blocks.wrapping_add(blocks);
        s.live_bytes = s.live_bytes.wrapping_add(bytes);
        t.records.add(id as usize).write(Record {
            site,
            next_free: 0,
            blocks,
            bytes,
        });
    }
    t.live += 1;
    id
}

/// A sampled block named by record `id` is freed: its site's in-use counts drop by what it stood for.
pub fn forget(id: u32) {
    let mut t = TABLES.lock();
    if id == 0 || id >= t.top {
        return;
    }
    // SAFETY: `0 < id < top`, a record in the reserved array, under the lock; its site is below SITES.
    unsafe {
        let r = &mut *t.records.add(id as usize);
        let s = &mut *t.sites.add(r.site as usize);
        s.live_blocks = s.live_blocks.saturating_sub(r.blocks);
        s.live_bytes = s.live_bytes.saturating_sub(r.bytes);
        r.next_free = t.free;
    }
    t.free = id;
    t.live = t.live.saturating_sub(1);
}

/// The tables, locked (for a dump).
pub fn lock() -> SpinGuard<'static, Tables> {
    TABLES.lock()
}

/// The tables if nobody holds them (a dump from a signal handler, which must not wait on the thread it
/// interrupted).
pub fn try_lock() -> Option<SpinGuard<'static, Tables>> {
    TABLES.try_lock()
}

/// For `fork`: the lock held across it, so the child finds the tables whole.
pub fn lock_for_fork() {
    TABLES.raw_lock();
}

/// # Safety
///
/// The caller took the lock with [`lock_for_fork`] in this process (or, in a fork child, its parent
/// thread did).
pub unsafe fn unlock_after_fork() {
    // SAFETY: per the caller.
    unsafe { TABLES.raw_unlock() }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn sites_keep_what_is_allocated_and_in_use() {
        let frames = [0x1111_0001usize, 0x2222_0002, 0x3333_0003];
        let a = record(&frames, 64 << 20, 512 << 10);
        let b = record(&frames, 64 << 20, 512 << 10);
        assert!(a != 0 && b != 0 && a != b);
        let find = || {
            let t = lock();
            let s = t
                .sites()
                .find(|s| s.frames.get(..s.depth) == Some(&frames[..]))
                .unwrap();
            (s.alloc_bytes, s.live_bytes, s.live_blocks)
        };
        assert_eq!(
            find(),
            (128 << 20, 128 << 20, 2 * super::super::sampler::BLOCK_SCALE)
        );
        forget(a);
        assert_eq!(find(), (128 << 20, 64 << 20, super::super::sampler::BLOCK_SCALE));
        // A record is reused once free.
        let c = record(&frames, 64 << 20, 512 << 10);
        assert_eq!(c, a);
        forget(b);
        forget(c);
        assert_eq!(find(), (192 << 20, 0, 0));
        // A record already free, or never used, changes nothing.
        forget(0);
        forget(RECORDS as u32 - 1);
        assert_eq!(find(), (192 << 20, 0, 0));
    }
}
