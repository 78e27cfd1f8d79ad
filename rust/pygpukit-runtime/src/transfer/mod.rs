//! Host<->device copies staged through pooled pinned memory: stream-ordered chunked copies
//! on the caller's stream (`StreamCopier`), and a priority queue drained by a worker
//! (`TransferEngine`).

mod engine;
mod job;
mod staging;
mod stream_copy;

pub use engine::{EngineStats, TransferEngine};
pub use job::{HostSink, Status, TransferHandle};
pub use staging::{StagingBuffer, StagingPool, StagingStats};
pub use stream_copy::{CopierStats, CopyError, CopyTuning, StreamCopier};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod stream_copy_tests;
