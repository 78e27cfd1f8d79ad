//! Python bindings of the runtime's `dispatch` part: `LaunchGate`, `LaunchQueue`, `KernelCache`.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use pygpukit_runtime::dispatch::{hash_source, KernelCache, KernelKey, LaunchQueue, StreamGate};

fn timeout_arg(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_finite() && t >= 0.0 => Ok(Some(Duration::from_secs_f64(t.min(1e9)))),
        Some(t) => Err(PyValueError::new_err(format!("timeout must be >= 0, got {t}"))),
    }
}

fn limit_arg(limit: i64) -> PyResult<usize> {
    usize::try_from(limit)
        .ok()
        .filter(|&l| l >= 1)
        .ok_or_else(|| PyValueError::new_err(format!("limit must be >= 1, got {limit}")))
}

/// Bounds kernels in flight per stream: `acquire(stream)` blocks (GIL released) while the
/// stream has `limit` launches in flight; `release(stream)` when one finished.
#[pyclass(name = "LaunchGate", module = "_pygpukit_rust", frozen)]
pub struct PyLaunchGate {
    inner: StreamGate,
}

#[pymethods]
impl PyLaunchGate {
    #[new]
    fn new(limit: i64) -> PyResult<Self> {
        let inner = StreamGate::new(limit_arg(limit)?).map_err(PyValueError::new_err)?;
        Ok(PyLaunchGate { inner })
    }

    /// Take a slot; True when taken, False if `timeout` seconds passed first.
    #[pyo3(signature = (stream_id=0, timeout=None))]
    fn acquire(&self, py: Python<'_>, stream_id: u64, timeout: Option<f64>) -> PyResult<bool> {
        let t = timeout_arg(timeout)?;
        let gate = &self.inner;
        Ok(py.detach(|| gate.acquire(stream_id, t)))
    }

    /// Take a slot only if one is free now.
    #[pyo3(signature = (stream_id=0))]
    fn try_acquire(&self, stream_id: u64) -> bool {
        self.inner.try_acquire(stream_id)
    }

    /// Give a slot back; `RuntimeError` if the stream has none in flight.
    #[pyo3(signature = (stream_id=0))]
    fn release(&self, stream_id: u64) -> PyResult<()> {
        self.inner.release(stream_id).map_err(PyRuntimeError::new_err)
    }

    #[pyo3(signature = (stream_id=0))]
    fn in_flight(&self, stream_id: u64) -> usize {
        self.inner.in_flight(stream_id)
    }

    /// Override one stream's limit.
    fn set_limit(&self, stream_id: u64, limit: i64) -> PyResult<()> {
        self.inner.set_limit(stream_id, limit_arg(limit)?).map_err(PyValueError::new_err)
    }

    #[pyo3(signature = (stream_id=0))]
    fn limit(&self, stream_id: u64) -> usize {
        self.inner.limit(stream_id)
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("acquired", s.acquired)?;
        d.set_item("waited", s.waited)?;
        d.set_item("timeouts", s.timeouts)?;
        d.set_item("released", s.released)?;
        Ok(d)
    }
}

/// Launch ordering for the scheduler: `push` returns a sequence number; `pop` yields
/// `(seq, priority, item)` by priority (higher first), FIFO among equal priorities.
#[pyclass(name = "LaunchQueue", module = "_pygpukit_rust", frozen)]
pub struct PyLaunchQueue {
    inner: LaunchQueue<Py<PyAny>>,
}

#[pymethods]
impl PyLaunchQueue {
    #[new]
    fn new() -> Self {
        PyLaunchQueue { inner: LaunchQueue::default() }
    }

    #[pyo3(signature = (item, priority=0))]
    fn push(&self, item: Py<PyAny>, priority: i32) -> u64 {
        self.inner.push(priority, item)
    }

    fn pop(&self) -> Option<(u64, i32, Py<PyAny>)> {
        self.inner.pop()
    }

    /// `(seq, priority)` of the next launch, or None.
    fn peek(&self) -> Option<(u64, i32)> {
        self.inner.peek()
    }

