// FreshElementwise (see fresh_elementwise.hpp). Measured reason it exists: on the H100 a
// one-element `a + b` spent about two thirds of its 7.4 us host time in Python frames between
// the operator and cuLaunchKernel (dispatch, allocation, plan lookup, stream lookup).
#include "fresh_elementwise.hpp"

#include <structmember.h>

#include <cstring>
#include <functional>
#include <optional>
#include <unordered_map>

#include "array_slots.hpp"
#include "buffer_allocator.hpp"
#include "heap_type.hpp"
#include "launch_plan.hpp"

namespace pgk {
namespace {

constexpr size_t kMaxParams = 4096;

void (*g_translate)() = nullptr;
PyTypeObject* g_type = nullptr;

struct Key {
    PyObject* device;  // identity: an equal but distinct Device object is another key
    PyObject* dtype;
    unsigned long long n;
    bool aligned;  // every operand at a 16-byte address (the kernels' vector path)
    bool operator==(const Key& o) const {
        return device == o.device && dtype == o.dtype && n == o.n && aligned == o.aligned;
    }
};

struct KeyHash {
    size_t operator()(const Key& k) const {
        size_t h = std::hash<const void*>()(k.device);
        h = h * 31 + std::hash<const void*>()(k.dtype);
        h = h * 31 + std::hash<unsigned long long>()(k.n);
        return h * 2 + (k.aligned ? 1 : 0);
    }
};

// One learned launch; holds a reference to every object its key and fields point to.
struct Entry {
    PyObject* device;
    PyObject* dtype;
    PyObject* plan;  // the LaunchPlan owning `spec`
    const LaunchPlanSpec* spec;
    PyObject* allocator;  // the device's BufferAllocator
    PyObject* out_dtype;
    long long in_itemsize, out_itemsize, device_index;
};

using Entries = std::unordered_map<Key, Entry, KeyHash>;

// What one call needs of an entry, held with references: the pool's slow path and (inside a
// scheduler task) the launch gate may let go of the GIL, and another thread may then clear
// or replace the entry itself.
struct Held {
    PyObject* plan;
    PyObject* allocator;
    PyObject* out_dtype;
    const LaunchPlanSpec* spec;
    long long in_itemsize, out_itemsize;
    explicit Held(const Entry& e)
        : plan(e.plan), allocator(e.allocator), out_dtype(e.out_dtype), spec(e.spec),
          in_itemsize(e.in_itemsize), out_itemsize(e.out_itemsize) {
        Py_INCREF(plan);
        Py_INCREF(allocator);
        Py_INCREF(out_dtype);
    }
    ~Held() {  // runs with the GIL held: every exit of the call holds it
        Py_DECREF(plan);
        Py_DECREF(allocator);
        Py_DECREF(out_dtype);
    }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
};

struct FreshObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int arity;
    PyTypeObject* array_type;
    PyObject* stream_var;
    ArraySlots slots;
    Entries* entries;
};

void release(Entry& e) {
    Py_DECREF(e.device);
    Py_DECREF(e.dtype);
    Py_DECREF(e.plan);
    Py_DECREF(e.allocator);
    Py_DECREF(e.out_dtype);
}

void clear_entries(FreshObject* f) {
    for (auto& kv : *f->entries) release(kv.second);
    f->entries->clear();
}

// Elements of `shape` (an exact tuple of ints); 0 for anything else, an empty array included.
unsigned long long element_count(PyObject* shape) {
    if (!PyTuple_CheckExact(shape)) return 0;
    unsigned long long n = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); ++i) {
        const long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (d <= 0) {
            PyErr_Clear();  // a non-int size is the Python path's to report
            return 0;
        }
        n *= static_cast<unsigned long long>(d);
    }
    return n;
}

// Whether `strides` are exactly the C-contiguous strides of `shape` for `itemsize`.
bool contiguous(PyObject* shape, PyObject* strides, long long itemsize) {
    if (!PyTuple_CheckExact(strides) || PyTuple_GET_SIZE(strides) != PyTuple_GET_SIZE(shape)) {
        return false;
    }
    long long expected = itemsize;
    for (Py_ssize_t i = PyTuple_GET_SIZE(shape) - 1; i >= 0; --i) {
        if (PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i)) != expected) {
            PyErr_Clear();
            return false;
        }
        expected *= PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    }
    return true;
}

// Contiguous strides of `shape` for `itemsize`, as a new tuple.
PyObject* contiguous_strides(PyObject* shape, long long itemsize) {
    const Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    PyObject* out = PyTuple_New(ndim);
    if (out == nullptr) return nullptr;
    long long stride = itemsize;
    for (Py_ssize_t i = ndim - 1; i >= 0; --i) {
        PyObject* v = PyLong_FromLongLong(stride);
        if (v == nullptr) {
            Py_DECREF(out);
            return nullptr;
        }
        PyTuple_SET_ITEM(out, i, v);
        stride *= PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    }
    return out;
}

