// MatmulPlan (see matmul_plan.hpp): a plain CPython type over the plan's native state.
#include "matmul_plan.hpp"
#include "heap_type.hpp"

#include <structmember.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver_api.hpp"
#include "launch_gate.hpp"

namespace pgk {
namespace {

// cublasLt.h's attribute numbers and types (stable across 11.x-13.x).
constexpr int kDescTransA = 3, kDescTransB = 4;
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr int kPrefAlignA = 5, kPrefAlignB = 6, kPrefAlignC = 7, kPrefAlignD = 8;
constexpr int kScale64F = 1, kScaleC64F = 5;  // CUDA_R_64F, CUDA_C_64F

void (*g_translate)() = nullptr;
PyTypeObject* g_type = nullptr;

// Everything one product needs; the descriptors are destroyed with it.
struct PlanState {
    std::shared_ptr<CublasLt> lt;
    std::shared_ptr<Context> ctx;
    LtHandle handle = nullptr;
    void* desc = nullptr;
    void* la = nullptr;
    void* lb = nullptr;
    void* lc = nullptr;
    std::vector<LtAlgo> algos;     // usable candidates, the heuristic's order
    std::vector<size_t> ws_sizes;  // workspace each candidate needs
    size_t choice = 0;
    // {real, imaginary}: a complex scale type (CUDA_C_32F/64F) reads both, a real one the first
    double alpha64[2] = {1.0, 0.0}, beta64[2] = {0.0, 0.0};
    float alpha32[2] = {1.0f, 0.0f}, beta32[2] = {0.0f, 0.0f};
    bool scale64 = false;

    ~PlanState() {
        if (!driver_loaded()) return;  // interpreter exit after the driver went away
        const LtApi& api = lt->api();
        if (desc != nullptr) api.cublasLtMatmulDescDestroy(desc);
        for (void* l : {la, lb, lc}) {
            if (l != nullptr) api.cublasLtMatrixLayoutDestroy(l);
        }
    }

    void run(size_t i, CUstream stream, uint64_t a, uint64_t b, uint64_t d, uint64_t ws) const {
        if (ws_sizes[i] != 0 && ws == 0) {
            throw std::invalid_argument("this product needs " + std::to_string(ws_sizes[i]) +
                                        " bytes of workspace and got none");
        }
        ctx->make_current();
        LaunchGuard gate(stream);
        const void* alpha = scale64 ? static_cast<const void*>(alpha64) : alpha32;
        const void* beta = scale64 ? static_cast<const void*>(beta64) : beta32;
        auto* pa = reinterpret_cast<const void*>(a);
        auto* pb = reinterpret_cast<const void*>(b);
        auto* pd = reinterpret_cast<void*>(d);
        lt->check(lt->api().cublasLtMatmul(handle, desc, alpha, pa, la, pb, lb, beta, pd, lc, pd,
                                           lc, &algos[i], reinterpret_cast<void*>(ws),
                                           ws_sizes[i], stream),
                  "cublasLtMatmul");
    }
};

struct PlanObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PlanState* state;
};

PlanState& state_of(PyObject* self) { return *reinterpret_cast<PlanObject*>(self)->state; }

bool read_u64(PyObject* value, uint64_t& out, const char* what) {
    out = PyLong_AsUnsignedLongLong(value);
    if (out == static_cast<uint64_t>(-1) && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "MatmulPlan: %s must be a non-negative int", what);
        return false;
    }
    return true;
}

// plan(stream, a, b, d[, workspace]) with the chosen algorithm.
PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((kwnames != nullptr && PyTuple_GET_SIZE(kwnames)) || nargs < 4 || nargs > 5) {
        PyErr_SetString(PyExc_TypeError,
                        "MatmulPlan takes (stream, a_ptr, b_ptr, d_ptr[, workspace_ptr])");
        return nullptr;
    }
    uint64_t v[5] = {0, 0, 0, 0, 0};
    static const char* names[] = {"stream", "a_ptr", "b_ptr", "d_ptr", "workspace_ptr"};
    for (Py_ssize_t i = 0; i < nargs; ++i) {
        if (!read_u64(args[i], v[i], names[i])) return nullptr;
    }
    const PlanState& st = state_of(self);
    try {
        st.run(st.choice, reinterpret_cast<CUstream>(v[0]), v[1], v[2], v[3], v[4]);
    } catch (...) {
        g_translate();
        return nullptr;
    }
    Py_RETURN_NONE;
}

