//! Python bindings of the runtime's `memory` part: `MemoryPool`, `Block` and the pool registry.

use std::ffi::{c_int, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use pyo3::exceptions::{PyBufferError, PyKeyError, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use pygpukit_runtime::memory::{
    self, host_allocator_table, Block, DeviceAllocator, DeviceAllocatorTable, MemoryPool,
    PoolConfig, PoolError, ALLOCATOR_CAPSULE_NAME,
};

const CAPSULE_NAME: &CStr = c"pygpukit.device_allocator_v1";

/// The Python exception for a pool error: `MemoryError` for every shortage.
pub(crate) fn pool_err(e: PoolError) -> PyErr {
    let msg = e.to_string();
    match e {
        PoolError::OutOfMemory { .. }
        | PoolError::ChargeRefused(_)
        | PoolError::HostOutOfMemory(_) => PyMemoryError::new_err(msg),
        PoolError::InvalidSize(_) | PoolError::Freed | PoolError::WrongPool => {
            PyValueError::new_err(msg)
        }
        PoolError::Pinned => PyBufferError::new_err(msg),
        PoolError::Device(_) => PyRuntimeError::new_err(msg),
    }
}

/// A non-negative byte count from a Python int; `ValueError` when negative or huge.
pub(crate) fn byte_count(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    match obj.extract::<i64>() {
        Ok(n) if n >= 0 => Ok(n as u64),
        Ok(n) => Err(PyValueError::new_err(format!("{what} must be >= 0, got {n}"))),
        Err(e) if obj.is_instance_of::<pyo3::types::PyInt>() => {
            Err(PyValueError::new_err(format!("{what} is too large: {e}")))
        }
        Err(e) => Err(e),
    }
}

/// `n` as a byte offset; `ValueError` when negative.
pub(crate) fn non_negative(n: i64, what: &str) -> PyResult<u64> {
    u64::try_from(n).map_err(|_| PyValueError::new_err(format!("{what} must be >= 0, got {n}")))
}

/// A C-contiguous buffer export of any Python object, released (with the GIL) on drop.
pub(crate) struct RawBuffer {
    view: Box<ffi::Py_buffer>,
}

// The exporter keeps the memory alive until release; the pointer itself may cross threads.
unsafe impl Send for RawBuffer {}
unsafe impl Sync for RawBuffer {}

impl RawBuffer {
    pub(crate) fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        let mut view = Box::new(ffi::Py_buffer::new());
        let flags = if writable { ffi::PyBUF_WRITABLE } else { ffi::PyBUF_SIMPLE };
        // SAFETY: `view` is a valid, writable Py_buffer; we hold the GIL.
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(RawBuffer { view })
    }

    pub(crate) fn len(&self) -> usize {
        self.view.len as usize
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len() == 0 {
            return &[];
        }
        // SAFETY: a successful PyBUF_SIMPLE export is `len` contiguous bytes at `buf`.
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.len()) }
    }

    /// # Safety
    /// The buffer must have been exported writable, and nothing else may write it meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn as_mut_slice(&self) -> &mut [u8] {
        if self.len() == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.view.buf as *mut u8, self.len())
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        // SAFETY: the view came from a successful PyObject_GetBuffer and is released once.
        Python::attach(|_| unsafe { ffi::PyBuffer_Release(&mut *self.view) });
    }
}

/// `Send` wrapper so the Rust host table can live inside a capsule.
#[repr(transparent)]
struct TableInCapsule(DeviceAllocatorTable);
unsafe impl Send for TableInCapsule {}

fn config(quota: Option<&Bound<'_, PyAny>>, enable_eviction: bool) -> PyResult<PoolConfig> {
    let quota = match quota {
        Some(q) if !q.is_none() => Some(byte_count(q, "quota")?),
        _ => None,
    };
    if quota == Some(0) {
        return Err(PyValueError::new_err("quota must be positive (or None for no quota)"));
    }
    Ok(PoolConfig { quota, enable_eviction, keep_cache: false })
}