PyObject* not_implemented() { Py_RETURN_NOTIMPLEMENTED; }

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* f = reinterpret_cast<FreshObject*>(self);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != f->arity || (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "FreshElementwise takes %d arrays (%zd arguments given)",
                     f->arity, nargs);
        return nullptr;
    }
    const ArraySlots& sl = f->slots;
    PyObject* x1 = args[0];
    if (Py_TYPE(x1) != f->array_type) return not_implemented();
    PyObject* shape = slot_get(x1, sl.shape);
    PyObject* dtype = slot_get(x1, sl.dtype);
    PyObject* device = slot_get(x1, sl.device);
    if (shape == nullptr || dtype == nullptr || device == nullptr) return not_implemented();
    unsigned long long addr[3] = {0, 0, 0};  // out, x1, x2
    for (int k = 0; k < f->arity; ++k) {
        PyObject* x = args[k];
        if (k > 0) {
            if (Py_TYPE(x) != f->array_type || slot_get(x, sl.dtype) != dtype ||
                slot_get(x, sl.device) != device) {
                return not_implemented();
            }
            PyObject* other = slot_get(x, sl.shape);
            if (other != shape) {
                const int same = other == nullptr ? 0 : PyObject_RichCompareBool(shape, other, Py_EQ);
                if (same < 0) return nullptr;
                if (!same) return not_implemented();
            }
        }
        PyObject* buffer = slot_get(x, sl.buffer);
        PyObject* offset = slot_get(x, sl.offset);
        unsigned long long base = 0;
        if (buffer == nullptr || offset == nullptr || !device_buffer_address(buffer, &base)) {
            return not_implemented();  // a foreign (adopted) buffer: the Python path
        }
        const long long off = PyLong_AsLongLong(offset);
        if (off == -1 && PyErr_Occurred()) return nullptr;
        addr[k + 1] = base + static_cast<unsigned long long>(off);
    }
    const unsigned long long n = element_count(shape);
    if (n == 0) return not_implemented();
    unsigned long long stream = 0;
    long long stream_device = -1;
    bool capturing = false;
    if (!current_stream(f->stream_var, &stream, &stream_device, &capturing)) return nullptr;
    if (capturing) return not_implemented();
    const bool aligned = ((addr[1] | addr[2]) & 15) == 0;
    auto it = f->entries->find(Key{device, dtype, n, aligned});
    if (it == f->entries->end()) return not_implemented();
    const Entry& found = it->second;
    if (stream_device >= 0 && stream_device != found.device_index) return not_implemented();
    for (int k = 0; k < f->arity; ++k) {
        if (!contiguous(shape, slot_get(args[k], sl.strides), found.in_itemsize)) {
            return not_implemented();
        }
    }
    // on the stack: a heap Held per call cost a malloc and a free on the tiny-op path
    std::optional<Held> held;
    held.emplace(found);
    PyObject* buffer = allocate_buffer(held->allocator, n * held->out_itemsize, stream);
    if (buffer == nullptr) return nullptr;
    device_buffer_address(buffer, &addr[0]);
    if (aligned && (addr[0] & 15) != 0) {  // the pool hands out aligned blocks; be sure
        auto other = f->entries->find(Key{device, dtype, n, false});
        if (other == f->entries->end()) {
            Py_DECREF(buffer);
            return not_implemented();
        }
        held.emplace(other->second);
    }
    const LaunchPlanSpec& plan = *held->spec;  // alive while held->plan is
    alignas(16) unsigned char params[kMaxParams];
    std::memcpy(params, plan.params.data(), plan.params.size());
    for (int k = 0; k <= f->arity; ++k) {
        std::memcpy(params + plan.slots[k].offset, &addr[k], sizeof addr[k]);
    }
    try {
        launch(*plan.context, plan.func, plan.grid, plan.block, plan.shared_bytes,
               reinterpret_cast<CUstream>(stream), params, plan.params.size());
    } catch (...) {
        g_translate();
        Py_DECREF(buffer);
        return nullptr;
    }
    PyObject* strides = slot_get(x1, sl.strides);
    if (held->out_itemsize == held->in_itemsize) {
        Py_INCREF(strides);
    } else {
        strides = contiguous_strides(shape, held->out_itemsize);
        if (strides == nullptr) {
            Py_DECREF(buffer);
            return nullptr;
        }
    }
    return new_array(f->array_type, sl, buffer, shape, strides, held->out_dtype, device);
}

