//! `TaskScheduler`: runs Python callables on the runtime's worker threads under admission,
//! fair sharing and launch pacing. The thin `gp.Scheduler` wrapper builds on this.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use pygpukit_runtime::scheduler::clock::to_unix_s;
use pygpukit_runtime::scheduler::qos::{share_to_ppm, PPM};
use pygpukit_runtime::scheduler::stats::{SchedulerStats, TaskStats};
use pygpukit_runtime::scheduler::{
    executor::Job, Outcome, QosClass, SchedulerConfig, Submission, Task, TaskScheduler as Inner,
};

use super::partition::{partition_dict, Partition, PartitionLimits};
use super::qos::{build_spec, pool_stats_dict};
use super::{deadline_from_s, extract_opt_size, extract_size, to_py, TaskCancelled};

/// How long one GIL-free wait lasts before checking for KeyboardInterrupt.
const WAIT_SLICE: Duration = Duration::from_millis(100);

type PyOutcome = Py<PyAny>;

/// Executes submitted callables on its own threads. See the module docs for the API.
#[pyclass(module = "_pygpukit_rust", frozen)]
pub struct TaskScheduler {
    inner: Inner<PyOutcome>,
}

fn seconds(ns: Option<u64>) -> Option<f64> {
    ns.map(|n| n as f64 / 1e9)
}

fn task_stats_dict<'py>(py: Python<'py>, s: &TaskStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("task_id", s.id)?;
    d.set_item("name", &s.name)?;
    d.set_item("state", s.state.as_str())?;
    d.set_item("policy", s.class.as_str())?;
    d.set_item("partition", &s.partition)?;
    d.set_item("priority", s.priority)?;
    d.set_item("submitted_at", to_unix_s(s.submitted_ns))?;
    d.set_item("admitted_at", s.admitted_ns.map(to_unix_s))?;
    d.set_item("started_at", s.started_ns.map(to_unix_s))?;
    d.set_item("finished_at", s.finished_ns.map(to_unix_s))?;
    d.set_item("wait_time", s.wait_ns as f64 / 1e9)?;
    d.set_item("run_time", seconds(s.run_ns))?;
    d.set_item("memory_request", s.memory_request)?;
    d.set_item("memory_limit", (s.memory_limit != u64::MAX).then_some(s.memory_limit))?;
    d.set_item("memory_used", s.memory_used)?;
    d.set_item("memory_peak", s.memory_peak)?;
    d.set_item("bandwidth", s.bandwidth_ppm as f64 / PPM as f64)?;
    d.set_item("launches", s.launches)?;
    d.set_item("busy_ns", s.busy_ns)?;
    d.set_item("busy_time", s.busy_ns as f64 / 1e9)?;
    d.set_item("gpu_time", s.gpu_ns as f64 / 1e9)?;
    d.set_item("queued_launches", s.queued_launches)?;
    d.set_item("throttle_events", s.throttle_events)?;
    d.set_item("gate_wait_time", s.gate_wait_ns as f64 / 1e9)?;
    d.set_item("gate_wait_max", s.gate_wait_max_ns as f64 / 1e9)?;
    d.set_item("queue_position", s.queue_position)?;
    d.set_item("cancel_requested", s.cancel_requested)?;
    d.set_item("deadline_at", s.deadline_ns.map(to_unix_s))?;
    d.set_item("deadline_missed", s.deadline_missed)?;
    Ok(d)
}

fn scheduler_stats_dict<'py>(py: Python<'py>, s: &SchedulerStats) -> PyResult<Bound<'py, PyDict>> {
    let d = pool_stats_dict(py, &s.device)?;
    d.set_item("workers", s.workers)?;
    d.set_item("running", s.running)?;
    d.set_item("pending", s.pending)?;
    d.set_item("queued", s.queued)?;
    d.set_item("submitted", s.submitted)?;
    d.set_item("rejected", s.rejected)?;
    d.set_item("completed", s.completed)?;
    d.set_item("failed", s.failed)?;
    d.set_item("cancelled", s.cancelled)?;
    d.set_item("shut_down", s.shut_down)?;
    d.set_item("default_pool", pool_stats_dict(py, &s.default_pool)?)?;
    let parts = PyDict::new(py);
    for p in &s.partitions {
        parts.set_item(&p.id, partition_dict(py, p)?)?;
    }
    d.set_item("partitions", parts)?;
    Ok(d)
}

