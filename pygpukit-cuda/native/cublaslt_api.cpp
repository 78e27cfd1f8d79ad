// Opening libcublasLt with dlopen and keeping one handle per context.
#include "cublaslt_api.hpp"

#include <dlfcn.h>

#include "driver_api.hpp"

namespace pgk {

CublasLt::CublasLt(const std::string& path) : path_(path) {
    lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
        const char* why = dlerror();
        throw LtError(path + ": " + (why ? why : "dlopen failed"));
    }
#define PGK_LT_RESOLVE(name, ret, params)                                                   \
    api_.name = reinterpret_cast<ret(*) params>(dlsym(lib_, #name));                        \
    if (api_.name == nullptr) {                                                              \
        dlclose(lib_);                                                                       \
        lib_ = nullptr;                                                                      \
        throw LtError(path + ": no symbol " #name " (not a cuBLASLt library?)");             \
    }
    PGK_LT_FUNCTIONS(PGK_LT_RESOLVE)
#undef PGK_LT_RESOLVE
}

CublasLt::~CublasLt() {
    // Handles are destroyed only while the driver is still there (not at interpreter exit
    // after it went away); the library stays mapped, as plans may still point into it.
    if (driver_loaded()) {
        for (auto& [ordinal, h] : handles_) api_.cublasLtDestroy(h);
    }
}

LtHandle CublasLt::handle(const Context& ctx) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = handles_.find(ctx.ordinal());
    if (it != handles_.end()) return it->second;
    LtHandle h = nullptr;
    check(api_.cublasLtCreate(&h), "cublasLtCreate");
    handles_.emplace(ctx.ordinal(), h);
    return h;
}

void CublasLt::check(LtStatus status, const char* call) const {
    if (status == 0) return;
    const char* text = api_.cublasLtGetStatusString(status);
    throw LtError(std::string(call) + " failed: " + (text ? text : "status ") +
                  (text ? "" : std::to_string(status)));
}

}  // namespace pgk
