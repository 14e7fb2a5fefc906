//! Items and values: one allocation holds a 16-byte header, the key and the value (a string's bytes, or
//! a collection itself, aligned after the key).
//!
//! The table owns one reference to each item; a reader that gets a value takes another ([`Value`] is a
//! counted handle, like `Arc`), so the value stays alive after the shard lock is released and after the
//! key is overwritten, deleted or expired: a reader never uses a freed value. An item is freed when
//! its last reference is dropped, exactly once.

use core::alloc::Layout;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicU32, Ordering};

use allocator_api2::alloc::AllocError;

use crate::alloc::KvAlloc;
use crate::types::{self, Collection, Kind};

/// The front of every item.
#[repr(C, align(8))]
pub(crate) struct Header {
    refs: AtomicU32,
    key_len: u32,
    val_len: u32,
    /// Bit 31: the key has a TTL (an entry in its shard's expiry map). Bits 28..30: a string's
    /// [`StrEnc`]. Bits 24..28: the [`Kind`] (0, a string, or a collection, which the value's bytes
    /// hold: see [`new_coll_item`]). Bits 0..24: the access stamp sampled LRU compares.
    meta: AtomicU32,
}

pub(crate) const HEADER_SIZE: usize = core::mem::size_of::<Header>();
const HAS_TTL: u32 = 1 << 31;
const STAMP_MASK: u32 = (1 << 24) - 1;
const KIND_SHIFT: u32 = 24;
const KIND_MASK: u32 = 0xf << KIND_SHIFT;
const ENC_SHIFT: u32 = 28;
const ENC_MASK: u32 = 0b11 << ENC_SHIFT;

/// How a string came to be, for OBJECT ENCODING: Redis names a string by how it was made, not only by
/// its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrEnc {
    /// As SET leaves a value: `int` if it reads as an integer, else `embstr` or `raw` by length.
    ByContent = 0,
    /// Edited in place (APPEND, SETRANGE, SETBIT, BITFIELD) or built by BITOP: always `raw`.
    Raw = 1,
    /// Made from a float's text (INCRBYFLOAT): `embstr` or `raw` by length, never `int`.
    NotInt = 2,
}

/// An item pointer the table owns one reference to.
pub(crate) type ItemPtr = NonNull<Header>;

/// The layout of an item with these lengths; `None` if it would be too large.
pub(crate) fn item_layout(key_len: usize, val_len: usize) -> Option<Layout> {
    let size = HEADER_SIZE.checked_add(key_len)?.checked_add(val_len)?;
    Layout::from_size_align(size, 8).ok()
}

