//! A running task as the rest of the runtime sees it: its memory accounting (the pool's
//! `TaskContext`), its launch pacing (token bucket + device arbiter) and its cancel flag.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::arbiter::Arbiter;
use super::clock;
use super::qos::TaskSpec;
use super::token_bucket::TokenBucket;
use crate::context::TaskContext;

pub type TaskId = u64;

/// Lifecycle of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Admitted (resources reserved), waiting for a worker thread.
    Pending,
    /// Waiting in the admission queue for resources.
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Cancelled)
    }
}

/// Where a task borrows memory beyond its reservation (implemented by the executor).
pub trait Ledger: Send + Sync {
    /// Take unreserved bytes from the task's pool; `Err` gives the bytes available.
    fn borrow(&self, partition: Option<&str>, bytes: u64) -> Result<(), u64>;
    fn unborrow(&self, partition: Option<&str>, bytes: u64);
}

#[derive(Debug, Default, Clone, Copy)]
pub struct MemoryUse {
    pub used: u64,
    pub peak: u64,
    /// Part of `used` taken from the pool's unreserved memory.
    borrowed: u64,
    /// The task ended: its reservation is gone and everything still held counts as borrowed.
    retired: bool,
}

/// The launch was refused because the task was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

pub struct Task {
    pub id: TaskId,
    pub name: String,
    pub spec: TaskSpec,
    pub partition: Option<String>,
    pub band: i32,
    cancel: AtomicBool,
    holding: AtomicBool,
    grant_ns: AtomicU64,
    launches: AtomicU64,
    throttle_events: AtomicU64,
    busy_ns: AtomicU64,
    memory: Mutex<MemoryUse>,
    bucket: Mutex<Option<TokenBucket>>,
    sleeper: (Mutex<()>, Condvar),
    arbiter: Arc<Arbiter>,
    ledger: Weak<dyn Ledger>,
}

