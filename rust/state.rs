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

/// A `T` from bytes written by [`encode`]; a clear error for anything else.
pub fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> CoreResult<T> {
    bincode::deserialize(bytes).map_err(|e| {
        CoreError::InvalidParameter(format!(
            "not a saved {what} state (corrupt or from another version): {e}"
        ))
    })
}
