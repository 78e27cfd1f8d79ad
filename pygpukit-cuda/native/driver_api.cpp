// Opening libcuda.so.1 with dlopen, resolving our entry points, and turning results into errors.
#include "driver_api.hpp"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace pgk {
namespace {

DriverApi g_api;
bool g_loaded = false;
bool g_tried = false;
std::string g_status = "CUDA driver not loaded yet";
std::mutex g_mutex;

// Contexts a sticky error was seen in, with that first error (nullptr: context unknown).
std::atomic<bool> g_any_lost{false};
std::mutex g_lost_mutex;
struct Lost {
    std::string first;
    CUresult code;
};
std::unordered_map<CUcontext, Lost> g_lost;

constexpr const char* kLostAdvice =
    ". The CUDA context is lost (a kernel faulted and the error is sticky): this process "
    "cannot use the GPU any more and must be restarted";

void remember_lost(const std::string& first, CUresult code) {
    CUcontext cur = nullptr;
    if (g_api.cuCtxGetCurrent != nullptr) g_api.cuCtxGetCurrent(&cur);
    std::lock_guard<std::mutex> lock(g_lost_mutex);
    g_lost.emplace(cur, Lost{first, code});
    g_any_lost.store(true, std::memory_order_release);
}

template <typename F>
bool resolve(void* lib, const char* symbol, F& out, std::string& missing) {
    out = reinterpret_cast<F>(dlsym(lib, symbol));
    if (out == nullptr) {
        missing = symbol;
        return false;
    }
    return true;
}

GreenApi g_green;
std::string g_green_status = "the CUDA driver is not loaded";

// Optional entry points: each missing one is recorded, and green contexts are then off.
void resolve_green(void* lib) {
    GreenApi api;
    std::string missing;
    bool ok = resolve(lib, "cuDeviceGetDevResource", api.cuDeviceGetDevResource, missing) &&
              resolve(lib, "cuDevSmResourceSplitByCount", api.cuDevSmResourceSplitByCount,
                      missing) &&
              resolve(lib, "cuDevResourceGenerateDesc", api.cuDevResourceGenerateDesc, missing) &&
              resolve(lib, "cuGreenCtxCreate", api.cuGreenCtxCreate, missing) &&
              resolve(lib, "cuGreenCtxDestroy", api.cuGreenCtxDestroy, missing) &&
              resolve(lib, "cuCtxFromGreenCtx", api.cuCtxFromGreenCtx, missing) &&
              resolve(lib, "cuGreenCtxStreamCreate", api.cuGreenCtxStreamCreate, missing) &&
              resolve(lib, "cuGreenCtxGetDevResource", api.cuGreenCtxGetDevResource, missing);
    if (!ok) {
        g_green = GreenApi();
        g_green_status = "the CUDA driver has no " + missing +
                         " (green contexts need a CUDA 12.4 or newer driver)";
        return;
    }
    g_green = api;
    g_green_status.clear();
}

}  // namespace

const GreenApi& green_api() { return g_green; }

const std::string& green_status() { return g_green_status; }

bool load_driver(const std::string& path) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_tried) return g_loaded;
    g_tried = true;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* why = dlerror();
        g_status = "CUDA driver not found (" + path + ": " + (why ? why : "unknown error") + ")";
        return false;
    }
    DriverApi api;
    std::string missing;
    bool ok = true;
#define PGK_RESOLVE(name, symbol, ret, params) ok = ok && resolve(lib, symbol, api.name, missing);
    PGK_DRIVER_FUNCTIONS(PGK_RESOLVE)
#undef PGK_RESOLVE
    if (ok && !resolve(lib, "cuEventElapsedTime_v2", api.cuEventElapsedTime, missing)) {
        ok = resolve(lib, "cuEventElapsedTime", api.cuEventElapsedTime, missing);
    }
    if (ok) {
        std::string optional;
        resolve(lib, "cuLaunchKernelEx", api.cuLaunchKernelEx, optional);
    }
    if (!ok) {
        g_status = "CUDA driver at " + path + " is too old: it has no " + missing +
                   " (update the NVIDIA driver)";
        return false;
    }
    CUresult rc = api.cuInit(0);
    if (rc != CUDA_SUCCESS) {
        g_api = api;  // error names are still readable
        g_status = "CUDA driver found but cuInit failed: " + error_text(rc);
        g_api = DriverApi();
        return false;
    }
    int version = 0;
    api.cuDriverGetVersion(&version);
    resolve_green(lib);
    g_api = api;
    g_loaded = true;
    g_status = "CUDA driver " + std::to_string(version / 1000) + "." +
               std::to_string((version % 1000) / 10) + " (" + path + ")";
    return true;
}

bool driver_loaded() { return g_loaded; }

const std::string& driver_status() { return g_status; }

const DriverApi& driver() {
    if (!g_loaded) throw CudaError(g_status, -1);
    return g_api;
}

std::string error_text(CUresult code) {
    const char* name = nullptr;
    const char* text = nullptr;
    if (g_api.cuGetErrorName != nullptr) g_api.cuGetErrorName(code, &name);
    if (g_api.cuGetErrorString != nullptr) g_api.cuGetErrorString(code, &text);
    std::string out = name ? name : "CUDA error " + std::to_string(code);
    if (text) out += std::string(" (") + text + ")";
    return out;
}

bool is_context_lost_code(CUresult code) {
    switch (code) {
        case 700:  // CUDA_ERROR_ILLEGAL_ADDRESS
        case 702:  // CUDA_ERROR_LAUNCH_TIMEOUT
        case 710:  // CUDA_ERROR_ASSERT (device-side assert)
        case 714:  // CUDA_ERROR_HARDWARE_STACK_ERROR
        case 715:  // CUDA_ERROR_ILLEGAL_INSTRUCTION
        case 716:  // CUDA_ERROR_MISALIGNED_ADDRESS
        case 717:  // CUDA_ERROR_INVALID_ADDRESS_SPACE
        case 718:  // CUDA_ERROR_INVALID_PC
        case 719:  // CUDA_ERROR_LAUNCH_FAILED
            return true;
        default:
            return false;
    }
}

void check(CUresult code, const char* call) {
    if (code == CUDA_SUCCESS) return;
    std::string msg = std::string(call) + " failed: " + error_text(code);
    if (code >= 900 && code <= 908) {  // CUDA_ERROR_STREAM_CAPTURE_*
        msg += ". A CUDA graph was being captured: this call cannot be captured (a host wait, "
               "a copy from pageable host memory, or work on another stream), and the capture "
               "is invalid now";
    }
    if (is_context_lost_code(code)) {
        remember_lost(msg, code);
        throw CudaContextLostError(msg + kLostAdvice, code);
    }
    throw CudaError(msg, code);
}

void throw_if_lost(CUcontext ctx, int ordinal) {
    if (!g_any_lost.load(std::memory_order_acquire)) return;  // the common case: one load
    std::lock_guard<std::mutex> lock(g_lost_mutex);
    auto it = g_lost.find(ctx);
    if (it == g_lost.end()) it = g_lost.find(nullptr);
    if (it == g_lost.end()) return;
    throw CudaContextLostError("cuda:" + std::to_string(ordinal) + " was lost earlier (" +
                                   it->second.first + ")" + kLostAdvice,
                               it->second.code);
}

}  // namespace pgk
