// Opening libcusolver with dlopen, one handle per context, and the batched factorizations.
#include "cusolver_api.hpp"

#include <dlfcn.h>

#include <vector>

#include "driver_api.hpp"
#include "launch_gate.hpp"

namespace pgk {
namespace {

// cublasFillMode_t, cublasOperation_t and cusolverEigMode_t of the CUDA headers.
constexpr int kFillLower = 0, kFillUpper = 1;
constexpr int kEigNoVector = 0, kEigVector = 1;

size_t element_size(int dtype) {
    switch (dtype) {
        case 0: return 4;   // CUDA_R_32F
        case 1: return 8;   // CUDA_R_64F
        case 4: return 8;   // CUDA_C_32F
        case 5: return 16;  // CUDA_C_64F
        default: throw std::invalid_argument("cuSOLVER: unsupported data type " +
                                             std::to_string(dtype));
    }
}

int real_type(int dtype) { return dtype == 4 ? 0 : dtype == 5 ? 1 : dtype; }

void* at(Batch b, i64 i, size_t size) {
    return reinterpret_cast<void*>(b.ptr + static_cast<uint64_t>(i * b.stride) * size);
}

int* info_at(uint64_t info, i64 i) { return reinterpret_cast<int*>(info) + i; }

// The GIL is let go while a batch runs (gesvd and syevd wait on the device inside
// cuSOLVER): other Python threads go on meanwhile. Taken after the launch gate (which
// needs it) and before the library's mutex, so no thread waits on one holding the other.
class GilRelease {
public:
    GilRelease() : state_(PyEval_SaveThread()) {}
    ~GilRelease() { PyEval_RestoreThread(state_); }
    GilRelease(const GilRelease&) = delete;
    GilRelease& operator=(const GilRelease&) = delete;

private:
    PyThreadState* state_;
};

void need(size_t wanted, size_t given, const char* call) {
    if (wanted > given) {
        throw std::invalid_argument(std::string(call) + " needs " + std::to_string(wanted) +
                                    " bytes of workspace, got " + std::to_string(given));
    }
}

}  // namespace

Cusolver::Cusolver(const std::string& path) : path_(path) {
    lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
        const char* why = dlerror();
        throw SolverError(path + ": " + (why ? why : "dlopen failed"));
    }
#define PGK_SOLVER_RESOLVE(name, ret, params)                                               \
    api_.name = reinterpret_cast<ret(*) params>(dlsym(lib_, #name));                        \
    if (api_.name == nullptr) {                                                              \
        dlclose(lib_);                                                                       \
        lib_ = nullptr;                                                                      \
        throw SolverError(path + ": no symbol " #name " (not a cuSOLVER 11.1+ library?)");   \
    }
    PGK_SOLVER_FUNCTIONS(PGK_SOLVER_RESOLVE)
#undef PGK_SOLVER_RESOLVE
}

Cusolver::~Cusolver() {
    // As with cuBLASLt: handles go only while the driver is still loaded; the library
    // stays mapped.
    if (driver_loaded()) {
        for (auto& [ordinal, b] : handles_) {
            api_.cusolverDnDestroyParams(b.params);
            api_.cusolverDnDestroy(b.handle);
        }
    }
}

int Cusolver::version() const {
    int v = 0;
    check(api_.cusolverGetVersion(&v), "cusolverGetVersion");
    return v;
}

void Cusolver::check(SolverStatus status, const char* call) const {
    if (status == 0) return;
    // cusolverStatus_t has no string function; the common codes by name
    static const char* names[] = {
        "SUCCESS",       "NOT_INITIALIZED",  "ALLOC_FAILED",   "INVALID_VALUE",
        "ARCH_MISMATCH", "MAPPING_ERROR",    "EXECUTION_FAILED", "INTERNAL_ERROR",
        "MATRIX_TYPE_NOT_SUPPORTED", "NOT_SUPPORTED"};
    const std::string what = status >= 0 && status < 10
                                 ? std::string("CUSOLVER_STATUS_") + names[status]
                                 : "status " + std::to_string(status);
    throw SolverError(std::string(call) + " failed: " + what);
}

Cusolver::Bound Cusolver::bind(const Context& ctx, CUstream stream) {
    ctx.make_current();
    auto it = handles_.find(ctx.ordinal());
    if (it == handles_.end()) {
        Bound b{nullptr, nullptr};
        check(api_.cusolverDnCreate(&b.handle), "cusolverDnCreate");
        if (api_.cusolverDnCreateParams(&b.params) != 0) {
            api_.cusolverDnDestroy(b.handle);
            throw SolverError("cusolverDnCreateParams failed");
        }
        it = handles_.emplace(ctx.ordinal(), b).first;
    }
    check(api_.cusolverDnSetStream(it->second.handle, stream), "cusolverDnSetStream");
    return it->second;
}

// -- Cholesky ------------------------------------------------------------------------
size_t Cusolver::potrf_workspace(const Context& ctx, int dtype, bool upper, i64 n, Batch a) {
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, nullptr);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXpotrf_bufferSize(b.handle, b.params, upper ? kFillUpper : kFillLower,
                                           n, dtype, at(a, 0, 1), n, dtype, &dev, &host),
          "cusolverDnXpotrf_bufferSize");
    return dev;
}

void Cusolver::potrf(const Context& ctx, CUstream stream, int dtype, bool upper, i64 n, Batch a,
                     i64 count, uint64_t ws, size_t ws_bytes, uint64_t info) {
    const size_t size = element_size(dtype);
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    const int uplo = upper ? kFillUpper : kFillLower;
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXpotrf_bufferSize(b.handle, b.params, uplo, n, dtype, at(a, 0, size),
                                           n, dtype, &dev, &host),
          "cusolverDnXpotrf_bufferSize");
    need(dev, ws_bytes, "cusolverDnXpotrf");
    std::vector<char> host_ws(host);
    for (i64 i = 0; i < count; ++i) {
        check(api_.cusolverDnXpotrf(b.handle, b.params, uplo, n, dtype, at(a, i, size), n, dtype,
                                    reinterpret_cast<void*>(ws), ws_bytes, host_ws.data(), host,
                                    info_at(info, i)),
              "cusolverDnXpotrf");
    }
}