/// A per-device memory pool. Without arguments it serves the CPU device from Rust host memory.
#[pyclass(name = "MemoryPool", module = "_pygpukit_rust", frozen)]
pub struct PyMemoryPool {
    pub(crate) inner: Arc<MemoryPool>,
}

#[pymethods]
impl PyMemoryPool {
    #[new]
    #[pyo3(signature = (quota=None, enable_eviction=false))]
    fn new(quota: Option<&Bound<'_, PyAny>>, enable_eviction: bool) -> PyResult<Self> {
        Ok(PyMemoryPool { inner: MemoryPool::for_host(config(quota, enable_eviction)?) })
    }

    /// A pool for the CPU device (same as the constructor).
    #[classmethod]
    #[pyo3(signature = (quota=None, enable_eviction=false))]
    fn for_host(
        _cls: &Bound<'_, pyo3::types::PyType>,
        quota: Option<&Bound<'_, PyAny>>,
        enable_eviction: bool,
    ) -> PyResult<Self> {
        Self::new(quota, enable_eviction)
    }

    /// A pool over a device's allocator table, passed in a capsule named
    /// "pygpukit.device_allocator_v1". The capsule is kept alive as long as the pool.
    #[classmethod]
    /// `keep_cache=True` makes a CUDA graph's private pool: its cached blocks are never given
    /// back on out-of-memory (captured work replays into them).
    #[pyo3(signature = (capsule, quota=None, enable_eviction=false, device="cuda:0", keep_cache=false))]
    fn from_capsule(
        _cls: &Bound<'_, pyo3::types::PyType>,
        capsule: &Bound<'_, PyAny>,
        quota: Option<&Bound<'_, PyAny>>,
        enable_eviction: bool,
        device: &str,
        keep_cache: bool,
    ) -> PyResult<Self> {
        let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
            PyValueError::new_err(format!("expected a capsule named {ALLOCATOR_CAPSULE_NAME:?}"))
        })?;
        let ptr = capsule
            .pointer_checked(Some(CAPSULE_NAME))
            .map_err(|e| PyValueError::new_err(format!("not a device allocator capsule: {e}")))?;
        let table = read_table(ptr.as_ptr())?;
        let keepalive: Box<dyn std::any::Any + Send + Sync> = Box::new(capsule.clone().unbind());
        let alloc = DeviceAllocator::new(table, Some(keepalive)).map_err(PyValueError::new_err)?;
        let mut cfg = config(quota, enable_eviction)?;
        cfg.keep_cache = keep_cache;
        let pool = MemoryPool::new(alloc, device, cfg);
        Ok(PyMemoryPool { inner: pool })
    }

    #[getter]
    fn device(&self) -> &str {
        self.inner.device()
    }

    #[getter]
    fn quota(&self) -> Option<u64> {
        self.inner.config().quota
    }

    #[getter]
    fn enable_eviction(&self) -> bool {
        self.inner.config().enable_eviction
    }

    /// Whether block pointers are CPU pointers (blocks then export the buffer protocol).
    #[getter]
    fn is_host(&self) -> bool {
        self.inner.is_host()
    }

    /// Allocate `nbytes` (> 0) for work on `stream` (a CUstream handle; 0 for the default
    /// stream): the block returns to that stream's cache when freed. `MemoryError` states
    /// requested, in use, cached and quota bytes.
    #[pyo3(signature = (nbytes, stream=0))]
    fn allocate(&self, py: Python<'_>, nbytes: &Bound<'_, PyAny>, stream: u64) -> PyResult<PyBlock> {
        let n = byte_count(nbytes, "nbytes")?;
        let pool = self.inner.clone();
        // A cache hit on an uncontended lock cannot wait: keep the GIL and skip the handoff.
        if let Some(block) = pool.allocate_nowait(n, stream) {
            return Ok(PyBlock { inner: Arc::new(block) });
        }
        let block = py.detach(|| pool.allocate_on(n, stream)).map_err(pool_err)?;
        Ok(PyBlock { inner: Arc::new(block) })
    }

    /// Evict `block` to host memory now; False if it already was.
    fn evict(&self, py: Python<'_>, block: &PyBlock) -> PyResult<bool> {
        let (pool, b) = (&self.inner, &block.inner);
        py.detach(|| pool.evict(b)).map_err(pool_err)
    }

    /// Evict least-recently-used blocks until `nbytes` went to the cache; returns bytes evicted.
    fn evict_lru(&self, py: Python<'_>, nbytes: &Bound<'_, PyAny>) -> PyResult<u64> {
        let n = byte_count(nbytes, "nbytes")?;
        let pool = &self.inner;
        py.detach(|| pool.evict_lru(n)).map_err(pool_err)
    }

    /// Mark `block` as just used (last in the eviction order).
    fn touch(&self, block: &PyBlock) -> PyResult<()> {
        self.inner.touch(&block.inner).map_err(pool_err)
    }

    /// Copy a bytes-like object into `block` at `offset` with the device's host-to-device copy.
    #[pyo3(signature = (block, data, offset=0))]
    fn copy_from_host(
        &self,
        py: Python<'_>,
        block: &PyBlock,
        data: &Bound<'_, PyAny>,
        offset: i64,
    ) -> PyResult<()> {
        let offset = non_negative(offset, "offset")?;
        let buf = RawBuffer::get(data, false)?;
        let (pool, b, src) = (&self.inner, &block.inner, buf.as_slice());
        py.detach(|| pool.write(b, offset, src)).map_err(pool_err)
    }

    /// Fill a writable buffer from `block` at `offset` with the device-to-host copy.
    #[pyo3(signature = (block, out, offset=0))]
    fn copy_to_host(
        &self,
        py: Python<'_>,
        block: &PyBlock,
        out: &Bound<'_, PyAny>,
        offset: i64,
    ) -> PyResult<()> {
        let offset = non_negative(offset, "offset")?;
        let buf = RawBuffer::get(out, true)?;
        // SAFETY: exported writable; the exporter forbids resizing while exported.
        let dst = unsafe { buf.as_mut_slice() };
        let (pool, b) = (&self.inner, &block.inner);
        py.detach(|| pool.read(b, offset, dst)).map_err(pool_err)
    }

    /// Copy `nbytes` between two blocks of this pool on the device.
    #[pyo3(signature = (dst, src, nbytes, dst_offset=0, src_offset=0))]
    fn copy_device(
        &self,
        py: Python<'_>,
        dst: &PyBlock,
        src: &PyBlock,
        nbytes: &Bound<'_, PyAny>,
        dst_offset: i64,
        src_offset: i64,
    ) -> PyResult<()> {
        let n = byte_count(nbytes, "nbytes")?;
        let d_off = non_negative(dst_offset, "dst_offset")?;
        let s_off = non_negative(src_offset, "src_offset")?;
        let (pool, d, s) = (&self.inner, &dst.inner, &src.inner);
        py.detach(|| pool.copy_device(d, s, n, d_off, s_off)).map_err(pool_err)
    }

    /// A dict of byte figures and counters (see the README for each key).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("used", s.used)?;
        d.set_item("cached", s.cached)?;
        d.set_item("reserved", s.reserved)?;
        d.set_item("peak", s.peak)?;
        d.set_item("quota", s.quota)?;
        d.set_item("evicted_bytes", s.evicted_bytes)?;
        d.set_item("fragmentation", s.fragmentation)?;
        d.set_item("segments", s.segments)?;
        d.set_item("blocks", s.blocks)?;
        d.set_item("evicted_blocks", s.evicted_blocks)?;
        d.set_item("allocations", s.allocations)?;
        d.set_item("reuses", s.reuses)?;
        d.set_item("evictions", s.evictions)?;
        d.set_item("restores", s.restores)?;
        d.set_item("device_allocs", s.device_allocs)?;
        d.set_item("device_frees", s.device_frees)?;
        Ok(d)
    }

    /// A capsule named "pygpukit.pool_fast_v2" holding C functions that allocate from this
    /// pool (from a stream's cache without waiting, or with the whole pool's path) and free
    /// such blocks: the CUDA extension's buffer allocator calls them, so a new array's memory
    /// costs no Python object but its own. Refused for a pool with eviction (its blocks'
    /// pointers can move).
    fn fast_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        if self.inner.config().enable_eviction {
            return Err(PyValueError::new_err(
                "a pool with eviction has no fast table: its block pointers can move",
            ));
        }
        let pool = Box::new(self.inner.clone());
        let table = PoolFastTableV2 {
            abi_version: 2,
            struct_size: std::mem::size_of::<PoolFastTableV2>() as u32,
            pool: &*pool as *const Arc<MemoryPool> as *const c_void,
            allocate_cached: fast_allocate_cached,
            allocate: fast_allocate,
            free: fast_free,
        };
        let contents = FastTableInCapsule { table, _pool: pool };
        PyCapsule::new(py, contents, Some(FAST_CAPSULE_NAME.to_owned()))
    }

    /// Return every cached byte to the device; returns how many.
    fn free_all_cached(&self, py: Python<'_>) -> u64 {
        let pool = &self.inner;
        py.detach(|| pool.free_all_cached())
    }

    fn reset_peak(&self) {
        self.inner.reset_peak()
    }

    /// Verify the pool's internal bookkeeping (for tests); raises `RuntimeError` if broken.
    fn check_invariants(&self) -> PyResult<()> {
        self.inner.check_invariants().map_err(PyRuntimeError::new_err)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyMemoryPool>().is_ok_and(|o| Arc::ptr_eq(&self.inner, &o.get().inner))
    }

    fn __hash__(&self) -> u64 {
        Arc::as_ptr(&self.inner) as u64
    }

    fn __repr__(&self) -> String {
        let s = self.inner.stats();
        format!(
            "MemoryPool(device={:?}, quota={:?}, used={}, cached={})",
            self.inner.device(),
            s.quota,
            s.used,
            s.cached
        )
    }
}

