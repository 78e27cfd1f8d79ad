//! `QosTaskMeta`, `AdmissionResult` and `QosPolicyEvaluator`: the direct admission API.

use std::time::Instant;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use pygpukit_runtime::scheduler::qos::{share_to_ppm, PPM};
use pygpukit_runtime::scheduler::{Decision, Evaluator, PoolStats, QosClass, TaskSpec};

use super::{deadline_from_s, extract_opt_size, extract_size, to_py};

/// A task's identity and QoS spec for admission.
#[pyclass(module = "_pygpukit_rust", frozen)]
#[derive(Clone)]
pub struct QosTaskMeta {
    #[pyo3(get)]
    pub task_id: String,
    #[pyo3(get)]
    pub name: String,
    pub spec: TaskSpec,
}

fn finish_spec(spec: TaskSpec, priority: i32, deadline_s: Option<f64>) -> PyResult<TaskSpec> {
    Ok(spec.with_priority(priority).with_deadline_ns(deadline_from_s(deadline_s)?))
}

#[pymethods]
impl QosTaskMeta {
    /// `QosTaskMeta(task_id, name, policy, memory_request=None, memory_limit=None, bandwidth=0.1,
    /// priority=0, deadline_s=None)`; policy is "guaranteed", "burstable" or "best_effort".
    #[new]
    #[pyo3(signature = (task_id, name, policy, memory_request=None, memory_limit=None, bandwidth=0.1, priority=0, deadline_s=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        task_id: String,
        name: String,
        policy: &str,
        memory_request: Option<&Bound<'_, PyAny>>,
        memory_limit: Option<&Bound<'_, PyAny>>,
        bandwidth: f64,
        priority: i32,
        deadline_s: Option<f64>,
    ) -> PyResult<Self> {
        let class = QosClass::parse(policy).map_err(to_py)?;
        let request = extract_opt_size(memory_request, "memory_request")?;
        let limit = extract_opt_size(memory_limit, "memory_limit")?;
        let spec = build_spec(class, request, limit, bandwidth)?;
        Ok(QosTaskMeta { task_id, name, spec: finish_spec(spec, priority, deadline_s)? })
    }

    /// Guaranteed: `memory` is both request and limit, reserved exclusively.
    #[staticmethod]
    #[pyo3(signature = (task_id, name, memory, bandwidth=0.1, priority=0, deadline_s=None))]
    fn guaranteed(
        task_id: String,
        name: String,
        memory: &Bound<'_, PyAny>,
        bandwidth: f64,
        priority: i32,
        deadline_s: Option<f64>,
    ) -> PyResult<Self> {
        let memory = extract_size(memory, "memory")?;
        let spec = TaskSpec::guaranteed(memory, bandwidth).map_err(to_py)?;
        Ok(QosTaskMeta { task_id, name, spec: finish_spec(spec, priority, deadline_s)? })
    }

    /// Burstable: `memory_request` reserved, may grow to `memory_limit` (None: no limit) while free.
    #[staticmethod]
    #[pyo3(signature = (task_id, name, memory_request, memory_limit=None, bandwidth=0.1, priority=0, deadline_s=None))]
    fn burstable(
        task_id: String,
        name: String,
        memory_request: &Bound<'_, PyAny>,
        memory_limit: Option<&Bound<'_, PyAny>>,
        bandwidth: f64,
        priority: i32,
        deadline_s: Option<f64>,
    ) -> PyResult<Self> {
        let request = extract_size(memory_request, "memory_request")?;
        let limit = extract_opt_size(memory_limit, "memory_limit")?.unwrap_or(u64::MAX);
        let spec = TaskSpec::burstable(request, limit, bandwidth).map_err(to_py)?;
        Ok(QosTaskMeta { task_id, name, spec: finish_spec(spec, priority, deadline_s)? })
    }

    /// Best effort: reserves nothing, runs on leftovers; `bandwidth` is only its fair-share weight.
    #[staticmethod]
    #[pyo3(signature = (task_id, name, memory_limit=None, bandwidth=0.05, priority=0, deadline_s=None))]
    fn best_effort(
        task_id: String,
        name: String,
        memory_limit: Option<&Bound<'_, PyAny>>,
        bandwidth: f64,
        priority: i32,
        deadline_s: Option<f64>,
    ) -> PyResult<Self> {
        let limit = extract_opt_size(memory_limit, "memory_limit")?;
        let spec = TaskSpec::best_effort(limit, bandwidth).map_err(to_py)?;
        Ok(QosTaskMeta { task_id, name, spec: finish_spec(spec, priority, deadline_s)? })
    }

    #[getter]
    fn policy(&self) -> &'static str {
        self.spec.class.as_str()
    }

    #[getter]
    fn memory_request(&self) -> u64 {
        self.spec.memory_request
    }

    /// None when unlimited.
    #[getter]
    fn memory_limit(&self) -> Option<u64> {
        (self.spec.memory_limit != u64::MAX).then_some(self.spec.memory_limit)
    }

    #[getter]
    fn bandwidth(&self) -> f64 {
        self.spec.bandwidth_ppm as f64 / PPM as f64
    }

    #[getter]
    fn priority(&self) -> i32 {
        self.spec.priority
    }

    fn __repr__(&self) -> String {
        format!(
            "QosTaskMeta({:?}, {:?}, policy={:?}, memory_request={}, memory_limit={:?}, bandwidth={}, priority={})",
            self.task_id,
            self.name,
            self.policy(),
            self.spec.memory_request,
            self.memory_limit(),
            self.bandwidth(),
            self.spec.priority
        )
    }
}