/// Run the callable on a worker thread; the GIL is taken only for the call itself.
fn make_job(func: Py<PyAny>, args: Py<PyTuple>, kwargs: Option<Py<PyDict>>) -> Job<PyOutcome> {
    Box::new(move |task: &Arc<Task>| {
        Python::try_attach(|py| {
            let result = func.bind(py).call(args.bind(py), kwargs.as_ref().map(|k| k.bind(py)));
            match result {
                Ok(v) => Outcome::Completed(v.unbind()),
                Err(e) => {
                    let cancelled = task.is_cancel_requested() && e.is_instance_of::<TaskCancelled>(py);
                    let value = e.into_value(py).into_any();
                    forget_frames(value.bind(py));
                    if cancelled {
                        Outcome::Cancelled(Some(value))
                    } else {
                        Outcome::Failed(value)
                    }
                }
            }
        })
        .unwrap_or_else(|| Outcome::Lost("the Python interpreter is shutting down".into()))
    })
}

/// Clear the locals of the frames in a failed task's traceback (and in the exceptions it
/// chains to): those frames have returned, and their locals (the task's arrays, the caller's
/// scheduler) would otherwise live as long as the stored exception.
fn forget_frames(exc: &Bound<'_, PyAny>) {
    let Ok(clear) = exc.py().import("traceback").and_then(|m| m.getattr("clear_frames")) else { return };
    let mut current = Some(exc.clone());
    for _ in 0..64 {
        // bounded: a chain of causes can loop
        let Some(e) = current.take() else { break };
        if let Ok(tb) = e.getattr("__traceback__") {
            if !tb.is_none() {
                let _ = clear.call1((tb,));
            }
        }
        current = ["__cause__", "__context__"]
            .iter()
            .filter_map(|name| e.getattr(*name).ok())
            .find(|next| !next.is_none());
    }
}

/// A new exception like `exc` (same type, args, attributes, cause, traceback so far), so that
/// raising it again does not grow the stored one's traceback by the caller's frames; `exc`
/// itself when it cannot be copied.
fn fresh_copy<'py>(exc: &Bound<'py, PyAny>) -> Bound<'py, PyAny> {
    let copied = exc.py().import("copy").and_then(|m| m.getattr("copy")).and_then(|c| c.call1((exc,)));
    let Ok(new) = copied else { return exc.clone() };
    for attr in ["__traceback__", "__cause__", "__context__", "__suppress_context__"] {
        if let Ok(v) = exc.getattr(attr) {
            if new.setattr(attr, v).is_err() {
                return exc.clone();
            }
        }
    }
    new
}