// plan.run(index, stream, a, b, d, workspace): one candidate (the trial times them).
PyObject* run_candidate(PyObject* self, PyObject* args) {
    unsigned long long i = 0, stream = 0, a = 0, b = 0, d = 0, ws = 0;
    if (!PyArg_ParseTuple(args, "KKKKKK", &i, &stream, &a, &b, &d, &ws)) return nullptr;
    const PlanState& st = state_of(self);
    if (i >= st.algos.size()) {
        PyErr_Format(PyExc_IndexError, "candidate %llu of %zu", i, st.algos.size());
        return nullptr;
    }
    try {
        st.run(i, reinterpret_cast<CUstream>(stream), a, b, d, ws);
    } catch (...) {
        g_translate();
        return nullptr;
    }
    Py_RETURN_NONE;
}

PyObject* choose(PyObject* self, PyObject* arg) {
    const unsigned long long i = PyLong_AsUnsignedLongLong(arg);
    if (i == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
    PlanState& st = state_of(self);
    if (i >= st.algos.size()) {
        PyErr_Format(PyExc_IndexError, "candidate %llu of %zu", i, st.algos.size());
        return nullptr;
    }
    st.choice = static_cast<size_t>(i);
    Py_RETURN_NONE;
}

PyObject* get_workspace_bytes(PyObject* self, void*) {
    const PlanState& st = state_of(self);
    return PyLong_FromSize_t(st.ws_sizes[st.choice]);
}

PyObject* get_choice(PyObject* self, void*) { return PyLong_FromSize_t(state_of(self).choice); }

PyObject* get_workspace_sizes(PyObject* self, void*) {
    const PlanState& st = state_of(self);
    PyObject* out = PyTuple_New(static_cast<Py_ssize_t>(st.ws_sizes.size()));
    if (out == nullptr) return nullptr;
    for (size_t i = 0; i < st.ws_sizes.size(); ++i) {
        PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), PyLong_FromSize_t(st.ws_sizes[i]));
    }
    return out;
}

void dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    delete reinterpret_cast<PlanObject*>(self)->state;
    type->tp_free(self);
    Py_DECREF(type);
}

