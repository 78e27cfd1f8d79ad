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

// Where a stream type keeps capture_pool, device_index and ptr when they are __slots__
// entries: read by offset, they cost no attribute lookups on a launch with a stream current.
// Learned for one type (held) and valid while its version tag is (a change to the class
// invalidates the tag).
struct StreamSlots {
    PyTypeObject* type = nullptr;
    unsigned int version = 0;
    Py_ssize_t pool = -1, index = -1, ptr = -1;
};
StreamSlots g_stream_slots;

// The offset of `name`'s slot in instances of `type`, or -1 when the attribute is anything
// else (a property, a plain class attribute, missing).
Py_ssize_t member_offset(PyTypeObject* type, PyObject* name) {
    PyObject* found = _PyType_Lookup(type, name);  // borrowed
    if (found == nullptr || Py_TYPE(found) != &PyMemberDescr_Type) return -1;
    const PyMemberDef* m = reinterpret_cast<PyMemberDescrObject*>(found)->d_member;
    return m->type == T_OBJECT_EX ? m->offset : -1;
}

// The slots of `type` (names: capture_pool, device_index, ptr), or nullptr where attribute
// lookup must decide: a type with its own __getattribute__, or without all three slots. A
// slot is a data descriptor, so it wins over the instance dict as getattr would have it.
const StreamSlots* stream_slots(PyTypeObject* type, PyObject* const names[3]) {
    const unsigned long valid = Py_TPFLAGS_VALID_VERSION_TAG;
    StreamSlots& c = g_stream_slots;
    if (c.type == type && (type->tp_flags & valid) && c.version == type->tp_version_tag) {
        return c.pool >= 0 ? &c : nullptr;
    }
    if (type->tp_getattro != PyObject_GenericGetAttr) return nullptr;
    StreamSlots learned;
    learned.pool = member_offset(type, names[0]);
    learned.index = member_offset(type, names[1]);
    learned.ptr = member_offset(type, names[2]);
    if (!(type->tp_flags & valid)) return nullptr;  // no tag to check later: not kept
    if (learned.pool < 0 || learned.index < 0 || learned.ptr < 0) learned.pool = -1;
    Py_INCREF(type);
    Py_XDECREF(reinterpret_cast<PyObject*>(c.type));
    learned.type = type;
    learned.version = type->tp_version_tag;
    c = learned;
    return c.pool >= 0 ? &c : nullptr;
}

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
    if (const StreamSlots* ss = stream_slots(Py_TYPE(s), names)) {
        PyObject* pool = slot_get(s, ss->pool);  // borrowed; null while a slot is unset
        PyObject* index = slot_get(s, ss->index);
        PyObject* ptr = slot_get(s, ss->ptr);
        if (pool != nullptr && index != nullptr && ptr != nullptr) {
            *capturing = pool != Py_None;
            *device = PyLong_AsLongLong(index);
            *stream = PyLong_AsUnsignedLongLong(ptr);
            Py_DECREF(s);
            return !PyErr_Occurred();
        }
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