const FAST_CAPSULE_NAME: &CStr = c"pygpukit.pool_fast_v2";

/// What `MemoryPool.fast_table` hands C code (C layout; the header first, as in the device
/// allocator table).
/// - `allocate_cached(pool, nbytes, stream, &ptr)`: an owned block handle from `stream`'s
///   cache, or null when the cache cannot serve the request without waiting;
/// - `allocate(pool, nbytes, stream, &ptr, message, message_len)`: the pool's whole path
///   (fresh device memory, the OOM ladder, task charging); null on failure, with the
///   reason written to `message` (NUL-terminated, truncated to fit);
/// - `free(handle)` gives a block back to its stream's cache.
#[repr(C)]
struct PoolFastTableV2 {
    abi_version: u32,
    struct_size: u32,
    pool: *const c_void,
    allocate_cached: unsafe extern "C" fn(*const c_void, u64, u64, *mut u64) -> *mut c_void,
    allocate: unsafe extern "C" fn(*const c_void, u64, u64, *mut u64, *mut u8, usize) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
}

/// The capsule's contents: the table first (C code reads it at the capsule's pointer), then
/// the pool reference the table's `pool` points into.
#[repr(C)]
struct FastTableInCapsule {
    table: PoolFastTableV2,
    #[allow(clippy::redundant_allocation)] // the table points at the Arc: its address must stay
    _pool: Box<Arc<MemoryPool>>,
}