void Cusolver::potrf_batched(const Context& ctx, CUstream stream, int dtype, bool upper, i64 n,
                             uint64_t pointers, i64 count, uint64_t info) {
    if (n > INT32_MAX || count > INT32_MAX) {
        throw std::invalid_argument("cuSOLVER potrfBatched takes 32-bit sizes");
    }
    auto fn = dtype == 0   ? api_.cusolverDnSpotrfBatched
              : dtype == 1 ? api_.cusolverDnDpotrfBatched
              : dtype == 4 ? api_.cusolverDnCpotrfBatched
                           : api_.cusolverDnZpotrfBatched;
    element_size(dtype);  // rejects an unknown code
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    const int ni = static_cast<int>(n);
    check(fn(b.handle, upper ? kFillUpper : kFillLower, ni, reinterpret_cast<void**>(pointers), ni,
             reinterpret_cast<int*>(info), static_cast<int>(count)),
          "cusolverDn<t>potrfBatched");
}

// -- LU ------------------------------------------------------------------------------
size_t Cusolver::getrf_workspace(const Context& ctx, int dtype, i64 n, Batch a) {
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, nullptr);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXgetrf_bufferSize(b.handle, b.params, n, n, dtype, at(a, 0, 1), n, dtype,
                                           &dev, &host),
          "cusolverDnXgetrf_bufferSize");
    return dev;
}

void Cusolver::getrf(const Context& ctx, CUstream stream, int dtype, i64 n, Batch a, Batch ipiv,
                     i64 count, uint64_t ws, size_t ws_bytes, uint64_t info) {
    const size_t size = element_size(dtype);
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXgetrf_bufferSize(b.handle, b.params, n, n, dtype, at(a, 0, size), n,
                                           dtype, &dev, &host),
          "cusolverDnXgetrf_bufferSize");
    need(dev, ws_bytes, "cusolverDnXgetrf");
    std::vector<char> host_ws(host);
    for (i64 i = 0; i < count; ++i) {
        check(api_.cusolverDnXgetrf(b.handle, b.params, n, n, dtype, at(a, i, size), n,
                                    static_cast<i64*>(at(ipiv, i, sizeof(i64))), dtype,
                                    reinterpret_cast<void*>(ws), ws_bytes, host_ws.data(), host,
                                    info_at(info, i)),
              "cusolverDnXgetrf");
    }
}

