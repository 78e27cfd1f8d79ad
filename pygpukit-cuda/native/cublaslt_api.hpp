// cuBLASLt, opened with dlopen at run time: the entry points we call, a handle per context,
// and `lt_check` turning a status into an error that names the call.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "context.hpp"

namespace pgk {

using LtHandle = void*;
using LtStatus = int;

// cublasLtMatmulAlgo_t and cublasLtMatmulHeuristicResult_t of cublasLt.h (stable since 11.0).
struct LtAlgo {
    uint64_t data[8];
};
struct LtHeuristicResult {
    LtAlgo algo;
    size_t workspace_size;
    LtStatus state;
    float waves;
    int reserved[4];
};

// X(name, return, params): every cuBLASLt entry point we call.
#define PGK_LT_FUNCTIONS(X)                                                                  \
    X(cublasLtCreate, LtStatus, (LtHandle*))                                                 \
    X(cublasLtDestroy, LtStatus, (LtHandle))                                                 \
    X(cublasLtGetVersion, size_t, ())                                                        \
    X(cublasLtGetStatusString, const char*, (LtStatus))                                      \
    X(cublasLtMatmulDescCreate, LtStatus, (void**, int, int))                                \
    X(cublasLtMatmulDescDestroy, LtStatus, (void*))                                          \
    X(cublasLtMatmulDescSetAttribute, LtStatus, (void*, int, const void*, size_t))           \
    X(cublasLtMatrixLayoutCreate, LtStatus, (void**, int, uint64_t, uint64_t, int64_t))      \
    X(cublasLtMatrixLayoutDestroy, LtStatus, (void*))                                        \
    X(cublasLtMatrixLayoutSetAttribute, LtStatus, (void*, int, const void*, size_t))         \
    X(cublasLtMatmulPreferenceCreate, LtStatus, (void**))                                    \
    X(cublasLtMatmulPreferenceDestroy, LtStatus, (void*))                                    \
    X(cublasLtMatmulPreferenceSetAttribute, LtStatus, (void*, int, const void*, size_t))     \
    X(cublasLtMatmulAlgoGetHeuristic, LtStatus,                                              \
      (LtHandle, void*, void*, void*, void*, void*, void*, int, LtHeuristicResult*, int*))   \
    X(cublasLtMatmulAlgoCheck, LtStatus,                                                     \
      (LtHandle, void*, void*, void*, void*, void*, const LtAlgo*, LtHeuristicResult*))      \
    X(cublasLtMatmul, LtStatus,                                                              \
      (LtHandle, void*, const void*, const void*, void*, const void*, void*, const void*,    \
       const void*, void*, void*, void*, const LtAlgo*, void*, size_t, CUstream))

struct LtApi {
#define PGK_LT_DECLARE(name, ret, params) ret(*name) params = nullptr;
    PGK_LT_FUNCTIONS(PGK_LT_DECLARE)
#undef PGK_LT_DECLARE
};

// A failed cuBLASLt call; the message names the call and cuBLASLt's status string.
class LtError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One opened libcublasLt: its function table and a handle per context (made on first use,
// destroyed with the library object).
class CublasLt {
public:
    // dlopen `path` and resolve every entry point; throws LtError naming what failed.
    explicit CublasLt(const std::string& path);
    ~CublasLt();
    CublasLt(const CublasLt&) = delete;
    CublasLt& operator=(const CublasLt&) = delete;

    const LtApi& api() const { return api_; }
    const std::string& path() const { return path_; }
    size_t version() const { return api_.cublasLtGetVersion(); }
    // The handle of `ctx` (which must be current), created on first use.
    LtHandle handle(const Context& ctx);
    // Throw LtError naming `call` unless `status` is success.
    void check(LtStatus status, const char* call) const;

private:
    std::string path_;
    void* lib_ = nullptr;
    LtApi api_;
    std::mutex mutex_;
    std::unordered_map<int, LtHandle> handles_;  // by device ordinal
};

}  // namespace pgk
