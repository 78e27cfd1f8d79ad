//! Python binding of the runtime's `StreamCopier`: stream-ordered host<->device copies
//! through pooled pinned staging (what the CUDA backend's upload and download call).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use pygpukit_runtime::scheduler::gate::current_task;
use pygpukit_runtime::transfer::{CopyError, CopyTuning, StreamCopier};

use crate::memory::{non_negative, pool_err, PyBlock, PyMemoryPool, RawBuffer};
use crate::scheduler::gate::{copy_timing_start, end_copy};
use crate::scheduler::TaskCancelled;
use crate::transfer::TransferError;

/// Run `copy` (without the GIL) through the scheduler's launch gate, as every kernel launch
/// does at the extension's native launch point: inside a task, wait for the grant first,
/// then charge the copy its device time (events around it on `stream`, as around a kernel;
/// host time where the extension does not measure); outside a task, one thread-local read.
fn gated(py: Python<'_>, ctx: usize, stream: u64, copy: impl FnOnce() -> Result<(), CopyError> + Send) -> PyResult<()> {
    let task = current_task();
    if let Some(t) = &task {
        let t2 = t.clone();
        if py.detach(move || t2.begin_launch()).is_err() {
            return Err(TaskCancelled::new_err(format!(
                "task {} ({:?}) was cancelled: its copy was not enqueued",
                t.id, t.name
            )));
        }
    }
    let pair = task.as_ref().and_then(|_| copy_timing_start(ctx, stream));
    let result = py.detach(copy);
    if let Some(t) = task {
        end_copy(&t, pair, stream);
    }
    result.map_err(|e| copy_err(py, e))
}

/// A device call failed: `TransferError` with `.call` (the table slot) and `.code` (the
/// device's error number) so the backend can name the driver call and its error.
fn copy_err(py: Python<'_>, e: CopyError) -> PyErr {
    match e {
        CopyError::Pool(p) => pool_err(p),
        CopyError::Device { call, code } => {
            let err = TransferError::new_err(format!("{call} failed with device error {code}"));
            let v = err.value(py);
            // Attributes on a fresh exception instance cannot fail.
            let _ = v.setattr("call", call);
            let _ = v.setattr("code", code);
            err
        }
    }
}

fn positive(v: Option<i64>, default: usize, what: &str) -> PyResult<usize> {
    match v {
        None => Ok(default),
        Some(n) if n > 0 => Ok(n as usize),
        Some(n) => Err(PyValueError::new_err(format!("{what} must be > 0, got {n}"))),
    }
}

/// Copies between host buffers and a pool's blocks, enqueued on a CUDA stream (an int
/// handle, 0 = the legacy default stream). Large copies go in chunks through pinned staging
/// with two buffers per host thread, so memcpy and DMA overlap; small ones go direct.
/// `upload` returns once the host buffer has been read; `download` once `out` is filled,
/// having waited only for that stream. The GIL is released while copying.
#[pyclass(name = "StreamCopier", module = "_pygpukit_rust", frozen)]
pub struct PyStreamCopier {
    inner: StreamCopier,
}

