//! The errors a pool operation can end with; the bindings map each to a Python exception.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// The request cannot be met even after releasing the cache and evicting.
    OutOfMemory {
        device: String,
        requested: u64,
        rounded: u64,
        in_use: u64,
        cached: u64,
        quota: Option<u64>,
    },
    /// The task running on this thread refused the charge (its message, verbatim).
    ChargeRefused(String),
    /// Host memory for an evicted copy could not be allocated.
    HostOutOfMemory(u64),
    /// A size or offset the caller passed makes no sense.
    InvalidSize(String),
    /// The block was already freed.
    Freed,
    /// The block belongs to another pool.
    WrongPool,
    /// The block is pinned (exported as a buffer, or being copied) and cannot be moved.
    Pinned,
    /// A device function returned an error.
    Device(String),
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::OutOfMemory { device, requested, rounded, in_use, cached, quota } => {
                let quota = quota.map_or("none".to_string(), |q| format!("{q} bytes"));
                write!(
                    f,
                    "out of memory on {device}: requested {requested} bytes (rounded to {rounded}), \
                     in use {in_use} bytes, cached {cached} bytes, quota {quota}"
                )
            }
            PoolError::ChargeRefused(msg) => f.write_str(msg),
            PoolError::HostOutOfMemory(n) => {
                write!(f, "out of host memory: cannot hold an evicted copy of {n} bytes")
            }
            PoolError::InvalidSize(msg) => f.write_str(msg),
            PoolError::Freed => f.write_str("the block was already freed"),
            PoolError::WrongPool => f.write_str("the block belongs to another pool"),
            PoolError::Pinned => {
                f.write_str("the block is pinned (exported as a buffer or in a copy)")
            }
            PoolError::Device(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for PoolError {}
