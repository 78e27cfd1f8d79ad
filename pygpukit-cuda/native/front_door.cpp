// FrontDoor (see front_door.hpp). Measured reason it exists: on the null driver the
// reference door's checks, in Python, took ~0.35 us of a ~0.95 us one-element add; here
// they take ~0.1 us (the dtype's name, two dict reads, the ContextVar, one call).
#include "front_door.hpp"

#include <structmember.h>

#include <initializer_list>

#include "array_slots.hpp"
#include "heap_type.hpp"

namespace pgk {
namespace {

PyTypeObject* g_type = nullptr;
PyObject* g_name = nullptr;  // interned "name": a DataType's key in `known`

struct DoorObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int arity;
    PyTypeObject* array_type;
    Py_ssize_t dtype_slot, device_slot;
    PyObject* known;
    PyObject* general;
    PyObject* declined;
    PyObject* globals;
    PyObject* base_key;
    PyObject* layers_var;
    PyObject* current;
};

// 1 when `snapshot` is the settings snapshot in force here, 0 when not, -1 on error: the
// base snapshot while no settings layer is set in this context (a missing or stale base is
// None or another object, which never matches), else what config.current() says.
int snapshot_in_force(DoorObject* d, PyObject* snapshot) {
    PyObject* layer = nullptr;
    if (PyContextVar_Get(d->layers_var, Py_None, &layer) < 0) return -1;
    const bool layered = layer != nullptr && layer != Py_None;
    Py_XDECREF(layer);
    if (!layered) {
        PyObject* base = PyDict_GetItemWithError(d->globals, d->base_key);  // borrowed
        if (base == nullptr && PyErr_Occurred()) return -1;
        return base == snapshot ? 1 : 0;
    }
    PyObject* now = PyObject_CallNoArgs(d->current);
    if (now == nullptr) return -1;
    const int same = now == snapshot ? 1 : 0;
    Py_DECREF(now);
    return same;
}

// The entry of `known` for these operands (borrowed): exact arrays of one dtype and device
// object, the device the entry learned. nullptr without one (with a Python error set only
// when reading failed).
PyObject* learned(DoorObject* d, PyObject* const* args) {
    PyObject* x1 = args[0];
    if (Py_TYPE(x1) != d->array_type) return nullptr;
    PyObject* dtype = slot_get(x1, d->dtype_slot);
    PyObject* device = slot_get(x1, d->device_slot);
    if (dtype == nullptr || device == nullptr) return nullptr;
    if (d->arity == 2) {
        PyObject* x2 = args[1];
        if (Py_TYPE(x2) != d->array_type || slot_get(x2, d->dtype_slot) != dtype ||
            slot_get(x2, d->device_slot) != device) {
            return nullptr;
        }
    }
    PyObject* name = PyObject_GetAttr(dtype, g_name);
    if (name == nullptr) return nullptr;
    PyObject* hit = PyDict_GetItemWithError(d->known, name);
    Py_DECREF(name);
    if (hit == nullptr || !PyTuple_CheckExact(hit) || PyTuple_GET_SIZE(hit) != 3 ||
        PyTuple_GET_ITEM(hit, 1) != device) {
        return nullptr;
    }
    return hit;
}

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* d = reinterpret_cast<DoorObject*>(self);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != d->arity || (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "FrontDoor takes %d operands (%zd arguments given)",
                     d->arity, nargs);
        return nullptr;
    }
    if (d->known == nullptr) {  // cleared by the garbage collector
        PyErr_SetString(PyExc_RuntimeError, "this FrontDoor was cleared");
        return nullptr;
    }
    PyObject* hit = learned(d, args);
    if (hit == nullptr) {
        if (PyErr_Occurred()) return nullptr;
        return PyObject_Vectorcall(d->general, args, d->arity, nullptr);
    }
    // `hit` is borrowed from `known`, held here: reading the settings may run Python
    // (config.current), which may replace the entry
    Py_INCREF(hit);
    const int in_force = snapshot_in_force(d, PyTuple_GET_ITEM(hit, 0));
    PyObject* result = nullptr;
    if (in_force > 0) {
        result = PyObject_Vectorcall(PyTuple_GET_ITEM(hit, 2), args, d->arity, nullptr);
        if (result == Py_NotImplemented) {
            Py_DECREF(result);
            result = PyObject_Vectorcall(d->declined, args, d->arity, nullptr);
        }
    } else if (in_force == 0) {
        result = PyObject_Vectorcall(d->general, args, d->arity, nullptr);
    }
    Py_DECREF(hit);
    return result;
}

