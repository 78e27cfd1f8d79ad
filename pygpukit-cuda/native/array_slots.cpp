// GPUArray slots, new arrays and the current stream for the native fast paths (see
// array_slots.hpp).
#include "array_slots.hpp"

#include <structmember.h>

#include <cstring>

namespace pgk {
namespace {

// Attribute names read from a Stream object, interned once.
PyObject* name(const char* text, PyObject** cache) {
    if (*cache == nullptr) *cache = PyUnicode_InternFromString(text);
    return *cache;
}

PyObject* g_capture_pool = nullptr;
PyObject* g_device_index = nullptr;
PyObject* g_ptr = nullptr;

}  // namespace

bool find_array_slots(PyTypeObject* type, ArraySlots* out) {
    struct Want {
        const char* name;
        Py_ssize_t* where;
    } wants[] = {{"_buffer", &out->buffer}, {"_shape", &out->shape},
                 {"_strides", &out->strides}, {"_offset", &out->offset},
                 {"_dtype", &out->dtype},     {"_device", &out->device},
                 {"_readonly", &out->readonly}};
    for (const PyMemberDef* m = type->tp_members; m != nullptr && m->name != nullptr; ++m) {
        for (Want& w : wants) {
            if (m->type == T_OBJECT_EX && std::strcmp(m->name, w.name) == 0) *w.where = m->offset;
        }
    }
    for (const Want& w : wants) {
        if (*w.where < 0) {
            PyErr_Format(PyExc_TypeError, "%.100s has no __slots__ entry %s", type->tp_name,
                         w.name);
            return false;
        }
    }
    return true;
}

PyObject* new_array(PyTypeObject* type, const ArraySlots& slots, PyObject* buffer,
                    PyObject* shape, PyObject* strides, PyObject* dtype, PyObject* device) {
    PyObject* zero = PyLong_FromLong(0);
    PyObject* out = type->tp_alloc(type, 0);
    if (out == nullptr || zero == nullptr) {
        Py_XDECREF(out);
        Py_XDECREF(zero);
        Py_DECREF(strides);
        Py_DECREF(buffer);
        return nullptr;
    }
    slot_put(out, slots.buffer, buffer);
    Py_INCREF(shape);
    slot_put(out, slots.shape, shape);
    Py_INCREF(dtype);
    slot_put(out, slots.dtype, dtype);
    Py_INCREF(device);
    slot_put(out, slots.device, device);
    slot_put(out, slots.strides, strides);
    slot_put(out, slots.offset, zero);
    Py_INCREF(Py_False);
    slot_put(out, slots.readonly, Py_False);
    return out;
}

bool current_stream(PyObject* stream_var, unsigned long long* stream, long long* device,
                    bool* capturing) {
    PyObject* s = nullptr;
    if (PyContextVar_Get(stream_var, Py_None, &s) < 0) return false;
    *stream = 0;
    *device = -1;
    *capturing = false;
    if (s == Py_None) {
        Py_DECREF(s);
        return true;
    }
    PyObject* names[] = {name("capture_pool", &g_capture_pool),
                         name("device_index", &g_device_index), name("ptr", &g_ptr)};
    if (names[0] == nullptr || names[1] == nullptr || names[2] == nullptr) {
        Py_DECREF(s);
        return false;
    }
    bool ok = false;
    PyObject* pool = PyObject_GetAttr(s, names[0]);
    PyObject* index = PyObject_GetAttr(s, names[1]);
    PyObject* ptr = PyObject_GetAttr(s, names[2]);
    if (pool != nullptr && index != nullptr && ptr != nullptr) {
        *capturing = pool != Py_None;
        *device = PyLong_AsLongLong(index);
        *stream = PyLong_AsUnsignedLongLong(ptr);
        ok = !PyErr_Occurred();
    }
    Py_XDECREF(pool);
    Py_XDECREF(index);
    Py_XDECREF(ptr);
    Py_DECREF(s);
    return ok;
}

}  // namespace pgk