    #[getter]
    fn next_seq(&self) -> u64 {
        self.inner.next_seq()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

type Handle = Arc<Py<PyAny>>;

/// Compiled kernel modules keyed by (source hash, options, arch, compiler version), LRU
/// under a byte capacity and an entry count. Stores the image bytes (e.g. CUBIN) and an
/// optional Python handle (e.g. the loaded module).
#[pyclass(name = "KernelCache", module = "_pygpukit_rust", frozen)]
pub struct PyKernelCache {
    inner: KernelCache<Handle>,
}

fn key(source_hash: String, options: String, arch: String, compiler_version: String) -> KernelKey {
    KernelKey { source_hash, options, arch, compiler_version }
}

#[pymethods]
impl PyKernelCache {
    #[new]
    #[pyo3(signature = (capacity_bytes=256 * 1024 * 1024, max_entries=4096))]
    fn new(capacity_bytes: i64, max_entries: i64) -> PyResult<Self> {
        let cap = u64::try_from(capacity_bytes).unwrap_or(0);
        let max = usize::try_from(max_entries).unwrap_or(0);
        let inner = KernelCache::new(cap, max).map_err(PyValueError::new_err)?;
        Ok(PyKernelCache { inner })
    }

    /// `(image_bytes, handle)` for the key, or None (counted as a miss).
    #[pyo3(signature = (source_hash, options=String::new(), arch=String::new(), compiler_version=String::new()))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        source_hash: String,
        options: String,
        arch: String,
        compiler_version: String,
    ) -> Option<(Bound<'py, PyBytes>, Py<PyAny>)> {
        let (image, handle) = self.inner.get(&key(source_hash, options, arch, compiler_version))?;
        let handle = handle.map_or_else(|| py.None(), |h| h.clone_ref(py));
        Some((PyBytes::new(py, &image), handle))
    }

    /// Insert or replace an image. Returns the handles of evicted entries (so their modules
    /// can be unloaded). `ValueError` if the image alone exceeds the capacity.
    #[allow(clippy::too_many_arguments)] // the Python signature: key parts are keywords
    #[pyo3(signature = (source_hash, image, *, options=String::new(), arch=String::new(), compiler_version=String::new(), handle=None))]
    fn put(
        &self,
        py: Python<'_>,
        source_hash: String,
        image: &Bound<'_, PyAny>,
        options: String,
        arch: String,
        compiler_version: String,
        handle: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let bytes = crate::memory::RawBuffer::get(image, false)?.as_slice().to_vec();
        let evicted = self
            .inner
            .put(key(source_hash, options, arch, compiler_version), bytes, handle.map(Arc::new))
            .map_err(PyValueError::new_err)?;
        Ok(evicted.into_iter().filter_map(|(_, h)| h.map(|h| h.clone_ref(py))).collect())
    }

    #[pyo3(signature = (source_hash, options=String::new(), arch=String::new(), compiler_version=String::new()))]
    fn contains(&self, source_hash: String, options: String, arch: String, compiler_version: String) -> bool {
        self.inner.contains(&key(source_hash, options, arch, compiler_version))
    }

    #[pyo3(signature = (source_hash, options=String::new(), arch=String::new(), compiler_version=String::new()))]
    fn remove(&self, source_hash: String, options: String, arch: String, compiler_version: String) -> bool {
        self.inner.remove(&key(source_hash, options, arch, compiler_version))
    }

    fn clear(&self) {
        self.inner.clear()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Source hashes from least to most recently used.
    fn lru_order(&self) -> Vec<String> {
        self.inner.keys_lru_first().into_iter().map(|k| k.source_hash).collect()
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("hits", s.hits)?;
        d.set_item("misses", s.misses)?;
        d.set_item("evictions", s.evictions)?;
        d.set_item("insertions", s.insertions)?;
        d.set_item("rejected", s.rejected)?;
        d.set_item("entries", s.entries)?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("capacity_bytes", self.inner.capacity_bytes())?;
        d.set_item("max_entries", self.inner.max_entries())?;
        Ok(d)
    }

    /// A stable 128-bit hash (32 hex digits) of kernel source, `str` or bytes-like.
    #[staticmethod]
    fn hash_source(source: &Bound<'_, PyAny>) -> PyResult<String> {
        if let Ok(s) = source.cast::<PyString>() {
            return Ok(hash_source(s.to_str()?.as_bytes()));
        }
        Ok(hash_source(crate::memory::RawBuffer::get(source, false)?.as_slice()))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLaunchGate>()?;
    m.add_class::<PyLaunchQueue>()?;
    m.add_class::<PyKernelCache>()?;
    Ok(())
}
