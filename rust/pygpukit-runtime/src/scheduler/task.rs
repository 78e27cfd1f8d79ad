//! A running task as the rest of the runtime sees it: its memory accounting (the pool's
//! `TaskContext`), its launch pacing (token bucket + device arbiter) and its cancel flag.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::arbiter::Arbiter;
use super::clock;
use super::gpu_time::{DeviceEvents, EventPair, GpuBudget, InFlight};
use super::qos::{QosClass, TaskSpec};
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

/// How a task's measured GPU time is limited (see `gpu_time`).
#[derive(Debug, Clone, Default)]
pub struct GpuPolicy {
    /// Its share of device time while others use the device too; None = not capped.
    pub budget: Option<GpuBudget>,
    /// About how much device work (ns) of its launches may wait on the device, unfinished;
    /// None = no bound (see `InFlight::limit`).
    pub queue_budget_ns: Option<u64>,
    /// Which SMs it runs on: tasks in different lanes (green contexts) do not time-share.
    pub lane: u32,
}

struct GpuState {
    inflight: InFlight,
    budget: Option<GpuBudget>,
}

/// How long the gate sleeps between polls of a task's queued launches: short next to a
/// GEMM's milliseconds, long enough not to burn a core.
const QUEUE_POLL: Duration = Duration::from_micros(50);

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
    /// Launch scopes open on the task: an op that runs other ops (a composite kernel behind
    /// the Python gate, or one whose inner kernels pass the native gate) opens one inside
    /// another; only the outermost takes and gives back the device (see `begin_nested`).
    depth: AtomicU32,
    grant_ns: AtomicU64,
    /// A launch measured on the device ended inside the open outer launch: the outer's end
    /// then charges no host time (the device time of what it ran is charged as it retires).
    inner_measured: AtomicBool,
    launches: AtomicU64,
    throttle_events: AtomicU64,
    busy_ns: AtomicU64,
    gpu_ns: AtomicU64,
    /// Time its launches spent at the gate (bound, budget, bucket, arbiter): total, longest.
    gate_wait_ns: AtomicU64,
    gate_wait_max_ns: AtomicU64,
    queue_budget_ns: Option<u64>,
    pub lane: u32,
    gpu: Mutex<GpuState>,
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
        gpu: GpuPolicy,
    ) -> Self {
        Task {
            id,
            name,
            spec,
            partition,
            band,
            cancel: AtomicBool::new(false),
            holding: AtomicBool::new(false),
            depth: AtomicU32::new(0),
            grant_ns: AtomicU64::new(0),
            inner_measured: AtomicBool::new(false),
            launches: AtomicU64::new(0),
            throttle_events: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            gpu_ns: AtomicU64::new(0),
            gate_wait_ns: AtomicU64::new(0),
            gate_wait_max_ns: AtomicU64::new(0),
            queue_budget_ns: gpu.queue_budget_ns,
            lane: gpu.lane,
            gpu: Mutex::new(GpuState { inflight: InFlight::default(), budget: gpu.budget }),
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

    /// Device time of its finished launches, measured with events (0 on devices without).
    pub fn gpu_ns(&self) -> u64 {
        self.gpu_ns.load(Ordering::Relaxed)
    }

    /// Nanoseconds its launches waited at the gate before being granted: (total, longest).
    pub fn gate_wait_ns(&self) -> (u64, u64) {
        (self.gate_wait_ns.load(Ordering::Relaxed), self.gate_wait_max_ns.load(Ordering::Relaxed))
    }

    /// Its launches on the device that have not been seen to finish yet.
    pub fn queued_launches(&self) -> usize {
        self.gpu.lock().inflight.len()
    }

    /// Charge the device time of the launches that finished: to its stats, its fair-share
    /// virtual time and its GPU budget. Returns whether its launches are measured at all.
    fn retire_gpu(&self, st: &mut GpuState, now: u64) -> bool {
        if !st.inflight.measured() {
            return false;
        }
        let ns = st.inflight.retire_at(now);
        if st.inflight.is_empty() && self.spec.class == QosClass::Guaranteed {
            self.arbiter.clear_urgent(self.lane, self.id); // its events may now be reused
        }
        if ns > 0 {
            self.gpu_ns.fetch_add(ns, Ordering::Relaxed);
            self.busy_ns.fetch_add(ns, Ordering::Relaxed);
            self.arbiter.charge(self.id, ns);
            if let Some(b) = st.budget.as_mut() {
                b.charge(ns, now);
            }
        }
        true
    }

    /// Before a launch of a task whose launches are measured: wait until its queued work is
    /// under its bound and, while others use the device, until its GPU budget is out of
    /// debt. Returns false when the launches are not measured (pace by launch count then).
    fn wait_for_gpu(&self, nested: bool) -> Result<bool, Cancelled> {
        let mut throttled = false;
        loop {
            let now = clock::now_ns();
            let wait = {
                let mut st = self.gpu.lock();
                if !self.retire_gpu(&mut st, now) {
                    return Ok(false);
                }
                let over_bound = self.over_queue_bound(&st, now);
                let debt = match st.budget.as_mut() {
                    // a nested launch already holds the device: waiting out a debt there
                    // would hold every other task back with it
                    Some(b) if !nested && self.arbiter.contended(self.id) => b.check(now).err(),
                    _ => None,
                };
                match (over_bound, debt) {
                    (false, None) => return Ok(true),
                    (true, _) => QUEUE_POLL,
                    (false, Some(ns)) => Duration::from_nanos(ns).min(QUEUE_POLL * 20),
                }
            };
            if !throttled && !nested {
                throttled = true;
                self.throttle_events.fetch_add(1, Ordering::Relaxed);
                self.arbiter.throttle(self.id); // deliberately off the device: holds nobody back
            }
            let mut g = self.sleeper.0.lock();
            if self.is_cancel_requested() {
                return Err(Cancelled);
            }
            self.sleeper.1.wait_for(&mut g, wait);
            if self.is_cancel_requested() {
                return Err(Cancelled);
            }
        }
    }

    /// The launch that began last is enqueued and `pair` brackets it on its stream: its
    /// device time is charged once it finishes (at a later gate or when the task ends); the
    /// device slot is given back now, uncharged.
    pub fn end_launch_measured(&self, pair: EventPair, events: &Arc<dyn DeviceEvents>) {
        let mut st = self.gpu.lock();
        st.inflight.push_at(pair, events, clock::now_ns());
        if self.spec.class == QosClass::Guaranteed {
            // under the task's lock, so a concurrent retire cannot clear it out of order
            self.arbiter.note_urgent(self.lane, self.id, pair, events);
        }
        drop(st);
        if self.close_scope() {
            if self.holding.swap(false, Ordering::AcqRel) {
                self.arbiter.release(self.id, 0);
            }
        } else {
            self.inner_measured.store(true, Ordering::Relaxed);
        }
    }

    /// Between two slices of a best-effort task's work: wait (at most `max_ns`) while a
    /// guaranteed task's newest launch on the same SMs is still on the device, so the slices
    /// fill the gaps between its work. Returns whether it waited; `Err` once cancelled.
    pub fn yield_to_urgent(&self, max_ns: u64) -> Result<bool, Cancelled> {
        if self.spec.class == QosClass::Guaranteed {
            return Ok(false);
        }
        let until = clock::now_ns().saturating_add(max_ns);
        let mut waited = false;
        while self.arbiter.urgent_in_flight(self.lane) && clock::now_ns() < until {
            waited = true;
            let mut g = self.sleeper.0.lock();
            if self.is_cancel_requested() {
                return Err(Cancelled);
            }
            self.sleeper.1.wait_for(&mut g, QUEUE_POLL);
        }
        if self.is_cancel_requested() {
            return Err(Cancelled);
        }
        Ok(waited)
    }

    /// The task ended: charge what finished and hand the other events back.
    pub fn finish_gpu(&self) {
        let mut st = self.gpu.lock();
        if self.spec.class == QosClass::Guaranteed {
            self.arbiter.clear_urgent(self.lane, self.id);
        }
        let ns = st.inflight.drain();
        if ns > 0 {
            self.gpu_ns.fetch_add(ns, Ordering::Relaxed);
            self.busy_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }

    pub fn memory_use(&self) -> MemoryUse {
        *self.memory.lock()
    }

    /// The gate's fast path, for a caller holding the GIL: the grant when nothing would make
    /// the launch wait (queue bound, GPU budget, token bucket, fair share), `Some(Err)` once
    /// cancelled, None when it would wait (then call `begin_launch` without the GIL). A
    /// launch that releases the GIL must take it back after the other task threads' Python
    /// work: 16 times per request on the H100 qos workload, beside a hog's Python loop.
    pub fn try_begin_launch(&self) -> Option<Result<(), Cancelled>> {
        if self.is_cancel_requested() {
            return Some(Err(Cancelled));
        }
        let now = clock::now_ns();
        if self.depth.load(Ordering::Acquire) > 0 {
            // inside an open launch: no new grant, only the bound on queued device work
            let mut st = self.gpu.lock();
            if self.retire_gpu(&mut st, now) && self.over_queue_bound(&st, now) {
                return None;
            }
            drop(st);
            self.depth.fetch_add(1, Ordering::AcqRel);
            self.launches.fetch_add(1, Ordering::Relaxed);
            return Some(Ok(()));
        }
        {
            let mut st = self.gpu.lock();
            if !self.retire_gpu(&mut st, now) {
                drop(st);
                // paced by launch count: a token, given back if the device is not free now
                if let Some(b) = self.bucket.lock().as_mut() {
                    b.try_take(now).ok()?;
                }
                let granted = self.try_grant();
                if granted.is_none() {
                    if let Some(b) = self.bucket.lock().as_mut() {
                        b.give_back();
                    }
                }
                return granted;
            }
            let over_bound = self.over_queue_bound(&st, now);
            let in_debt = match st.budget.as_mut() {
                Some(b) => b.check(now).is_err() && self.arbiter.contended(self.id),
                None => false,
            };
            if over_bound || in_debt {
                return None;
            }
        }
        self.try_grant()
    }

    fn try_grant(&self) -> Option<Result<(), Cancelled>> {
        if !self.arbiter.try_acquire(self.id) {
            return None;
        }
        self.grant_ns.store(clock::now_ns(), Ordering::Relaxed);
        self.inner_measured.store(false, Ordering::Relaxed);
        self.holding.store(true, Ordering::Release);
        self.depth.store(1, Ordering::Release);
        self.launches.fetch_add(1, Ordering::Relaxed);
        Some(Ok(()))
    }

    /// Wait (without the GIL) for a launch token and then for the device. Blocks.
    pub fn begin_launch(&self) -> Result<(), Cancelled> {
        if self.is_cancel_requested() {
            return Err(Cancelled);
        }
        let entered = clock::now_ns();
        if self.depth.load(Ordering::Acquire) > 0 {
            return self.begin_nested();
        }
        // Measured launches are paced by device time; the others by launch count.
        let measured = self.wait_for_gpu(false)?;
        let mut throttled = false;
        loop {
            if measured {
                break;
            }
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
        let granted = clock::now_ns();
        let waited = granted.saturating_sub(entered);
        self.gate_wait_ns.fetch_add(waited, Ordering::Relaxed);
        self.gate_wait_max_ns.fetch_max(waited, Ordering::Relaxed);
        self.grant_ns.store(granted, Ordering::Relaxed);
        self.inner_measured.store(false, Ordering::Relaxed);
        self.holding.store(true, Ordering::Release);
        self.depth.store(1, Ordering::Release);
        self.launches.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A launch inside an open one (an op run by another op): the outer launch holds the
    /// device until the outermost scope ends, so this one takes no grant, no bucket token and
    /// no share of the fair queue; it still waits while the task's queued device work is
    /// over its bound (the device drains that queue whoever holds the slot).
    fn begin_nested(&self) -> Result<(), Cancelled> {
        self.wait_for_gpu(true)?;
        self.depth.fetch_add(1, Ordering::AcqRel);
        self.launches.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Whether the task's launches still on the device are at its bound.
    fn over_queue_bound(&self, st: &GpuState, now: u64) -> bool {
        self.queue_budget_ns.is_some_and(|budget| st.inflight.len() >= st.inflight.limit_at(budget, now))
    }

    /// Close one launch scope; true when it was the outermost (the device is to be given
    /// back), false for a nested one or when none was open.
    fn close_scope(&self) -> bool {
        let closed = self.depth.fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1));
        matches!(closed, Ok(1))
    }

    /// Launch scopes open now (1 for a plain launch; more while ops run inside an op).
    pub fn launch_depth(&self) -> u32 {
        self.depth.load(Ordering::Acquire)
    }

    /// End the current launch; `busy_ns` None measures the time since the grant. Returns the
    /// busy time charged (0 when no launch was open).
    /// Inside an outer launch this closes the inner one only: the outer's end charges the
    /// whole op, the inner ops' time included, unless an inner launch was measured on the
    /// device: then the outer charges nothing, so that time is not counted twice.
    pub fn end_launch(&self, busy_ns: Option<u64>) -> u64 {
        if !self.close_scope() || !self.holding.swap(false, Ordering::AcqRel) {
            return 0;
        }
        let busy = if self.inner_measured.swap(false, Ordering::Relaxed) {
            0
        } else {
            busy_ns.unwrap_or_else(|| clock::now_ns().saturating_sub(self.grant_ns.load(Ordering::Relaxed)))
        };
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
