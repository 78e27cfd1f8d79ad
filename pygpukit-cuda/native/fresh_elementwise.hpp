// FreshElementwise: the common case of an elementwise op as one native call. When every
// operand is a contiguous GPUArray of one dtype, shape and device in a pool DeviceBuffer and
// no graph is being captured, fresh(x1[, x2]) allocates the result from the device's pool on
// the current stream, launches the op's LaunchPlan for that size through the one launch
// point, and returns the new GPUArray: no Python frame between the operator and the driver.
// Anything else returns NotImplemented and the Python path runs; that path teaches the object
// each plan it builds for such operands (remember).
#pragma once

#include <Python.h>

namespace pgk {

// Makes the FreshElementwise type (once, at import); `translate` turns the C++ exception
// being handled into a Python error. nullptr with a Python error set on failure.
PyTypeObject* make_fresh_elementwise_type(void (*translate)());

// A FreshElementwise of `arity` array operands (1 or 2) making instances of `array_type`
// (pygpukit's GPUArray: its slots are read and written by offset), reading the current
// stream from `stream_var` (a ContextVar holding None or a Stream with ptr, device_index and
// capture_pool). nullptr with a Python error set when the type lacks a slot it needs.
PyObject* new_fresh_elementwise(PyObject* array_type, PyObject* stream_var, int arity);

}  // namespace pgk
