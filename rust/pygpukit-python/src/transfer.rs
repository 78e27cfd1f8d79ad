//! The error type of host<->device copies (`TransferError`), raised by the `StreamCopier`.

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

create_exception!(_pygpukit_rust, TransferError, PyRuntimeError, "A host<->device copy failed.");

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TransferError", m.py().get_type::<TransferError>())?;
    crate::copier::register(m)
}
