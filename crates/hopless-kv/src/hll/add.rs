//! PFADD: elements hashed into a value's registers, sparse or dense.

use super::error::HllError;
use super::hash::pattern_len;
use super::header::{invalidate_cache, validate, HLL_DENSE, HLL_HDR_SIZE, HLL_SPARSE};
use super::{dense, sparse};

/// PFADD on an existing key: validates `value`, then adds each element (the value may turn dense on
/// the way, see [`HLL_SPARSE_MAX_BYTES`](super::HLL_SPARSE_MAX_BYTES)). True when a register changed,
/// and then the cached cardinality is marked invalid: the reply is 1 and the key was written.
///
/// [`HllError::Invalid`] leaves `value` untouched. [`HllError::Corrupt`] (a sparse value whose opcodes
/// do not cover an element's register) leaves in `value` what Redis leaves in the key: the registers
/// the earlier elements raised, in place (the cache then invalid if they changed any), though Redis
/// replies with the error and does not count a write.
pub fn add<I>(value: &mut Vec<u8>, elements: I, sparse_max_bytes: usize) -> Result<bool, HllError>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    validate(value)?;
    let changed = add_elements(value, elements, sparse_max_bytes)?;
    if changed {
        invalidate_cache(value);
    }
    Ok(changed)
}

/// PFADD on a key that does not exist: a new value ([`new_sparse`](super::new_sparse)) with the
/// elements added and the cache marked invalid. Redis replies 1 (even with no element).
pub fn add_new<I>(elements: I, sparse_max_bytes: usize) -> Vec<u8>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut value = sparse::new_sparse();
    // A new value is sound: its registers are all covered, so no element meets a corruption.
    let _ = add_elements(&mut value, elements, sparse_max_bytes);
    invalidate_cache(&mut value);
    value
}

/// Adds the elements to a validated value (`hllAdd` for each): true when a register changed.
fn add_elements<I>(value: &mut Vec<u8>, elements: I, sparse_max_bytes: usize) -> Result<bool, HllError>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut elements = elements.into_iter();
    let mut changed = false;
    if value[4] == HLL_SPARSE {
        // The string's terminator, which the sparse code may read and write.
        value.push(0);
        let mut result = Ok(());
        while value[4] == HLL_SPARSE {
            let Some(e) = elements.next() else { break };
            let (index, count) = pattern_len(e.as_ref());
            match sparse::set(value, index, count, sparse_max_bytes) {
                Ok(c) => changed |= c,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        value.pop();
        result?;
    }
    // Dense from the start, or from the element that made it so.
    if value[4] == HLL_DENSE {
        let regs = &mut value[HLL_HDR_SIZE..];
        for e in elements {
            let (index, count) = pattern_len(e.as_ref());
            changed |= dense::raise(regs, index, count);
        }
    }
    Ok(changed)
}
