// FftCall (see fft_call.hpp). Measured reason it exists: a repeated gp.fft.rfft on the stub
// GPU spent about 8 us of Python per call (key, dispatch, layout checks, allocation, stream
// and pool lookups, the plan call), which on the H100 left the 3000 x 400 rfft behind torch's
// although both ran the same 9.65 us cuFFT kernel.
#include "fft_call.hpp"

#include <structmember.h>

#include "array_slots.hpp"
#include "buffer_allocator.hpp"
#include "cufft_api.hpp"
#include "heap_type.hpp"

#include <array>
#include <initializer_list>
#include <utility>

namespace pgk {
namespace {

void (*g_translate)() = nullptr;
PyTypeObject* g_type = nullptr;

// The spec with its own references, and the GPUArray slots found once.
struct State {
    FftCallSpec spec;
    ArraySlots slots;
    explicit State(const FftCallSpec& s) : spec(s) {
        for (PyObject* o : owned()) Py_XINCREF(o);
    }
    ~State() {  // runs with the GIL held
        for (PyObject* o : owned()) Py_XDECREF(o);
    }
    State(const State&) = delete;
    State& operator=(const State&) = delete;

private:
    std::array<PyObject*, 14> owned() const {
        return {spec.array_type, spec.stream_var, spec.in_shape,  spec.in_strides,
                spec.in_dtype,   spec.device,     spec.out_shape, spec.out_strides,
                spec.out_dtype,  spec.allocator,  spec.plan,      spec.copy,
                spec.pre,        spec.post};
    }
};

struct CallObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    // empty once retired; a call holds its own copy, since the pool's slow path may let go
    // of the GIL and another thread may then retire this object
    std::shared_ptr<State>* state;
};

PyObject* not_implemented() { Py_RETURN_NOTIMPLEMENTED; }

// Whether `a` and `b` are the same object or equal; -1 with a Python error set.
int same(PyObject* a, PyObject* b) {
    if (a == b) return 1;
    if (a == nullptr || b == nullptr) return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

// Call `fn(*values)` from C, discarding the result (the last value signed when
// `signed_last`); false with a Python error set.
bool call_python(PyObject* fn, std::initializer_list<unsigned long long> values,
                 bool signed_last = false) {
    PyObject* args[6];
    size_t n = 0;
    bool ok = true;
    for (unsigned long long v : values) {
        args[n] = signed_last && n + 1 == values.size()
                      ? PyLong_FromLongLong(static_cast<long long>(v))
                      : PyLong_FromUnsignedLongLong(v);
        ok = ok && args[n] != nullptr;
        ++n;
    }
    PyObject* r = ok ? PyObject_Vectorcall(fn, args, n, nullptr) : nullptr;
    for (size_t i = 0; i < n; ++i) Py_XDECREF(args[i]);
    Py_XDECREF(r);
    return r != nullptr;
}

// A pool block of `nbytes` for `stream` (nullptr with a Python error set) and its address.
PyObject* block(PyObject* allocator, unsigned long long nbytes, unsigned long long stream,
                unsigned long long* ptr) {
    PyObject* b = allocate_buffer(allocator, nbytes, stream);
    if (b != nullptr) device_buffer_address(b, ptr);
    return b;
}

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* obj = reinterpret_cast<CallObject*>(self);
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != nullptr && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "FftCall takes one array");
        return nullptr;
    }
    const std::shared_ptr<State> keep = *obj->state;
    if (!keep) Py_RETURN_NONE;  // retired: never again
    const State& st = *keep;
    const FftCallSpec& sp = st.spec;
    const ArraySlots& sl = st.slots;
    PyObject* x = args[0];
    if (Py_TYPE(x) != reinterpret_cast<PyTypeObject*>(sp.array_type)) return not_implemented();
    if (slot_get(x, sl.dtype) != sp.in_dtype) return not_implemented();
    for (auto [got, want] : {std::pair{slot_get(x, sl.shape), sp.in_shape},
                             std::pair{slot_get(x, sl.strides), sp.in_strides},
                             std::pair{slot_get(x, sl.device), sp.device}}) {
        const int eq = same(got, want);
        if (eq < 0) return nullptr;
        if (eq == 0) return not_implemented();
    }
    unsigned long long in = 0;
    PyObject* offset = slot_get(x, sl.offset);
    if (offset == nullptr || !device_buffer_address(slot_get(x, sl.buffer), &in)) {
        return not_implemented();  // a foreign (adopted) buffer: the Python path
    }
    const long long off = PyLong_AsLongLong(offset);
    if (off == -1 && PyErr_Occurred()) return nullptr;
    in += static_cast<unsigned long long>(off);
    if (in % sp.in_align != 0) return not_implemented();  // cuFFT refuses it: copy first
    unsigned long long stream = 0;
    long long stream_device = -1;
    bool capturing = false;
    if (!current_stream(sp.stream_var, &stream, &stream_device, &capturing)) return nullptr;
    if (capturing || (stream_device >= 0 && stream_device != sp.device_index)) {
        return not_implemented();  // the graph's pool, or the error naming both devices
    }
    PyObject* allocator = sp.allocator;
    unsigned long long out = 0, src = in, work = 0;
    PyObject* result = nullptr;
    PyObject* copy_block = nullptr;
    PyObject* work_block = nullptr;
    PyObject* out_buffer = block(allocator, sp.out_nbytes, stream, &out);
    bool ok = out_buffer != nullptr;
    if (ok && sp.copy_bytes != 0) {
        copy_block = block(allocator, sp.copy_bytes, stream, &src);
        ok = copy_block != nullptr &&
             (sp.pre != nullptr ? call_python(sp.pre, {stream, src, in})
                                : call_python(sp.copy, {src, in, sp.copy_bytes, stream}));
    }
    if (ok && sp.work_bytes != 0) {
        work_block = block(allocator, sp.work_bytes, stream, &work);
        ok = work_block != nullptr;
    }
    if (ok) {
        if (sp.native_plan) {
            try {
                sp.native_plan->execute(reinterpret_cast<CUstream>(stream), src, out, work,
                                        sp.direction);
            } catch (...) {
                g_translate();
                ok = false;
            }
        } else if (sp.kernel_plan) {
            ok = call_python(sp.plan, {stream, src, out});
        } else {
            ok = call_python(sp.plan, {stream, src, out, work,
                                       static_cast<unsigned long long>(
                                           static_cast<long long>(sp.direction))},
                             true);
        }
    }
    if (ok && sp.post != nullptr) ok = call_python(sp.post, {stream, out});
    // the scratch blocks go back to the stream's cache: later work on it is ordered after
    Py_XDECREF(work_block);
    Py_XDECREF(copy_block);
    if (ok) {
        PyObject* strides = sp.out_strides;
        Py_INCREF(strides);
        result = new_array(reinterpret_cast<PyTypeObject*>(sp.array_type), sl, out_buffer,
                           sp.out_shape, strides, sp.out_dtype, sp.device);
    } else {
        Py_XDECREF(out_buffer);
    }
    return result;
}

