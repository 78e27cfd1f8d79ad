//! The destructor of DLPack capsules that `pygpukit._dlpack` exports, written in C ABI.
//!
//! A consumer that refuses a capsule (NumPy refusing bfloat16, say) drops it with its own
//! exception already raised. A destructor written in Python (a ctypes callback) cannot
//! run then without clobbering that exception, which the user then sees as a
//! `SystemError`. This one sets the pending exception aside, calls the tensor's deleter
//! (which may run Python), and puts the exception back, as the DLPack spec asks.
use std::ffi::{c_void, CStr};

use pyo3::ffi;
use pyo3::prelude::*;

const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";

/// The head of `DLManagedTensor`: the `DLTensor` (48 bytes on 64-bit), then the manager
/// context and the deleter.
#[repr(C)]
struct ManagedLegacy {
    dl_tensor: [u8; 48],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// The head of `DLManagedTensorVersioned`: version, manager context, deleter.
#[repr(C)]
struct ManagedVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // Only a capsule nobody consumed still owns its tensor (consumers rename it used_*).
    let deleter = if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
        let managed = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr()) as *mut ManagedVersioned;
        (managed, managed.as_ref().and_then(|m| m.deleter))
    } else if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
        let managed = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()) as *mut ManagedLegacy;
        (managed as *mut ManagedVersioned, managed.as_ref().and_then(|m| m.deleter))
    } else {
        return;
    };
    if let (managed, Some(delete)) = deleter {
        // The GIL is held: capsule destructors run inside the interpreter.
        let py = Python::assume_attached();
        let pending = PyErr::take(py);
        delete(managed as *mut c_void);
        if let Some(err) = pending {
            err.restore(py);
        }
    }
}

/// The address of the C destructor, for `PyCapsule_New` called through ctypes.
#[pyfunction]
fn dlpack_capsule_destructor() -> usize {
    capsule_destructor as *const () as usize
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dlpack_capsule_destructor, m)?)?;
    Ok(())
}
