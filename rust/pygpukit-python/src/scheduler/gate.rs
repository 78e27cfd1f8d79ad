//! The launch gate for the op dispatcher, and helpers for code running inside a task.
//!
//! Usage around each kernel launch (costs one thread-local read when no task runs here):
//!
//! ```python
//! token = rust.task_launch_begin()   # None outside a task; else blocks, GIL released, until
//! try:                                # the task's token bucket and the fair-share arbiter
//!     launch_kernel(...)              # grant it the device; raises TaskCancelled if cancelled
//! finally:
//!     rust.task_launch_end(token)     # busy time measured since the grant, or pass busy_ns
//! ```

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use pygpukit_runtime::scheduler::gate::current_task;
use pygpukit_runtime::scheduler::gpu_time::{DeviceEvents, EventPair, Poll};
use pygpukit_runtime::scheduler::Task;

use super::{extract_size, TaskCancelled};

/// Proof that the current task holds the device for one launch. Ending it (or dropping it)
/// gives the device back.
#[pyclass(module = "_pygpukit_rust", frozen)]
pub struct LaunchToken {
    task: Arc<Task>,
    ended: AtomicBool,
}

#[pymethods]
impl LaunchToken {
    #[getter]
    fn task_id(&self) -> u64 {
        self.task.id
    }

    #[getter]
    fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }
}

impl Drop for LaunchToken {
    fn drop(&mut self) {
        // A token lost to an exception must not keep the device.
        if !self.ended.swap(true, Ordering::AcqRel) {
            self.task.end_launch(None);
        }
    }
}

/// `task_launch_begin() -> LaunchToken | None`: gate a kernel launch of the current task.
#[pyfunction]
fn task_launch_begin(py: Python<'_>) -> PyResult<Option<LaunchToken>> {
    let Some(task) = current_task() else { return Ok(None) };
    // the GIL is kept when the grant is immediate (see Task::try_begin_launch)
    let gated = match task.try_begin_launch() {
        Some(done) => done,
        None => {
            let t = task.clone();
            py.detach(move || t.begin_launch())
        }
    };
    match gated {
        Ok(()) => Ok(Some(LaunchToken { task, ended: AtomicBool::new(false) })),
        Err(_) => Err(TaskCancelled::new_err(format!("task {} ({:?}) was cancelled", task.id, task.name))),
    }
}

/// `task_launch_end(token, busy_ns=None) -> int`: end the launch; returns the busy ns charged.
/// `token=None` (no task) is a no-op returning 0; ending a token twice is a ValueError.
#[pyfunction]
#[pyo3(signature = (token, busy_ns=None))]
fn task_launch_end(token: Option<&LaunchToken>, busy_ns: Option<u64>) -> PyResult<u64> {
    let Some(token) = token else { return Ok(0) };
    if token.ended.swap(true, Ordering::AcqRel) {
        return Err(PyValueError::new_err("this launch token has already been ended"));
    }
    Ok(token.task.end_launch(busy_ns))
}

/// Id of the scheduler task running on this thread, or None.
#[pyfunction]
fn current_task_id() -> Option<u64> {
    current_task().map(|t| t.id)
}

/// QoS class of the scheduler task running on this thread ("guaranteed", "burstable" or
/// "best_effort"), or None outside a task.
#[pyfunction]
fn current_task_policy() -> Option<&'static str> {
    current_task().map(|t| t.spec.class.as_str())
}

/// `task_yield(max_s=0.002) -> bool`: between slices of a best-effort or burstable task's
/// work, wait (GIL released, at most `max_s`) while a guaranteed task's newest launch on
/// the same SMs is still on the device; whether it waited. False outside a task or in a
/// guaranteed one; TaskCancelled once the task is cancelled.
#[pyfunction]
#[pyo3(signature = (max_s=0.002))]
fn task_yield(py: Python<'_>, max_s: f64) -> PyResult<bool> {
    if !max_s.is_finite() || max_s < 0.0 {
        return Err(PyValueError::new_err(format!("max_s must be finite and >= 0, got {max_s}")));
    }
    let Some(task) = current_task() else { return Ok(false) };
    let t = task.clone();
    match py.detach(move || t.yield_to_urgent((max_s * 1e9) as u64)) {
        Ok(waited) => Ok(waited),
        Err(_) => Err(TaskCancelled::new_err(format!("task {} ({:?}) was cancelled", task.id, task.name))),
    }
}

/// Whether the current task has been asked to cancel (False outside a task).
#[pyfunction]
fn task_cancel_requested() -> bool {
    current_task().is_some_and(|t| t.is_cancel_requested())
}

