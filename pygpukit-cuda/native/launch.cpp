// One kernel launch: the packed argument buffer goes through cuLaunchKernel's `extra`
// (cuLaunchKernelEx's for a kernel marked for programmatic dependent launch).
#include "launch.hpp"

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "driver_api.hpp"
#include "launch_gate.hpp"

namespace pgk {

namespace {

std::mutex g_pdl_mutex;
std::unordered_set<CUfunction> g_pdl;
std::atomic<bool> g_any_pdl{false};  // skips the lookup until a kernel is marked
std::atomic<unsigned long long> g_pdl_launches{0};
// Captures begun by begin_capture and not yet ended: while there are none, no stream of ours
// captures, and an eager launch skips the marked-kernel lookup (a mutex) and the driver's
// cuStreamIsCapturing. A capture begun behind our back (cuStreamBeginCapture on a stream's
// handle by another library) then gets plain launches: correct, only without PDL.
std::atomic<long> g_captures{0};

// Programmatic launches go into captured graphs only: there they shorten a replay's chain
// of small kernels; eagerly a kernel launched early holds SMs while it waits, which on the
// H100 doubled a guaranteed task's p99 beside a best-effort hog (the QoS bar's test).
bool capturing(const DriverApi& api, CUstream stream) {
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    return stream != nullptr && api.cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
           status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace

void set_programmatic(CUfunction func, bool on) {
    std::lock_guard<std::mutex> lock(g_pdl_mutex);
    if (on) {
        g_pdl.insert(func);
    } else {
        g_pdl.erase(func);
    }
    g_any_pdl.store(!g_pdl.empty(), std::memory_order_release);
}

unsigned long long programmatic_launches() { return g_pdl_launches.load(); }

void note_capture_begun() { g_captures.fetch_add(1); }

void note_capture_ended() {
    long n = g_captures.load();
    while (n > 0 && !g_captures.compare_exchange_weak(n, n - 1)) {
    }  // never below zero: an end without a counted begin must not hide a later capture
}

long captures_in_progress() { return g_captures.load(); }

bool is_programmatic(CUfunction func) {
    if (!g_any_pdl.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> lock(g_pdl_mutex);
    return g_pdl.count(func) != 0;
}

void launch(const Context& ctx, CUfunction func, Dim3 grid, Dim3 block, unsigned shared_bytes,
            CUstream stream, const void* args, size_t args_size) {
    ctx.make_current();
    LaunchGuard gate(stream);
    size_t size = args_size;
    void* extra[] = {PGK_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(args),
                     PGK_LAUNCH_PARAM_BUFFER_SIZE, &size, PGK_LAUNCH_PARAM_END};
    const DriverApi& api = driver();
    // cheapest first: the legacy default stream never captures, and without a capture in
    // progress no other stream does (eager launches end the test here)
    if (stream != nullptr && g_captures.load(std::memory_order_acquire) > 0 &&
        api.cuLaunchKernelEx != nullptr && is_programmatic(func) && capturing(api, stream)) {
        CUlaunchAttribute attr{};
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig config{grid.x, grid.y, grid.z, block.x, block.y, block.z,
                              shared_bytes, stream, &attr, 1};
        check(api.cuLaunchKernelEx(&config, func, nullptr, args_size ? extra : nullptr),
              "cuLaunchKernelEx");
        g_pdl_launches.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    check(api.cuLaunchKernel(func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                             shared_bytes, stream, nullptr, args_size ? extra : nullptr),
          "cuLaunchKernel");
}

}  // namespace pgk