PyObject* repr(PyObject* self) {
    const PlanState& st = state_of(self);
    return PyUnicode_FromFormat("<MatmulPlan candidate %zu of %zu, %zu workspace bytes>",
                                st.choice, st.algos.size(), st.ws_sizes[st.choice]);
}

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(PlanObject, vectorcall)),
     READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyMethodDef kMethods[] = {
    {"run", run_candidate, METH_VARARGS,
     "run(index, stream, a_ptr, b_ptr, d_ptr, workspace_ptr): one candidate algorithm"},
    {"choose", choose, METH_O, "choose(index): the candidate later calls use"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kGetSet[] = {
    {"workspace_bytes", get_workspace_bytes, nullptr,
     const_cast<char*>("workspace the chosen candidate needs"), nullptr},
    {"choice", get_choice, nullptr, const_cast<char*>("index of the chosen candidate"), nullptr},
    {"workspace_sizes", get_workspace_sizes, nullptr,
     const_cast<char*>("workspace of every candidate, the heuristic's order"), nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

template <typename T>
void set_attr(const CublasLt& lt, LtStatus (*fn)(void*, int, const void*, size_t), void* obj,
              int attr, T value, const char* what) {
    lt.check(fn(obj, attr, &value, sizeof value), what);
}

void* make_layout(const CublasLt& lt, int type, uint64_t rows, uint64_t cols, int64_t ld,
                  int batch, int64_t stride) {
    void* layout = nullptr;
    lt.check(lt.api().cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld),
             "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
        auto set = lt.api().cublasLtMatrixLayoutSetAttribute;
        try {
            set_attr(lt, set, layout, kLayoutBatchCount, static_cast<int32_t>(batch),
                     "batch count");
            set_attr(lt, set, layout, kLayoutBatchStride, stride, "batch stride");
        } catch (...) {
            lt.api().cublasLtMatrixLayoutDestroy(layout);
            throw;
        }
    }
    return layout;
}

// The heuristic's usable candidates for `p` into st.algos and st.ws_sizes, best first.
void heuristic_candidates(const CublasLt& lt, const LtProblem& p, PlanState& st) {
    const LtApi& api = lt.api();
    void* pref = nullptr;
    lt.check(api.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    std::vector<LtHeuristicResult> results(static_cast<size_t>(std::max(1, p.max_candidates)));
    int count = 0;
    LtStatus status = 0;
    try {
        auto set = api.cublasLtMatmulPreferenceSetAttribute;
        set_attr(lt, set, pref, kPrefMaxWorkspace, p.max_workspace, "workspace preference");
        set_attr(lt, set, pref, kPrefAlignA, p.align_a, "alignment preference");
        set_attr(lt, set, pref, kPrefAlignB, p.align_b, "alignment preference");
        set_attr(lt, set, pref, kPrefAlignC, p.align_c, "alignment preference");
        set_attr(lt, set, pref, kPrefAlignD, p.align_c, "alignment preference");
        status = api.cublasLtMatmulAlgoGetHeuristic(st.handle, st.desc, st.la, st.lb, st.lc,
                                                     st.lc, pref,
                                                     static_cast<int>(results.size()),
                                                     results.data(), &count);
    } catch (...) {
        api.cublasLtMatmulPreferenceDestroy(pref);
        throw;
    }
    api.cublasLtMatmulPreferenceDestroy(pref);
    if (status == 0) {
        for (int i = 0; i < std::min<int>(count, static_cast<int>(results.size())); ++i) {
            if (results[i].state == 0 && results[i].workspace_size <= p.max_workspace) {
                st.algos.push_back(results[i].algo);
                st.ws_sizes.push_back(results[i].workspace_size);
            }
        }
    }
}

}  // namespace

PyTypeObject* make_matmul_plan_type(void (*translate)()) {
    g_translate = translate;
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(&dealloc)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_repr, reinterpret_cast<void*>(&repr)},
        {Py_tp_members, kMembers},
        {Py_tp_methods, kMethods},
        {Py_tp_getset, kGetSet},
        {Py_tp_doc, const_cast<char*>("One cuBLASLt product, planned once: plan(stream, a_ptr, "
                                      "b_ptr, d_ptr[, workspace_ptr]). Made by CublasLt.plan.")},
        {0, nullptr},
    };
    g_type = make_heap_type("pygpukit_cuda._native.MatmulPlan", sizeof(PlanObject), slots,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL);
    return g_type;
}

PyObject* new_matmul_plan(std::shared_ptr<CublasLt> lt_ptr, std::shared_ptr<Context> ctx,
                          const LtProblem& p, PyObject* like) {
    if (like != nullptr && Py_TYPE(like) != g_type) {
        PyErr_Format(PyExc_TypeError, "like must be a MatmulPlan, not %.100s",
                     Py_TYPE(like)->tp_name);
        return nullptr;
    }
    const CublasLt& lt = *lt_ptr;
    const LtApi& api = lt.api();
    ctx->make_current();
    auto st = std::make_unique<PlanState>();
    st->lt = lt_ptr;
    st->ctx = ctx;
    st->handle = lt_ptr->handle(*ctx);
    st->scale64 = p.scale_type == kScale64F || p.scale_type == kScaleC64F;
    lt.check(api.cublasLtMatmulDescCreate(&st->desc, p.compute, p.scale_type),
             "cublasLtMatmulDescCreate");
    set_attr(lt, api.cublasLtMatmulDescSetAttribute, st->desc, kDescTransA,
             static_cast<int32_t>(p.a.op), "transa");
    set_attr(lt, api.cublasLtMatmulDescSetAttribute, st->desc, kDescTransB,
             static_cast<int32_t>(p.b.op), "transb");
    st->la = make_layout(lt, p.data_type, p.a.rows, p.a.cols, p.a.ld, p.batch, p.a.batch_stride);
    st->lb = make_layout(lt, p.data_type, p.b.rows, p.b.cols, p.b.ld, p.batch, p.b.batch_stride);
    st->lc = make_layout(lt, p.data_type, p.m, p.n, static_cast<int64_t>(p.m), p.batch,
                         p.c_batch_stride);
    if (like != nullptr) {
        const PlanState& model = state_of(like);
        LtHeuristicResult checked{};
        const LtAlgo& algo = model.algos[model.choice];
        const LtStatus status = api.cublasLtMatmulAlgoCheck(st->handle, st->desc, st->la, st->lb,
                                                            st->lc, st->lc, &algo, &checked);
        if (status == 0 && checked.workspace_size <= p.max_workspace) {
            st->algos.push_back(algo);
            st->ws_sizes.push_back(checked.workspace_size);
        }
    } else {
        heuristic_candidates(lt, p, *st);
    }
    if (st->algos.empty()) Py_RETURN_NONE;  // no algorithm: the caller falls back
    PyObject* self = PyType_GenericAlloc(g_type, 0);
    if (self == nullptr) return nullptr;
    auto* obj = reinterpret_cast<PlanObject*>(self);
    obj->vectorcall = &call;
    obj->state = st.release();
    return self;
}

}  // namespace pgk
