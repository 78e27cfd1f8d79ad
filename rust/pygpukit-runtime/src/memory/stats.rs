//! The pool's counters and the snapshot of them handed to callers.

/// Counters kept under the pool lock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub allocations: u64,
    pub reuses: u64,
    pub evictions: u64,
    pub restores: u64,
    pub device_allocs: u64,
    pub device_frees: u64,
    pub peak: u64,
}

/// A consistent snapshot of a pool. All byte figures are rounded (capacity) bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes of live blocks resident on the device.
    pub used: u64,
    /// Bytes held from the device but not in use (free lists and free segment ranges).
    pub cached: u64,
    /// `used + cached`: everything obtained from the device and not yet returned.
    pub reserved: u64,
    /// Highest `used` since creation or the last `reset_peak`.
    pub peak: u64,
    /// The pool's limit on `reserved`, if any.
    pub quota: Option<u64>,
    /// Bytes of live blocks currently evicted to host memory.
    pub evicted_bytes: u64,
    /// Free bytes inside segments that still hold live blocks (cannot be returned yet).
    pub fragmentation: u64,
    /// Segments currently held for large blocks.
    pub segments: u64,
    /// Live blocks (resident or evicted).
    pub blocks: u64,
    /// Live blocks currently evicted.
    pub evicted_blocks: u64,
    pub allocations: u64,
    /// Allocations and restores served from cached memory instead of the device.
    pub reuses: u64,
    pub evictions: u64,
    pub restores: u64,
    /// Calls to the device allocator's `alloc` and `free`.
    pub device_allocs: u64,
    pub device_frees: u64,
}
