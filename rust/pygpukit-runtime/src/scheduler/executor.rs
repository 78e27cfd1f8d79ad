//! The task executor: admission through the partition manager, worker threads that run
//! admitted tasks under their context, cancellation, completion callbacks and statistics.
//!
//! Generic over the task result `R` so it stays free of Python. Locking rules: one mutex
//! (`Core`) guards admission and records; it is never held while a job or callback runs, and
//! values that may run user code when dropped (jobs, results, callbacks) are dropped after it
//! is released.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::admission::{Decision, PoolStats};
use super::arbiter::Arbiter;
use super::clock;
use super::error::SchedError;
use super::gate;
use super::partition::{PartitionLimits, PartitionManager};
use super::qos::{TaskSpec, PPM};
use super::stats::{PartitionInfo, SchedulerStats, TaskStats};
use super::gpu_time::GpuBudget;
use super::qos::QosClass;
use super::task::{GpuPolicy, Ledger, Task, TaskId, TaskState};
use super::token_bucket::TokenBucket;

/// How a task ended.
pub enum Outcome<R> {
    Completed(R),
    /// The job failed with this error value.
    Failed(R),
    /// Cancelled before or while running (with the error the job raised, if it ran).
    Cancelled(Option<R>),
    /// The job could not run or report (scheduler shut down, runtime gone, panic).
    Lost(String),
}

pub type Job<R> = Box<dyn FnOnce(&Arc<Task>) -> Outcome<R> + Send>;
pub type DoneCallback = Box<dyn FnOnce(TaskId) + Send>;

/// Scheduler settings; see the field docs for units.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    pub total_memory: u64,
    pub total_bandwidth_ppm: u32,
    pub workers: usize,
    /// Launches that may hold the device at once (1 = time-sliced exclusive device).
    pub device_slots: usize,
    /// Device-wide launch rate (launches/s) split by bandwidth share; 0 = unpaced.
    pub launch_rate: f64,
    /// Token bucket depth, in launches.
    pub launch_burst: f64,
    /// How long a task between launches keeps its fair-share turn.
    pub fair_share_idle_ns: u64,
    pub max_queue: usize,
    /// Finished tasks remembered for `stats`/`result`.
    pub max_history: usize,
    /// Device time a task may run ahead of its bandwidth share while others use the device
    /// (its GPU budget's burst); launches measured with events only.
    pub gpu_burst_ns: u64,
    /// About how much device work (ns) of a best-effort task may wait on the device, so a
    /// burst of its launches cannot fill the device's queue ahead of a guaranteed task (at
    /// least `gpu_time::MIN_QUEUED` launches); 0 = no bound.
    pub best_effort_queue_ns: u64,
    /// The same bound for burstable tasks; 0 = no bound. Guaranteed tasks have none.
    pub burstable_queue_ns: u64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            total_memory: 0,
            total_bandwidth_ppm: PPM,
            workers: 4,
            device_slots: 1,
            launch_rate: 100_000.0,
            launch_burst: 32.0,
            fair_share_idle_ns: 5_000_000,
            max_queue: super::admission::DEFAULT_MAX_QUEUE,
            max_history: 10_000,
            gpu_burst_ns: 2_000_000,
            best_effort_queue_ns: 2_000_000,
            burstable_queue_ns: 8_000_000,
        }
    }
}

/// What a submission asks for, besides the job.
#[derive(Debug, Clone)]
pub struct Submission {
    pub name: String,
    pub spec: TaskSpec,
    pub partition: Option<String>,
    /// Which SMs the task runs on (0: the shared ones; see `FairShare`'s lanes).
    pub lane: u32,
}

