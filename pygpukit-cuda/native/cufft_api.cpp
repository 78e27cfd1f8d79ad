// Opening libcufft with dlopen, and FftPlan: plan once, execute on any stream with our work area.
#include "cufft_api.hpp"

#include <dlfcn.h>

#include "driver_api.hpp"
#include "launch_gate.hpp"

namespace pgk {
namespace {

// cufftResult names of cufft.h (cuFFT has no status-string call of its own).
const char* result_name(CufftResult r) {
    static const char* const names[] = {
        "CUFFT_SUCCESS",        "CUFFT_INVALID_PLAN",    "CUFFT_ALLOC_FAILED",
        "CUFFT_INVALID_TYPE",   "CUFFT_INVALID_VALUE",   "CUFFT_INTERNAL_ERROR",
        "CUFFT_EXEC_FAILED",    "CUFFT_SETUP_FAILED",    "CUFFT_INVALID_SIZE",
        "CUFFT_UNALIGNED_DATA", "CUFFT_INCOMPLETE_PARAMETER_LIST",
        "CUFFT_INVALID_DEVICE", "CUFFT_PARSE_ERROR",     "CUFFT_NO_WORKSPACE",
        "CUFFT_NOT_IMPLEMENTED", "CUFFT_LICENSE_ERROR",  "CUFFT_NOT_SUPPORTED",
    };
    if (r >= 0 && r < static_cast<int>(sizeof(names) / sizeof(names[0]))) return names[r];
    return nullptr;
}

}  // namespace

Cufft::Cufft(const std::string& path) : path_(path) {
    lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
        const char* why = dlerror();
        throw CufftError(path + ": " + (why ? why : "dlopen failed"));
    }
#define PGK_CUFFT_RESOLVE(name, ret, params)                                                \
    api_.name = reinterpret_cast<ret(*) params>(dlsym(lib_, #name));                        \
    if (api_.name == nullptr) {                                                              \
        dlclose(lib_);                                                                       \
        lib_ = nullptr;                                                                      \
        throw CufftError(path + ": no symbol " #name " (not a cuFFT library?)");             \
    }
    PGK_CUFFT_FUNCTIONS(PGK_CUFFT_RESOLVE)
#undef PGK_CUFFT_RESOLVE
    // The library stays mapped for the process: plans may outlive this object's last user.
}

int Cufft::version() const {
    int v = 0;
    check(api_.cufftGetVersion(&v), "cufftGetVersion");
    return v;
}

void Cufft::check(CufftResult status, const char* call) const {
    if (status == 0) return;
    const char* name = result_name(status);
    throw CufftError(std::string(call) + " failed: " +
                     (name ? name : "cufftResult " + std::to_string(status)));
}

FftPlan::FftPlan(std::shared_ptr<Cufft> lib, std::shared_ptr<Context> ctx,
                 const FftLayout& layout)
    : lib_(std::move(lib)), ctx_(std::move(ctx)), type_(layout.type) {
    const int rank = static_cast<int>(layout.n.size());
    if (rank < 1 || rank > 3) throw std::invalid_argument("cuFFT plans have rank 1 to 3");
    // both embeddings empty: cuFFT's basic layout (packed operands, NULL embeddings), which
    // torch and CuPy use for contiguous arrays; otherwise one entry per dimension each
    const bool basic = layout.inembed.empty() && layout.onembed.empty();
    if (!basic &&
        (layout.inembed.size() != layout.n.size() || layout.onembed.size() != layout.n.size())) {
        throw std::invalid_argument(
            "inembed and onembed must have one entry per dimension (or both be empty)");
    }
    ctx_->make_current();
    const CufftApi& api = lib_->api();
    lib_->check(api.cufftCreate(&handle_), "cufftCreate");
    made_ = true;
    try {
        // our pool provides the work area: cuFFT must not allocate one of its own
        lib_->check(api.cufftSetAutoAllocation(handle_, 0), "cufftSetAutoAllocation");
        std::vector<long long> n = layout.n, in = layout.inembed, on = layout.onembed;
        // with NULL embeddings cuFFT ignores the strides and distances (packed layout)
        lib_->check(api.cufftMakePlanMany64(handle_, rank, n.data(), basic ? nullptr : in.data(),
                                            layout.istride, layout.idist,
                                            basic ? nullptr : on.data(), layout.ostride,
                                            layout.odist, layout.type, layout.batch,
                                            &work_bytes_),
                    "cufftMakePlanMany64");
    } catch (...) {
        api.cufftDestroy(handle_);
        made_ = false;
        throw;
    }
}

FftPlan::~FftPlan() {
    if (made_ && driver_loaded()) lib_->api().cufftDestroy(handle_);
}

void FftPlan::execute(CUstream stream, uint64_t in, uint64_t out, uint64_t work,
                      int direction) const {
    if (work_bytes_ != 0 && work == 0) {
        throw std::invalid_argument("this FFT plan needs " + std::to_string(work_bytes_) +
                                    " bytes of work area and got none");
    }
    ctx_->make_current();
    LaunchGuard gate(stream);
    const CufftApi& api = lib_->api();
    // the plan is shared by every stream and each call brings its own pool block, so the
    // stream and work area are set whenever they differ from what the handle last got
    if (!bound_ || stream != bound_stream_ || work != bound_work_) {
        bound_ = false;  // a failing setter leaves the handle's state unknown
        lib_->check(api.cufftSetStream(handle_, stream), "cufftSetStream");
        if (work_bytes_ != 0) {
            lib_->check(api.cufftSetWorkArea(handle_, reinterpret_cast<void*>(work)),
                        "cufftSetWorkArea");
        }
        bound_ = true;
        bound_stream_ = stream;
        bound_work_ = work;
    }
    void* i = reinterpret_cast<void*>(in);
    void* o = reinterpret_cast<void*>(out);
    switch (type_) {
        case kCufftC2C:
            lib_->check(api.cufftExecC2C(handle_, i, o, direction), "cufftExecC2C");
            break;
        case kCufftZ2Z:
            lib_->check(api.cufftExecZ2Z(handle_, i, o, direction), "cufftExecZ2Z");
            break;
        case kCufftR2C:
            lib_->check(api.cufftExecR2C(handle_, i, o), "cufftExecR2C");
            break;
        case kCufftD2Z:
            lib_->check(api.cufftExecD2Z(handle_, i, o), "cufftExecD2Z");
            break;
        case kCufftC2R:
            lib_->check(api.cufftExecC2R(handle_, i, o), "cufftExecC2R");
            break;
        case kCufftZ2D:
            lib_->check(api.cufftExecZ2D(handle_, i, o), "cufftExecZ2D");
            break;
        default:
            throw std::invalid_argument("unknown cufftType " + std::to_string(type_));
    }
}

}  // namespace pgk
