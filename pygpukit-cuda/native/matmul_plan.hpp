// MatmulPlan: one cuBLASLt product with its descriptors, layouts and candidate algorithms
// made once; called from Python through vectorcall as plan(stream, a, b, d, workspace), so a
// repeated product costs one native call and cublasLtMatmul's own time.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>

#include "context.hpp"
#include "cublaslt_api.hpp"

namespace pgk {

// One operand as cuBLASLt sees it (column-major): op (0 N, 1 T), stored rows x cols with
// leading dimension ld, and the element stride between the matrices of a batch.
struct LtOperand {
    int op = 0;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0, batch_stride = 0;
};

// A product D (m x n, column-major, ld m) = op(A) @ op(B), `batch` times.
struct LtProblem {
    int data_type = 0, scale_type = 0, compute = 0;
    LtOperand a, b;
    uint64_t m = 0, n = 0;
    int batch = 1;
    int64_t c_batch_stride = 0;
    uint32_t align_a = 256, align_b = 256, align_c = 256;  // bytes, as the pointers promise
    uint64_t max_workspace = 0;
    int max_candidates = 8;
};

// Makes the MatmulPlan type; `translate` turns the C++ exception being handled into a
// Python error. Call once at import.
PyTypeObject* make_matmul_plan_type(void (*translate)());

// A MatmulPlan for `problem` on `ctx`, or a new reference to None when cuBLASLt offers no
// algorithm for it. With `like` (another MatmulPlan, or nullptr), the plan's one candidate is
// the algorithm `like` runs, when cuBLASLt accepts it for `problem` (else None): a product
// cut into row slices then computes each element as the whole product did. Throws LtError /
// CudaError when a call fails; nullptr with a TypeError when `like` is not a MatmulPlan.
PyObject* new_matmul_plan(std::shared_ptr<CublasLt> lt, std::shared_ptr<Context> ctx,
                          const LtProblem& problem, PyObject* like = nullptr);

}  // namespace pgk
