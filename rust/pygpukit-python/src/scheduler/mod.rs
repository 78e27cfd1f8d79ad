//! Python bindings of the runtime's `scheduler` part: QoS admission, partitions, the task
//! executor and the launch gate, plus the exceptions and argument conversions they share.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyString};

use pygpukit_runtime::scheduler::size_parse::parse_size;
use pygpukit_runtime::scheduler::SchedError;

mod executor;
pub(crate) mod gate;
mod partition;
mod qos;

create_exception!(
    _pygpukit_rust,
    AdmissionError,
    PyRuntimeError,
    "The scheduler refused a task (the message gives the reason)."
);
create_exception!(
    _pygpukit_rust,
    TaskCancelled,
    PyException,
    "Raised inside a cancelled task at its next launch gate, and by result() of a cancelled task."
);

/// Map a scheduler error onto its Python exception.
pub(crate) fn to_py(e: SchedError) -> PyErr {
    match e {
        SchedError::Invalid(m) => PyValueError::new_err(m),
        SchedError::Rejected(m) => AdmissionError::new_err(m),
        SchedError::NotFound(m) => PyKeyError::new_err(m),
        SchedError::ShutDown => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A memory size from an int, an integral float or a string like "512MB" / "1GiB".
pub(crate) fn extract_size(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if let Ok(s) = obj.cast::<PyString>() {
        return parse_size(s.to_str()?).map_err(|m| PyValueError::new_err(format!("{what}: {m}")));
    }
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyValueError::new_err(format!("{what} must be a size, not a bool")));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 {
            return Ok(v as u64);
        }
        return Err(PyValueError::new_err(format!("{what} must be a whole, non-negative number of bytes, got {v}")));
    }
    match obj.extract::<i128>() {
        Ok(v) if (0..=u64::MAX as i128).contains(&v) => Ok(v as u64),
        Ok(v) => Err(PyValueError::new_err(format!("{what} must be between 0 and 2**64-1 bytes, got {v}"))),
        Err(_) => Err(PyValueError::new_err(format!(
            "{what} must be an int or a string like '512MB' or '1GiB', got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
        ))),
    }
}

pub(crate) fn extract_opt_size(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<u64>> {
    match obj {
        Some(o) if !o.is_none() => extract_size(o, what).map(Some),
        _ => Ok(None),
    }
}

/// A relative deadline in seconds turned into an absolute time on the scheduler clock.
pub(crate) fn deadline_from_s(deadline_s: Option<f64>) -> PyResult<Option<u64>> {
    match deadline_s {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => {
            Ok(Some(pygpukit_runtime::scheduler::clock::now_ns().saturating_add((s * 1e9) as u64)))
        }
        Some(s) => Err(PyValueError::new_err(format!("deadline_s must be finite and >= 0, got {s}"))),
    }
}

/// `parse_size(text)`: bytes of a size string ("512MB" = 512e6, "1GiB" = 2**30); ValueError on junk.
#[pyfunction(name = "parse_size")]
fn py_parse_size(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    extract_size(obj, "size")
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("AdmissionError", py.get_type::<AdmissionError>())?;
    m.add("TaskCancelled", py.get_type::<TaskCancelled>())?;
    m.add_function(wrap_pyfunction!(py_parse_size, m)?)?;
    qos::register(m)?;
    partition::register(m)?;
    executor::register(m)?;
    gate::register(m)?;
    Ok(())
}
