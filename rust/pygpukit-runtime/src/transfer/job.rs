//! Transfer jobs, their priority order, and the completion a waiter blocks on.

use std::cmp::Ordering as CmpOrdering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::staging::StagingBuffer;
use crate::memory::Block;

/// Where a device-to-host copy delivers its bytes. Dropped by the worker once done.
pub trait HostSink: Send {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Receive the copied bytes (`data.len() == self.len()`).
    fn write(&mut self, data: &[u8]);
}

pub(super) enum Work {
    ToDevice { staged: StagingBuffer },
    ToHost { sink: Box<dyn HostSink> },
}

pub(super) struct Job {
    pub priority: i32,
    pub seq: u64,
    pub block: Arc<Block>,
    pub offset: u64,
    pub work: Work,
    pub completion: Arc<Completion>,
}

// Max-heap order: higher priority first, then lower sequence number (FIFO within a priority).
impl Ord for Job {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.priority.cmp(&other.priority).then_with(|| other.seq.cmp(&self.seq))
    }
}
impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Job {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl Eq for Job {}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Queued,
    Running,
    Done { elapsed_ns: u64, order: u64 },
    Failed { message: String, order: u64 },
}

/// The event a transfer completes through: a status plus a condition variable.
#[derive(Debug)]
pub struct Completion {
    status: Mutex<Status>,
    cv: Condvar,
}

impl Completion {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Completion { status: Mutex::new(Status::Queued), cv: Condvar::new() })
    }

    pub(super) fn set(&self, s: Status) {
        *self.status.lock() = s;
        self.cv.notify_all();
    }

    pub fn status(&self) -> Status {
        self.status.lock().clone()
    }
}

/// What a submitter gets back: wait on it, poll it, read its timing.
#[derive(Clone, Debug)]
pub struct TransferHandle {
    pub(super) completion: Arc<Completion>,
    pub seq: u64,
    pub priority: i32,
    pub nbytes: u64,
}

impl TransferHandle {
    /// Block until finished or `timeout` passes. `Ok(true)` done, `Ok(false)` timed out,
    /// `Err` with the failure's message.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool, String> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = self.completion.status.lock();
        loop {
            match &*st {
                Status::Done { .. } => return Ok(true),
                Status::Failed { message, .. } => return Err(message.clone()),
                _ => {}
            }
            match deadline {
                Some(d) => {
                    if self.completion.cv.wait_until(&mut st, d).timed_out() {
                        return match &*st {
                            Status::Done { .. } => Ok(true),
                            Status::Failed { message, .. } => Err(message.clone()),
                            _ => Ok(false),
                        };
                    }
                }
                None => self.completion.cv.wait(&mut st),
            }
        }
    }

    /// Finished, successfully or not.
    pub fn done(&self) -> bool {
        matches!(self.status(), Status::Done { .. } | Status::Failed { .. })
    }

    pub fn status(&self) -> Status {
        self.completion.status()
    }

    /// Nanoseconds the copy took once the worker started it (`None` until it succeeded).
    pub fn elapsed_ns(&self) -> Option<u64> {
        match self.status() {
            Status::Done { elapsed_ns, .. } => Some(elapsed_ns),
            _ => None,
        }
    }

    /// Position in the engine's completion order (0 = first job it finished).
    pub fn completion_order(&self) -> Option<u64> {
        match self.status() {
            Status::Done { order, .. } | Status::Failed { order, .. } => Some(order),
            _ => None,
        }
    }
}
