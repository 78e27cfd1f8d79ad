//! Least-recently-used order of resident blocks, and host copies of evicted ones.

use std::collections::BTreeMap;

use super::error::PoolError;

/// Resident blocks ordered by last use. Each use gets a fresh tick, so ticks are unique.
#[derive(Debug, Default)]
pub struct Lru {
    by_tick: BTreeMap<u64, u64>,
    clock: u64,
}

impl Lru {
    /// Record a use of block `id` (previously at `old`, if resident); returns its new tick.
    pub fn touch(&mut self, id: u64, old: Option<u64>) -> u64 {
        if let Some(t) = old {
            self.by_tick.remove(&t);
        }
        self.clock += 1;
        self.by_tick.insert(self.clock, id);
        self.clock
    }

    pub fn remove(&mut self, tick: u64) {
        self.by_tick.remove(&tick);
    }

    /// Block ids from least to most recently used.
    pub fn oldest_first(&self) -> impl Iterator<Item = u64> + '_ {
        self.by_tick.values().copied()
    }

    pub fn len(&self) -> usize {
        self.by_tick.len()
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