void dealloc(PyObject* self) {
    auto* d = reinterpret_cast<DoorObject*>(self);
    PyTypeObject* type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(d->array_type);
    Py_CLEAR(d->known);
    Py_CLEAR(d->general);
    Py_CLEAR(d->declined);
    Py_CLEAR(d->globals);
    Py_CLEAR(d->base_key);
    Py_CLEAR(d->layers_var);
    Py_CLEAR(d->current);
    type->tp_free(self);
    Py_DECREF(type);
}

// The door holds Python callables and dicts, which may come to hold it (a `general` that
// closes over the cell the door sits in): it takes part in GC.
int traverse(PyObject* self, visitproc visit, void* arg) {
    auto* d = reinterpret_cast<DoorObject*>(self);
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(d->array_type);
    Py_VISIT(d->known);
    Py_VISIT(d->general);
    Py_VISIT(d->declined);
    Py_VISIT(d->globals);
    Py_VISIT(d->base_key);
    Py_VISIT(d->layers_var);
    Py_VISIT(d->current);
    return 0;
}

int clear(PyObject* self) {
    auto* d = reinterpret_cast<DoorObject*>(self);
    Py_CLEAR(d->known);
    Py_CLEAR(d->general);
    Py_CLEAR(d->declined);
    Py_CLEAR(d->globals);
    Py_CLEAR(d->current);
    return 0;
}

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(DoorObject, vectorcall), READONLY, nullptr},
    {"arity", T_INT, offsetof(DoorObject, arity), READONLY, "array operands per call"},
    {"known", T_OBJECT, offsetof(DoorObject, known), READONLY,
     "the op's learned fast paths: dtype name -> (settings snapshot, device, fresh)"},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

PyTypeObject* make_front_door_type() {
    g_name = PyUnicode_InternFromString("name");
    if (g_name == nullptr) return nullptr;
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(&dealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(&traverse)},
        {Py_tp_clear, reinterpret_cast<void*>(&clear)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_members, kMembers},
        {Py_tp_doc, const_cast<char*>(
                        "door(x1[, x2]) -> the op's result: its learned fast path, else "
                        "the op layer's (see pygpukit.backend.use_front_doors). Made by "
                        "front_door.")},
        {0, nullptr},
    };
    g_type = make_heap_type("pygpukit_cuda._native.FrontDoor", sizeof(DoorObject), slots,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC);
    return g_type;
}

PyObject* new_front_door(PyObject* known, int arity, PyObject* array_type, PyObject* general,
                         PyObject* declined, PyObject* globals, PyObject* base_key,
                         PyObject* layers_var, PyObject* current) {
    if (!PyDict_CheckExact(known) || !PyDict_CheckExact(globals)) {
        PyErr_SetString(PyExc_TypeError, "front_door wants dicts for known and globals");
        return nullptr;
    }
    if (arity != 1 && arity != 2) {
        PyErr_Format(PyExc_ValueError, "front_door takes 1 or 2 operands, not %d", arity);
        return nullptr;
    }
    if (!PyType_Check(array_type)) {
        PyErr_SetString(PyExc_TypeError, "front_door wants the GPUArray class");
        return nullptr;
    }
    if (!PyCallable_Check(general) || !PyCallable_Check(declined)) {
        PyErr_SetString(PyExc_TypeError, "front_door wants callables for general and declined");
        return nullptr;
    }
    if (!PyUnicode_CheckExact(base_key) || !PyContextVar_CheckExact(layers_var) ||
        !PyCallable_Check(current)) {
        PyErr_SetString(PyExc_TypeError,
                        "front_door wants the settings as (globals, base name, ContextVar, "
                        "current)");
        return nullptr;
    }
    ArraySlots slots;
    if (!find_array_slots(reinterpret_cast<PyTypeObject*>(array_type), &slots)) return nullptr;
    PyObject* obj = PyType_GenericAlloc(g_type, 0);
    if (obj == nullptr) return nullptr;
    auto* d = reinterpret_cast<DoorObject*>(obj);
    d->vectorcall = &call;
    d->arity = arity;
    d->dtype_slot = slots.dtype;
    d->device_slot = slots.device;
    for (PyObject* o : {array_type, known, general, declined, globals, base_key, layers_var,
                        current}) {
        Py_INCREF(o);
    }
    d->array_type = reinterpret_cast<PyTypeObject*>(array_type);
    d->known = known;
    d->general = general;
    d->declined = declined;
    d->globals = globals;
    d->base_key = base_key;
    d->layers_var = layers_var;
    d->current = current;
    return obj;
}

}  // namespace pgk