/// Build a spec from optional sizes with Kubernetes-like defaults per class.
pub(crate) fn build_spec(class: QosClass, request: Option<u64>, limit: Option<u64>, bandwidth: f64) -> PyResult<TaskSpec> {
    let spec = match class {
        QosClass::Guaranteed => {
            let (r, l) = match (request, limit) {
                (Some(r), Some(l)) => (r, l),
                (Some(v), None) | (None, Some(v)) => (v, v),
                (None, None) => {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "guaranteed tasks need a memory size (memory_request and/or memory_limit)",
                    ))
                }
            };
            TaskSpec::new(class, r, l, bandwidth)
        }
        QosClass::Burstable => TaskSpec::new(class, request.unwrap_or(0), limit.unwrap_or(u64::MAX), bandwidth),
        QosClass::BestEffort => TaskSpec::new(class, request.unwrap_or(0), limit.unwrap_or(u64::MAX), bandwidth),
    };
    spec.map_err(to_py)
}

/// The answer of one admission decision: `decision` is "admit", "queue" or "reject".
#[pyclass(module = "_pygpukit_rust", frozen)]
pub struct AdmissionResult {
    #[pyo3(get)]
    pub task_id: Option<String>,
    #[pyo3(get)]
    pub decision: &'static str,
    /// 1-based place in the admission queue when queued.
    #[pyo3(get)]
    pub position: Option<usize>,
    /// Why the task was rejected.
    #[pyo3(get)]
    pub reason: Option<String>,
    /// Time the decision took inside the runtime, in nanoseconds.
    #[pyo3(get)]
    pub decision_ns: u64,
}

impl AdmissionResult {
    pub fn from_decision(task_id: Option<String>, d: Decision, decision_ns: u64) -> Self {
        let (decision, position, reason) = match d {
            Decision::Admit => ("admit", None, None),
            Decision::Queue { position } => ("queue", Some(position), None),
            Decision::Reject { reason } => ("reject", None, Some(reason)),
        };
        AdmissionResult { task_id, decision, position, reason, decision_ns }
    }
}

#[pymethods]
impl AdmissionResult {
    #[getter]
    fn admitted(&self) -> bool {
        self.decision == "admit"
    }

    #[getter]
    fn queued(&self) -> bool {
        self.decision == "queue"
    }

    #[getter]
    fn rejected(&self) -> bool {
        self.decision == "reject"
    }

    fn __bool__(&self) -> bool {
        self.admitted()
    }

    fn __repr__(&self) -> String {
        match self.decision {
            "queue" => format!("AdmissionResult(queue, position={})", self.position.unwrap_or(0)),
            "reject" => format!("AdmissionResult(reject, reason={:?})", self.reason.as_deref().unwrap_or("")),
            d => format!("AdmissionResult({d})"),
        }
    }
}