/// Charge `nbytes` to the current task (for allocators outside the Rust pool); MemoryError past
/// its limit or when no memory is free to burst into. No-op outside a task.
#[pyfunction]
fn task_memory_charge(nbytes: &Bound<'_, PyAny>) -> PyResult<()> {
    let bytes = extract_size(nbytes, "nbytes")?;
    match current_task() {
        Some(t) => t.charge_memory(bytes).map_err(PyMemoryError::new_err),
        None => Ok(()),
    }
}

/// Give back `nbytes` charged with `task_memory_charge`. No-op outside a task.
#[pyfunction]
fn task_memory_release(nbytes: &Bound<'_, PyAny>) -> PyResult<()> {
    let bytes = extract_size(nbytes, "nbytes")?;
    if let Some(t) = current_task() {
        t.release_memory(bytes);
    }
    Ok(())
}

/// Busy-wait `ns` nanoseconds with the GIL released: simulated device work for tests/benchmarks.
#[pyfunction]
fn spin_ns(py: Python<'_>, ns: u64) {
    py.detach(|| {
        let end = std::time::Instant::now() + std::time::Duration::from_nanos(ns);
        while std::time::Instant::now() < end {
            std::hint::spin_loop();
        }
    })
}

const GATE_CAPSULE_NAME: &CStr = c"pygpukit.launch_gate_v1";

/// The launch gate as C functions, for the CUDA extension's one native launch point (every
/// kernel, library call and graph launch passes it). C layout, the header first:
/// - `current()`: the scheduler task running on this thread as an owned handle, or null
///   outside a task (one thread-local read: the cost of a launch outside the scheduler);
/// - `begin(handle)`: block until the task's token bucket and the fair-share arbiter grant
///   the device (call it without the GIL); 0 granted, 1 the task was cancelled;
/// - `end(handle)`: the launch is enqueued: charge it and give the device back;
/// - `release(handle)`: drop a handle (after a cancelled `begin`, or to skip the launch);
/// - `task_id(handle)`: the task's id, for error messages.
///
/// Version 2 adds GPU-time accounting:
/// - `set_device_events(poll, recycle)`: the extension's event functions, given once at
///   install. `poll(start, end, &ns)` returns 0 (finished; `ns` its device time), 1 (still
///   pending) or 2 (unknown: retire uncharged); `recycle(start, end)` takes the events back;
/// - `end_measured(handle, start, end)`: like `end`, for a launch bracketed by the events
///   `start`/`end` on its stream; its device time is charged when they complete.
///
/// Version 3 adds the fast path:
/// - `try_begin(handle)`: with the GIL held, 0 granted at once, 1 cancelled, 2 it would wait
///   (then release the GIL and call `begin`).
///
/// Version 4 lets the runtime's own copies (the stream copier's uploads and downloads) be
/// charged device time like kernels:
/// - `set_copy_events(start, finish)`: the extension's functions, given with the event
///   functions. `start(ctx, stream)` makes the copier's allocator-table context `ctx`
///   current (only a table of that extension's), records a pair's start event on `stream`
///   and returns the pair (0: not measured);
///   `finish(pair, stream)` records its end event and returns 0, else takes the pair back
///   itself and returns nonzero.
#[repr(C)]
struct LaunchGateV1 {
    abi_version: u32,
    struct_size: u32,
    current: extern "C" fn() -> *const c_void,
    begin: extern "C" fn(*const c_void) -> i32,
    end: extern "C" fn(*const c_void),
    release: extern "C" fn(*const c_void),
    task_id: extern "C" fn(*const c_void) -> u64,
    set_device_events: extern "C" fn(PollFn, RecycleFn),
    end_measured: extern "C" fn(*const c_void, usize, usize),
    try_begin: extern "C" fn(*const c_void) -> i32,
    set_copy_events: extern "C" fn(CopyStartFn, CopyFinishFn),
}

type CopyStartFn = extern "C" fn(usize, usize) -> usize;
type CopyFinishFn = extern "C" fn(usize, usize) -> i32;
type PollFn = extern "C" fn(usize, usize, *mut u64) -> i32;
type RecycleFn = extern "C" fn(usize, usize);

/// The extension's event functions as the runtime's `DeviceEvents`.
struct ExtensionEvents {
    poll: PollFn,
    recycle: RecycleFn,
}

impl DeviceEvents for ExtensionEvents {
    fn poll(&self, pair: EventPair) -> Poll {
        let mut ns = 0u64;
        match (self.poll)(pair.start, pair.end, &mut ns) {
            0 => Poll::Done(ns),
            1 => Poll::Pending,
            _ => Poll::Failed,
        }
    }

    fn recycle(&self, pair: EventPair) {
        (self.recycle)(pair.start, pair.end)
    }
}

/// Set once, by the one CUDA extension of the process.
static DEVICE_EVENTS: OnceLock<Arc<dyn DeviceEvents>> = OnceLock::new();

