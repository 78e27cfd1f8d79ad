// LaunchPlan: a CPython type (vectorcall, no pybind11 on the call path) holding one launch's
// fixed parts; each call copies the packed parameters, writes the per-call values into
// their slots and calls cuLaunchKernel.
#include "launch_plan.hpp"
#include "heap_type.hpp"

#include <structmember.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace pgk {
namespace {

constexpr size_t kMaxParams = 4096;  // cuLaunchKernel's parameter limit on every arch

void (*g_translate)() = nullptr;
PyTypeObject* g_plan_type = nullptr;

struct PlanObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    LaunchPlanSpec* spec;
};

size_t code_size(char code) {
    switch (code) {
        case '?': case 'b': case 'B': return 1;
        case 'h': case 'H': return 2;
        case 'i': case 'I': case 'f': return 4;
        case 'q': case 'Q': case 'd': case 'P': return 8;
        default: return 0;
    }
}

template <typename T>
void put(unsigned char* params, size_t offset, T value) {
    std::memcpy(params + offset, &value, sizeof value);
}

// Writes `value` into its slot; false with a Python error set when it does not convert.
// Scalars convert as the Python packer does: float() for f/d, bool() for ?, and int()
// wrapped modulo 2^bits for the integer codes (a C cast).
bool pack(unsigned char* params, const PlanSlot& slot, PyObject* value, size_t index) {
    const size_t at = slot.offset;
    if (slot.code == 'P') {
        if (!PyLong_Check(value)) {
            PyErr_Format(PyExc_TypeError,
                         "LaunchPlan value %zu is a device pointer and must be an int, not %.100s",
                         index, Py_TYPE(value)->tp_name);
            return false;
        }
        const unsigned long long ptr = PyLong_AsUnsignedLongLong(value);
        if (ptr == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
        put(params, at, ptr);
        return true;
    }
    if (slot.code == 'f' || slot.code == 'd') {
        const double d = PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) return false;
        if (slot.code == 'f') put(params, at, static_cast<float>(d));
        else put(params, at, d);
        return true;
    }
    if (slot.code == '?') {
        const int truth = PyObject_IsTrue(value);
        if (truth < 0) return false;
        put(params, at, static_cast<unsigned char>(truth));
        return true;
    }
    unsigned long long bits = 0;
    if (PyLong_Check(value)) {
        bits = PyLong_AsUnsignedLongLongMask(value);
    } else {
        PyObject* as_int = PyNumber_Long(value);
        if (as_int == nullptr) return false;
        bits = PyLong_AsUnsignedLongLongMask(as_int);
        Py_DECREF(as_int);
    }
    if (bits == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
    switch (code_size(slot.code)) {
        case 1: put(params, at, static_cast<uint8_t>(bits)); break;
        case 2: put(params, at, static_cast<uint16_t>(bits)); break;
        case 4: put(params, at, static_cast<uint32_t>(bits)); break;
        default: put(params, at, static_cast<uint64_t>(bits)); break;
    }
    return true;
}

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    const LaunchPlanSpec& plan = *reinterpret_cast<PlanObject*>(self)->spec;
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_SetString(PyExc_TypeError, "LaunchPlan takes no keyword arguments");
        return nullptr;
    }
    const size_t nvalues = plan.slots.size();
    if (nargs != static_cast<Py_ssize_t>(nvalues + 1)) {
        PyErr_Format(PyExc_TypeError,
                     "LaunchPlan takes the stream and %zu values (%zd arguments given)", nvalues,
                     nargs);
        return nullptr;
    }
    const unsigned long long stream = PyLong_AsUnsignedLongLong(args[0]);
    if (stream == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
    alignas(16) unsigned char params[kMaxParams];
    std::memcpy(params, plan.params.data(), plan.params.size());
    for (size_t i = 0; i < nvalues; ++i) {
        if (!pack(params, plan.slots[i], args[i + 1], i)) return nullptr;
    }
    try {
        launch(*plan.context, plan.func, plan.grid, plan.block, plan.shared_bytes,
               reinterpret_cast<CUstream>(stream), params, plan.params.size());
    } catch (...) {
        g_translate();
        return nullptr;
    }
    Py_RETURN_NONE;
}

void dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    delete reinterpret_cast<PlanObject*>(self)->spec;
    type->tp_free(self);
    Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyObject* repr(PyObject* self) {
    const LaunchPlanSpec& plan = *reinterpret_cast<PlanObject*>(self)->spec;
    return PyUnicode_FromFormat("<LaunchPlan grid=(%u, %u, %u) block=(%u, %u, %u) %zu values, "
                                "%zu parameter bytes>",
                                plan.grid.x, plan.grid.y, plan.grid.z, plan.block.x,
                                plan.block.y, plan.block.z, plan.slots.size(),
                                plan.params.size());
}

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(PlanObject, vectorcall)),
     READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

const char kDoc[] =
    "A kernel launch with fixed function, grid, block and parameters; plan(stream, *values) "
    "writes each value into its slot of a copy of the parameters and launches on stream. "
    "Made by Context.launch_plan.";

}  // namespace

PyTypeObject* make_launch_plan_type(void (*translate)()) {
    g_translate = translate;
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(&dealloc)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_repr, reinterpret_cast<void*>(&repr)},
        {Py_tp_members, kMembers},
        {Py_tp_doc, const_cast<char*>(kDoc)},
        {0, nullptr},
    };
    // made by Context.launch_plan only
    g_plan_type = make_heap_type("pygpukit_cuda._native.LaunchPlan", sizeof(PlanObject), slots,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL);
    return g_plan_type;
}

const LaunchPlanSpec* launch_plan_spec(PyObject* obj) {
    if (g_plan_type == nullptr || Py_TYPE(obj) != g_plan_type) return nullptr;
    return reinterpret_cast<PlanObject*>(obj)->spec;
}

PyObject* new_launch_plan(PyTypeObject* type, LaunchPlanSpec spec) {
    if (spec.params.size() > kMaxParams) {
        throw std::invalid_argument("a launch plan's parameters take " +
                                    std::to_string(spec.params.size()) +
                                    " bytes; kernels take at most " + std::to_string(kMaxParams));
    }
    for (const PlanSlot& slot : spec.slots) {
        const size_t size = code_size(slot.code);
        if (size == 0) {
            throw std::invalid_argument(std::string("unknown launch plan slot code '") +
                                        slot.code + "' (P for a pointer, or ?bBhHiIqQfd)");
        }
        if (slot.offset + size > spec.params.size() || slot.offset % size != 0) {
            throw std::invalid_argument(
                "launch plan slot at byte " + std::to_string(slot.offset) + " ('" + slot.code +
                "') does not fit aligned in " + std::to_string(spec.params.size()) +
                " parameter bytes");
        }
    }
    PyObject* self = PyType_GenericAlloc(type, 0);
    if (self == nullptr) return nullptr;
    auto* obj = reinterpret_cast<PlanObject*>(self);
    obj->vectorcall = &call;
    obj->spec = new LaunchPlanSpec(std::move(spec));
    return self;
}

}  // namespace pgk