// remember(device, dtype, n, aligned, plan, allocator, out_dtype, in_itemsize,
//          out_itemsize, device_index): learn the launch for contiguous operands of n elements.
PyObject* remember(PyObject* self, PyObject* args) {
    auto* f = reinterpret_cast<FreshObject*>(self);
    PyObject *device, *dtype, *plan, *allocator, *out_dtype;
    unsigned long long n;
    int aligned;
    long long in_size, out_size, index;
    if (!PyArg_ParseTuple(args, "OOKpOOOLLL:remember", &device, &dtype, &n, &aligned, &plan,
                          &allocator, &out_dtype, &in_size, &out_size, &index)) {
        return nullptr;
    }
    const LaunchPlanSpec* spec = launch_plan_spec(plan);
    if (spec == nullptr) {
        PyErr_Format(PyExc_TypeError, "remember wants a native LaunchPlan, not %.100s",
                     Py_TYPE(plan)->tp_name);
        return nullptr;
    }
    bool pointers = spec->slots.size() == static_cast<size_t>(f->arity + 1);
    for (const PlanSlot& s : spec->slots) pointers = pointers && s.code == 'P';
    if (!pointers) {
        PyErr_Format(PyExc_ValueError,
                     "remember wants a plan whose values are %d device pointers (result "
                     "first)",
                     f->arity + 1);
        return nullptr;
    }
    if (Py_TYPE(allocator) != buffer_allocator_type()) {
        PyErr_SetString(PyExc_TypeError, "remember wants the device's BufferAllocator");
        return nullptr;
    }
    if (n == 0 || in_size <= 0 || out_size <= 0) {
        PyErr_SetString(PyExc_ValueError, "remember wants a positive size and itemsizes");
        return nullptr;
    }
    const Key key{device, dtype, n, aligned != 0};
    auto old = f->entries->find(key);
    if (old != f->entries->end()) {
        release(old->second);
        f->entries->erase(old);
    }
    for (PyObject* o : {device, dtype, plan, allocator, out_dtype}) Py_INCREF(o);
    f->entries->emplace(key, Entry{device, dtype, plan, spec, allocator, out_dtype, in_size,
                                   out_size, index});
    Py_RETURN_NONE;
}

PyObject* clear(PyObject* self, PyObject*) {
    clear_entries(reinterpret_cast<FreshObject*>(self));
    Py_RETURN_NONE;
}

Py_ssize_t length(PyObject* self) {
    return static_cast<Py_ssize_t>(reinterpret_cast<FreshObject*>(self)->entries->size());
}

void dealloc(PyObject* self) {
    auto* f = reinterpret_cast<FreshObject*>(self);
    PyTypeObject* type = Py_TYPE(self);
    clear_entries(f);
    delete f->entries;
    Py_XDECREF(f->array_type);
    Py_XDECREF(f->stream_var);
    type->tp_free(self);
    Py_DECREF(type);
}

PyMethodDef kMethods[] = {
    {"remember", remember, METH_VARARGS,
     "remember(device, dtype, n, aligned, plan, allocator, out_dtype, in_itemsize, "
     "out_itemsize, device_index): learn the LaunchPlan for contiguous operands of n "
     "elements (what the Python path built)."},
    {"clear", clear, METH_NOARGS, "Forget every learned launch."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FreshObject, vectorcall), READONLY, nullptr},
    {"arity", T_INT, offsetof(FreshObject, arity), READONLY, "array operands per call"},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

PyTypeObject* make_fresh_elementwise_type(void (*translate)()) {
    g_translate = translate;
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(&dealloc)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_methods, kMethods},
        {Py_tp_members, kMembers},
        {Py_mp_length, reinterpret_cast<void*>(&length)},
        {Py_tp_doc, const_cast<char*>(
                        "fresh(x1[, x2]) -> a new GPUArray, or NotImplemented when the "
                        "operands are not contiguous arrays of one dtype, shape and device "
                        "whose launch this object has learned. Made by fresh_elementwise.")},
        {0, nullptr},
    };
    g_type = make_heap_type("pygpukit_cuda._native.FreshElementwise", sizeof(FreshObject),
                            slots, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL);
    return g_type;
}

PyObject* new_fresh_elementwise(PyObject* array_type, PyObject* stream_var, int arity) {
    if (!PyType_Check(array_type)) {
        PyErr_SetString(PyExc_TypeError, "fresh_elementwise wants the GPUArray class");
        return nullptr;
    }
    if (!PyContextVar_CheckExact(stream_var)) {
        PyErr_SetString(PyExc_TypeError, "fresh_elementwise wants the current-stream ContextVar");
        return nullptr;
    }
    if (arity != 1 && arity != 2) {
        PyErr_Format(PyExc_ValueError, "fresh_elementwise takes 1 or 2 operands, not %d", arity);
        return nullptr;
    }
    ArraySlots slots;
    auto* type = reinterpret_cast<PyTypeObject*>(array_type);
    if (!find_array_slots(type, &slots)) return nullptr;
    PyObject* obj = PyType_GenericAlloc(g_type, 0);
    if (obj == nullptr) return nullptr;
    auto* f = reinterpret_cast<FreshObject*>(obj);
    f->vectorcall = &call;
    f->arity = arity;
    Py_INCREF(array_type);
    f->array_type = type;
    Py_INCREF(stream_var);
    f->stream_var = stream_var;
    f->slots = slots;
    f->entries = new Entries();
    return obj;
}

}  // namespace pgk
