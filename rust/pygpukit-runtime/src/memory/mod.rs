//! The per-device memory pool: size classes, best-fit segments, quota, LRU eviction.

pub mod allocator_table;
mod block;
mod error;
mod eviction;
pub mod host;
mod pool;
mod registry;
pub mod segment;
pub mod size_class;
mod stats;

pub use allocator_table::{
    AsyncOps, DeviceAllocator, DeviceAllocatorTable, ALLOCATOR_ABI_VERSION, ALLOCATOR_CAPSULE_NAME,
    FLAG_HOST_ADDRESSABLE,
};
pub use block::Block;
pub use error::PoolError;
pub use host::{host_allocator, host_allocator_table};
pub use pool::{MemoryPool, PoolConfig};
pub use registry::{device_pool, register_device_pool, registered_devices};
pub use stats::PoolStats;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod stream_tests;
