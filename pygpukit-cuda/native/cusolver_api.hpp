// cuSOLVER (dense), opened with dlopen at run time: the entry points we call, a handle per
// context, and batched factorizations of column-major matrices on a given stream.
#pragma once

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "context.hpp"

namespace pgk {

using SolverHandle = void*;
using SolverParams = void*;
using SolverStatus = int;
using i64 = int64_t;

// X(name, return, params): every cuSOLVER entry point we call. The 64-bit generic API
// (cusolverDnX*) takes cudaDataType codes, so one declaration serves all four dtypes;
// orgqr/ungqr have no generic form and are declared per type.
#define PGK_SOLVER_GEN(X)                                                                    \
    X(cusolverGetVersion, SolverStatus, (int*))                                              \
    X(cusolverDnCreate, SolverStatus, (SolverHandle*))                                       \
    X(cusolverDnDestroy, SolverStatus, (SolverHandle))                                       \
    X(cusolverDnSetStream, SolverStatus, (SolverHandle, CUstream))                           \
    X(cusolverDnCreateParams, SolverStatus, (SolverParams*))                                 \
    X(cusolverDnDestroyParams, SolverStatus, (SolverParams))                                 \
    X(cusolverDnXpotrf_bufferSize, SolverStatus,                                             \
      (SolverHandle, SolverParams, int, i64, int, const void*, i64, int, size_t*, size_t*))  \
    X(cusolverDnXpotrf, SolverStatus,                                                        \
      (SolverHandle, SolverParams, int, i64, int, void*, i64, int, void*, size_t, void*,     \
       size_t, int*))                                                                        \
    X(cusolverDnXgetrf_bufferSize, SolverStatus,                                             \
      (SolverHandle, SolverParams, i64, i64, int, const void*, i64, int, size_t*, size_t*))  \
    X(cusolverDnXgetrf, SolverStatus,                                                        \
      (SolverHandle, SolverParams, i64, i64, int, void*, i64, i64*, int, void*, size_t,      \
       void*, size_t, int*))                                                                 \
    X(cusolverDnXgetrs, SolverStatus,                                                        \
      (SolverHandle, SolverParams, int, i64, i64, int, const void*, i64, const i64*, int,    \
       void*, i64, int*))                                                                    \
    X(cusolverDnXsyevd_bufferSize, SolverStatus,                                             \
      (SolverHandle, SolverParams, int, int, i64, int, const void*, i64, int, const void*,   \
       int, size_t*, size_t*))                                                               \
    X(cusolverDnXsyevd, SolverStatus,                                                        \
      (SolverHandle, SolverParams, int, int, i64, int, void*, i64, int, void*, int, void*,   \
       size_t, void*, size_t, int*))                                                         \
    X(cusolverDnXgeqrf_bufferSize, SolverStatus,                                             \
      (SolverHandle, SolverParams, i64, i64, int, const void*, i64, int, const void*, int,   \
       size_t*, size_t*))                                                                    \
    X(cusolverDnXgeqrf, SolverStatus,                                                        \
      (SolverHandle, SolverParams, i64, i64, int, void*, i64, int, void*, int, void*,        \
       size_t, void*, size_t, int*))                                                         \
    X(cusolverDnXgesvd_bufferSize, SolverStatus,                                             \
      (SolverHandle, SolverParams, signed char, signed char, i64, i64, int, const void*,     \
       i64, int, const void*, int, const void*, i64, int, const void*, i64, int, size_t*,    \
       size_t*))                                                                             \
    X(cusolverDnXgesvd, SolverStatus,                                                        \
      (SolverHandle, SolverParams, signed char, signed char, i64, i64, int, void*, i64, int, \
       void*, int, void*, i64, int, void*, i64, int, void*, size_t, void*, size_t, int*))

// orgqr (real) / ungqr (complex): (handle, m, n, k, A, lda, tau, [work, lwork,] info)
#define PGK_SOLVER_QR(X)                                                                     \
    X(cusolverDnSorgqr_bufferSize, SolverStatus,                                             \
      (SolverHandle, int, int, int, const void*, int, const void*, int*))                    \
    X(cusolverDnDorgqr_bufferSize, SolverStatus,                                             \
      (SolverHandle, int, int, int, const void*, int, const void*, int*))                    \
    X(cusolverDnCungqr_bufferSize, SolverStatus,                                             \
      (SolverHandle, int, int, int, const void*, int, const void*, int*))                    \
    X(cusolverDnZungqr_bufferSize, SolverStatus,                                             \
      (SolverHandle, int, int, int, const void*, int, const void*, int*))                    \
    X(cusolverDnSorgqr, SolverStatus,                                                        \
      (SolverHandle, int, int, int, void*, int, const void*, void*, int, int*))              \
    X(cusolverDnDorgqr, SolverStatus,                                                        \
      (SolverHandle, int, int, int, void*, int, const void*, void*, int, int*))              \
    X(cusolverDnCungqr, SolverStatus,                                                        \
      (SolverHandle, int, int, int, void*, int, const void*, void*, int, int*))              \
    X(cusolverDnZungqr, SolverStatus,                                                        \
      (SolverHandle, int, int, int, void*, int, const void*, void*, int, int*))

// potrfBatched: one call for a whole batch of n x n matrices (an array of device pointers)
#define PGK_SOLVER_BATCHED(X)                                                                \
    X(cusolverDnSpotrfBatched, SolverStatus, (SolverHandle, int, int, void**, int, int*, int)) \
    X(cusolverDnDpotrfBatched, SolverStatus, (SolverHandle, int, int, void**, int, int*, int)) \
    X(cusolverDnCpotrfBatched, SolverStatus, (SolverHandle, int, int, void**, int, int*, int)) \
    X(cusolverDnZpotrfBatched, SolverStatus, (SolverHandle, int, int, void**, int, int*, int))

#define PGK_SOLVER_FUNCTIONS(X) PGK_SOLVER_GEN(X) PGK_SOLVER_QR(X) PGK_SOLVER_BATCHED(X)

struct SolverApi {
#define PGK_SOLVER_DECLARE(name, ret, params) ret(*name) params = nullptr;
    PGK_SOLVER_FUNCTIONS(PGK_SOLVER_DECLARE)
#undef PGK_SOLVER_DECLARE
};

// A failed cuSOLVER call; the message names the call and the status.
class SolverError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A batch of column-major matrices: the first element's device address and the distance
// between consecutive matrices, in elements.
struct Batch {
    uint64_t ptr = 0;
    i64 stride = 0;
};

// One opened libcusolver. Every operation runs `count` problems one after another on
// `stream` (the 64-bit API has no batched forms of these), sharing one device workspace
// of `ws_bytes` at `ws` (sized by the matching *_workspace call) and writing each
// problem's LAPACK info into the int32 array `info` (count entries, on the device).
// `dtype` is a cudaDataType code: 0 float32, 1 float64, 4 complex64, 5 complex128.
// A *_workspace call takes the operation's own arrays (cuSOLVER may look at them).
class Cusolver {
public:
    explicit Cusolver(const std::string& path);
    ~Cusolver();
    Cusolver(const Cusolver&) = delete;
    Cusolver& operator=(const Cusolver&) = delete;