#[pymethods]
impl TaskScheduler {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let mut result = Ok(());
        self.inner.try_for_each_outcome(|value| {
            if result.is_ok() {
                result = visit.call(value);
            }
        });
        result
    }

    fn __clear__(&self) {
        self.inner.clear_outcomes();
    }

    /// `TaskScheduler(total_memory, total_bandwidth=1.0, workers=4, launch_rate=100000.0,
    /// launch_burst=32, device_slots=1, fair_share_idle_s=0.005, max_queue=4096,
    /// max_history=10000, gpu_burst_s=0.002, best_effort_queue_s=0.002, burstable_queue_s=0.008)`.
    /// `launch_rate` is device launches/s split by bandwidth share (0 = unpaced), for tasks
    /// whose launches are not measured on the device; `fair_share_idle_s` is how long a task
    /// between launches keeps its turn; `gpu_burst_s` is how far a measured task may run
    /// ahead of its share; the `*_queue_s` bounds cap the device work a task may have queued (0 = none).
    #[new]
    #[pyo3(signature = (total_memory, total_bandwidth=1.0, workers=4, launch_rate=100_000.0, launch_burst=32.0,
                        device_slots=1, fair_share_idle_s=0.005, max_queue=4096, max_history=10_000,
                        gpu_burst_s=0.002, best_effort_queue_s=0.002, burstable_queue_s=0.008))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        total_memory: &Bound<'_, PyAny>,
        total_bandwidth: f64,
        workers: usize,
        launch_rate: f64,
        launch_burst: f64,
        device_slots: usize,
        fair_share_idle_s: f64,
        max_queue: usize,
        max_history: usize,
        gpu_burst_s: f64,
        best_effort_queue_s: f64,
        burstable_queue_s: f64,
    ) -> PyResult<Self> {
        for (name, value) in
            [("gpu_burst_s", gpu_burst_s), ("best_effort_queue_s", best_effort_queue_s), ("burstable_queue_s", burstable_queue_s)]
        {
            if !value.is_finite() || !(0.0..=60.0).contains(&value) {
                return Err(PyValueError::new_err(format!("{name} must be in [0, 60], got {value}")));
            }
        }
        if !fair_share_idle_s.is_finite() || !(0.0..=60.0).contains(&fair_share_idle_s) {
            return Err(PyValueError::new_err(format!("fair_share_idle_s must be in [0, 60], got {fair_share_idle_s}")));
        }
        let config = SchedulerConfig {
            total_memory: extract_size(total_memory, "total_memory")?,
            total_bandwidth_ppm: share_to_ppm(total_bandwidth, "total_bandwidth").map_err(to_py)?,
            workers,
            device_slots,
            launch_rate,
            launch_burst,
            fair_share_idle_ns: (fair_share_idle_s * 1e9) as u64,
            max_queue,
            max_history: max_history.max(1),
            gpu_burst_ns: (gpu_burst_s * 1e9) as u64,
            best_effort_queue_ns: (best_effort_queue_s * 1e9) as u64,
            burstable_queue_ns: (burstable_queue_s * 1e9) as u64,
        };
        Ok(TaskScheduler { inner: Inner::new(config).map_err(to_py)? })
    }

    /// Submit `fn(*args, **kwargs)`; returns the task id. Policy None infers it like
    /// Kubernetes: no sizes -> best_effort, request == limit -> guaranteed, else burstable.
    /// `lane` names the SMs the task runs on (0 shared; tasks in other lanes run on SMs of
    /// their own, so they do not time-share the device with lane 0).
    /// Raises AdmissionError when refused, ValueError on bad arguments, KeyError for an
    /// unknown partition, RuntimeError after shutdown.
    #[pyo3(signature = (r#fn, args=None, kwargs=None, memory_request=None, memory_limit=None, bandwidth=None,
                        policy=None, priority=0, deadline_s=None, partition=None, name=None, lane=0))]
    #[allow(clippy::too_many_arguments)]
    fn submit(
        &self,
        py: Python<'_>,
        r#fn: Py<PyAny>,
        args: Option<&Bound<'_, PyAny>>,
        kwargs: Option<Bound<'_, PyDict>>,
        memory_request: Option<&Bound<'_, PyAny>>,
        memory_limit: Option<&Bound<'_, PyAny>>,
        bandwidth: Option<f64>,
        policy: Option<&str>,
        priority: i32,
        deadline_s: Option<f64>,
        partition: Option<String>,
        name: Option<String>,
        lane: u32,
    ) -> PyResult<u64> {
        if !r#fn.bind(py).is_callable() {
            return Err(PyValueError::new_err("fn must be callable"));
        }
        let args: Py<PyTuple> = match args {
            None => PyTuple::empty(py).unbind(),
            Some(a) if a.is_none() => PyTuple::empty(py).unbind(),
            Some(a) => a.try_iter()?.collect::<PyResult<Vec<_>>>().and_then(|v| PyTuple::new(py, v))?.unbind(),
        };
        let request = extract_opt_size(memory_request, "memory_request")?;
        let limit = extract_opt_size(memory_limit, "memory_limit")?;
        let class = match policy {
            Some(p) => QosClass::parse(p).map_err(to_py)?,
            None => match (request, limit) {
                (None, None) => QosClass::BestEffort,
                (Some(r), Some(l)) if r == l => QosClass::Guaranteed,
                _ => QosClass::Burstable,
            },
        };
        let default_bw = if class == QosClass::BestEffort { 0.05 } else { 0.1 };
        let spec = build_spec(class, request, limit, bandwidth.unwrap_or(default_bw))?
            .with_priority(priority)
            .with_deadline_ns(deadline_from_s(deadline_s)?);
        let name = match name {
            Some(n) => n,
            None => r#fn.bind(py).getattr("__name__").and_then(|n| n.extract()).unwrap_or_else(|_| "task".into()),
        };
        let job = make_job(r#fn, args, kwargs.map(Bound::unbind));
        let sub = Submission { name, spec, partition, lane };
        self.inner.submit(sub, job).map(|(id, _)| id).map_err(to_py)
    }

    /// Wait for the task and return its result (raises its exception; TaskCancelled if it was
    /// cancelled; TimeoutError after `timeout` seconds; KeyError if unknown).
    #[pyo3(signature = (task_id, timeout=None))]
    fn result(&self, py: Python<'_>, task_id: u64, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        if !self.wait_inner(py, task_id, timeout)? {
            return Err(PyTimeoutError::new_err(format!(
                "task {task_id} did not finish within {} s",
                timeout.unwrap_or(0.0)
            )));
        }
        let taken = self.inner.with_outcome(task_id, |o| match o {
            Outcome::Completed(v) => Ok(v.clone_ref(py)),
            Outcome::Failed(e) | Outcome::Cancelled(Some(e)) => Err(PyErr::from_value(fresh_copy(e.bind(py)))),
            Outcome::Cancelled(None) => Err(TaskCancelled::new_err(format!("task {task_id} was cancelled"))),
            Outcome::Lost(m) => Err(PyRuntimeError::new_err(m.clone())),
        });
        match taken.map_err(to_py)? {
            Some(r) => r,
            None => Err(PyRuntimeError::new_err(format!("the outcome of task {task_id} was already taken"))),
        }
    }

    /// Wait for the task, then hand its outcome over and forget it: `(True, value)` or
    /// `(False, exception)`; the scheduler keeps only the task's stats, so the result (and
    /// the memory charged for it) lives as long as the caller keeps it. A second call raises
    /// RuntimeError; TimeoutError after `timeout` seconds.
    #[pyo3(signature = (task_id, timeout=None))]
    fn take_result(&self, py: Python<'_>, task_id: u64, timeout: Option<f64>) -> PyResult<(bool, Py<PyAny>)> {
        if !self.wait_inner(py, task_id, timeout)? {
            return Err(PyTimeoutError::new_err(format!(
                "task {task_id} did not finish within {} s",
                timeout.unwrap_or(0.0)
            )));
        }
        let outcome = self.inner.take_outcome(task_id).map_err(to_py)?;
        let error = |e: PyErr| Ok((false, e.into_value(py).into_any()));
        match outcome {
            Some(Outcome::Completed(v)) => Ok((true, v)),
            Some(Outcome::Failed(e) | Outcome::Cancelled(Some(e))) => Ok((false, e)),
            Some(Outcome::Cancelled(None)) => error(TaskCancelled::new_err(format!("task {task_id} was cancelled"))),
            Some(Outcome::Lost(m)) => error(PyRuntimeError::new_err(m)),
            None => Err(PyRuntimeError::new_err(format!("the outcome of task {task_id} was already taken"))),
        }
    }

    /// Drop a finished task's outcome unseen (its handle is gone); no-op while it runs or
    /// once taken, or for an unknown id.
    fn discard_result(&self, task_id: u64) {
        if self.inner.task_stats(task_id).is_ok_and(|s| s.state.is_terminal()) {
            drop(self.inner.take_outcome(task_id));
        }
    }

    /// Wait until the task finishes; returns False on timeout.
    #[pyo3(signature = (task_id, timeout=None))]
    fn wait(&self, py: Python<'_>, task_id: u64, timeout: Option<f64>) -> PyResult<bool> {
        self.wait_inner(py, task_id, timeout)
    }

    /// Whether the task has finished (completed, failed or cancelled).
    fn done(&self, task_id: u64) -> PyResult<bool> {
        Ok(self.inner.task_stats(task_id).map_err(to_py)?.state.is_terminal())
    }

    /// The task's state: pending, queued, running, completed, failed or cancelled.
    fn state(&self, task_id: u64) -> PyResult<&'static str> {
        Ok(self.inner.task_stats(task_id).map_err(to_py)?.state.as_str())
    }

    /// Cancel: queued/pending tasks end now; a running task raises TaskCancelled at its next
    /// launch gate. Returns False if the task had already finished.
    fn cancel(&self, py: Python<'_>, task_id: u64) -> PyResult<bool> {
        py.detach(|| self.inner.cancel(task_id)).map_err(to_py)
    }

    /// Per-task dict when `task_id` is given, else the scheduler-wide dict.
    #[pyo3(signature = (task_id=None))]
    fn stats<'py>(&self, py: Python<'py>, task_id: Option<u64>) -> PyResult<Bound<'py, PyDict>> {
        match task_id {
            Some(id) => task_stats_dict(py, &self.inner.task_stats(id).map_err(to_py)?),
            None => scheduler_stats_dict(py, &self.inner.stats()),
        }
    }

    /// Call `fn(task_id)` once the task finishes, on the thread that finishes it (immediately
    /// if it already has). Exceptions go to sys.unraisablehook. For asyncio, pass a function
    /// that uses `loop.call_soon_threadsafe`.
    fn add_done_callback(&self, task_id: u64, r#fn: Py<PyAny>) -> PyResult<()> {
        let cb = Box::new(move |id: u64| {
            let _ = Python::try_attach(|py| {
                if let Err(e) = r#fn.call1(py, (id,)) {
                    e.write_unraisable(py, Some(r#fn.bind(py)));
                }
            });
        });
        self.inner.add_done_callback(task_id, cb).map_err(to_py)
    }

    #[pyo3(signature = (partition_id, name, limits=None))]
    fn create_partition(&self, partition_id: &str, name: &str, limits: Option<&PartitionLimits>) -> PyResult<Partition> {
        let limits = limits.map(|l| l.inner.clone()).unwrap_or_default();
        self.inner.create_partition(partition_id, name, &limits).map(Partition::new).map_err(to_py)
    }

    fn delete_partition(&self, partition_id: &str) -> PyResult<()> {
        self.inner.delete_partition(partition_id).map_err(to_py)
    }

    /// Stop accepting work; `cancel_pending` cancels queued/pending tasks; `wait` joins the
    /// workers after they finish the rest (GIL released meanwhile).
    #[pyo3(signature = (wait=true, cancel_pending=false))]
    fn shutdown(&self, py: Python<'_>, wait: bool, cancel_pending: bool) {
        py.detach(|| self.inner.shutdown(wait, cancel_pending));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> bool {
        self.shutdown(py, true, false);
        false
    }
}

impl TaskScheduler {
    /// Wait in GIL-free slices, checking for signals in between.
    fn wait_inner(&self, py: Python<'_>, task_id: u64, timeout: Option<f64>) -> PyResult<bool> {
        let deadline = match timeout {
            None => None,
            Some(t) if t.is_finite() && t >= 0.0 => Instant::now().checked_add(Duration::from_secs_f64(t)),
            Some(t) => return Err(PyValueError::new_err(format!("timeout must be finite and >= 0, got {t}"))),
        };
        loop {
            let slice = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(WAIT_SLICE),
                None => WAIT_SLICE,
            };
            if py.detach(|| self.inner.wait(task_id, Some(slice))).map_err(to_py)? {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            py.check_signals()?;
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TaskScheduler>()?;
    Ok(())
}
