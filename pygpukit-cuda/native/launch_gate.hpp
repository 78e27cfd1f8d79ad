// The one gate every launch passes: kernels (LaunchPlan, Context.launch), cuBLASLt products
// and graph replays. Inside a scheduler task it asks the Rust runtime for the device first
// (token bucket and fair share, waiting without the GIL) and tells it when the launch is
// enqueued; outside a task it costs one thread-local read in Rust.
#pragma once

#include <Python.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace pgk {

constexpr const char* kLaunchGateCapsuleName = "pygpukit.launch_gate_v1";

// Mirrors the Rust runtime's LaunchGateV1 (rust/pygpukit-python/src/scheduler/gate.rs).
struct LaunchGateTable {
    uint32_t abi_version;
    uint32_t struct_size;
    const void* (*current)();
    int (*begin)(const void*);
    void (*end)(const void*);
    void (*release)(const void*);
    uint64_t (*task_id)(const void*);
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

// Scope of one launch: the constructor waits for the grant (throws LaunchCancelled), the
// destructor ends the launch. Construct with the GIL held.
class LaunchGuard {
public:
    LaunchGuard();
    ~LaunchGuard();
    LaunchGuard(const LaunchGuard&) = delete;
    LaunchGuard& operator=(const LaunchGuard&) = delete;

private:
    const void* task_ = nullptr;
};

}  // namespace pgk
