//! A block handle: the owner of one allocation, returned to its pool on `free` or drop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::error::PoolError;
use super::pool::MemoryPool;
use crate::context::TaskContext;

/// One allocation. The device pointer may change across eviction and restore, so read it
/// through `ptr()` each time rather than keeping it.
pub struct Block {
    pool: Arc<MemoryPool>,
    id: u64,
    nbytes: u64,
    capacity: u64,
    freed: AtomicBool,
    /// The task the allocation was charged to; credited back on free.
    charged_to: Option<Arc<dyn TaskContext>>,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Block(id={}, nbytes={}, capacity={})", self.id, self.nbytes, self.capacity)
    }
}

impl Block {
    pub(super) fn new(
        pool: Arc<MemoryPool>,
        id: u64,
        nbytes: u64,
        capacity: u64,
        charged_to: Option<Arc<dyn TaskContext>>,
    ) -> Self {
        Block { pool, id, nbytes, capacity, freed: AtomicBool::new(false), charged_to }
    }

    pub fn id(&self) -> u64 {
        self.id
    }
    /// Bytes requested.
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }
    /// Bytes reserved for it (its size class or rounded large size).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    pub fn pool(&self) -> &Arc<MemoryPool> {
        &self.pool
    }
    pub fn is_freed(&self) -> bool {
        self.freed.load(Ordering::Acquire)
    }
    pub(super) fn freed_flag(&self) -> &AtomicBool {
        &self.freed
    }

    /// The current device pointer, restoring the block if it was evicted.
    pub fn ptr(&self) -> Result<u64, PoolError> {
        self.pool.ptr(self)
    }

    /// `ptr` if it needs no waiting (pool lock free, block resident); `None` otherwise.
    pub fn ptr_nowait(&self) -> Option<Result<u64, PoolError>> {
        self.pool.ptr_nowait(self)
    }

    pub fn is_evicted(&self) -> Result<bool, PoolError> {
        self.pool.is_evicted(self)
    }

    /// Return the block to the pool. Idempotent; refused while the block is pinned.
    pub fn free(&self) -> Result<(), PoolError> {
        self.release(false)
    }

    /// `free` if it can be done without waiting for the pool lock; `None` otherwise.
    pub fn free_nowait(&self) -> Option<Result<(), PoolError>> {
        let released = self.pool.release_block_nowait(self)?;
        Some(released.map(|r| self.credit(r)))
    }

    fn release(&self, force: bool) -> Result<(), PoolError> {
        let released = self.pool.release_block(self, force)?;
        self.credit(released);
        Ok(())
    }

    fn credit(&self, released: bool) {
        if let (true, Some(c)) = (released, &self.charged_to) {
            c.release(self.capacity);
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // Nothing can still be using the block once its last handle is gone.
        let _ = self.release(true);
    }
}