#[pymethods]
impl PyStreamCopier {
    /// `direct_below` sets both directions' thresholds (the `h2d_`/`d2h_` ones win).
    #[new]
    #[pyo3(signature = (pool, *, direct_below=None, h2d_direct_below=None, d2h_direct_below=None,
                        chunk_min=None, chunk_max=None, threads=None, bytes_per_thread=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        pool: &PyMemoryPool,
        direct_below: Option<i64>,
        h2d_direct_below: Option<i64>,
        d2h_direct_below: Option<i64>,
        chunk_min: Option<i64>,
        chunk_max: Option<i64>,
        threads: Option<i64>,
        bytes_per_thread: Option<i64>,
    ) -> PyResult<Self> {
        let d = CopyTuning::default();
        let bytes = |v: Option<i64>, default: usize, what: &str| -> PyResult<usize> {
            match v.or(direct_below) {
                Some(n) => Ok(non_negative(n, what)? as usize),
                None => Ok(default),
            }
        };
        let tuning = CopyTuning {
            h2d_direct_below: bytes(h2d_direct_below, d.h2d_direct_below, "h2d_direct_below")?,
            d2h_direct_below: bytes(d2h_direct_below, d.d2h_direct_below, "d2h_direct_below")?,
            chunk_min: positive(chunk_min, d.chunk_min, "chunk_min")?,
            chunk_max: positive(chunk_max, d.chunk_max, "chunk_max")?,
            threads: positive(threads, d.threads, "threads")?.min(64),
            bytes_per_thread: positive(bytes_per_thread, d.bytes_per_thread, "bytes_per_thread")?,
        };
        let inner = StreamCopier::new(pool.inner.clone(), tuning).map_err(PyValueError::new_err)?;
        Ok(PyStreamCopier { inner })
    }

    /// Copy the bytes of `data` (C-contiguous buffer) into `block` at `offset` on `stream`.
    #[pyo3(signature = (block, offset, data, stream=0))]
    fn upload(&self, py: Python<'_>, block: &PyBlock, offset: i64, data: &Bound<'_, PyAny>, stream: u64) -> PyResult<()> {
        let offset = non_negative(offset, "offset")?;
        let buf = RawBuffer::get(data, false)?;
        let (copier, block, src) = (&self.inner, &*block.inner, buf.as_slice());
        gated(py, self.inner.context_handle(), stream, || copier.upload(block, offset, src, stream))
    }

    /// Fill the writable C-contiguous buffer `out` from `block` at `offset`, after the work
    /// queued on `stream` before this call.
    #[pyo3(signature = (block, offset, out, stream=0))]
    fn download(&self, py: Python<'_>, block: &PyBlock, offset: i64, out: &Bound<'_, PyAny>, stream: u64) -> PyResult<()> {
        let offset = non_negative(offset, "offset")?;
        let buf = RawBuffer::get(out, true)?;
        // SAFETY: exported writable; the export lasts until `buf` drops, after the copy.
        let dst = unsafe { buf.as_mut_slice() };
        let (copier, block) = (&self.inner, &*block.inner);
        gated(py, self.inner.context_handle(), stream, || copier.download(block, offset, dst, stream))
    }

    /// `upload` to the device address `ptr`: a block of this copier's pool held by a native
    /// buffer (no `Block` object), the range checked by the caller.
    #[pyo3(signature = (ptr, data, stream=0))]
    fn upload_to(&self, py: Python<'_>, ptr: u64, data: &Bound<'_, PyAny>, stream: u64) -> PyResult<()> {
        let buf = RawBuffer::get(data, false)?;
        let (copier, src) = (&self.inner, buf.as_slice());
        gated(py, self.inner.context_handle(), stream, || copier.upload_to(ptr, src, stream))
    }

    /// `download` from the device address `ptr`, vouched for as in `upload_to`.
    #[pyo3(signature = (ptr, out, stream=0))]
    fn download_from(&self, py: Python<'_>, ptr: u64, out: &Bound<'_, PyAny>, stream: u64) -> PyResult<()> {
        let buf = RawBuffer::get(out, true)?;
        // SAFETY: exported writable; the export lasts until `buf` drops, after the copy.
        let dst = unsafe { buf.as_mut_slice() };
        let copier = &self.inner;
        gated(py, self.inner.context_handle(), stream, || copier.download_from(ptr, dst, stream))
    }

    /// Release the staging of uploads whose copies finished; how many are still in flight.
    fn reap(&self) -> usize {
        self.inner.reap()
    }

    /// Wait for the uploads still in flight (their events only) and release their staging.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let copier = &self.inner;
        py.detach(|| copier.synchronize()).map_err(|e| copy_err(py, e))
    }

    /// `synchronize`, then free the cached pinned staging; returns the bytes freed.
    fn trim(&self, py: Python<'_>) -> u64 {
        let copier = &self.inner;
        py.detach(|| copier.trim())
    }

    #[getter]
    fn pool(&self) -> PyMemoryPool {
        PyMemoryPool { inner: self.inner.pool().clone() }
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let t = self.inner.tuning();
        let d = PyDict::new(py);
        d.set_item("uploads", s.uploads)?;
        d.set_item("downloads", s.downloads)?;
        d.set_item("bytes_to_device", s.bytes_to_device)?;
        d.set_item("bytes_to_host", s.bytes_to_host)?;
        d.set_item("direct_copies", s.direct_copies)?;
        d.set_item("staged_chunks", s.staged_chunks)?;
        d.set_item("inflight", s.inflight)?;
        d.set_item("pinned_staging", s.pinned_staging)?;
        d.set_item("staging_allocs", s.staging.allocs)?;
        d.set_item("staging_reuses", s.staging.reuses)?;
        d.set_item("staging_cached_bytes", s.staging.cached_bytes)?;
        d.set_item("h2d_direct_below", t.h2d_direct_below)?;
        d.set_item("d2h_direct_below", t.d2h_direct_below)?;
        d.set_item("bytes_per_thread", t.bytes_per_thread)?;
        d.set_item("chunk_min", t.chunk_min)?;
        d.set_item("chunk_max", t.chunk_max)?;
        d.set_item("threads", t.threads)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let t = self.inner.tuning();
        format!(
            "StreamCopier(device={:?}, h2d_direct_below={}, d2h_direct_below={}, chunk_max={}, threads={})",
            self.inner.pool().device(),
            t.h2d_direct_below,
            t.d2h_direct_below,
            t.chunk_max,
            t.threads
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStreamCopier>()
}
