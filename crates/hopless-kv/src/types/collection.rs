//! [`Collection`]: what a non-string key holds, one of the five types, and what the store asks of any of
//! them (its kind, length, bytes, encoding, a copy).

use allocator_api2::boxed::Box;

use super::hash::Hash;
use super::kind::Kind;
use super::list::List;
use super::set::Set;
use super::stream::Stream;
use super::zset::ZSet;
use crate::alloc::KvAlloc;

/// What a non-string key holds. It lives inside its key's item (see `value.rs`), so every key of any
/// collection type pays its size: each variant is at most 16 bytes (a compact form is one `ThinBuf`
/// (`types::thin_buf`), a large one a box), and a list, whose struct is larger, is boxed.
pub enum Collection<A: KvAlloc> {
    List(Box<List<A>, A>),
    Hash(Hash<A>),
    Set(Set<A>),
    ZSet(ZSet<A>),
    Stream(Box<Stream<A>, A>),
}

impl<A: KvAlloc> Collection<A> {
    pub fn kind(&self) -> Kind {
        match self {
            Collection::List(_) => Kind::List,
            Collection::Hash(_) => Kind::Hash,
            Collection::Set(_) => Kind::Set,
            Collection::ZSet(_) => Kind::ZSet,
            Collection::Stream(_) => Kind::Stream,
        }
    }

    /// An empty collection of `kind` (not a string).
    pub fn empty(kind: Kind, alloc: A) -> Self {
        match kind {
            Kind::List => Collection::List(Box::new_in(List::new_in(alloc.clone()), alloc)),
            Kind::Hash => Collection::Hash(Hash::new_in(alloc)),
            Kind::Set => Collection::Set(Set::new_in(alloc)),
            Kind::Stream => Collection::Stream(Box::new_in(Stream::new_in(alloc.clone()), alloc)),
            Kind::ZSet | Kind::String => Collection::ZSet(ZSet::new_in(alloc)),
        }
    }

    /// Elements (fields, members, entries) held.
    pub fn len(&self) -> usize {
        match self {
            Collection::List(x) => x.len(),
            Collection::Hash(x) => x.len(),
            Collection::Set(x) => x.len(),
            Collection::ZSet(x) => x.len(),
            Collection::Stream(x) => x.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the key goes when its collection is left empty: every type's but a stream's, which stays
    /// (with its last id) until it is deleted, as in Redis.
    pub fn goes_when_empty(&self) -> bool {
        !matches!(self, Collection::Stream(_))
    }

    /// Bytes the collection's blocks take beyond its item (what the store charges against `maxmemory`).
    pub fn bytes(&self) -> usize {
        match self {
            Collection::List(x) => core::mem::size_of::<List<A>>() + x.bytes(),
            Collection::Hash(x) => x.bytes(),
            Collection::Set(x) => x.bytes(),
            Collection::ZSet(x) => x.bytes(),
            Collection::Stream(x) => core::mem::size_of::<Stream<A>>() + x.bytes(),
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding(&self) -> &'static str {
        match self {
            Collection::List(x) => x.encoding(),
            Collection::Hash(x) => x.encoding(),
            Collection::Set(x) => x.encoding(),
            Collection::ZSet(x) => x.encoding(),
            Collection::Stream(x) => x.encoding(),
        }
    }

    /// A copy (COPY), or None when the allocator has no memory for it.
    pub fn try_clone(&self) -> Option<Self> {
        Some(match self {
            Collection::List(x) => {
                let alloc = x.allocator().clone();
                Collection::List(Box::try_new_in(x.try_clone()?, alloc).ok()?)
            }
            Collection::Hash(x) => Collection::Hash(x.try_clone()?),
            Collection::Set(x) => Collection::Set(x.try_clone()?),
            Collection::ZSet(x) => Collection::ZSet(x.try_clone()?),
            Collection::Stream(x) => {
                let alloc = x.allocator().clone();
                Collection::Stream(Box::try_new_in(x.try_clone()?, alloc).ok()?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Collection;

    /// Every collection key's item holds a `Collection`: its largest kind sets the size, so the large
    /// forms are boxed and a small hash's item (16-byte header, a key of up to 8 bytes, this) stays in
    /// the 48-byte class.
    #[test]
    fn a_collection_is_at_most_24_bytes() {
        use allocator_api2::alloc::Global;
        assert!(core::mem::size_of::<super::Hash<Global>>() <= 16);
        assert!(core::mem::size_of::<super::ZSet<Global>>() <= 16);
        assert!(core::mem::size_of::<super::Set<Global>>() <= 24);
        assert!(core::mem::size_of::<Collection<Global>>() <= 24);
    }
}
