//! `PartitionConfig`, `PartitionLimits` (chainable builder), `Partition` and `PartitionManager`.

use std::time::Instant;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use pygpukit_runtime::scheduler::qos::{share_to_ppm, PPM};
use pygpukit_runtime::scheduler::stats::PartitionInfo;
use pygpukit_runtime::scheduler::{PartitionLimits as Limits, PartitionManager as Manager};

use super::qos::{pool_stats_dict, AdmissionResult, QosTaskMeta};
use super::{extract_size, to_py};

/// Device totals a `PartitionManager` divides.
#[pyclass(module = "_pygpukit_rust", frozen)]
#[derive(Clone)]
pub struct PartitionConfig {
    #[pyo3(get)]
    total_memory: u64,
    total_bandwidth_ppm: u32,
}

#[pymethods]
impl PartitionConfig {
    #[new]
    #[pyo3(signature = (total_memory, total_bandwidth=1.0))]
    fn new(total_memory: &Bound<'_, PyAny>, total_bandwidth: f64) -> PyResult<Self> {
        Ok(PartitionConfig {
            total_memory: extract_size(total_memory, "total_memory")?,
            total_bandwidth_ppm: share_to_ppm(total_bandwidth, "total_bandwidth").map_err(to_py)?,
        })
    }

    #[getter]
    fn total_bandwidth(&self) -> f64 {
        self.total_bandwidth_ppm as f64 / PPM as f64
    }

    fn __repr__(&self) -> String {
        format!("PartitionConfig(total_memory={}, total_bandwidth={})", self.total_memory, self.total_bandwidth())
    }
}

/// Limits of a partition. Each builder method returns a new object, so calls chain:
/// `PartitionLimits().memory("4GiB").compute(0.5).priority(1)`. Unset memory/compute take
/// everything not yet partitioned when the partition is created.
#[pyclass(module = "_pygpukit_rust", frozen)]
#[derive(Clone, Default)]
pub struct PartitionLimits {
    pub inner: Limits,
}

#[pymethods]
impl PartitionLimits {
    #[new]
    #[pyo3(signature = (memory=None, compute=None, priority=0))]
    fn new(memory: Option<&Bound<'_, PyAny>>, compute: Option<f64>, priority: i32) -> PyResult<Self> {
        let mut inner = Limits::default().priority_band(priority);
        if let Some(m) = super::extract_opt_size(memory, "memory")? {
            inner = inner.memory(m);
        }
        if let Some(c) = compute {
            inner = inner.compute(c).map_err(to_py)?;
        }
        Ok(PartitionLimits { inner })
    }

    /// Memory quota (int bytes or "4GiB").
    fn memory(&self, bytes: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PartitionLimits { inner: self.inner.clone().memory(extract_size(bytes, "memory")?) })
    }

    /// Compute (bandwidth) share in (0, 1].
    fn compute(&self, share: f64) -> PyResult<Self> {
        Ok(PartitionLimits { inner: self.inner.clone().compute(share).map_err(to_py)? })
    }

    /// Priority band: higher bands start first when tasks wait for a worker.
    fn priority(&self, band: i32) -> Self {
        PartitionLimits { inner: self.inner.clone().priority_band(band) }
    }

    #[getter]
    fn memory_quota(&self) -> Option<u64> {
        self.inner.memory
    }

    #[getter]
    fn compute_share(&self) -> Option<f64> {
        self.inner.compute_ppm.map(|p| p as f64 / PPM as f64)
    }

    #[getter]
    fn priority_band(&self) -> i32 {
        self.inner.priority_band
    }

    fn __repr__(&self) -> String {
        format!(
            "PartitionLimits(memory={:?}, compute={:?}, priority={})",
            self.inner.memory,
            self.compute_share(),
            self.inner.priority_band
        )
    }
}

/// A snapshot of one partition.
#[pyclass(module = "_pygpukit_rust", frozen)]
pub struct Partition {
    info: PartitionInfo,
}

impl Partition {
    pub fn new(info: PartitionInfo) -> Self {
        Partition { info }
    }
}

#[pymethods]
impl Partition {
    #[getter]
    fn partition_id(&self) -> &str {
        &self.info.id
    }

    #[getter]
    fn name(&self) -> &str {
        &self.info.name
    }

    #[getter]
    fn memory_quota(&self) -> u64 {
        self.info.memory_quota
    }

    #[getter]
    fn compute_share(&self) -> f64 {
        self.info.compute_ppm as f64 / PPM as f64
    }