// The raw pointers point into `_pool`, which moves with the value.
unsafe impl Send for FastTableInCapsule {}

/// # Safety
/// `pool` is a fast table's `pool`, and its capsule is alive; `ptr` is writable.
unsafe extern "C" fn fast_allocate_cached(
    pool: *const c_void,
    nbytes: u64,
    stream: u64,
    ptr: *mut u64,
) -> *mut c_void {
    let pool = &*(pool as *const Arc<MemoryPool>);
    let got = std::panic::catch_unwind(AssertUnwindSafe(|| pool.allocate_cached(nbytes, stream)));
    match got {
        Ok(Some((block, p))) => {
            *ptr = p;
            Box::into_raw(Box::new(block)) as *mut c_void
        }
        _ => std::ptr::null_mut(),
    }
}

/// # Safety
/// As `fast_allocate_cached`; `message` holds `message_len` writable bytes (or is null).
/// Called with the GIL held: nothing the pool does under its lock needs the GIL, so the
/// wait for the lock cannot deadlock.
unsafe extern "C" fn fast_allocate(
    pool: *const c_void,
    nbytes: u64,
    stream: u64,
    ptr: *mut u64,
    message: *mut u8,
    message_len: usize,
) -> *mut c_void {
    let pool = &*(pool as *const Arc<MemoryPool>);
    let got = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let block = pool.allocate_on(nbytes, stream)?;
        let p = block.ptr()?;
        Ok::<_, PoolError>((block, p))
    }));
    let text = match got {
        Ok(Ok((block, p))) => {
            *ptr = p;
            return Box::into_raw(Box::new(block)) as *mut c_void;
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => "the memory pool panicked".to_string(),
    };
    if !message.is_null() && message_len > 0 {
        let n = text.len().min(message_len - 1);
        std::ptr::copy_nonoverlapping(text.as_ptr(), message, n);
        *message.add(n) = 0;
    }
    std::ptr::null_mut()
}

