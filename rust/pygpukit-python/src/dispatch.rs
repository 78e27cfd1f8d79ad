//! Python bindings of the runtime's `dispatch` part: `KernelCache`.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use pygpukit_runtime::dispatch::{hash_source, KernelCache, KernelKey};

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
    m.add_class::<PyKernelCache>()?;
    Ok(())
}