    #[getter]
    fn priority_band(&self) -> i32 {
        self.info.priority_band
    }

    /// Accounting of the partition's pool when the snapshot was taken.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        pool_stats_dict(py, &self.info.pool)
    }

    fn __repr__(&self) -> String {
        format!(
            "Partition({:?}, {:?}, memory_quota={}, compute_share={}, priority_band={})",
            self.info.id,
            self.info.name,
            self.info.memory_quota,
            self.compute_share(),
            self.info.priority_band
        )
    }
}

pub(crate) fn partition_dict<'py>(py: Python<'py>, p: &PartitionInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = pool_stats_dict(py, &p.pool)?;
    d.set_item("partition_id", &p.id)?;
    d.set_item("name", &p.name)?;
    d.set_item("memory_quota", p.memory_quota)?;
    d.set_item("compute_share", p.compute_ppm as f64 / PPM as f64)?;
    d.set_item("priority_band", p.priority_band)?;
    Ok(d)
}

/// Divides a device into partitions; tasks are admitted against their partition's quota and
/// share (or the unpartitioned remainder when `partition` is None).
#[pyclass(module = "_pygpukit_rust", frozen)]
pub struct PartitionManager {
    inner: Mutex<Manager<String>>,
}

#[pymethods]
impl PartitionManager {
    #[new]
    fn new(config: &PartitionConfig) -> Self {
        PartitionManager { inner: Mutex::new(Manager::new(config.total_memory, config.total_bandwidth_ppm)) }
    }

    /// Carve a partition out of the unpartitioned remainder; ValueError if it does not fit.
    #[pyo3(signature = (partition_id, name, limits=None))]
    fn create_partition(&self, partition_id: &str, name: &str, limits: Option<&PartitionLimits>) -> PyResult<Partition> {
        let limits = limits.map(|l| l.inner.clone()).unwrap_or_default();
        let mut m = self.inner.lock();
        let p = m.create_partition(partition_id, name, &limits).map_err(to_py)?;
        Ok(Partition::new(PartitionInfo::of(p)))
    }

    /// Remove an idle partition, returning its quota to the remainder; returns ids admitted there.
    fn delete_partition(&self, partition_id: &str) -> PyResult<Vec<String>> {
        self.inner.lock().delete_partition(partition_id).map_err(to_py)
    }

    fn get_partition(&self, partition_id: &str) -> PyResult<Partition> {
        let m = self.inner.lock();
        m.partition(partition_id)
            .map(|p| Partition::new(PartitionInfo::of(p)))
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(format!("no partition {partition_id:?}")))
    }

    fn list_partitions(&self) -> Vec<Partition> {
        self.inner.lock().partitions().map(|p| Partition::new(PartitionInfo::of(p))).collect()
    }

    /// Admission of `task` in `partition` (None: the unpartitioned remainder).
    #[pyo3(signature = (task, partition=None))]
    fn evaluate(&self, task: &QosTaskMeta, partition: Option<&str>) -> PyResult<AdmissionResult> {
        let t0 = Instant::now();
        let d = self.inner.lock().evaluate(task.task_id.clone(), &task.spec, partition).map_err(to_py)?;
        let ns = t0.elapsed().as_nanos() as u64;
        Ok(AdmissionResult::from_decision(Some(task.task_id.clone()), d, ns))
    }

    fn release(&self, task_id: String) -> PyResult<Vec<String>> {
        self.inner.lock().release(&task_id, 0, false).map_err(to_py)
    }

    fn complete(&self, task_id: String) -> PyResult<Vec<String>> {
        self.inner.lock().release(&task_id, 0, true).map_err(to_py)
    }

    fn queue_position(&self, task_id: String) -> Option<usize> {
        self.inner.lock().queue_position(&task_id)
    }

    /// Pool accounting of one partition, or of the unpartitioned remainder when None.
    #[pyo3(signature = (partition=None))]
    fn stats<'py>(&self, py: Python<'py>, partition: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.inner.lock();
        match partition {
            None => pool_stats_dict(py, &m.default_stats()),
            Some(id) => match m.partition(id) {
                Some(p) => partition_dict(py, &PartitionInfo::of(p)),
                None => Err(pyo3::exceptions::PyKeyError::new_err(format!("no partition {id:?}"))),
            },
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PartitionConfig>()?;
    m.add_class::<PartitionLimits>()?;
    m.add_class::<Partition>()?;
    m.add_class::<PartitionManager>()?;
    Ok(())
}