/// Writes an item into a fresh block: header (one reference), key, then `fill` writes the value.
///
/// # Safety
///
/// `block` is a fresh allocation of `item_layout(key.len(), val_len)`.
pub(crate) unsafe fn init_item(
    block: NonNull<u8>,
    key: &[u8],
    val_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> ItemPtr {
    let h = block.cast::<Header>();
    // SAFETY: the block is big enough for header + key + value and ours alone.
    unsafe {
        h.as_ptr().write(Header {
            refs: AtomicU32::new(1),
            key_len: key.len() as u32,
            val_len: val_len as u32,
            meta: AtomicU32::new(0),
        });
        let data = block.as_ptr().add(HEADER_SIZE);
        core::ptr::copy_nonoverlapping(key.as_ptr(), data, key.len());
        fill(core::slice::from_raw_parts_mut(data.add(key.len()), val_len));
    }
    h
}

/// Allocates and writes an item.
pub(crate) fn new_item<A: KvAlloc>(
    alloc: &A,
    key: &[u8],
    val_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Result<ItemPtr, AllocError> {
    let layout = item_layout(key.len(), val_len).ok_or(AllocError)?;
    let block = alloc.allocate(layout)?.cast::<u8>();
    // SAFETY: a fresh block of the item's layout.
    Ok(unsafe { init_item(block, key, val_len, fill) })
}

/// Where a collection sits in an item with a key of `key_len` bytes: after the key, rounded up to the
/// collection's alignment (at most the item's 8).
#[inline]
fn coll_offset<A: KvAlloc>(key_len: usize) -> usize {
    const { assert!(core::mem::align_of::<Collection<A>>() <= 8) };
    (HEADER_SIZE + key_len).next_multiple_of(core::mem::align_of::<Collection<A>>())
}

/// The value bytes of a collection item with a key of `key_len` bytes: the padding up to the collection,
/// then the collection itself.
fn coll_val_len<A: KvAlloc>(key_len: usize) -> usize {
    coll_offset::<A>(key_len) - HEADER_SIZE - key_len + core::mem::size_of::<Collection<A>>()
}

/// Allocates an item for `key` holding `coll` inside it (after the key: see [`coll_offset`]), so that
/// a small collection is its item and its compact block, no third block between them. On failure the
/// collection is dropped.
pub(crate) fn new_coll_item<A: KvAlloc>(
    alloc: &A,
    key: &[u8],
    coll: Collection<A>,
) -> Result<ItemPtr, AllocError> {
    let kind = coll.kind() as u32;
    let item = new_item(alloc, key, coll_val_len::<A>(key.len()), |_| {})?;
    // SAFETY: a fresh item, ours alone, whose value bytes end with room for a collection at
    // `coll_offset` (aligned for it: the item is 8-aligned and so is the offset, see `coll_offset`).
    unsafe {
        (*item.as_ptr()).meta.store(kind << KIND_SHIFT, Ordering::Relaxed);
        coll_ptr::<A>(item).write(coll);
    }
    Ok(item)
}

/// A new item for `key` holding what `h` holds: a copy of a string, or `h`'s collection itself, moved
/// into the new item; `h` then holds nothing to drop (its kind is cleared: it reads as a string nobody
/// reads, as it is out of the table). For RENAME.
///
/// # Safety
///
/// As for [`key`]; the caller holds `h`'s shard write lock and has taken `h` out of its table under it
/// (collection items are reached only through the table, under the lock, so nobody sees `h` again).
pub(crate) unsafe fn move_item<A: KvAlloc>(alloc: &A, h: ItemPtr, key: &[u8]) -> Result<ItemPtr, AllocError> {
    // SAFETY: see the contract.
    unsafe {
        if kind(h) == Kind::String {
            let val = value(h);
            let new = new_item(alloc, key, val.len(), |b| b.copy_from_slice(val))?;
            let meta = (*h.as_ptr()).meta.load(Ordering::Relaxed);
            (*new.as_ptr()).meta.store(meta & ENC_MASK, Ordering::Relaxed);
            return Ok(new);
        }
        let new = new_item(alloc, key, coll_val_len::<A>(key.len()), |_| {})?;
        let k = (*h.as_ptr()).meta.load(Ordering::Relaxed) & KIND_MASK;
        (*new.as_ptr()).meta.store(k, Ordering::Relaxed);
        // The collection moves bit for bit; clearing `h`'s kind makes its copy one nobody drops.
        coll_ptr::<A>(new).write(coll_ptr::<A>(h).read());
        (*h.as_ptr()).meta.fetch_and(!KIND_MASK, Ordering::Relaxed);
        Ok(new)
    }
}

/// What the item holds.
///
/// # Safety
///
/// As for [`key`].
#[inline]
pub(crate) unsafe fn kind(h: ItemPtr) -> Kind {
    // SAFETY: live header; the kind bits never change after init.
    Kind::from_bits((unsafe { (*h.as_ptr()).meta.load(Ordering::Relaxed) } & KIND_MASK) >> KIND_SHIFT)
}

/// The collection pointer of a collection item.
///
/// # Safety
///
/// As for [`key`]; `h` holds a collection (`kind(h) != Kind::String`) made with allocator type `A`.
unsafe fn coll_ptr<A: KvAlloc>(h: ItemPtr) -> *mut Collection<A> {
    // SAFETY: in bounds: the item was made with room for the collection there (`new_coll_item`), and
    // the pointer keeps the item's provenance (the whole block).
    unsafe {
        let key_len = (*h.as_ptr()).key_len as usize;
        h.as_ptr().cast::<u8>().add(coll_offset::<A>(key_len)).cast()
    }
}

/// The collection a collection item holds.
///
/// # Safety
///
/// As for [`coll_ptr`]; the caller holds the item's shard lock (read or write) for `'a`, and no writer
/// can reach the collection meanwhile (writers hold the write lock).
pub(crate) unsafe fn coll<'a, A: KvAlloc>(h: ItemPtr) -> &'a Collection<A> {
    // SAFETY: see the contract; the collection lives as long as the item.
    unsafe { &*coll_ptr::<A>(h) }
}

/// The collection, to change.
///
/// # Safety
///
/// As for [`coll`], with the write lock held for `'a` (so nobody else sees the collection meanwhile).
pub(crate) unsafe fn coll_mut<'a, A: KvAlloc>(h: ItemPtr) -> &'a mut Collection<A> {
    // SAFETY: see the contract.
    unsafe { &mut *coll_ptr::<A>(h) }
}

/// What the store charges for an item: its block, and a collection's blocks.
///
/// # Safety
///
/// As for [`key`]; for a collection item, as for [`coll`] (the shard lock is held).
pub(crate) unsafe fn charged_size<A: KvAlloc>(h: ItemPtr) -> usize {
    // SAFETY: see the contract.
    unsafe {
        match kind(h) {
            Kind::String => item_size(h),
            _ => item_size(h) + coll::<A>(h).bytes(),
        }
    }
}

/// The key of a live item.
///
/// # Safety
///
/// The caller holds a reference to the item for `'a`.
pub(crate) unsafe fn key<'a>(h: ItemPtr) -> &'a [u8] {
    // SAFETY: header and key bytes are immutable after init and live while referenced.
    unsafe {
        let len = (*h.as_ptr()).key_len as usize;
        core::slice::from_raw_parts(h.as_ptr().cast::<u8>().add(HEADER_SIZE), len)
    }
}

/// The value of a live string item.
///
/// # Safety
///
/// As for [`key`]; the item is a string (a collection item's value bytes hold the collection, padding
/// included, and are never read as bytes).
pub(crate) unsafe fn value<'a>(h: ItemPtr) -> &'a [u8] {
    // SAFETY: as for `key`; the value follows the key.
    unsafe {
        debug_assert_eq!(kind(h), Kind::String);
        let hd = &*h.as_ptr();
        let start = h.as_ptr().cast::<u8>().add(HEADER_SIZE + hd.key_len as usize);
        core::slice::from_raw_parts(start, hd.val_len as usize)
    }
}

/// A string's [`StrEnc`].
///
/// # Safety
///
/// As for [`key`].
pub(crate) unsafe fn str_enc(h: ItemPtr) -> StrEnc {
    // SAFETY: live header.
    match (unsafe { (*h.as_ptr()).meta.load(Ordering::Relaxed) } & ENC_MASK) >> ENC_SHIFT {
        1 => StrEnc::Raw,
        2 => StrEnc::NotInt,
        _ => StrEnc::ByContent,
    }
}

/// Sets a string's [`StrEnc`].
///
/// # Safety
///
/// As for [`key`]; the item is not yet published, or the caller holds its shard's write lock (so no
/// access stamp is written meanwhile: see [`touch`]).
pub(crate) unsafe fn set_str_enc(h: ItemPtr, e: StrEnc) {
    // SAFETY: live header.
    let m = unsafe { &(*h.as_ptr()).meta };
    let old = m.load(Ordering::Relaxed);
    m.store((old & !ENC_MASK) | ((e as u32) << ENC_SHIFT), Ordering::Relaxed);
}

/// Whether the caller's reference is the only one: then nobody reads the bytes but the caller.
///
/// # Safety
///
/// As for [`key`].
pub(crate) unsafe fn is_unique(h: ItemPtr) -> bool {
    // SAFETY: live header. Acquire pairs with the Release of every other reference's drop, so their
    // reads of the bytes happen before whatever the caller writes next.
    unsafe { (*h.as_ptr()).refs.load(Ordering::Acquire) == 1 }
}

/// A string's bytes, to change in place.
///
/// # Safety
///
/// As for [`key`]; the item is a string, the table's reference is the only one ([`is_unique`]) and the
/// caller holds its shard's write lock for `'a`: no reader can take a reference (they take one under
/// the read lock), so nobody else sees the bytes while they change.
pub(crate) unsafe fn value_mut<'a>(h: ItemPtr) -> &'a mut [u8] {
    // SAFETY: see the contract; the value follows the key.
    unsafe {
        let hd = &*h.as_ptr();
        let start = h.as_ptr().cast::<u8>().add(HEADER_SIZE + hd.key_len as usize);
        core::slice::from_raw_parts_mut(start, hd.val_len as usize)
    }
}

/// Bytes the item's allocation asked for.
///
/// # Safety
///
/// As for [`key`].
pub(crate) unsafe fn item_size(h: ItemPtr) -> usize {
    // SAFETY: live header.
    unsafe { HEADER_SIZE + (*h.as_ptr()).key_len as usize + (*h.as_ptr()).val_len as usize }
}

/// # Safety
///
/// As for [`key`].
pub(crate) unsafe fn has_ttl(h: ItemPtr) -> bool {
    // SAFETY: live header.
    unsafe { (*h.as_ptr()).meta.load(Ordering::Relaxed) & HAS_TTL != 0 }
}

/// # Safety
///
/// As for [`key`]; the caller holds the item's shard write lock (the flag mirrors the expiry map).
pub(crate) unsafe fn set_has_ttl(h: ItemPtr, on: bool) {
    // SAFETY: live header.
    let m = unsafe { &(*h.as_ptr()).meta };
    if on {
        m.fetch_or(HAS_TTL, Ordering::Relaxed);
    } else {
        m.fetch_and(!HAS_TTL, Ordering::Relaxed);
    }
}

/// Records an access for sampled LRU.
///
/// # Safety
///
/// As for [`key`].
#[inline]
pub(crate) unsafe fn touch(h: ItemPtr, stamp: u32) {
    // SAFETY: live header.
    let m = unsafe { &(*h.as_ptr()).meta };
    let old = m.load(Ordering::Relaxed);
    let new = (old & !STAMP_MASK) | (stamp & STAMP_MASK);
    if old != new {
        // A plain store can lose a concurrent TTL-flag change only if both race, and the flag is only
        // changed under the shard's write lock while touches happen under its read lock: they never race.
        m.store(new, Ordering::Relaxed);
    }
}

/// How long ago (in stamp ticks, modulo 2^24) the item was last touched.
///
/// # Safety
///
/// As for [`key`].
pub(crate) unsafe fn age(h: ItemPtr, now: u32) -> u32 {
    // SAFETY: live header.
    let stamp = unsafe { (*h.as_ptr()).meta.load(Ordering::Relaxed) } & STAMP_MASK;
    now.wrapping_sub(stamp) & STAMP_MASK
}

/// Takes one more reference.
///
/// # Safety
///
/// The caller holds a reference (directly, or through the shard lock for the table's).
pub(crate) unsafe fn retain(h: ItemPtr) {
    // SAFETY: live header. Relaxed suffices to add a reference when one is already held (as in Arc).
    let old = unsafe { (*h.as_ptr()).refs.fetch_add(1, Ordering::Relaxed) };
    if old > u32::MAX / 2 {
        std::process::abort();
    }
}

/// Drops one reference; the last one frees the item.
///
/// # Safety
///
/// The caller owns the reference it drops, and `alloc` is the allocator the item came from.
pub(crate) unsafe fn release<A: KvAlloc>(h: ItemPtr, alloc: &A) {
    // SAFETY: live header while we hold our reference.
    let refs = unsafe { &(*h.as_ptr()).refs };
    // A count of 1 is our reference alone, and stays so: a new reference is taken only from one that
    // exists (the table's, under the shard's lock, or a handle's), and we hold the only one. Most items
    // leave the table that way (a SET replacing a key nobody is reading), and the load spares them the
    // locked decrement, which on x86 would also wait for every earlier store to reach the cache.
    // Acquire: every other reference's release (their decrements, Release) happens before the free.
    if refs.load(Ordering::Acquire) != 1 && refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    // Synchronise with every other reference's release before freeing (as Arc does).
    fence(Ordering::Acquire);
    // SAFETY: that was the last reference: nobody else can reach the item or the collection inside it,
    // which is moved out (to be dropped) before its bytes are freed with the item.
    unsafe {
        if kind(h) != Kind::String {
            types::free_collection(coll_ptr::<A>(h).read());
        }
        let layout = Layout::from_size_align_unchecked(item_size(h), 8);
        alloc.deallocate(h.cast(), layout);
    }
}

/// A value read from the store: a counted handle to its item, valid however long it is kept.
pub struct Value<A: KvAlloc> {
    item: ItemPtr,
    alloc: A,
}

// SAFETY: the item's bytes are immutable and its count atomic; sending or sharing the handle is like Arc.
unsafe impl<A: KvAlloc> Send for Value<A> {}
// SAFETY: as above.
unsafe impl<A: KvAlloc> Sync for Value<A> {}

impl<A: KvAlloc> Value<A> {
    /// Wraps a reference the caller owns.
    ///
    /// # Safety
    ///
    /// The caller transfers one reference to `item`, which `alloc` allocated.
    pub(crate) unsafe fn from_owned(item: ItemPtr, alloc: A) -> Self {
        Value { item, alloc }
    }

    /// The key this value was stored under.
    pub fn key(&self) -> &[u8] {
        // SAFETY: we hold a reference.
        unsafe { key(self.item) }
    }
}

impl<A: KvAlloc> core::ops::Deref for Value<A> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: we hold a reference.
        unsafe { value(self.item) }
    }
}

