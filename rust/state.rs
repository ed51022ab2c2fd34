//! Saved state: every stateful kernel (the continual-release mechanisms, noise streams,
//! Sherman–Morrison inverses, mixture features) round-trips through bytes exactly, random
//! generators' positions included, so that a saved agent continues bit-identically.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::errors::{CoreError, CoreResult};

/// The bytes of `x`'s state.
pub fn encode<T: Serialize>(x: &T) -> CoreResult<Vec<u8>> {
    bincode::serialize(x)
        .map_err(|e| CoreError::InvalidParameter(format!("cannot save state: {e}")))
}

/// A `T` from bytes written by [`encode`]; a clear error for anything else, bytes left over after
/// the state included (`bincode::deserialize` ignored them: a state of another layout that ends
/// in more fields, or bytes appended to a saved file, decoded as if they were not there).
pub fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> CoreResult<T> {
    use bincode::Options;

    // encode's layout (bincode::serialize: fixed-width integers, little endian, no size limit)
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .deserialize(bytes)
        .map_err(|e| {
            CoreError::InvalidParameter(format!(
                "not a saved {what} state (corrupt or from another version): {e}"
            ))
        })
}

/// Refuse a restored state whose buffers do not have the sizes its dimensions give (a saved file
/// edited by hand with its checksum recomputed): each entry is (name, entries held, the factors
/// of the entries its dimensions give). Checked before the state is used, so that a corrupted
/// dimension is an error, not an allocation of its product.
pub fn check_sizes(what: &str, sizes: &[(&str, usize, &[usize])]) -> CoreResult<()> {
    for &(name, got, dims) in sizes {
        let want = dims.iter().try_fold(1usize, |acc, &x| acc.checked_mul(x));
        if want != Some(got) {
            return Err(CoreError::InvalidParameter(format!(
                "not a consistent saved {what} state: {name} holds {got} entries, its dimensions \
                 give {}",
                want.map_or_else(
                    || "more than memory can hold".to_string(),
                    |w| w.to_string()
                )
            )));
        }
    }
    Ok(())
}

/// Refuse a restored state holding a statistic (an inverse, a mechanism) whose dimension is not
/// the agent's `d` (see [`check_sizes`]).
pub fn check_dims(what: &str, dims: impl IntoIterator<Item = usize>, d: usize) -> CoreResult<()> {
    match dims.into_iter().find(|&m| m != d) {
        Some(bad) => Err(CoreError::InvalidParameter(format!(
            "not a consistent saved {what} state: a statistic of dimension {bad}, the agent's is {d}"
        ))),
        None => Ok(()),
    }
}
