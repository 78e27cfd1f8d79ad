//! PyGPUkit's runtime core: pure Rust, no Python. The bindings crate wraps it.
//!
//! - `memory`: the per-device memory pool (size classes, best fit, quota, LRU eviction).
//! - `scheduler`: Kubernetes-style admission, QoS, partitions, fair sharing and pacing.
//! - `transfer`: queued host/device copies with priorities and pinned staging.
//! - `dispatch`: per-stream launch limits, launch ordering and the kernel-module cache.
//! - `context`: the task context a thread runs under, shared by the pool and the scheduler.

pub mod context;
pub mod dispatch;
pub mod memory;
pub mod scheduler;
pub mod transfer;