/// # Safety
/// `block` came from `fast_allocate` and is freed once.
unsafe extern "C" fn fast_free(block: *mut c_void) {
    if !block.is_null() {
        let block = Box::from_raw(block as *mut Block);
        let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(block)));
    }
}

/// Read a table from C memory, checking its header before trusting its size.
fn read_table(ptr: *mut c_void) -> PyResult<DeviceAllocatorTable> {
    // SAFETY: the capsule's name promises a pygpukit_device_allocator_v1; the header
    // (abi_version, struct_size) is read first so a shorter struct is never over-read.
    let struct_size = unsafe { (ptr as *const u32).add(1).read_unaligned() } as usize;
    if struct_size < std::mem::size_of::<DeviceAllocatorTable>() {
        return Err(PyValueError::new_err(format!(
            "device allocator table is {struct_size} bytes, expected at least {}",
            std::mem::size_of::<DeviceAllocatorTable>()
        )));
    }
    Ok(unsafe { (ptr as *const DeviceAllocatorTable).read_unaligned() })
}

/// One allocation. `ptr` is read fresh each time (it may change after eviction and restore).
/// Host blocks support the buffer protocol; an export pins the block in device memory.
#[pyclass(name = "Block", module = "_pygpukit_rust", frozen)]
pub struct PyBlock {
    pub(crate) inner: Arc<Block>,
}

#[pymethods]
impl PyBlock {
    /// The current device pointer; restores the block first if it was evicted.
    #[getter]
    fn ptr(&self, py: Python<'_>) -> PyResult<u64> {
        let b = &self.inner;
        // Resident, pool lock free: nothing can wait, so keep the GIL (the launch hot path).
        if let Some(found) = b.ptr_nowait() {
            return found.map_err(pool_err);
        }
        py.detach(|| b.ptr()).map_err(pool_err)
    }

    /// Bytes requested.
    #[getter]
    fn nbytes(&self) -> u64 {
        self.inner.nbytes()
    }

