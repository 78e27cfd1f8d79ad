// FrontDoor: the first step of a public elementwise function (gp.add, gp.exp, a + b) in one
// native call. It makes the check of pygpukit's reference door (`_python_door` in
// pygpukit/_ops/elementwise.py): exact GPUArrays of one dtype on one device object whose op
// learned a `fresh` fast path under the settings in force; then it calls that fast path.
// What the fast path declines goes to `declined`, anything else to `general` (Python
// callables of the operands: the op layer's paths), so a door always returns the result.
#pragma once

#include <Python.h>

namespace pgk {

// Makes the FrontDoor type (once, at import); nullptr with a Python error set on failure.
PyTypeObject* make_front_door_type();

// A FrontDoor over `known` (a dict: dtype name -> (settings snapshot, device, fresh)) for
// `arity` (1 or 2) operands of `array_type`, going on to `general` or `declined`.
// `globals`, `base_key`, `layers_var` and `current`: where the settings in force are read
// (see `front_door_settings` in core). nullptr with a Python error set for arguments of
// the wrong kind.
PyObject* new_front_door(PyObject* known, int arity, PyObject* array_type, PyObject* general,
                         PyObject* declined, PyObject* globals, PyObject* base_key,
                         PyObject* layers_var, PyObject* current);

}  // namespace pgk
