//! Python bindings of the runtime's `transfer` part: `TransferEngine` and `TransferHandle`.

use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use pygpukit_runtime::transfer::{HostSink, Status, TransferEngine, TransferHandle};

use crate::memory::{pool_err, non_negative, PyBlock, PyMemoryPool, RawBuffer};

create_exception!(_pygpukit_rust, TransferError, PyRuntimeError, "A queued copy failed.");

/// Delivers device-to-host bytes into a writable Python buffer held for the job's lifetime.
struct BufferSink(RawBuffer);

impl HostSink for BufferSink {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn write(&mut self, data: &[u8]) {
        // SAFETY: exported writable; the job owns the export until it is dropped.
        unsafe { self.0.as_mut_slice() }.copy_from_slice(data);
    }
}

fn timeout_arg(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_finite() && t >= 0.0 => Ok(Some(Duration::from_secs_f64(t.min(1e9)))),
        Some(t) => Err(PyValueError::new_err(format!("timeout must be >= 0, got {t}"))),
    }
}

/// Queues host<->device copies for one pool; a Rust worker runs them by priority
/// (higher first, FIFO among equals) through the pool's device copy functions.
#[pyclass(name = "TransferEngine", module = "_pygpukit_rust", frozen)]
pub struct PyTransferEngine {
    inner: TransferEngine,
}

#[pymethods]
impl PyTransferEngine {
    #[new]
    #[pyo3(signature = (pool, paused=false))]
    fn new(pool: &PyMemoryPool, paused: bool) -> PyResult<Self> {
        let inner = TransferEngine::new(pool.inner.clone(), paused)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the transfer worker: {e}")))?;
        Ok(PyTransferEngine { inner })
    }

    /// Queue a copy of a bytes-like `data` into `block` at `offset`. `data` is staged before
    /// this returns, so it may be reused at once.
    #[pyo3(signature = (block, data, priority=0, offset=0))]
    fn copy_to_device(
        &self,
        block: &PyBlock,
        data: &Bound<'_, PyAny>,
        priority: i32,
        offset: i64,
    ) -> PyResult<PyTransferHandle> {
        let offset = non_negative(offset, "offset")?;
        let buf = RawBuffer::get(data, false)?;
        let h = self
            .inner
            .copy_to_device(block.inner.clone(), buf.as_slice(), offset, priority)
            .map_err(pool_err)?;
        Ok(PyTransferHandle { inner: h })
    }

    /// Queue a copy of `len(out)` bytes of `block` at `offset` into the writable buffer `out`.
    /// `out` stays exported (cannot be resized) until the copy finished.
    #[pyo3(signature = (block, out, priority=0, offset=0))]
    fn copy_to_host(
        &self,
        block: &PyBlock,
        out: &Bound<'_, PyAny>,
        priority: i32,
        offset: i64,
    ) -> PyResult<PyTransferHandle> {
        let offset = non_negative(offset, "offset")?;
        let sink = Box::new(BufferSink(RawBuffer::get(out, true)?));
        let h = self
            .inner
            .copy_to_host(block.inner.clone(), sink, offset, priority)
            .map_err(pool_err)?;
        Ok(PyTransferHandle { inner: h })
    }

    /// Stop starting queued copies until `resume()`.
    fn pause(&self) {
        self.inner.pause()
    }

    fn resume(&self) {
        self.inner.resume()
    }

    /// Wait (GIL released) until nothing is queued or running; False on timeout.
    #[pyo3(signature = (timeout=None))]
    fn synchronize(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let t = timeout_arg(timeout)?;
        let engine = &self.inner;
        Ok(py.detach(|| engine.synchronize(t)))
    }

    /// Copies queued and not yet started.
    #[getter]
    fn pending(&self) -> u64 {
        self.inner.pending()
    }

    #[getter]
    fn pool(&self) -> PyMemoryPool {
        PyMemoryPool { inner: self.inner.pool().clone() }
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("submitted", s.submitted)?;
        d.set_item("completed", s.completed)?;
        d.set_item("failed", s.failed)?;
        d.set_item("queued", s.queued)?;
        d.set_item("bytes_to_device", s.bytes_to_device)?;
        d.set_item("bytes_to_host", s.bytes_to_host)?;
        d.set_item("async_copies", s.async_copies)?;
        d.set_item("staging_allocs", s.staging.allocs)?;
        d.set_item("staging_reuses", s.staging.reuses)?;
        d.set_item("staging_cached_bytes", s.staging.cached_bytes)?;
        Ok(d)
    }
}

/// One queued copy. `wait()` blocks without the GIL and raises `TransferError` on failure.
#[pyclass(name = "TransferHandle", module = "_pygpukit_rust", frozen)]
pub struct PyTransferHandle {
    inner: TransferHandle,
}

#[pymethods]
impl PyTransferHandle {
    /// True when done, False if `timeout` seconds passed first.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let t = timeout_arg(timeout)?;
        let h = &self.inner;
        py.detach(|| h.wait(t)).map_err(TransferError::new_err)
    }

    /// Finished (successfully or not).
    fn done(&self) -> bool {
        self.inner.done()
    }

    /// Nanoseconds the copy ran once started; None until it succeeded.
    #[getter]
    fn elapsed_ns(&self) -> Option<u64> {
        self.inner.elapsed_ns()
    }

    /// Position in the engine's completion order (0 = first finished); None until finished.
    #[getter]
    fn order(&self) -> Option<u64> {
        self.inner.completion_order()
    }

    /// Submission sequence number.
    #[getter]
    fn seq(&self) -> u64 {
        self.inner.seq
    }

    #[getter]
    fn priority(&self) -> i32 {
        self.inner.priority
    }

    #[getter]
    fn nbytes(&self) -> u64 {
        self.inner.nbytes
    }

    /// "queued", "running", "done" or "failed".
    #[getter]
    fn status(&self) -> &'static str {
        match self.inner.status() {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Done { .. } => "done",
            Status::Failed { .. } => "failed",
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "TransferHandle(seq={}, priority={}, nbytes={}, status={})",
            self.inner.seq,
            self.inner.priority,
            self.inner.nbytes,
            self.status()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTransferEngine>()?;
    m.add_class::<PyTransferHandle>()?;
    m.add("TransferError", m.py().get_type::<TransferError>())?;
    crate::copier::register(m)?;
    Ok(())
}
