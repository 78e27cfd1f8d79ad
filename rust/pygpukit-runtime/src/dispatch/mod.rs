//! Dispatch support: the compiled-kernel cache (CUBIN images by source, options, arch and
//! compiler version, bounded by bytes and entries, least recently used out first).

mod kernel_cache;

pub use kernel_cache::{hash_source, CacheStats, KernelCache, KernelKey};

#[cfg(test)]
mod tests;
