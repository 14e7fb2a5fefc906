//! PFMERGE: the union of several values written into the destination key's value.

use super::count::RawRegisters;
use super::error::HllError;
use super::header::{invalidate_cache, Encoding, HLL_DENSE, HLL_HDR_SIZE, HLL_SPARSE};
use super::{dense, sparse};

/// PFMERGE: the destination key's new value, given its current one (`None` when the key does not
/// exist) and the values of the source keys that exist, in the order given.
///
/// As Redis's `pfmergeCommand`: the destination counts among the inputs (checked and merged first);
/// the result is the destination's value (or a new sparse one), converted to dense when any input was
/// dense, with each non-zero register of the union set in it one by one (a sparse destination may turn
/// dense on the way, see [`HLL_SPARSE_MAX_BYTES`](super::HLL_SPARSE_MAX_BYTES)), and its cached
/// cardinality marked invalid. The first input that is not an HLL ([`HllError::Invalid`]) or is
/// corrupt ([`HllError::Corrupt`]) ends it with that error, and the destination is left as it was.
pub fn merge<I>(dest: Option<&[u8]>, sources: I, sparse_max_bytes: usize) -> Result<Vec<u8>, HllError>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut max = RawRegisters::new();
    let mut use_dense = false;
    if let Some(d) = dest {
        use_dense |= max.merge(d)? == Encoding::Dense;
    }
    for s in sources {
        use_dense |= max.merge(s.as_ref())? == Encoding::Dense;
    }

    let mut value = match dest {
        Some(d) => d.to_vec(),
        None => sparse::new_sparse(),
    };
    if use_dense && value[4] == HLL_SPARSE {
        value = sparse::to_dense(&value)?;
    }
    let sparse = value[4] == HLL_SPARSE;
    if sparse {
        // The string's terminator, which the sparse code may read and write.
        value.push(0);
    }
    for (j, &m) in max.registers().iter().enumerate() {
        if m == 0 {
            continue;
        }
        match value[4] {
            HLL_DENSE => {
                dense::raise(&mut value[HLL_HDR_SIZE..], j, m);
            }
            HLL_SPARSE => {
                // The destination merged cleanly, so every register is covered: this cannot fail
                // (and Redis does not look).
                let _ = sparse::set(&mut value, j, m, sparse_max_bytes);
            }
            _ => {}
        }
    }
    if sparse {
        value.pop();
    }
    invalidate_cache(&mut value);
    Ok(value)
}