    /// Bytes reserved (the size class, or the rounded large size).
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }

    #[getter]
    fn id(&self) -> u64 {
        self.inner.id()
    }

    #[getter]
    fn evicted(&self) -> PyResult<bool> {
        self.inner.is_evicted().map_err(pool_err)
    }

    #[getter]
    fn freed(&self) -> bool {
        self.inner.is_freed()
    }

    #[getter]
    fn pool(&self) -> PyMemoryPool {
        PyMemoryPool { inner: self.inner.pool().clone() }
    }

    /// Return the block to its pool now (idempotent). `BufferError` while a buffer is exported.
    fn free(&self, py: Python<'_>) -> PyResult<()> {
        let b = &self.inner;
        if let Some(r) = b.free_nowait() {
            return r.map_err(pool_err);
        }
        py.detach(|| b.free()).map_err(pool_err)
    }

    fn __len__(&self) -> usize {
        self.inner.nbytes() as usize
    }

    fn __repr__(&self) -> String {
        format!(
            "Block(id={}, nbytes={}, capacity={}, device={:?}{})",
            self.inner.id(),
            self.inner.nbytes(),
            self.inner.capacity(),
            self.inner.pool().device(),
            if self.inner.is_freed() { ", freed" } else { "" }
        )
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("null view"));
        }
        let block = &slf.get().inner;
        if !block.pool().is_host() {
            return Err(PyBufferError::new_err(format!(
                "blocks of {} are not host memory; copy them with copy_to_host",
                block.pool().device()
            )));
        }
        // Pinned until __releasebuffer__: the memory may not move while Python can see it.
        let ptr = block.pool().pin(block).map_err(pool_err)?;
        let v = &mut *view;
        v.obj = slf.clone().into_any().into_ptr(); // keeps the block alive while exported
        v.buf = ptr as *mut c_void;
        v.len = block.nbytes() as ffi::Py_ssize_t;
        v.readonly = 0;
        v.itemsize = 1;
        v.format = if flags & ffi::PyBUF_FORMAT != 0 { c"B".as_ptr() as *mut _ } else { std::ptr::null_mut() };
        v.ndim = 1;
        v.shape = if flags & ffi::PyBUF_ND != 0 { &mut v.len } else { std::ptr::null_mut() };
        v.strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            &mut v.itemsize
        } else {
            std::ptr::null_mut()
        };
        v.suboffsets = std::ptr::null_mut();
        v.internal = std::ptr::null_mut();
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {
        self.inner.pool().unpin(&self.inner);
    }
}

/// The pool of a device: "cpu" is created on first use; others must be registered.
#[pyfunction]
fn device_pool(name: &str) -> PyResult<PyMemoryPool> {
    memory::device_pool(name)
        .map(|inner| PyMemoryPool { inner })
        .ok_or_else(|| PyKeyError::new_err(format!("no memory pool registered for device {name:?}")))
}

/// Make `pool` the one pool of device `name`.
#[pyfunction]
fn register_device_pool(name: &str, pool: &PyMemoryPool) {
    memory::register_device_pool(name, pool.inner.clone());
}

/// Names of the devices with a registered pool.
#[pyfunction]
fn registered_devices() -> Vec<String> {
    memory::registered_devices()
}

/// A capsule holding the CPU device's allocator table (the Rust host allocator).
#[pyfunction]
fn host_allocator_capsule(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    PyCapsule::new(py, TableInCapsule(host_allocator_table()), Some(CAPSULE_NAME.to_owned()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMemoryPool>()?;
    m.add_class::<PyBlock>()?;
    m.add_function(wrap_pyfunction!(device_pool, m)?)?;
    m.add_function(wrap_pyfunction!(register_device_pool, m)?)?;
    m.add_function(wrap_pyfunction!(registered_devices, m)?)?;
    m.add_function(wrap_pyfunction!(host_allocator_capsule, m)?)?;
    m.add("DEVICE_ALLOCATOR_CAPSULE_NAME", ALLOCATOR_CAPSULE_NAME)?;
    m.add("POOL_FAST_CAPSULE_NAME", FAST_CAPSULE_NAME.to_str().unwrap_or_default())?;
    m.add("POOL_FAST_TABLE_SIZE", std::mem::size_of::<PoolFastTableV2>())?;
    m.add("DEVICE_ALLOCATOR_TABLE_SIZE", std::mem::size_of::<DeviceAllocatorTable>())?;
    Ok(())
}
