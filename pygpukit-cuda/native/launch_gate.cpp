// The launch gate (see launch_gate.hpp): the Rust runtime's C table, called around launches.
#include "launch_gate.hpp"

namespace pgk {
namespace {

LaunchGateTable g_gate{};
bool g_installed = false;
PyObject* g_cancelled = nullptr;

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
    if (table->abi_version != 1 || table->struct_size < sizeof(LaunchGateTable)) {
        PyErr_Format(PyExc_ValueError, "launch gate table version %u of %u bytes; this "
                     "extension reads version 1 of %zu bytes",
                     table->abi_version, table->struct_size, sizeof(LaunchGateTable));
        return false;
    }
    g_gate = *table;  // plain function pointers into the runtime, which stays loaded
    Py_XINCREF(cancelled);
    Py_XSETREF(g_cancelled, cancelled);
    g_installed = true;
    return true;
}

bool launch_gate_installed() { return g_installed; }

PyObject* cancelled_error_type() { return g_cancelled; }

LaunchGuard::LaunchGuard() {
    if (!g_installed) return;
    task_ = g_gate.current();
    if (task_ == nullptr) return;  // not inside a scheduler task
    int refused = 0;
    Py_BEGIN_ALLOW_THREADS  // the grant may wait for other tasks, which need the GIL
    refused = g_gate.begin(task_);
    Py_END_ALLOW_THREADS
    if (refused != 0) {
        const uint64_t id = g_gate.task_id(task_);
        g_gate.release(task_);
        task_ = nullptr;
        throw LaunchCancelled("task " + std::to_string(id) +
                              " was cancelled: its launch was not enqueued");
    }
}

LaunchGuard::~LaunchGuard() {
    if (task_ != nullptr) g_gate.end(task_);
}

}  // namespace pgk