extern "C" fn gate_set_device_events(poll: PollFn, recycle: RecycleFn) {
    let _ = DEVICE_EVENTS.set(Arc::new(ExtensionEvents { poll, recycle }));
}

/// Set once, by the one CUDA extension of the process (version 4).
static COPY_EVENTS: OnceLock<(CopyStartFn, CopyFinishFn)> = OnceLock::new();

extern "C" fn gate_set_copy_events(start: CopyStartFn, finish: CopyFinishFn) {
    let _ = COPY_EVENTS.set((start, finish));
}

/// Before a task's copy in context `ctx` is enqueued on `stream` (the grant held): the
/// start of its timing events, or None where copies are not measured (no extension yet, a
/// capture, an error).
pub(crate) fn copy_timing_start(ctx: usize, stream: u64) -> Option<usize> {
    let (start, _) = COPY_EVENTS.get()?;
    DEVICE_EVENTS.get()?;
    let pair = start(ctx, stream as usize);
    (pair != 0).then_some(pair)
}

/// After the copy was enqueued: end the task's launch, charged with the copy's device time
/// once its events complete (host time since the grant where it was not measured).
pub(crate) fn end_copy(task: &Task, pair: Option<usize>, stream: u64) {
    if let (Some(pair), Some((_, finish)), Some(events)) = (pair, COPY_EVENTS.get(), DEVICE_EVENTS.get()) {
        if finish(pair, stream as usize) == 0 {
            task.end_launch_measured(EventPair { start: pair, end: 0 }, events);
            return;
        }
    }
    task.end_launch(None);
}

extern "C" fn gate_end_measured(handle: *const c_void, start: usize, end: usize) {
    let task = task_of(handle);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match DEVICE_EVENTS.get() {
        Some(events) => task.end_launch_measured(EventPair { start, end }, events),
        None => {
            task.end_launch(None);
        }
    }));
    gate_release(handle);
}

extern "C" fn gate_current() -> *const c_void {
    match current_task() {
        Some(task) => Arc::into_raw(task) as *const c_void,
        None => std::ptr::null(),
    }
}

/// The task behind a handle from `gate_current`, still owned by the handle.
fn task_of(handle: *const c_void) -> std::mem::ManuallyDrop<Arc<Task>> {
    // SAFETY: handles come from Arc::into_raw in gate_current and are released once.
    std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(handle as *const Task) })
}

extern "C" fn gate_begin(handle: *const c_void) -> i32 {
    let task = task_of(handle);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.begin_launch())) {
        Ok(Ok(())) => 0,
        _ => 1,
    }
}

extern "C" fn gate_try_begin(handle: *const c_void) -> i32 {
    let task = task_of(handle);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.try_begin_launch())) {
        Ok(Some(Ok(()))) => 0,
        Ok(Some(Err(_))) => 1,
        Ok(None) | Err(_) => 2, // a panic here: let the blocking path decide
    }
}

extern "C" fn gate_end(handle: *const c_void) {
    let task = task_of(handle);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.end_launch(None)));
    gate_release(handle);
}

extern "C" fn gate_release(handle: *const c_void) {
    if !handle.is_null() {
        // SAFETY: see task_of; this is the handle's one release.
        drop(unsafe { Arc::from_raw(handle as *const Task) });
    }
}

extern "C" fn gate_task_id(handle: *const c_void) -> u64 {
    task_of(handle).id
}

/// `launch_gate_table()`: a capsule "pygpukit.launch_gate_v1" of the gate's C functions.
#[pyfunction]
fn launch_gate_table(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    let table = LaunchGateV1 {
        abi_version: 4,
        struct_size: std::mem::size_of::<LaunchGateV1>() as u32,
        current: gate_current,
        begin: gate_begin,
        end: gate_end,
        release: gate_release,
        task_id: gate_task_id,
        set_device_events: gate_set_device_events,
        end_measured: gate_end_measured,
        try_begin: gate_try_begin,
        set_copy_events: gate_set_copy_events,
    };
    PyCapsule::new(py, table, Some(GATE_CAPSULE_NAME.to_owned()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(launch_gate_table, m)?)?;
    m.add_class::<LaunchToken>()?;
    m.add_function(wrap_pyfunction!(task_launch_begin, m)?)?;
    m.add_function(wrap_pyfunction!(task_launch_end, m)?)?;
    m.add_function(wrap_pyfunction!(current_task_id, m)?)?;
    m.add_function(wrap_pyfunction!(current_task_policy, m)?)?;
    m.add_function(wrap_pyfunction!(task_yield, m)?)?;
    m.add_function(wrap_pyfunction!(task_cancel_requested, m)?)?;
    m.add_function(wrap_pyfunction!(task_memory_charge, m)?)?;
    m.add_function(wrap_pyfunction!(task_memory_release, m)?)?;
    m.add_function(wrap_pyfunction!(spin_ns, m)?)?;
    Ok(())
}
