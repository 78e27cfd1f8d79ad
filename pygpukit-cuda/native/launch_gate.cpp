// The launch gate (see launch_gate.hpp): the Rust runtime's C table, called around launches.
#include "launch_gate.hpp"

#include <cstddef>
#include <cstring>
#include <mutex>
#include <vector>

#include "allocator_table.hpp"
#include "driver_api.hpp"

namespace pgk {

// Two timing events of one context, recorded around one launch of a scheduler task.
struct TimedPair {
    CUcontext ctx;
    CUevent start;
    CUevent end;
};

namespace {

LaunchGateTable g_gate{};
bool g_installed = false;
bool g_v2 = false;        // the table has the GPU-time functions (version 2)
bool g_v3 = false;        // ... and the fast path that keeps the GIL (version 3)
bool g_v4 = false;        // ... and measures the runtime's own copies (version 4)
bool g_measured = false;  // ... and the runtime was handed the event functions
PyObject* g_cancelled = nullptr;

// Retired pairs, reused so a measured launch costs two cuEventRecord calls and no creation.
// The runtime retires pairs on task threads, hence the lock.
std::mutex g_pool_lock;
std::vector<TimedPair*> g_pool;

TimedPair* take_pair(CUcontext ctx) {
    {
        std::lock_guard<std::mutex> hold(g_pool_lock);
        for (size_t i = g_pool.size(); i-- > 0;) {
            if (g_pool[i]->ctx == ctx) {
                TimedPair* pair = g_pool[i];
                g_pool[i] = g_pool.back();
                g_pool.pop_back();
                return pair;
            }
        }
    }
    const DriverApi& api = driver();
    auto* pair = new TimedPair{ctx, nullptr, nullptr};
    // default flags: timing on, which cuEventElapsedTime needs
    if (api.cuEventCreate(&pair->start, 0) != CUDA_SUCCESS ||
        api.cuEventCreate(&pair->end, 0) != CUDA_SUCCESS) {
        if (pair->start != nullptr) api.cuEventDestroy(pair->start);
        delete pair;
        return nullptr;
    }
    return pair;
}

void give_back(TimedPair* pair) {
    std::lock_guard<std::mutex> hold(g_pool_lock);
    g_pool.push_back(pair);
}

// The runtime's view of a pair (see set_device_events in gate.rs): 0 finished with its
// device time in *ns, 1 still pending, 2 unknown (an error: retired uncharged).
int poll_pair(uintptr_t start, uintptr_t /*end*/, uint64_t* ns) {
    auto* pair = reinterpret_cast<TimedPair*>(start);
    const DriverApi& api = driver();
    const CUresult done = api.cuEventQuery(pair->end);
    if (done == CUDA_ERROR_NOT_READY) return 1;
    float ms = 0.0f;
    if (done != CUDA_SUCCESS || api.cuEventElapsedTime == nullptr ||
        api.cuEventElapsedTime(&ms, pair->start, pair->end) != CUDA_SUCCESS || ms < 0.0f) {
        return 2;
    }
    *ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
    return 0;
}

void recycle_pair(uintptr_t start, uintptr_t /*end*/) {
    give_back(reinterpret_cast<TimedPair*>(start));
}

// The runtime's copier, around a task's copy on `stream` (see set_copy_events in gate.rs);
// `table` is the copier's allocator-table context, made current here as the copier's own
// calls make it on this thread: a pair with its start recorded, or 0 where the copy is not
// measured (a table of another extension, a capture, an error).
uintptr_t copy_start(uintptr_t table, uintptr_t stream_handle) {
    const DriverApi& api = driver();
    auto* stream = reinterpret_cast<CUstream>(stream_handle);
    int capturing = 0;
    CUcontext ctx = nullptr;
    if (!make_table_context_current(reinterpret_cast<const void*>(table)) ||
        api.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr ||
        api.cuStreamIsCapturing(stream, &capturing) != CUDA_SUCCESS || capturing != 0) {
        return 0;
    }
    TimedPair* pair = take_pair(ctx);
    if (pair == nullptr) return 0;
    if (api.cuEventRecord(pair->start, stream) != CUDA_SUCCESS) {
        give_back(pair);
        return 0;
    }
    return reinterpret_cast<uintptr_t>(pair);
}

// The copy is enqueued: 0 with the end recorded, else nonzero with the pair taken back.
int copy_finish(uintptr_t pair_handle, uintptr_t stream_handle) {
    auto* pair = reinterpret_cast<TimedPair*>(pair_handle);
    const DriverApi& api = driver();
    if (api.cuCtxSetCurrent(pair->ctx) == CUDA_SUCCESS &&
        api.cuEventRecord(pair->end, reinterpret_cast<CUstream>(stream_handle)) == CUDA_SUCCESS) {
        return 0;
    }
    give_back(pair);
    return 1;
}

// Hands the runtime the event functions, once the driver is loaded and has
// cuEventElapsedTime (the gate is installed at import, before the driver is opened).
// Called with the GIL held, so two threads never race here.
bool start_measuring() {
    if (!g_v2 || !driver_loaded() || driver().cuEventElapsedTime == nullptr) return false;
    g_gate.set_device_events(&poll_pair, &recycle_pair);
    if (g_v4) g_gate.set_copy_events(&copy_start, &copy_finish);
    g_measured = true;
    return true;
}

}  // namespace

bool install_launch_gate(PyObject* capsule, PyObject* cancelled) {
    if (!PyCapsule_IsValid(capsule, kLaunchGateCapsuleName)) {
        PyErr_Format(PyExc_ValueError, "expected a capsule named \"%s\", got %R",
                     kLaunchGateCapsuleName, capsule);
        return false;
    }
    auto* table =
        static_cast<const LaunchGateTable*>(PyCapsule_GetPointer(capsule, kLaunchGateCapsuleName));
    if (table == nullptr) return false;
    // version 1 (no GPU-time accounting) still gates; version 2 also measures
    constexpr size_t v1_size = offsetof(LaunchGateTable, set_device_events);
    constexpr size_t v2_size = offsetof(LaunchGateTable, try_begin);
    constexpr size_t v3_size = offsetof(LaunchGateTable, set_copy_events);
    const bool v2 = table->abi_version >= 2 && table->struct_size >= v2_size;
    const bool v3 = table->abi_version >= 3 && table->struct_size >= v3_size;
    const bool v4 = table->abi_version >= 4 && table->struct_size >= sizeof(LaunchGateTable);
    if (table->abi_version < 1 || table->struct_size < v1_size) {
        PyErr_Format(PyExc_ValueError, "launch gate table version %u of %u bytes; this "
                     "extension reads versions 1 to 4 (%zu to %zu bytes)",
                     table->abi_version, table->struct_size, v1_size, sizeof(LaunchGateTable));
        return false;
    }
    g_gate = LaunchGateTable{};
    // plain function pointers into the runtime, which stays loaded
    std::memcpy(&g_gate, table,
                v4 ? sizeof(LaunchGateTable) : v3 ? v3_size : v2 ? v2_size : v1_size);
    g_v2 = v2;
    g_v3 = v3;
    g_v4 = v4;
    g_measured = false;  // decided at the first measured launch: the driver loads later
    Py_XINCREF(cancelled);
    Py_XSETREF(g_cancelled, cancelled);
    g_installed = true;
    return true;
}

bool launch_gate_installed() { return g_installed; }

PyObject* cancelled_error_type() { return g_cancelled; }

LaunchGuard::LaunchGuard(CUstream stream) {
    if (!g_installed) return;
    task_ = g_gate.current();
    if (task_ == nullptr) return;  // not inside a scheduler task: the cheap path ends here
    // Granted at once (the usual case for a guaranteed task on its own SMs): keep the GIL,
    // which, once released, comes back only after other threads' Python work.
    int refused = g_v3 ? g_gate.try_begin(task_) : 2;
    if (refused == 2) {
        Py_BEGIN_ALLOW_THREADS  // the grant may wait for other tasks, which need the GIL
        refused = g_gate.begin(task_);
        Py_END_ALLOW_THREADS
    }
    if (refused != 0) {
        const uint64_t id = g_gate.task_id(task_);
        g_gate.release(task_);
        task_ = nullptr;
        throw LaunchCancelled("task " + std::to_string(id) +
                              " was cancelled: its launch was not enqueued");
    }
    if (!g_measured && !start_measuring()) return;
    const DriverApi& api = driver();
    int capturing = 0;
    CUcontext ctx = nullptr;
    // events recorded into a graph capture would become graph nodes: not measured there
    if (api.cuStreamIsCapturing(stream, &capturing) != CUDA_SUCCESS || capturing != 0 ||
        api.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) {
        return;
    }
    pair_ = take_pair(ctx);
    if (pair_ != nullptr && api.cuEventRecord(pair_->start, stream) != CUDA_SUCCESS) {
        give_back(pair_);
        pair_ = nullptr;
    }
    stream_ = stream;
}

LaunchGuard::~LaunchGuard() {
    if (task_ == nullptr) return;
    if (pair_ != nullptr && driver().cuEventRecord(pair_->end, stream_) == CUDA_SUCCESS) {
        g_gate.end_measured(task_, reinterpret_cast<uintptr_t>(pair_), 0);
        return;
    }
    if (pair_ != nullptr) give_back(pair_);
    g_gate.end(task_);
}

}  // namespace pgk
