// GPUArray instances read and made from C++: the byte offsets of its __slots__ entries, a new
// array from a fresh DeviceBuffer, and the current stream's ContextVar. Shared by the native
// fast paths that return new arrays (FreshElementwise, FftCall).
#pragma once

#include <Python.h>

namespace pgk {

// Byte offsets of GPUArray's slots in its instances.
struct ArraySlots {
    Py_ssize_t buffer = -1, shape = -1, strides = -1, offset = -1, dtype = -1, device = -1,
               readonly = -1;
};

// Fill `out` from `type`'s __slots__; false with a TypeError set when one is missing.
bool find_array_slots(PyTypeObject* type, ArraySlots* out);

inline PyObject* slot_get(PyObject* obj, Py_ssize_t offset) {
    return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + offset);
}

inline void slot_put(PyObject* obj, Py_ssize_t offset, PyObject* value) {  // steals `value`
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + offset) = value;
}

// A new contiguous, writable array of `type` over `buffer` at offset 0. Steals `buffer` and
// `strides` (also on failure); borrows the rest. nullptr with a Python error set on failure.
PyObject* new_array(PyTypeObject* type, const ArraySlots& slots, PyObject* buffer,
                    PyObject* shape, PyObject* strides, PyObject* dtype, PyObject* device);

// The stream in force, read from `stream_var` (a ContextVar holding None or a Stream with ptr,
// device_index and capture_pool): its handle into *stream (0 without one), its device into
// *device (-1 without one); *capturing is true while it captures a graph (new blocks must then
// come from the graph's pool). False with a Python error set on failure.
bool current_stream(PyObject* stream_var, unsigned long long* stream, long long* device,
                    bool* capturing);

}  // namespace pgk
