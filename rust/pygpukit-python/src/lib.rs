//! The `_pygpukit_rust` extension module.
use pyo3::prelude::*;

#[pymodule]
fn _pygpukit_rust(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