struct Record<R> {
    task: Arc<Task>,
    state: TaskState,
    submitted: u64,
    admitted: Option<u64>,
    started: Option<u64>,
    finished: Option<u64>,
    job: Option<Job<R>>,
    outcome: Option<Outcome<R>>,
    callbacks: Vec<DoneCallback>,
    seq: u64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Ready {
    band: i32,
    priority: i32,
    deadline: Reverse<u64>,
    seq: Reverse<u64>,
    id: TaskId,
}

#[derive(Default)]
struct Counters {
    submitted: u64,
    rejected: u64,
    completed: u64,
    failed: u64,
    cancelled: u64,
}

struct Core<R> {
    pm: PartitionManager<TaskId>,
    records: HashMap<TaskId, Record<R>>,
    ready: BinaryHeap<Ready>,
    history: VecDeque<TaskId>,
    next_id: TaskId,
    running: usize,
    shutdown: bool,
    counters: Counters,
}

/// Things to drop or call once the core lock is released.
struct Aftermath<R> {
    callbacks: Vec<(TaskId, DoneCallback)>,
    garbage: Vec<Record<R>>,
    jobs: Vec<Job<R>>,
}

impl<R> Aftermath<R> {
    fn new() -> Self {
        Aftermath { callbacks: Vec::new(), garbage: Vec::new(), jobs: Vec::new() }
    }

    fn run(self) {
        drop(self.jobs);
        drop(self.garbage);
        for (id, cb) in self.callbacks {
            // A failing callback must not take the worker down.
            let _ = catch_unwind(AssertUnwindSafe(|| cb(id)));
        }
    }
}

struct Shared<R> {
    core: Mutex<Core<R>>,
    work_cv: Condvar,
    done_cv: Condvar,
    arbiter: Arc<Arbiter>,
    config: SchedulerConfig,
}

impl<R: Send + 'static> Ledger for Shared<R> {
    fn borrow(&self, partition: Option<&str>, bytes: u64) -> Result<(), u64> {
        self.core.lock().pm.borrow(partition, bytes)
    }

    fn unborrow(&self, partition: Option<&str>, bytes: u64) {
        let mut core = self.core.lock();
        let admitted = core.pm.unborrow(partition, bytes);
        if !admitted.is_empty() {
            core.mark_admitted(&admitted);
            drop(core);
            self.work_cv.notify_all();
        }
    }
}

impl<R> Core<R> {
    fn mark_admitted(&mut self, ids: &[TaskId]) {
        let now = clock::now_ns();
        for id in ids {
            if let Some(rec) = self.records.get_mut(id) {
                rec.state = TaskState::Pending;
                rec.admitted = Some(now);
                let spec = &rec.task.spec;
                self.ready.push(Ready {
                    band: rec.task.band,
                    priority: spec.priority,
                    deadline: Reverse(spec.deadline_ns.unwrap_or(u64::MAX)),
                    seq: Reverse(rec.seq),
                    id: *id,
                });
            }
        }
    }

    /// Record the end of a task and collect what must happen outside the lock.
    fn finish(&mut self, id: TaskId, state: TaskState, outcome: Outcome<R>, max_history: usize, after: &mut Aftermath<R>) {
        let Some(rec) = self.records.get_mut(&id) else { return };
        rec.state = state;
        rec.finished = Some(clock::now_ns());
        rec.outcome = Some(outcome);
        if let Some(job) = rec.job.take() {
            after.jobs.push(job);
        }
        after.callbacks.extend(rec.callbacks.drain(..).map(|cb| (id, cb)));
        match state {
            TaskState::Completed => self.counters.completed += 1,
            TaskState::Failed => self.counters.failed += 1,
            _ => self.counters.cancelled += 1,
        }
        self.history.push_back(id);
        while self.history.len() > max_history {
            if let Some(old) = self.history.pop_front().and_then(|old| self.records.remove(&old)) {
                after.garbage.push(old);
            }
        }
    }

    fn queued_count(&self) -> usize {
        self.records.values().filter(|r| r.state == TaskState::Queued).count()
    }
}

