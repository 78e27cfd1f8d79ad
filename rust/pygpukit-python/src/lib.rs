//! The `_pygpukit_rust` extension module: thin PyO3 wrappers over `pygpukit-runtime`.
use pyo3::prelude::*;

mod copier;
mod dlpack;
mod dispatch;
mod memory;
mod scheduler;
mod transfer;

#[pymodule]
fn _pygpukit_rust(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    memory::register(m)?;
    scheduler::register(m)?;
    transfer::register(m)?;
    dispatch::register(m)?;
    dlpack::register(m)?;
    Ok(())
}
