//! Kubernetes-style scheduler: QoS admission, partitions, fair sharing, pacing and execution.
//!
//! - `qos`/`admission`: task specs and the admit / queue / reject decision of one pool.
//! - `partition`: device slices with their own quota, compute share and priority band.
//! - `token_bucket`/`fair_share`/`arbiter`: launch pacing and weighted fair device sharing.
//! - `task`/`gate`: the running task's context (memory charging, launch gate).
//! - `gpu_time`: device time of launches, measured with events, and the queued-work bound.
//! - `executor`: worker threads running tasks; `stats`: snapshots; `size_parse`: "512MB".

pub mod admission;
pub mod arbiter;
pub mod clock;
pub mod error;
pub mod executor;
pub mod fair_share;
pub mod gate;
pub mod gpu_time;
pub mod partition;
pub mod qos;
pub mod size_parse;
pub mod stats;
pub mod task;
pub mod token_bucket;

#[cfg(test)]
mod executor_tests;
#[cfg(test)]
mod proptests;

pub use admission::{Decision, Evaluator, PoolStats};
pub use error::SchedError;
pub use executor::{Outcome, SchedulerConfig, Submission, TaskScheduler};
pub use partition::{PartitionLimits, PartitionManager};
pub use qos::{QosClass, TaskSpec};
pub use task::{Task, TaskId, TaskState};