/// Runs tasks on its own worker threads; see the module docs.
pub struct TaskScheduler<R: Send + 'static> {
    shared: Arc<Shared<R>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl<R: Send + 'static> TaskScheduler<R> {
    pub fn new(config: SchedulerConfig) -> Result<Self, SchedError> {
        if config.workers == 0 || config.workers > 1024 {
            return Err(SchedError::Invalid(format!("workers must be in 1..=1024, got {}", config.workers)));
        }
        if config.device_slots == 0 {
            return Err(SchedError::Invalid("device_slots must be at least 1".into()));
        }
        if !config.launch_rate.is_finite() || config.launch_rate < 0.0 {
            return Err(SchedError::Invalid(format!("launch_rate must be >= 0, got {}", config.launch_rate)));
        }
        if !config.launch_burst.is_finite() || config.launch_burst < 1.0 {
            return Err(SchedError::Invalid(format!("launch_burst must be >= 1, got {}", config.launch_burst)));
        }
        if config.total_bandwidth_ppm == 0 || config.total_bandwidth_ppm > PPM {
            return Err(SchedError::Invalid("total_bandwidth must be in (0, 1]".into()));
        }
        let mut pm = PartitionManager::new(config.total_memory, config.total_bandwidth_ppm);
        pm.set_max_queue(config.max_queue);
        let shared = Arc::new(Shared {
            core: Mutex::new(Core {
                pm,
                records: HashMap::new(),
                ready: BinaryHeap::new(),
                history: VecDeque::new(),
                next_id: 1,
                running: 0,
                shutdown: false,
                counters: Counters::default(),
            }),
            work_cv: Condvar::new(),
            done_cv: Condvar::new(),
            arbiter: Arc::new(Arbiter::new(config.device_slots, config.fair_share_idle_ns)),
            config,
        });
        let mut workers = Vec::new();
        for i in 0..shared.config.workers {
            let s = shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("pygpukit-sched-{i}"))
                .spawn(move || worker_loop(s))
                .map_err(|e| SchedError::Invalid(format!("cannot start worker thread: {e}")))?;
            workers.push(handle);
        }
        Ok(TaskScheduler { shared, workers: Mutex::new(workers) })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.shared.config
    }

    /// Admit or queue a task; a rejection is `SchedError::Rejected` with the reason.
    /// Returns the id and, when queued, the 1-based queue position.
    pub fn submit(&self, sub: Submission, job: Job<R>) -> Result<(TaskId, Option<usize>), SchedError> {
        let mut core = self.shared.core.lock();
        if core.shutdown {
            return Err(SchedError::ShutDown);
        }
        let id = core.next_id;
        let partition = sub.partition.as_deref();
        let decision = core.pm.evaluate(id, &sub.spec, partition)?;
        core.next_id += 1;
        core.counters.submitted += 1;
        let position = match decision {
            Decision::Reject { reason } => {
                core.counters.rejected += 1;
                drop(core);
                drop(job);
                return Err(SchedError::Rejected(reason));
            }
            Decision::Queue { position } => Some(position),
            Decision::Admit => None,
        };
        let band = core.pm.band(partition);
        let config = &self.shared.config;
        let now = clock::now_ns();
        let bucket = (config.launch_rate > 0.0).then(|| {
            let rate = config.launch_rate * sub.spec.bandwidth_ppm as f64 / PPM as f64;
            TokenBucket::new(rate, config.launch_burst, now)
        });
        let share = sub.spec.bandwidth_ppm as f64 / PPM as f64;
        let queue = match sub.spec.class {
            QosClass::Guaranteed => 0,
            QosClass::Burstable => config.burstable_queue_ns,
            QosClass::BestEffort => config.best_effort_queue_ns,
        };
        let gpu = GpuPolicy {
            // a guaranteed task's share is a floor, not a cap
            budget: (sub.spec.class != QosClass::Guaranteed).then(|| GpuBudget::new(share, config.gpu_burst_ns, now)),
            queue_budget_ns: (queue > 0).then_some(queue),
            lane: sub.lane,
        };
        let ledger: Weak<dyn Ledger> = Arc::downgrade(&self.shared) as Weak<dyn Ledger>;
        let task = Arc::new(Task::new(
            id,
            sub.name,
            sub.spec,
            sub.partition,
            band,
            bucket,
            self.shared.arbiter.clone(),
            ledger,
            gpu,
        ));
        core.records.insert(
            id,
            Record {
                task,
                state: TaskState::Queued,
                submitted: now,
                admitted: None,
                started: None,
                finished: None,
                job: Some(job),
                outcome: None,
                callbacks: Vec::new(),
                seq: id,
            },
        );
        if position.is_none() {
            core.mark_admitted(&[id]);
            drop(core);
            self.shared.work_cv.notify_one();
        }
        Ok((id, position))
    }

    /// Cancel a task: queued or pending ones end now (true); a running one gets its cancel
    /// flag, seen at its next launch gate (true); a finished one is left alone (false).
    pub fn cancel(&self, id: TaskId) -> Result<bool, SchedError> {
        let mut after = Aftermath::new();
        let result = {
            let mut core = self.shared.core.lock();
            let state = core.records.get(&id).map(|r| r.state).ok_or_else(|| not_found(id))?;
            match state {
                TaskState::Queued | TaskState::Pending => {
                    let admitted = core.pm.release(&id, 0, false).unwrap_or_default();
                    core.mark_admitted(&admitted);
                    let max = self.shared.config.max_history;
                    core.finish(id, TaskState::Cancelled, Outcome::Cancelled(None), max, &mut after);
                    true
                }
                TaskState::Running => {
                    if let Some(r) = core.records.get(&id) {
                        r.task.request_cancel();
                    }
                    true
                }
                _ => false,
            }
        };
        self.shared.work_cv.notify_all();
        self.shared.done_cv.notify_all();
        after.run();
        Ok(result)
    }

    /// Block (the caller must not hold the GIL) until the task is finished or `timeout`
    /// passes; returns whether it finished.
    pub fn wait(&self, id: TaskId, timeout: Option<Duration>) -> Result<bool, SchedError> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut core = self.shared.core.lock();
        loop {
            let state = core.records.get(&id).map(|r| r.state).ok_or_else(|| not_found(id))?;
            if state.is_terminal() {
                return Ok(true);
            }
            match deadline {
                Some(d) => {
                    if self.shared.done_cv.wait_until(&mut core, d).timed_out() {
                        let done = core.records.get(&id).is_some_and(|r| r.state.is_terminal());
                        return Ok(done);
                    }
                }
                None => self.shared.done_cv.wait(&mut core),
            }
        }
    }

    /// Move a finished task's outcome out to the caller: from then on the record keeps only
    /// the task's stats, so whatever the result holds (and the memory charged for it) lives
    /// exactly as long as the caller keeps it. None while unfinished or once taken.
    pub fn take_outcome(&self, id: TaskId) -> Result<Option<Outcome<R>>, SchedError> {
        let mut core = self.shared.core.lock();
        let rec = core.records.get_mut(&id).ok_or_else(|| not_found(id))?;
        Ok(rec.outcome.take())
    }

    /// Visit every outcome still held, without waiting for the lock (a garbage collector's
    /// traversal must not block); returns false when the lock was busy and nothing was seen.
    pub fn try_for_each_outcome(&self, mut f: impl FnMut(&R)) -> bool {
        let Some(core) = self.shared.core.try_lock() else { return false };
        for rec in core.records.values() {
            match &rec.outcome {
                Some(Outcome::Completed(v) | Outcome::Failed(v) | Outcome::Cancelled(Some(v))) => f(v),
                _ => {}
            }
        }
        true
    }

    /// Drop every outcome still held (to break reference cycles through the results); the
    /// values are dropped after the lock is released, since dropping them may run user code.
    pub fn clear_outcomes(&self) {
        let dropped: Vec<Outcome<R>> = {
            let mut core = self.shared.core.lock();
            core.records.values_mut().filter_map(|r| r.outcome.take()).collect()
        };
        drop(dropped);
    }

    /// Look at a finished task's outcome (None while unfinished or once taken).
    pub fn with_outcome<T>(&self, id: TaskId, f: impl FnOnce(&Outcome<R>) -> T) -> Result<Option<T>, SchedError> {
        let core = self.shared.core.lock();
        let rec = core.records.get(&id).ok_or_else(|| not_found(id))?;
        Ok(rec.outcome.as_ref().map(f))
    }

    /// Call `cb(id)` once the task finishes (at once, on this thread, if it already has).
    pub fn add_done_callback(&self, id: TaskId, cb: DoneCallback) -> Result<(), SchedError> {
        let mut core = self.shared.core.lock();
        let rec = core.records.get_mut(&id).ok_or_else(|| not_found(id))?;
        if rec.state.is_terminal() {
            drop(core);
            cb(id);
        } else {
            rec.callbacks.push(cb);
        }
        Ok(())
    }

    pub fn task_stats(&self, id: TaskId) -> Result<TaskStats, SchedError> {
        let core = self.shared.core.lock();
        let rec = core.records.get(&id).ok_or_else(|| not_found(id))?;
        let now = clock::now_ns();
        let task = &rec.task;
        let mem = task.memory_use();
        let (gate_wait_ns, gate_wait_max_ns) = task.gate_wait_ns();
        let wait_end = rec.started.or(rec.finished).unwrap_or(now);
        let run_ns = rec.started.map(|s| rec.finished.unwrap_or(now).saturating_sub(s));
        let finished_or_now = rec.finished.unwrap_or(now);
        Ok(TaskStats {
            id,
            name: task.name.clone(),
            state: rec.state,
            class: task.spec.class,
            partition: task.partition.clone(),
            priority: task.spec.priority,
            submitted_ns: rec.submitted,
            admitted_ns: rec.admitted,
            started_ns: rec.started,
            finished_ns: rec.finished,
            wait_ns: wait_end.saturating_sub(rec.submitted),
            run_ns,
            memory_request: task.spec.memory_request,
            memory_limit: task.spec.memory_limit,
            memory_used: mem.used,
            memory_peak: mem.peak,
            bandwidth_ppm: task.spec.bandwidth_ppm,
            launches: task.launches(),
            busy_ns: task.busy_ns(),
            gpu_ns: task.gpu_ns(),
            queued_launches: task.queued_launches(),
            throttle_events: task.throttle_events(),
            gate_wait_ns,
            gate_wait_max_ns,
            queue_position: if rec.state == TaskState::Queued { core.pm.queue_position(&id) } else { None },
            cancel_requested: task.is_cancel_requested(),
            deadline_ns: task.spec.deadline_ns,
            deadline_missed: task.spec.deadline_ns.is_some_and(|d| finished_or_now > d),
        })
    }

    pub fn stats(&self) -> SchedulerStats {
        let core = self.shared.core.lock();
        let c = &core.counters;
        let pending = core.records.values().filter(|r| r.state == TaskState::Pending).count();
        SchedulerStats {
            workers: self.shared.config.workers,
            running: core.running,
            pending,
            queued: core.queued_count(),
            submitted: c.submitted,
            rejected: c.rejected,
            completed: c.completed,
            failed: c.failed,
            cancelled: c.cancelled,
            device: core.pm.device_stats(),
            default_pool: core.pm.default_stats(),
            partitions: core.pm.partitions().map(PartitionInfo::of).collect(),
            shut_down: core.shutdown,
        }
    }

    pub fn create_partition(&self, id: &str, name: &str, limits: &PartitionLimits) -> Result<PartitionInfo, SchedError> {
        let mut core = self.shared.core.lock();
        let p = core.pm.create_partition(id, name, limits)?;
        Ok(PartitionInfo::of(p))
    }

    pub fn delete_partition(&self, id: &str) -> Result<(), SchedError> {
        let mut core = self.shared.core.lock();
        let admitted = core.pm.delete_partition(id)?;
        core.mark_admitted(&admitted);
        drop(core);
        self.shared.work_cv.notify_all();
        Ok(())
    }

    pub fn pool_stats(&self, partition: Option<&str>) -> Result<PoolStats, SchedError> {
        let core = self.shared.core.lock();
        core.pm
            .pool(partition)
            .map(|p| p.stats())
            .ok_or_else(|| SchedError::NotFound(format!("no partition {:?}", partition.unwrap_or(""))))
    }

    /// Stop accepting tasks; optionally cancel queued/pending ones, and optionally wait for
    /// the workers to finish what is left (the caller must not hold the GIL then).
    pub fn shutdown(&self, wait: bool, cancel_pending: bool) {
        let mut after = Aftermath::new();
        {
            let mut core = self.shared.core.lock();
            core.shutdown = true;
            if cancel_pending {
                let mut ids: Vec<TaskId> = core
                    .records
                    .iter()
                    .filter(|(_, r)| matches!(r.state, TaskState::Queued | TaskState::Pending))
                    .map(|(id, _)| *id)
                    .collect();
                ids.sort_unstable();
                let max = self.shared.config.max_history;
                for id in ids {
                    let _ = core.pm.release(&id, 0, false);
                    core.finish(id, TaskState::Cancelled, Outcome::Cancelled(None), max, &mut after);
                }
                // Releases may have admitted others; they were cancelled above or in this pass.
                core.ready.clear();
            }
        }
        self.shared.work_cv.notify_all();
        self.shared.done_cv.notify_all();
        after.run();
        if wait {
            let handles: Vec<JoinHandle<()>> = std::mem::take(&mut *self.workers.lock());
            for h in handles {
                let _ = h.join();
            }
        }
    }
}