pub(crate) fn pool_stats_dict<'py>(py: Python<'py>, s: &PoolStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("total_memory", s.total_memory)?;
    d.set_item("reserved_memory", s.reserved_memory)?;
    d.set_item("guaranteed_memory", s.guaranteed_memory)?;
    d.set_item("borrowed_memory", s.borrowed_memory)?;
    d.set_item("available_memory", s.available_memory)?;
    d.set_item("total_bandwidth", s.total_bandwidth_ppm as f64 / PPM as f64)?;
    d.set_item("reserved_bandwidth", s.reserved_bandwidth_ppm as f64 / PPM as f64)?;
    d.set_item("admitted_tasks", s.admitted_tasks)?;
    d.set_item("queued_tasks", s.queued_tasks)?;
    d.set_item("admitted_total", s.admitted_total)?;
    d.set_item("queued_total", s.queued_total)?;
    d.set_item("rejected_total", s.rejected_total)?;
    d.set_item("completed_total", s.completed_total)?;
    Ok(d)
}

/// Admission control of one device: `evaluate` admits (reserving), queues or rejects;
/// `release`/`complete` free a task and return the ids admitted from the queue as a result.
#[pyclass(module = "_pygpukit_rust", frozen)]
pub struct QosPolicyEvaluator {
    inner: Mutex<Evaluator<String>>,
}

#[pymethods]
impl QosPolicyEvaluator {
    #[new]
    #[pyo3(signature = (total_memory, total_bandwidth=1.0, max_queue=4096))]
    fn new(total_memory: &Bound<'_, PyAny>, total_bandwidth: f64, max_queue: usize) -> PyResult<Self> {
        let memory = extract_size(total_memory, "total_memory")?;
        let bandwidth = share_to_ppm(total_bandwidth, "total_bandwidth").map_err(to_py)?;
        let mut ev = Evaluator::new(memory, bandwidth);
        ev.set_max_queue(max_queue);
        Ok(QosPolicyEvaluator { inner: Mutex::new(ev) })
    }

    /// Admit, queue or reject `task`; ValueError if its id is already admitted or queued.
    fn evaluate(&self, task: &QosTaskMeta) -> PyResult<AdmissionResult> {
        let t0 = Instant::now();
        let d = self.inner.lock().evaluate(task.task_id.clone(), &task.spec).map_err(to_py)?;
        let ns = t0.elapsed().as_nanos() as u64;
        Ok(AdmissionResult::from_decision(Some(task.task_id.clone()), d, ns))
    }

    /// Free an admitted task's reservation (or drop a queued one); KeyError if unknown.
    fn release(&self, task_id: String) -> PyResult<Vec<String>> {
        self.inner.lock().release(&task_id, 0).map_err(to_py)
    }

    /// Like `release`, counting the task as completed.
    fn complete(&self, task_id: String) -> PyResult<Vec<String>> {
        self.inner.lock().complete(&task_id, 0).map_err(to_py)
    }

    fn queue_position(&self, task_id: String) -> Option<usize> {
        self.inner.lock().queue_position(&task_id)
    }

    fn queued(&self) -> Vec<String> {
        self.inner.lock().queued_keys()
    }

    fn is_admitted(&self, task_id: String) -> bool {
        self.inner.lock().is_admitted(&task_id)
    }

    #[getter]
    fn total_memory(&self) -> u64 {
        self.inner.lock().total_memory()
    }

    #[getter]
    fn available_memory(&self) -> u64 {
        self.inner.lock().available_memory()
    }

    #[getter]
    fn reserved_memory(&self) -> u64 {
        self.inner.lock().stats().reserved_memory
    }

    #[getter]
    fn reserved_bandwidth(&self) -> f64 {
        self.inner.lock().stats().reserved_bandwidth_ppm as f64 / PPM as f64
    }

    #[getter]
    fn queue_length(&self) -> usize {
        self.inner.lock().stats().queued_tasks
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.lock().stats();
        pool_stats_dict(py, &s)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<QosTaskMeta>()?;
    m.add_class::<AdmissionResult>()?;
    m.add_class::<QosPolicyEvaluator>()?;
    Ok(())
}