PyObject* retire(PyObject* self, PyObject*) {
    reinterpret_cast<CallObject*>(self)->state->reset();
    Py_RETURN_NONE;
}

PyObject* live(PyObject* self, void*) {
    return PyBool_FromLong(*reinterpret_cast<CallObject*>(self)->state != nullptr);
}

void dealloc(PyObject* self) {
    auto* obj = reinterpret_cast<CallObject*>(self);
    PyTypeObject* type = Py_TYPE(self);
    delete obj->state;
    type->tp_free(self);
    Py_DECREF(type);
}

PyMethodDef kMethods[] = {
    {"retire", retire, METH_NOARGS,
     "Let go of the plan and everything else held; later calls answer None."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kGetSet[] = {
    {"live", live, nullptr, "False once retired.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CallObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

PyTypeObject* make_fft_call_type(void (*translate)()) {
    g_translate = translate;
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(&dealloc)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_methods, kMethods},
        {Py_tp_members, kMembers},
        {Py_tp_getset, kGetSet},
        {Py_tp_doc, const_cast<char*>(
                        "run(x) -> the transform of x in a new GPUArray; NotImplemented when x "
                        "is not the layout it was made for (or the call cannot run here); None "
                        "once retired. Made by fft_call.")},
        {0, nullptr},
    };
    g_type = make_heap_type("pygpukit_cuda._native.FftCall", sizeof(CallObject), slots,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL);
    return g_type;
}

PyObject* new_fft_call(const FftCallSpec& spec) {
    if (spec.array_type == nullptr || !PyType_Check(spec.array_type)) {
        PyErr_SetString(PyExc_TypeError, "fft_call wants the GPUArray class");
        return nullptr;
    }
    if (spec.stream_var == nullptr || !PyContextVar_CheckExact(spec.stream_var)) {
        PyErr_SetString(PyExc_TypeError, "fft_call wants the current-stream ContextVar");
        return nullptr;
    }
    if (spec.allocator == nullptr || Py_TYPE(spec.allocator) != buffer_allocator_type()) {
        PyErr_SetString(PyExc_TypeError, "fft_call wants the device's BufferAllocator");
        return nullptr;
    }
    if (!spec.native_plan && (spec.plan == nullptr || !PyCallable_Check(spec.plan))) {
        PyErr_SetString(PyExc_TypeError, "fft_call wants an FftPlan or a callable plan");
        return nullptr;
    }
    if (spec.copy_bytes != 0 && spec.copy == nullptr && spec.pre == nullptr) {
        PyErr_SetString(PyExc_ValueError, "fft_call: a private input copy needs copy or pre");
        return nullptr;
    }
    if (spec.out_nbytes == 0 || spec.in_align == 0) {
        PyErr_SetString(PyExc_ValueError, "fft_call wants a non-empty output and an alignment");
        return nullptr;
    }
    for (PyObject* o : {spec.in_shape, spec.in_strides, spec.out_shape, spec.out_strides}) {
        if (o == nullptr || !PyTuple_CheckExact(o)) {
            PyErr_SetString(PyExc_TypeError, "fft_call wants shapes and strides as tuples");
            return nullptr;
        }
    }
    ArraySlots slots;
    if (!find_array_slots(reinterpret_cast<PyTypeObject*>(spec.array_type), &slots)) {
        return nullptr;
    }
    PyObject* obj = PyType_GenericAlloc(g_type, 0);
    if (obj == nullptr) return nullptr;
    auto* c = reinterpret_cast<CallObject*>(obj);
    c->vectorcall = &call;
    auto state = std::make_shared<State>(spec);
    state->slots = slots;
    c->state = new std::shared_ptr<State>(std::move(state));
    return obj;
}

}  // namespace pgk
