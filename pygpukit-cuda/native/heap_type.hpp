// The extension's plain CPython types (LaunchPlan, MatmulPlan, DeviceBuffer,
// BufferAllocator) are heap types made from slots; each is made only by its factory.
#pragma once

#include <Python.h>

#include <cstddef>

namespace pgk {

// A heap type `name` of `size`-byte instances with `slots` and `flags`, which Python code
// cannot instantiate; nullptr with a Python error set on failure.
inline PyTypeObject* make_heap_type(const char* name, size_t size, PyType_Slot* slots,
                                    unsigned long flags) {
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
    flags |= Py_TPFLAGS_DISALLOW_INSTANTIATION;
#endif
    PyType_Spec spec = {name, static_cast<int>(size), 0, static_cast<unsigned>(flags), slots};
    return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
}

}  // namespace pgk