void Cusolver::getrs(const Context& ctx, CUstream stream, int dtype, int trans, i64 n, i64 nrhs,
                     Batch a, Batch ipiv, Batch b_, i64 count, uint64_t info) {
    const size_t size = element_size(dtype);
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    for (i64 i = 0; i < count; ++i) {
        check(api_.cusolverDnXgetrs(b.handle, b.params, trans, n, nrhs, dtype, at(a, i, size), n,
                                    static_cast<const i64*>(at(ipiv, i, sizeof(i64))), dtype,
                                    at(b_, i, size), n, info_at(info, i)),
              "cusolverDnXgetrs");
    }
}

// -- Hermitian eigenproblems ---------------------------------------------------------
size_t Cusolver::syevd_workspace(const Context& ctx, int dtype, bool vectors, bool upper,
                                 i64 n, Batch a, Batch w) {
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, nullptr);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXsyevd_bufferSize(b.handle, b.params, vectors ? kEigVector : kEigNoVector,
                                           upper ? kFillUpper : kFillLower, n, dtype, at(a, 0, 1),
                                           n, real_type(dtype), at(w, 0, 1), dtype, &dev, &host),
          "cusolverDnXsyevd_bufferSize");
    return dev;
}

void Cusolver::syevd(const Context& ctx, CUstream stream, int dtype, bool vectors, bool upper,
                     i64 n, Batch a, Batch w, i64 count, uint64_t ws, size_t ws_bytes,
                     uint64_t info) {
    const size_t size = element_size(dtype);
    const int real = real_type(dtype);
    const size_t real_size = element_size(real);
    const int jobz = vectors ? kEigVector : kEigNoVector;
    const int uplo = upper ? kFillUpper : kFillLower;
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXsyevd_bufferSize(b.handle, b.params, jobz, uplo, n, dtype,
                                           at(a, 0, size), n, real, at(w, 0, real_size), dtype,
                                           &dev, &host),
          "cusolverDnXsyevd_bufferSize");
    need(dev, ws_bytes, "cusolverDnXsyevd");
    std::vector<char> host_ws(host);
    for (i64 i = 0; i < count; ++i) {
        check(api_.cusolverDnXsyevd(b.handle, b.params, jobz, uplo, n, dtype, at(a, i, size), n,
                                    real, at(w, i, real_size), dtype, reinterpret_cast<void*>(ws),
                                    ws_bytes, host_ws.data(), host, info_at(info, i)),
              "cusolverDnXsyevd");
    }
}

// -- QR ------------------------------------------------------------------------------
size_t Cusolver::geqrf_workspace(const Context& ctx, int dtype, i64 m, i64 n, Batch a,
                                 Batch tau) {
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, nullptr);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXgeqrf_bufferSize(b.handle, b.params, m, n, dtype, at(a, 0, 1), m, dtype,
                                           at(tau, 0, 1), dtype, &dev, &host),
          "cusolverDnXgeqrf_bufferSize");
    return dev;
}

void Cusolver::geqrf(const Context& ctx, CUstream stream, int dtype, i64 m, i64 n, Batch a,
                     Batch tau, i64 count, uint64_t ws, size_t ws_bytes, uint64_t info) {
    const size_t size = element_size(dtype);
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXgeqrf_bufferSize(b.handle, b.params, m, n, dtype, at(a, 0, size), m,
                                           dtype, at(tau, 0, size), dtype, &dev, &host),
          "cusolverDnXgeqrf_bufferSize");
    need(dev, ws_bytes, "cusolverDnXgeqrf");
    std::vector<char> host_ws(host);
    for (i64 i = 0; i < count; ++i) {
        check(api_.cusolverDnXgeqrf(b.handle, b.params, m, n, dtype, at(a, i, size), m, dtype,
                                    at(tau, i, size), dtype, reinterpret_cast<void*>(ws),
                                    ws_bytes, host_ws.data(), host, info_at(info, i)),
              "cusolverDnXgeqrf");
    }
}

