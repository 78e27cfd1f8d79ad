//! Dispatch control: per-stream launch limits, launch ordering and the kernel-module cache.

mod gate;
mod kernel_cache;
mod order;

pub use gate::{GateStats, StreamGate};
pub use kernel_cache::{hash_source, CacheStats, KernelCache, KernelKey};
pub use order::LaunchQueue;

#[cfg(test)]
mod tests;
