// The one gate every launch passes: kernels (LaunchPlan, Context.launch), cuBLASLt products
// and graph replays. Inside a scheduler task it asks the Rust runtime for the device first
// (token bucket and fair share, waiting without the GIL) and tells it when the launch is
// enqueued; outside a task it costs one thread-local read in Rust.
#pragma once

#include <Python.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_types.hpp"

namespace pgk {

constexpr const char* kLaunchGateCapsuleName = "pygpukit.launch_gate_v1";

// Mirrors the Rust runtime's LaunchGateV1 (rust/pygpukit-python/src/scheduler/gate.rs).
// Version 1 ends at task_id; version 2 adds the GPU-time functions.
struct LaunchGateTable {
    uint32_t abi_version;
    uint32_t struct_size;
    const void* (*current)();
    int (*begin)(const void*);
    void (*end)(const void*);
    void (*release)(const void*);
    uint64_t (*task_id)(const void*);
    void (*set_device_events)(int (*poll)(uintptr_t, uintptr_t, uint64_t*),
                              void (*recycle)(uintptr_t, uintptr_t));
    void (*end_measured)(const void*, uintptr_t, uintptr_t);
    // version 3: with the GIL held, 0 granted at once, 1 cancelled, 2 would wait
    int (*try_begin)(const void*);
    // version 4: the events around the runtime's own copies (its stream copier)
    void (*set_copy_events)(uintptr_t (*start)(uintptr_t, uintptr_t),
                            int (*finish)(uintptr_t, uintptr_t));
};

// A launch refused because its task was cancelled (raised as the runtime's TaskCancelled).
class LaunchCancelled : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Install the Rust gate from its capsule (once, at import); `cancelled` is the Python
// exception type to raise for a cancelled task. Returns false with a Python error set.
bool install_launch_gate(PyObject* capsule, PyObject* cancelled);
bool launch_gate_installed();
PyObject* cancelled_error_type();

struct TimedPair;  // the events around one measured launch (launch_gate.cpp)

// Scope of one launch on `stream` (a kernel, a library call, a graph, or a copy or memset:
// copies are charged device time too): the constructor waits for the grant (throws
// LaunchCancelled), the destructor ends the launch. Inside a scheduler task, a pair of
// events brackets the launch so the runtime charges the task its device time; outside a
// task neither happens. Construct with the GIL held and the launch's context current.
class LaunchGuard {
public:
    explicit LaunchGuard(CUstream stream);
    ~LaunchGuard();
    LaunchGuard(const LaunchGuard&) = delete;
    LaunchGuard& operator=(const LaunchGuard&) = delete;

private:
    const void* task_ = nullptr;
    TimedPair* pair_ = nullptr;
    CUstream stream_ = nullptr;
};

}  // namespace pgk
