//! Queued host<->device copies with priorities, staged through pooled pinned memory.

mod engine;
mod job;
mod staging;

pub use engine::{EngineStats, TransferEngine};
pub use job::{HostSink, Status, TransferHandle};
pub use staging::{StagingBuffer, StagingPool, StagingStats};

#[cfg(test)]
mod tests;