impl<A: KvAlloc> Clone for Value<A> {
    fn clone(&self) -> Self {
        // SAFETY: we hold a reference.
        unsafe { retain(self.item) };
        Value {
            item: self.item,
            alloc: self.alloc.clone(),
        }
    }
}

impl<A: KvAlloc> Drop for Value<A> {
    fn drop(&mut self) {
        // SAFETY: we own one reference, allocated by `alloc`.
        unsafe { release(self.item, &self.alloc) }
    }
}

impl<A: KvAlloc> core::fmt::Debug for Value<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Value({:?})", String::from_utf8_lossy(self))
    }
}

impl<A: KvAlloc> PartialEq<[u8]> for Value<A> {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

#[cfg(test)]
mod tests {
    use super::kind as kind_of;
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn handles_keep_the_value_alive_until_the_last_drop() {
        let item = new_item(&Global, b"key", 5, |v| v.copy_from_slice(b"hello")).unwrap();
        // SAFETY: the table's reference is transferred to `v`.
        let v = unsafe { Value::from_owned(item, Global) };
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let v = v.clone();
                std::thread::spawn(move || {
                    for _ in 0..if cfg!(miri) { 20 } else { 10_000 } {
                        let w = v.clone();
                        assert_eq!(&*w, b"hello");
                        assert_eq!(w.key(), b"key");
                    }
                })
            })
            .collect();
        drop(v);
        for t in threads {
            t.join().unwrap();
        }
    }

    /// A collection inside its item, behind keys of every length mod 8 (so every padding), edited in
    /// place, moved to a key of another length (RENAME) and freed with the item, for each kind; the
    /// hash also after converting to its large form.
    #[test]
    fn collections_live_in_their_items_through_edits_and_moves() {
        use crate::types::{Collection, Limits};
        // Small thresholds, so that 20 elements convert each kind to its large form (and a list to nodes).
        let limits = Limits {
            hash_entries: 8,
            zset_entries: 8,
            list_node: 4,
            ..Limits::default()
        };
        let set_limits = crate::types::set::SetLimits {
            intset_entries: 8,
            entries: 8,
            value: 64,
        };
        let fields = 20;
        for key_len in 0..9 {
            let name = &b"abcdefghi"[..key_len];
            for kind in [Kind::Hash, Kind::List, Kind::Set, Kind::ZSet] {
                let item = new_coll_item(&Global, name, Collection::empty(kind, Global)).unwrap();
                // SAFETY: we own the only reference; nobody else can reach the collection.
                unsafe {
                    assert_eq!(kind_of(item), kind);
                    assert_eq!(item_size(item) % 8, 0, "the collection ends the item");
                    for i in 0..fields {
                        let e = format!("e{i}");
                        match coll_mut::<Global>(item) {
                            Collection::Hash(h) => _ = h.set(e.as_bytes(), b"v", &limits),
                            Collection::List(l) => {
                                l.push(crate::types::list::End::Right, e.as_bytes(), &limits)
                            }
                            Collection::Set(s) => _ = s.add(e.as_bytes(), &set_limits),
                            Collection::ZSet(z) => _ = z.insert(e.as_bytes(), i as f64, &limits),
                            Collection::Stream(_) => unreachable!("not among the kinds tried"),
                        }
                    }
                    let other = &b"0123456789abcdefg"[..key_len * 2 + 1];
                    let moved = move_item(&Global, item, other).unwrap();
                    release(item, &Global);
                    assert_eq!(key(moved), other);
                    assert_eq!(kind_of(moved), kind);
                    assert_eq!(coll::<Global>(moved).len(), fields);
                    assert_ne!(
                        coll::<Global>(moved).encoding(),
                        "listpack",
                        "converted to the large form"
                    );
                    assert!(charged_size::<Global>(moved) > item_size(moved));
                    release(moved, &Global);
                }
            }
        }
    }

    #[test]
    fn flags_and_stamps_share_the_meta_word() {
        let item = new_item(&Global, b"k", 0, |_| {}).unwrap();
        // SAFETY: we own the only reference.
        unsafe {
            touch(item, 100);
            set_has_ttl(item, true);
            assert!(has_ttl(item));
            assert_eq!(age(item, 105), 5);
            touch(item, 7);
            assert!(has_ttl(item));
            set_has_ttl(item, false);
            assert!(!has_ttl(item));
            assert_eq!(age(item, 7), 0);
            release(item, &Global);
        }
    }
}