impl Task {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: TaskId,
        name: String,
        spec: TaskSpec,
        partition: Option<String>,
        band: i32,
        bucket: Option<TokenBucket>,
        arbiter: Arc<Arbiter>,
        ledger: Weak<dyn Ledger>,
    ) -> Self {
        Task {
            id,
            name,
            spec,
            partition,
            band,
            cancel: AtomicBool::new(false),
            holding: AtomicBool::new(false),
            grant_ns: AtomicU64::new(0),
            launches: AtomicU64::new(0),
            throttle_events: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            memory: Mutex::new(MemoryUse::default()),
            bucket: Mutex::new(bucket),
            sleeper: (Mutex::new(()), Condvar::new()),
            arbiter,
            ledger,
        }
    }

    pub fn weight(&self) -> f64 {
        self.spec.bandwidth_ppm as f64 / super::qos::PPM as f64
    }

    /// Ask the task to stop: queued launches fail with `Cancelled` from now on.
    pub fn request_cancel(&self) {
        self.cancel.store(true, Ordering::Release);
        {
            let _g = self.sleeper.0.lock();
            self.sleeper.1.notify_all();
        }
        self.arbiter.wake_all();
    }

    pub fn is_cancel_requested(&self) -> bool {
        self.cancel.load(Ordering::Acquire)
    }

    pub fn launches(&self) -> u64 {
        self.launches.load(Ordering::Relaxed)
    }

    pub fn throttle_events(&self) -> u64 {
        self.throttle_events.load(Ordering::Relaxed)
    }

    pub fn busy_ns(&self) -> u64 {
        self.busy_ns.load(Ordering::Relaxed)
    }

    pub fn memory_use(&self) -> MemoryUse {
        *self.memory.lock()
    }

    /// Wait (without the GIL) for a launch token and then for the device. Blocks.
    pub fn begin_launch(&self) -> Result<(), Cancelled> {
        if self.is_cancel_requested() {
            return Err(Cancelled);
        }
        let mut throttled = false;
        loop {
            let wait = match self.bucket.lock().as_mut() {
                None => break,
                Some(b) => match b.try_take(clock::now_ns()) {
                    Ok(()) => break,
                    Err(wait) => wait,
                },
            };
            if !throttled {
                throttled = true;
                self.throttle_events.fetch_add(1, Ordering::Relaxed);
                self.arbiter.throttle(self.id);
            }
            let mut g = self.sleeper.0.lock();
            if self.is_cancel_requested() {
                return Err(Cancelled);
            }
            self.sleeper.1.wait_for(&mut g, Duration::from_nanos(wait));
            if self.is_cancel_requested() {
                return Err(Cancelled);
            }
        }
        if !self.arbiter.acquire(self.id, &self.cancel) {
            return Err(Cancelled);
        }
        self.grant_ns.store(clock::now_ns(), Ordering::Relaxed);
        self.holding.store(true, Ordering::Release);
        self.launches.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// End the current launch; `busy_ns` None measures the time since the grant. Returns the
    /// busy time charged (0 when no launch was open).
    pub fn end_launch(&self, busy_ns: Option<u64>) -> u64 {
        if !self.holding.swap(false, Ordering::AcqRel) {
            return 0;
        }
        let busy = busy_ns
            .unwrap_or_else(|| clock::now_ns().saturating_sub(self.grant_ns.load(Ordering::Relaxed)));
        self.busy_ns.fetch_add(busy, Ordering::Relaxed);
        self.arbiter.release(self.id, busy);
        busy
    }

    fn exceeds_limit_message(&self, bytes: u64, used: u64) -> String {
        format!(
            "task {} ({:?}): allocating {} bytes would exceed its memory limit of {} bytes ({} bytes in use)",
            self.id, self.name, bytes, self.spec.memory_limit, used
        )
    }

    /// The pool's view of new allocations (see `TaskContext::charge`).
    pub fn charge_memory(&self, bytes: u64) -> Result<(), String> {
        let mut m = self.memory.lock();
        let used = match m.used.checked_add(bytes) {
            Some(u) if u <= self.spec.memory_limit => u,
            _ => return Err(self.exceeds_limit_message(bytes, m.used)),
        };
        let borrowed = if m.retired { used } else { used.saturating_sub(self.spec.memory_request) };
        if borrowed > m.borrowed {
            let extra = borrowed - m.borrowed;
            let ledger = self.ledger.upgrade().ok_or_else(|| "the scheduler is gone".to_string())?;
            if let Err(available) = ledger.borrow(self.partition.as_deref(), extra) {
                return Err(format!(
                    "task {} ({:?}): allocating {} bytes needs {} bytes beyond its {}-byte reservation, but only {} bytes are free",
                    self.id, self.name, bytes, extra, self.spec.memory_request, available
                ));
            }
        }
        m.used = used;
        m.borrowed = borrowed;
        m.peak = m.peak.max(used);
        Ok(())
    }

    pub fn release_memory(&self, bytes: u64) {
        let mut m = self.memory.lock();
        let used = m.used - bytes.min(m.used);
        let borrowed = if m.retired { used } else { used.saturating_sub(self.spec.memory_request) };
        let returned = m.borrowed.saturating_sub(borrowed);
        m.used = used;
        m.borrowed = borrowed;
        if returned > 0 {
            // Still under the task's memory lock, so a concurrent retire cannot double count.
            if let Some(ledger) = self.ledger.upgrade() {
                ledger.unborrow(self.partition.as_deref(), returned);
            }
        }
    }

    /// Mark the task ended. `on_retire` receives the bytes still held inside the reservation
    /// (they become borrowed) and runs under the task's memory lock.
    pub fn retire<T>(&self, on_retire: impl FnOnce(u64) -> T) -> T {
        let mut m = self.memory.lock();
        let residual = if m.retired { 0 } else { m.used - m.borrowed };
        m.retired = true;
        m.borrowed = m.used;
        on_retire(residual)
    }
}

impl TaskContext for Task {
    fn charge(&self, bytes: u64) -> Result<(), String> {
        self.charge_memory(bytes)
    }

    fn release(&self, bytes: u64) {
        self.release_memory(bytes)
    }

    fn before_launch(&self) {
        // A cancelled task gets no grant; `after_launch` then has nothing to release.
        let _ = self.begin_launch();
    }

    fn after_launch(&self, busy_ns: u64) {
        self.end_launch(Some(busy_ns));
    }
}