size_t Cusolver::orgqr_workspace(const Context& ctx, int dtype, i64 m, i64 cols, i64 k, Batch a,
                                 Batch tau) {
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, nullptr);
    int lwork = 0;
    const int mi = static_cast<int>(m), ci = static_cast<int>(cols), ki = static_cast<int>(k);
    auto fn = dtype == 0   ? api_.cusolverDnSorgqr_bufferSize
              : dtype == 1 ? api_.cusolverDnDorgqr_bufferSize
              : dtype == 4 ? api_.cusolverDnCungqr_bufferSize
                           : api_.cusolverDnZungqr_bufferSize;
    check(fn(b.handle, mi, ci, ki, at(a, 0, 1), mi, at(tau, 0, 1), &lwork),
          "cusolverDn<t>orgqr_bufferSize");
    return static_cast<size_t>(lwork) * element_size(dtype);
}

void Cusolver::orgqr(const Context& ctx, CUstream stream, int dtype, i64 m, i64 cols, i64 k,
                     Batch a, Batch tau, i64 count, uint64_t ws, size_t ws_bytes, uint64_t info) {
    const size_t size = element_size(dtype);
    if (m > INT32_MAX || cols > INT32_MAX) {
        throw std::invalid_argument("cuSOLVER orgqr takes 32-bit sizes; the matrix is too large");
    }
    const int mi = static_cast<int>(m), ci = static_cast<int>(cols), ki = static_cast<int>(k);
    const int lwork = static_cast<int>(ws_bytes / size);
    auto fn = dtype == 0   ? api_.cusolverDnSorgqr
              : dtype == 1 ? api_.cusolverDnDorgqr
              : dtype == 4 ? api_.cusolverDnCungqr
                           : api_.cusolverDnZungqr;
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    for (i64 i = 0; i < count; ++i) {
        check(fn(b.handle, mi, ci, ki, at(a, i, size), mi, at(tau, i, size),
                 reinterpret_cast<void*>(ws), lwork, info_at(info, i)),
              "cusolverDn<t>orgqr");
    }
}

// -- SVD -----------------------------------------------------------------------------
size_t Cusolver::gesvd_workspace(const Context& ctx, int dtype, signed char job, i64 m, i64 n,
                                 Batch a, Batch s, Batch u, Batch vt) {
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, nullptr);
    size_t dev = 0, host = 0;
    const int real = real_type(dtype);
    const bool vectors = job != 'N';
    check(api_.cusolverDnXgesvd_bufferSize(b.handle, b.params, job, job, m, n, dtype, at(a, 0, 1),
                                           m, real, at(s, 0, 1), dtype,
                                           vectors ? at(u, 0, 1) : nullptr, m, dtype,
                                           vectors ? at(vt, 0, 1) : nullptr, n, dtype, &dev,
                                           &host),
          "cusolverDnXgesvd_bufferSize");
    return dev;
}

void Cusolver::gesvd(const Context& ctx, CUstream stream, int dtype, signed char job, i64 m,
                     i64 n, Batch a, Batch s, Batch u, Batch vt, i64 count, uint64_t ws,
                     size_t ws_bytes, uint64_t info) {
    if (m < n) throw std::invalid_argument("cuSOLVER gesvd wants m >= n");
    const size_t size = element_size(dtype);
    const int real = real_type(dtype);
    const size_t real_size = element_size(real);
    const bool vectors = job != 'N';
    ctx.make_current();
    LaunchGuard gate(stream);
    GilRelease nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    Bound b = bind(ctx, stream);
    size_t dev = 0, host = 0;
    check(api_.cusolverDnXgesvd_bufferSize(b.handle, b.params, job, job, m, n, dtype,
                                           at(a, 0, size), m, real, at(s, 0, real_size), dtype,
                                           vectors ? at(u, 0, size) : nullptr, m, dtype,
                                           vectors ? at(vt, 0, size) : nullptr, n, dtype, &dev,
                                           &host),
          "cusolverDnXgesvd_bufferSize");
    need(dev, ws_bytes, "cusolverDnXgesvd");
    std::vector<char> host_ws(host);
    for (i64 i = 0; i < count; ++i) {
        check(api_.cusolverDnXgesvd(b.handle, b.params, job, job, m, n, dtype, at(a, i, size), m,
                                    real, at(s, i, real_size), dtype,
                                    vectors ? at(u, i, size) : nullptr, m, dtype,
                                    vectors ? at(vt, i, size) : nullptr, n, dtype,
                                    reinterpret_cast<void*>(ws), ws_bytes, host_ws.data(), host,
                                    info_at(info, i)),
              "cusolverDnXgesvd");
    }
}

}  // namespace pgk
