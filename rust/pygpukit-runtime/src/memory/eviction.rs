//! Least-recently-used order of resident blocks, and host copies of evicted ones.

use super::error::PoolError;

/// The clock that orders resident blocks by last use: each use gets a fresh tick, kept in
/// the block's record. Finding the least-recently-used block scans the records (only the
/// OOM ladder and explicit eviction do), so the allocate/free hot path pays one increment
/// rather than ordered-map updates (about 3% of a tiny op's host time).
#[derive(Debug, Default)]
pub struct Lru {
    clock: u64,
}

impl Lru {
    /// A fresh tick for a use happening now.
    pub fn touch(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }
}

/// A zeroed host buffer for an evicted copy, without aborting when memory is short.
pub fn host_buffer(nbytes: u64) -> Result<Vec<u8>, PoolError> {
    let n = usize::try_from(nbytes).map_err(|_| PoolError::HostOutOfMemory(nbytes))?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| PoolError::HostOutOfMemory(nbytes))?;
    v.resize(n, 0);
    Ok(v)
}
