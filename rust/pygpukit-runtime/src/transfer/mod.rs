//! Host<->device copies staged through pooled pinned memory: stream-ordered chunked copies
//! on the caller's stream (`StreamCopier`).

mod staging;
mod stream_copy;

pub use staging::{StagingBuffer, StagingPool, StagingStats};
pub use stream_copy::{CopierStats, CopyError, CopyTuning, StreamCopier};

#[cfg(test)]
mod stream_copy_tests;