    const std::string& path() const { return path_; }
    int version() const;

    // potrf in place: the Cholesky factor in the `upper` (else lower) triangle.
    size_t potrf_workspace(const Context& ctx, int dtype, bool upper, i64 n, Batch a);
    void potrf(const Context& ctx, CUstream stream, int dtype, bool upper, i64 n, Batch a,
               i64 count, uint64_t ws, size_t ws_bytes, uint64_t info);
    // The same for a whole batch in one call: `pointers` is a device array of `count`
    // matrix addresses (cuSOLVER's potrfBatched; n must fit 32 bits).
    void potrf_batched(const Context& ctx, CUstream stream, int dtype, bool upper, i64 n,
                       uint64_t pointers, i64 count, uint64_t info);
    // getrf in place (pivots: int64, n per problem, stride n), then getrs of nrhs columns.
    size_t getrf_workspace(const Context& ctx, int dtype, i64 n, Batch a);
    void getrf(const Context& ctx, CUstream stream, int dtype, i64 n, Batch a, Batch ipiv,
               i64 count, uint64_t ws, size_t ws_bytes, uint64_t info);
    void getrs(const Context& ctx, CUstream stream, int dtype, int trans, i64 n, i64 nrhs,
               Batch a, Batch ipiv, Batch b, i64 count, uint64_t info);
    // syevd: eigenvalues (real dtype) into w, eigenvectors over a when `vectors`.
    size_t syevd_workspace(const Context& ctx, int dtype, bool vectors, bool upper, i64 n,
                           Batch a, Batch w);
    void syevd(const Context& ctx, CUstream stream, int dtype, bool vectors, bool upper, i64 n,
               Batch a, Batch w, i64 count, uint64_t ws, size_t ws_bytes, uint64_t info);
    // geqrf of m x n (leading dimension m) in place, tau min(m, n) per problem; orgqr
    // then forms the first `cols` columns of Q from k reflectors (A's ld is m).
    size_t geqrf_workspace(const Context& ctx, int dtype, i64 m, i64 n, Batch a, Batch tau);
    void geqrf(const Context& ctx, CUstream stream, int dtype, i64 m, i64 n, Batch a, Batch tau,
               i64 count, uint64_t ws, size_t ws_bytes, uint64_t info);
    size_t orgqr_workspace(const Context& ctx, int dtype, i64 m, i64 cols, i64 k, Batch a,
                           Batch tau);
    void orgqr(const Context& ctx, CUstream stream, int dtype, i64 m, i64 cols, i64 k, Batch a,
               Batch tau, i64 count, uint64_t ws, size_t ws_bytes, uint64_t info);
    // gesvd of m x n, m >= n (A overwritten): job 'A', 'S' or 'N' for both U and VT; U has
    // ld m, VT ld n (its rows: n for 'A', min(m, n) = n for 'S').
    size_t gesvd_workspace(const Context& ctx, int dtype, signed char job, i64 m, i64 n, Batch a,
                           Batch s, Batch u, Batch vt);
    void gesvd(const Context& ctx, CUstream stream, int dtype, signed char job, i64 m, i64 n,
               Batch a, Batch s, Batch u, Batch vt, i64 count, uint64_t ws, size_t ws_bytes,
               uint64_t info);

private:
    struct Bound {
        SolverHandle handle;
        SolverParams params;
    };
    // The context's handle (created on first use), made current and bound to `stream`.
    Bound bind(const Context& ctx, CUstream stream);
    void check(SolverStatus status, const char* call) const;

    std::string path_;
    void* lib_ = nullptr;
    SolverApi api_;
    std::mutex mutex_;  // held for a whole operation: a handle has one stream at a time
    std::unordered_map<int, Bound> handles_;  // by device ordinal
};

}  // namespace pgk
