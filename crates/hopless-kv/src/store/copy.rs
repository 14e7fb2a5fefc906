//! COPY: a key's value (a string, or a deep copy of a collection) and its TTL under another name.

use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::Kind;
use crate::value;

impl<A: KvAlloc> Store<A> {
    /// COPY `src` to `dst`, with its TTL; `replace`: overwrite an existing `dst` (else nothing is copied
    /// and the answer is false). False also when `src` is missing. Both shards are locked (lower index
    /// first) for the whole copy. A collection is copied element by element under the source's lock (as
    /// Redis does, in the command's time).
    pub fn copy(&self, src: &[u8], dst: &[u8], replace: bool) -> Result<bool> {
        let (mut pair, ls, ld) = self.lock_src_dst(src, dst)?;
        let Some(si) = pair.of(ls).table.find(ls.hash, src) else {
            return Ok(false);
        };
        let di = pair.of(ld).table.find(ld.hash, dst);
        if di.is_some() && !replace {
            return Ok(false);
        }
        let item = pair.of(ls).table.item(si);
        let deadline = pair.of(ls).deadline_of(item);
        // SAFETY: the table's item, read (a collection too) under its shard's write lock.
        let copied = unsafe {
            match value::kind(item) {
                Kind::String => {
                    let v = value::value(item);
                    let c = value::new_item(&self.inner.alloc, dst, v.len(), |b| b.copy_from_slice(v))
                        .map_err(|_| Error::AllocFailed)?;
                    // Redis copies a string's encoding with it.
                    value::set_str_enc(c, value::str_enc(item));
                    c
                }
                _ => {
                    let c = value::coll::<A>(item).try_clone().ok_or(Error::AllocFailed)?;
                    value::new_coll_item(&self.inner.alloc, dst, c).map_err(|_| Error::AllocFailed)?
                }
            }
        };
        // SAFETY: the new item is ours until installed.
        let need = unsafe { value::charged_size::<A>(copied) } as u64;
        if let Err(e) = self.make_room(pair.of(ld), ld, need) {
            drop(pair);
            self.release(copied);
            return Err(e);
        }
        // Making room may have evicted dst (or moved its slot): look it up again.
        let di = pair.of(ld).table.find(ld.hash, dst);
        let old = self.install(pair.of(ld), ld, di, copied, deadline);
        drop(pair);
        if let Some(o) = old {
            self.release(o);
        }
        Ok(true)
    }
}