impl<R: Send + 'static> Drop for TaskScheduler<R> {
    fn drop(&mut self) {
        // Workers exit on their own once the remaining work is gone; never block here.
        self.shutdown(false, true);
    }
}

fn not_found(id: TaskId) -> SchedError {
    SchedError::NotFound(format!("no task with id {id}"))
}

fn worker_loop<R: Send + 'static>(shared: Arc<Shared<R>>) {
    loop {
        let Some((task, job)) = next_job(&shared) else { return };
        shared.arbiter.add(task.id, task.weight(), task.band, task.lane);
        let outcome = {
            let _guard = gate::enter(task.clone());
            catch_unwind(AssertUnwindSafe(|| job(&task)))
                .unwrap_or_else(|_| Outcome::Lost("the task's job panicked".into()))
        };
        task.finish_gpu();
        // Frees the device slot if the task left a launch open.
        shared.arbiter.remove(task.id);
        let state = match &outcome {
            Outcome::Completed(_) => TaskState::Completed,
            Outcome::Cancelled(_) => TaskState::Cancelled,
            Outcome::Failed(_) | Outcome::Lost(_) => TaskState::Failed,
        };
        let mut after = Aftermath::new();
        task.retire(|residual| {
            let mut core = shared.core.lock();
            let admitted = core.pm.release(&task.id, residual, true).unwrap_or_default();
            core.mark_admitted(&admitted);
            core.running -= 1;
            core.finish(task.id, state, outcome, shared.config.max_history, &mut after);
        });
        shared.work_cv.notify_all();
        shared.done_cv.notify_all();
        after.run();
    }
}

