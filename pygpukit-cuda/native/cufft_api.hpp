// cuFFT, opened with dlopen at run time: the entry points we call, declared without the CUDA
// headers, and FftPlan, one planned transform whose work area the caller supplies.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "context.hpp"

namespace pgk {

using CufftHandle = int;
using CufftResult = int;

// cufftType values of cufft.h (real <-> complex, single and double precision).
constexpr int kCufftR2C = 0x2a, kCufftC2R = 0x2c, kCufftC2C = 0x29;
constexpr int kCufftD2Z = 0x6a, kCufftZ2D = 0x6c, kCufftZ2Z = 0x69;

// X(name, return, params): every cuFFT entry point we call (stable since CUDA 7.5).
#define PGK_CUFFT_FUNCTIONS(X)                                                               \
    X(cufftGetVersion, CufftResult, (int*))                                                  \
    X(cufftCreate, CufftResult, (CufftHandle*))                                              \
    X(cufftDestroy, CufftResult, (CufftHandle))                                              \
    X(cufftSetAutoAllocation, CufftResult, (CufftHandle, int))                               \
    X(cufftMakePlanMany64, CufftResult,                                                      \
      (CufftHandle, int, long long*, long long*, long long, long long, long long*, long long, \
       long long, int, long long, size_t*))                                                  \
    X(cufftSetWorkArea, CufftResult, (CufftHandle, void*))                                   \
    X(cufftSetStream, CufftResult, (CufftHandle, CUstream))                                  \
    X(cufftExecC2C, CufftResult, (CufftHandle, void*, void*, int))                           \
    X(cufftExecZ2Z, CufftResult, (CufftHandle, void*, void*, int))                           \
    X(cufftExecR2C, CufftResult, (CufftHandle, void*, void*))                                \
    X(cufftExecD2Z, CufftResult, (CufftHandle, void*, void*))                                \
    X(cufftExecC2R, CufftResult, (CufftHandle, void*, void*))                                \
    X(cufftExecZ2D, CufftResult, (CufftHandle, void*, void*))

struct CufftApi {
#define PGK_CUFFT_DECLARE(name, ret, params) ret(*name) params = nullptr;
    PGK_CUFFT_FUNCTIONS(PGK_CUFFT_DECLARE)
#undef PGK_CUFFT_DECLARE
};

// A failed cuFFT call; the message names the call and the cufftResult.
class CufftError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One opened libcufft and its function table.
class Cufft {
public:
    // dlopen `path` and resolve every entry point; throws CufftError naming what failed.
    explicit Cufft(const std::string& path);
    Cufft(const Cufft&) = delete;
    Cufft& operator=(const Cufft&) = delete;

    const CufftApi& api() const { return api_; }
    const std::string& path() const { return path_; }
    int version() const;
    // Throw CufftError naming `call` unless `status` is CUFFT_SUCCESS.
    void check(CufftResult status, const char* call) const;

private:
    std::string path_;
    void* lib_ = nullptr;
    CufftApi api_;
};

// The layout of one batched transform, in cufftMakePlanMany64's terms (elements, not bytes).
struct FftLayout {
    std::vector<long long> n, inembed, onembed;
    long long istride = 1, idist = 0, ostride = 1, odist = 0, batch = 1;
    int type = kCufftC2C;
};

// One planned transform on one context. Made with auto-allocation off: every execution gets
// its work area from the caller (a pool block on the calling stream), so nothing is
// allocated inside a CUDA graph capture once the plan exists.
class FftPlan {
public:
    FftPlan(std::shared_ptr<Cufft> lib, std::shared_ptr<Context> ctx, const FftLayout& layout);
    ~FftPlan();
    FftPlan(const FftPlan&) = delete;
    FftPlan& operator=(const FftPlan&) = delete;

    size_t work_bytes() const { return work_bytes_; }
    int type() const { return type_; }
    // Enqueue the transform on `stream` (direction -1 forward, +1 inverse; ignored by the
    // real transforms) reading `in`, writing `out`, using `work` (work_bytes() of them).
    void execute(CUstream stream, uint64_t in, uint64_t out, uint64_t work, int direction) const;

private:
    std::shared_ptr<Cufft> lib_;
    std::shared_ptr<Context> ctx_;
    CufftHandle handle_ = 0;
    bool made_ = false;
    int type_ = kCufftC2C;
    size_t work_bytes_ = 0;
    // what the handle was last given: a repeated call on the same stream with the pool's
    // same block (the usual case) skips both setters
    mutable bool bound_ = false;
    mutable CUstream bound_stream_ = nullptr;
    mutable uint64_t bound_work_ = 0;
};

}  // namespace pgk