/// Wait for the next admitted task, or None when the worker should exit.
fn next_job<R: Send + 'static>(shared: &Shared<R>) -> Option<(Arc<Task>, Job<R>)> {
    let mut after = Aftermath::new();
    let mut core = shared.core.lock();
    let found = loop {
        if let Some(next) = take_ready(&mut core) {
            break Some(next);
        }
        if core.shutdown {
            if core.queued_count() == 0 {
                break None;
            }
            if core.running == 0 {
                // Nothing running can free resources for these any more.
                let ids: Vec<TaskId> =
                    core.records.iter().filter(|(_, r)| r.state == TaskState::Queued).map(|(id, _)| *id).collect();
                for id in ids {
                    let _ = core.pm.release(&id, 0, false);
                    let lost = Outcome::Lost("the scheduler shut down before the task was admitted".into());
                    core.finish(id, TaskState::Failed, lost, shared.config.max_history, &mut after);
                }
                shared.done_cv.notify_all();
                shared.work_cv.notify_all();
                break None;
            }
        }
        shared.work_cv.wait(&mut core);
    };
    drop(core);
    after.run();
    found
}

/// Pop the best admitted task that is still pending and mark it running.
fn take_ready<R>(core: &mut Core<R>) -> Option<(Arc<Task>, Job<R>)> {
    while let Some(entry) = core.ready.pop() {
        let Some(rec) = core.records.get_mut(&entry.id) else { continue };
        if rec.state != TaskState::Pending {
            continue;
        }
        let Some(job) = rec.job.take() else { continue };
        rec.state = TaskState::Running;
        rec.started = Some(clock::now_ns());
        let task = rec.task.clone();
        core.running += 1;
        return Some((task, job));
    }
    None
}
