// The pygpukit_cuda._native module: a thin pybind11 face over the driver and NVRTC wrappers.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "allocator_table.hpp"
#include "buffer_allocator.hpp"
#include "context.hpp"
#include "cublaslt_api.hpp"
#include "cufft_api.hpp"
#include "driver_api.hpp"
#include "graph.hpp"
#include "green.hpp"
#include "launch.hpp"
#include "launch_gate.hpp"
#include "launch_plan.hpp"
#include "fresh_elementwise.hpp"
#include "front_door.hpp"
#include "fft_call.hpp"
#include "matmul_plan.hpp"
#include "module.hpp"
#include "nvrtc_api.hpp"
#include "stream.hpp"

namespace py = pybind11;
using pgk::Context;

namespace {

// Bumped whenever the compiled-kernel calling convention changes (part of the cache key).
constexpr int kAbiVersion = 1;

pgk::Dim3 dim3_of(const std::vector<unsigned>& v, const char* what) {
    if (v.empty() || v.size() > 3) throw py::value_error(std::string(what) + " needs 1 to 3 sizes");
    pgk::Dim3 d;
    d.x = v[0];
    if (v.size() > 1) d.y = v[1];
    if (v.size() > 2) d.z = v[2];
    return d;
}

// A launch's grid or block: a plain int (cheap to take) or a sequence of 1 to 3 sizes.
pgk::Dim3 dims_of(py::handle h, const char* what) {
    if (PyLong_Check(h.ptr())) {
        pgk::Dim3 d;
        d.x = h.cast<unsigned>();
        return d;
    }
    return dim3_of(h.cast<std::vector<unsigned>>(), what);
}

// The packed kernel arguments: bytes directly, anything else through the buffer protocol.
struct ArgBytes {
    const void* ptr = nullptr;
    size_t size = 0;
    Py_buffer view{};
    bool held = false;

    explicit ArgBytes(py::handle h) {
        if (PyBytes_Check(h.ptr())) {
            ptr = PyBytes_AS_STRING(h.ptr());
            size = static_cast<size_t>(PyBytes_GET_SIZE(h.ptr()));
            return;
        }
        if (PyObject_GetBuffer(h.ptr(), &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
        held = true;
        ptr = view.buf;
        size = static_cast<size_t>(view.len);
    }
    ~ArgBytes() {
        if (held) PyBuffer_Release(&view);
    }
    ArgBytes(const ArgBytes&) = delete;
    ArgBytes& operator=(const ArgBytes&) = delete;
};

uintptr_t handle(const void* p) { return reinterpret_cast<uintptr_t>(p); }

PyObject* g_cuda_error = nullptr;  // pygpukit_cuda._native.CudaError
PyObject* g_lost_error = nullptr;  // pygpukit_cuda.errors.CudaContextLostError
PyObject* g_lt_error = nullptr;    // pygpukit_cuda._native.CublasLtError
PyObject* g_fft_error = nullptr;   // pygpukit_cuda._native.CufftError

// The C++ exception being handled as a Python error, as pybind11's translators would set it;
// for code called without pybind11 (LaunchPlan's vectorcall).
void set_python_error() {
    try {
        throw;
    } catch (const pgk::CudaContextLostError& e) {
        PyErr_SetString(g_lost_error, e.what());
    } catch (const pgk::CudaError& e) {
        PyErr_SetString(g_cuda_error, e.what());
    } catch (const pgk::LtError& e) {
        PyErr_SetString(g_lt_error, e.what());
    } catch (const pgk::CufftError& e) {
        PyErr_SetString(g_fft_error, e.what());
    } catch (const pgk::LaunchCancelled& e) {
        PyObject* type = pgk::cancelled_error_type();
        PyErr_SetString(type != nullptr ? type : PyExc_RuntimeError, e.what());
    } catch (const std::invalid_argument& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception in a kernel launch");
    }
}

// Context.launch_plan's slots: (byte offset, code) pairs.
std::vector<pgk::PlanSlot> plan_slots(const std::vector<std::pair<size_t, std::string>>& raw) {
    std::vector<pgk::PlanSlot> slots;
    for (const auto& [offset, code] : raw) {
        if (code.size() != 1) throw py::value_error("a launch plan slot code is one character");
        slots.push_back({offset, code[0]});
    }
    return slots;
}

}  // namespace

namespace pgk {
void bind_cusolver(py::module_& m);  // cusolver_binding.cpp
}

PYBIND11_MODULE(_native, m) {
    m.doc() = "CUDA driver and NVRTC, opened at run time (no CUDA Toolkit needed to build)";
    m.attr("ABI_VERSION") = kAbiVersion;
    m.attr("ALLOCATOR_CAPSULE_NAME") = pgk::kAllocatorCapsuleName;
    m.attr("ALLOCATOR_TABLE_SIZE") = sizeof(pgk::DeviceAllocatorV1);

    g_cuda_error =
        py::register_exception<pgk::CudaError>(m, "CudaError", PyExc_RuntimeError).ptr();
    py::register_exception<pgk::NvrtcError>(m, "NvrtcError", PyExc_RuntimeError);
    g_lt_error =
        py::register_exception<pgk::LtError>(m, "CublasLtError", PyExc_RuntimeError).ptr();
    g_fft_error =
        py::register_exception<pgk::CufftError>(m, "CufftError", PyExc_RuntimeError).ptr();
    // A lost context raises the pure-Python class (catchable without the extension); this
    // translator is registered after CudaError's, so it is tried first.
    g_lost_error =
        py::object(py::module_::import("pygpukit_cuda.errors").attr("CudaContextLostError"))
            .release()
            .ptr();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const pgk::CudaContextLostError& e) {
            PyErr_SetString(g_lost_error, e.what());
        } catch (const pgk::LaunchCancelled& e) {
            PyObject* type = pgk::cancelled_error_type();
            PyErr_SetString(type != nullptr ? type : PyExc_RuntimeError, e.what());
        }
    });
    static PyTypeObject* plan_type = pgk::make_launch_plan_type(&set_python_error);
    if (plan_type == nullptr) throw py::error_already_set();
    m.attr("LaunchPlan") = py::handle(reinterpret_cast<PyObject*>(plan_type));
    if (!pgk::make_buffer_types()) throw py::error_already_set();
    m.attr("DeviceBuffer") = py::handle(reinterpret_cast<PyObject*>(pgk::device_buffer_type()));
    static PyTypeObject* matmul_plan_type = pgk::make_matmul_plan_type(&set_python_error);
    if (matmul_plan_type == nullptr) throw py::error_already_set();
    m.attr("MatmulPlan") = py::handle(reinterpret_cast<PyObject*>(matmul_plan_type));
    m.attr("BufferAllocator") =
        py::handle(reinterpret_cast<PyObject*>(pgk::buffer_allocator_type()));

    static PyTypeObject* fresh_type = pgk::make_fresh_elementwise_type(&set_python_error);
    if (fresh_type == nullptr) throw py::error_already_set();
    m.attr("FreshElementwise") = py::handle(reinterpret_cast<PyObject*>(fresh_type));
    m.def(
        "fresh_elementwise",
        [](py::object array_type, py::object stream_var, int arity) {
            PyObject* f = pgk::new_fresh_elementwise(array_type.ptr(), stream_var.ptr(), arity);
            if (f == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(f);
        },
        py::arg("array_type"), py::arg("stream_var"), py::arg("arity"),
        "A FreshElementwise: an elementwise op's contiguous same-shape case in one native "
        "call (allocate on the current stream, launch a learned LaunchPlan, return a new "
        "array_type instance). Needs no driver.");
    static PyTypeObject* door_type = pgk::make_front_door_type();
    if (door_type == nullptr) throw py::error_already_set();
    m.attr("FrontDoor") = py::handle(reinterpret_cast<PyObject*>(door_type));
    m.def(
        "front_door",
        [](py::object known, int arity, py::object array_type, py::object general,
           py::object declined, py::object globals, py::object base_key,
           py::object layers_var, py::object current) {
            PyObject* d = pgk::new_front_door(known.ptr(), arity, array_type.ptr(),
                                              general.ptr(), declined.ptr(), globals.ptr(),
                                              base_key.ptr(), layers_var.ptr(), current.ptr());
            if (d == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(d);
        },
        py::arg("known"), py::arg("arity"), py::arg("array_type"), py::arg("general"),
        py::arg("declined"), py::arg("globals"),
        py::arg("base_key"), py::arg("layers_var"), py::arg("current"),
        "A FrontDoor: a public elementwise function's first step (the check of pygpukit's "
        "reference door, then the op's learned fast path or the op layer) in one native "
        "call.");
    m.def(
        "buffer_allocator",
        [](py::object fast_table, py::object context) {
            PyObject* a = pgk::new_buffer_allocator(fast_table.ptr(), context.ptr());
            if (a == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(a);
        },
        py::arg("fast_table"), py::arg("context"),
        "A BufferAllocator over a Rust pool's fast table (MemoryPool.fast_table()); its "
        "DeviceBuffers carry `context` (the device's Context). Needs no driver.");

    m.def(
        "install_launch_gate",
        [](py::object table, py::object cancelled) {
            if (!pgk::install_launch_gate(table.ptr(), cancelled.ptr())) {
                throw py::error_already_set();
            }
        },
        py::arg("table"), py::arg("cancelled"),
        "Route every launch through the Rust runtime's gate (its launch_gate_table() "
        "capsule); `cancelled` is the exception type for a cancelled task.");
    m.def("launch_gate_installed", &pgk::launch_gate_installed);
    m.def(
        "set_programmatic",
        [](uintptr_t func, bool on) {
            pgk::set_programmatic(reinterpret_cast<CUfunction>(func), on);
        },
        py::arg("func"), py::arg("on"),
        "Mark a kernel for programmatic dependent launch (it must begin with "
        "griddepcontrol.wait).");
    m.def(
        "is_programmatic",
        [](uintptr_t func) { return pgk::is_programmatic(reinterpret_cast<CUfunction>(func)); },
        py::arg("func"));
    m.def("programmatic_launches", &pgk::programmatic_launches,
          "Launches made with programmatic stream serialisation so far.");
    m.def("captures_in_progress", &pgk::captures_in_progress,
          "Graph captures begun (Context.begin_capture) and not yet ended; while none is, "
          "launches do not ask the driver whether their stream captures.");
    m.def(
        "has_launch_ex",
        [] { return pgk::driver_loaded() && pgk::driver().cuLaunchKernelEx != nullptr; },
        "Whether the driver has cuLaunchKernelEx (programmatic dependent launch).");

    // -- driver ----------------------------------------------------------------------
    m.def("load_driver", &pgk::load_driver, py::arg("path") = "libcuda.so.1",
          "Open the CUDA driver and call cuInit (once); False if it is missing or fails.");
    m.def("driver_loaded", &pgk::driver_loaded);
    m.def("driver_status", &pgk::driver_status, "One line: the driver found, or why not.");
    m.def("driver_version", &pgk::driver_version, "e.g. 13000 for CUDA 13.0.");
    m.def("device_count", &pgk::device_count);
    m.def("error_text", &pgk::error_text, "CUDA_ERROR_... name and description of a code.");
    m.def(
        "check", [](int code, const std::string& call) { pgk::check(code, call.c_str()); },
        py::arg("code"), py::arg("call"),
        "Raise for a failed driver result (CudaContextLostError for a faulted kernel).");

    // -- NVRTC -----------------------------------------------------------------------
    m.def("load_nvrtc", &pgk::load_nvrtc, py::arg("candidates"),
          "Open the first NVRTC among the candidate files or folders; False if none opens.");
    m.def("nvrtc_loaded", &pgk::nvrtc_loaded);
    m.def("nvrtc_path", &pgk::nvrtc_path);
    m.def("nvrtc_status", &pgk::nvrtc_status);
    m.def("nvrtc_version", &pgk::nvrtc_version);
    m.def("nvrtc_supported_archs", &pgk::nvrtc_supported_archs);
    m.def(
        "compile",
        [](const std::string& source, const std::string& name,
           const std::vector<std::string>& options, bool cubin) {
            pgk::CompileResult r;
            {
                py::gil_scoped_release release;
                r = pgk::compile(source, name, options, cubin);
            }
            return py::make_tuple(r.ok, py::bytes(r.image), r.log);
        },
        py::arg("source"), py::arg("name"), py::arg("options"), py::arg("cubin") = true,
        "(ok, image, log): CUBIN (or PTX) bytes, or ok=False and NVRTC's log.");

    // -- context ---------------------------------------------------------------------
    py::class_<Context, std::shared_ptr<Context>>(m, "Context")
        .def(py::init<int>(), py::arg("ordinal"))
        .def_property_readonly("ordinal", &Context::ordinal)
        .def("make_current", &Context::make_current)
        .def("name", &Context::name)
        .def("attribute", &Context::attribute)
        .def("compute_capability",
             [](const Context& c) {
                 return py::make_tuple(
                     c.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                     c.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
             })
        .def("total_memory", &Context::total_memory)
        .def("memory_info", &Context::memory_info, "(free, total) bytes")
        .def("alloc", &Context::alloc, py::arg("nbytes"))
        .def("free", &Context::free, py::arg("ptr"))
        .def(
            "upload",
            [](const Context& c, CUdeviceptr dst, uintptr_t host, size_t n) {
                c.make_current();
                pgk::LaunchGuard gate(nullptr);  // a task's copy is charged device time
                py::gil_scoped_release release;
                c.upload(dst, reinterpret_cast<const void*>(host), n);
            },
            py::arg("dst"), py::arg("host_ptr"), py::arg("nbytes"))
        .def(
            "download",
            [](const Context& c, uintptr_t host, CUdeviceptr src, size_t n) {
                c.make_current();
                pgk::LaunchGuard gate(nullptr);
                py::gil_scoped_release release;
                c.download(reinterpret_cast<void*>(host), src, n);
            },
            py::arg("host_ptr"), py::arg("src"), py::arg("nbytes"))
        .def(
            "copy",
            [](const Context& c, CUdeviceptr dst, CUdeviceptr src, size_t n) {
                c.make_current();
                pgk::LaunchGuard gate(nullptr);
                c.copy(dst, src, n);
            },
            py::arg("dst"), py::arg("src"), py::arg("nbytes"))
        .def(
            "copy_async",
            [](const Context& c, CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t stream) {
                c.make_current();
                // gated and timed like a kernel: inside a task the copy's device time is
                // charged (events around it), not the host's enqueue time
                pgk::LaunchGuard gate(reinterpret_cast<CUstream>(stream));
                pgk::check(pgk::driver().cuMemcpyDtoDAsync(dst, src, n,
                                                           reinterpret_cast<CUstream>(stream)),
                           "cuMemcpyDtoDAsync");
            },
            py::arg("dst"), py::arg("src"), py::arg("nbytes"), py::arg("stream"),
            "A device-to-device copy queued on `stream`.")
        .def(
            "stream_synchronize",
            [](const Context& c, uintptr_t stream) {
                py::gil_scoped_release release;
                c.make_current();
                pgk::check(pgk::driver().cuStreamSynchronize(reinterpret_cast<CUstream>(stream)),
                           "cuStreamSynchronize");
            },
            py::arg("stream"), "Wait for one stream (0: the legacy default stream).")
        .def(
            "stream_query",
            [](const Context& c, uintptr_t stream) {
                c.make_current();
                CUresult rc = pgk::driver().cuStreamQuery(reinterpret_cast<CUstream>(stream));
                if (rc == CUDA_ERROR_NOT_READY) return false;
                pgk::check(rc, "cuStreamQuery");
                return true;
            },
            py::arg("stream"), "True when the stream's queued work has finished.")
        .def(
            "begin_capture",
            [](const Context& c, uintptr_t stream, int mode) {
                pgk::begin_capture(c, reinterpret_cast<CUstream>(stream), mode);
            },
            py::arg("stream"), py::arg("mode"),
            "Start capturing `stream` into a CUDA graph (mode: CUstreamCaptureMode).")
        .def(
            "is_capturing",
            [](const Context& c, uintptr_t stream) {
                return pgk::is_capturing(c, reinterpret_cast<CUstream>(stream));
            },
            py::arg("stream"))
        .def("memset8", &Context::memset8, py::arg("dst"), py::arg("value"), py::arg("nbytes"))
        .def("synchronize",
             [](const Context& c) {
                 py::gil_scoped_release release;
                 c.synchronize();
             })
        .def(
            "function_attribute",
            [](const Context& c, uintptr_t func, int attr) {
                return pgk::function_attribute(c, reinterpret_cast<CUfunction>(func), attr);
            },
            py::arg("func"), py::arg("attr"), "cuFuncGetAttribute (CU_FUNC_ATTRIBUTE_*).")
        .def(
            "set_function_attribute",
            [](const Context& c, uintptr_t func, int attr, int value) {
                pgk::set_function_attribute(c, reinterpret_cast<CUfunction>(func), attr, value);
            },
            py::arg("func"), py::arg("attr"), py::arg("value"))
        .def("stream_priority_range", &Context::stream_priority_range,
             "(least, greatest): lower numbers are higher priorities")
        .def(
            "launch",
            [](const Context& c, uintptr_t func, py::handle grid, py::handle block,
               unsigned shared, uintptr_t stream, py::handle args) {
                // grid/block: an int (1-D, the hot path) or 1 to 3 sizes; args: bytes or
                // any contiguous buffer (bytearray) holding the packed parameters
                ArgBytes data(args);
                pgk::launch(c, reinterpret_cast<CUfunction>(func), dims_of(grid, "grid"),
                            dims_of(block, "block"), shared, reinterpret_cast<CUstream>(stream),
                            data.ptr, data.size);
            },
            py::arg("func"), py::arg("grid"), py::arg("block"), py::arg("shared"),
            py::arg("stream"), py::arg("args"))
        .def(
            "launch_plan",
            [](std::shared_ptr<Context> c, uintptr_t func, py::handle grid, py::handle block,
               unsigned shared, const py::bytes& params,
               const std::vector<std::pair<size_t, std::string>>& slots) {
                pgk::LaunchPlanSpec spec;
                spec.context = std::move(c);
                spec.func = reinterpret_cast<CUfunction>(func);
                spec.grid = dims_of(grid, "grid");
                spec.block = dims_of(block, "block");
                spec.shared_bytes = shared;
                spec.params = params;
                spec.slots = plan_slots(slots);
                PyObject* plan = nullptr;
                try {
                    plan = pgk::new_launch_plan(plan_type, std::move(spec));
                } catch (const std::invalid_argument& e) {
                    throw py::value_error(e.what());
                }
                if (plan == nullptr) throw py::error_already_set();
                return py::reinterpret_steal<py::object>(plan);
            },
            py::arg("func"), py::arg("grid"), py::arg("block"), py::arg("shared"),
            py::arg("params"), py::arg("slots"),
            "A LaunchPlan: plan(stream, *values) launches with each value written at its "
            "(byte offset, code) slot of params; code P is a device pointer, else a struct "
            "code of a scalar.")
        .def(
            "allocator_capsule",
            [](const std::shared_ptr<Context>& c) {
                auto* table = pgk::make_allocator_table(c);
                // The capsule owns the struct; the pool's `release` frees what ctx holds.
                return py::capsule(table, pgk::kAllocatorCapsuleName, [](PyObject* cap) {
                    delete static_cast<pgk::DeviceAllocatorV1*>(
                        PyCapsule_GetPointer(cap, pgk::kAllocatorCapsuleName));
                });
            },
            "A PyCapsule 'pygpukit.device_allocator_v1' for the Rust memory pool.");

    m.attr("ATTR_MULTIPROCESSOR_COUNT") = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    m.attr("ATTR_MAX_THREADS_PER_BLOCK") = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    m.attr("ATTR_MAX_SHARED_MEMORY_PER_BLOCK") = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
    m.attr("ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") =
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
    m.attr("ATTR_L2_CACHE_SIZE") = CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
    m.attr("ATTR_WARP_SIZE") = CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    m.attr("ATTR_CLOCK_RATE") = CU_DEVICE_ATTRIBUTE_CLOCK_RATE;
    m.attr("ATTR_PCI_BUS_ID") = CU_DEVICE_ATTRIBUTE_PCI_BUS_ID;

    // -- CUDA graphs -----------------------------------------------------------------
    py::class_<pgk::Graph, std::shared_ptr<pgk::Graph>>(m, "Graph")
        .def(py::init([](std::shared_ptr<Context> c, uintptr_t stream) {
                 return std::make_shared<pgk::Graph>(std::move(c),
                                                     reinterpret_cast<CUstream>(stream));
             }),
             py::arg("context"), py::arg("stream"),
             "End the capture on `stream` and instantiate the graph it recorded.")
        .def(
            "launch",
            [](const pgk::Graph& g, uintptr_t stream) {
                g.launch(reinterpret_cast<CUstream>(stream));
            },
            py::arg("stream"), "Enqueue one replay on `stream`.")
        .def_property_readonly("node_count", &pgk::Graph::node_count);
    m.attr("CAPTURE_MODE_GLOBAL") = CU_STREAM_CAPTURE_MODE_GLOBAL;
    m.attr("CAPTURE_MODE_THREAD_LOCAL") = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    m.attr("CAPTURE_MODE_RELAXED") = CU_STREAM_CAPTURE_MODE_RELAXED;

    // -- cuBLASLt ----------------------------------------------------------------------
    py::class_<pgk::CublasLt, std::shared_ptr<pgk::CublasLt>>(m, "CublasLt")
        .def(py::init<const std::string&>(), py::arg("path"),
             "dlopen a libcublasLt; CublasLtError names the path and what failed.")
        .def_property_readonly("path", &pgk::CublasLt::path)
        .def_property_readonly("version", &pgk::CublasLt::version)
        .def(
            "plan",
            [](std::shared_ptr<pgk::CublasLt> lt, std::shared_ptr<Context> ctx, py::tuple types,
               py::tuple a, py::tuple b, py::tuple out, py::tuple aligns,
               uint64_t max_workspace, int max_candidates, py::object like) {
                pgk::LtProblem p;
                p.data_type = types[0].cast<int>();
                p.scale_type = types[1].cast<int>();
                p.compute = types[2].cast<int>();
                auto operand = [](py::tuple t) {
                    pgk::LtOperand o;
                    o.op = t[0].cast<int>();
                    o.rows = t[1].cast<uint64_t>();
                    o.cols = t[2].cast<uint64_t>();
                    o.ld = t[3].cast<int64_t>();
                    o.batch_stride = t[4].cast<int64_t>();
                    return o;
                };
                p.a = operand(a);
                p.b = operand(b);
                p.m = out[0].cast<uint64_t>();
                p.n = out[1].cast<uint64_t>();
                p.batch = out[2].cast<int>();
                p.c_batch_stride = out[3].cast<int64_t>();
                p.align_a = aligns[0].cast<uint32_t>();
                p.align_b = aligns[1].cast<uint32_t>();
                p.align_c = aligns[2].cast<uint32_t>();
                p.max_workspace = max_workspace;
                p.max_candidates = max_candidates;
                PyObject* plan = pgk::new_matmul_plan(std::move(lt), std::move(ctx), p,
                                                      like.is_none() ? nullptr : like.ptr());
                if (plan == nullptr) throw py::error_already_set();
                return py::reinterpret_steal<py::object>(plan);
            },
            py::arg("context"), py::arg("types"), py::arg("a"), py::arg("b"), py::arg("out"),
            py::arg("aligns"), py::arg("max_workspace"), py::arg("max_candidates") = 8,
            py::arg("like") = py::none(),
            "A MatmulPlan, or None when cuBLASLt has no algorithm. types: (data, scale, "
            "compute); a, b: (op, rows, cols, ld, batch_stride) in cuBLASLt's column-major "
            "terms; out: (m, n, batch, batch_stride); aligns: bytes of A, B and C/D; like: a "
            "MatmulPlan whose chosen algorithm this plan must run (None when cuBLASLt "
            "refuses it here).");

    pgk::bind_cusolver(m);
    // -- cuFFT -------------------------------------------------------------------------
    py::class_<pgk::Cufft, std::shared_ptr<pgk::Cufft>>(m, "Cufft")
        .def(py::init<const std::string&>(), py::arg("path"),
             "dlopen a libcufft; CufftError names the path and what failed.")
        .def_property_readonly("path", &pgk::Cufft::path)
        .def_property_readonly("version", &pgk::Cufft::version)
        .def(
            "plan",
            [](std::shared_ptr<pgk::Cufft> lib, std::shared_ptr<Context> ctx, int type,
               std::vector<long long> n, std::vector<long long> inembed, long long istride,
               long long idist, std::vector<long long> onembed, long long ostride,
               long long odist, long long batch) {
                pgk::FftLayout l;
                l.type = type;
                l.n = std::move(n);
                l.inembed = std::move(inembed);
                l.onembed = std::move(onembed);
                l.istride = istride;
                l.idist = idist;
                l.ostride = ostride;
                l.odist = odist;
                l.batch = batch;
                return std::make_shared<pgk::FftPlan>(std::move(lib), std::move(ctx), l);
            },
            py::arg("context"), py::arg("type"), py::arg("n"), py::arg("inembed"),
            py::arg("istride"), py::arg("idist"), py::arg("onembed"), py::arg("ostride"),
            py::arg("odist"), py::arg("batch"),
            "An FftPlan (cufftMakePlanMany64 with auto-allocation off); sizes in elements.");
    py::class_<pgk::FftPlan, std::shared_ptr<pgk::FftPlan>>(m, "FftPlan")
        .def_property_readonly("work_bytes", &pgk::FftPlan::work_bytes)
        .def_property_readonly("type", &pgk::FftPlan::type)
        .def(
            "__call__",
            [](const pgk::FftPlan& p, uintptr_t stream, uint64_t in, uint64_t out, uint64_t work,
               int direction) {
                p.execute(reinterpret_cast<CUstream>(stream), in, out, work, direction);
            },
            py::arg("stream"), py::arg("input"), py::arg("output"), py::arg("work"),
            py::arg("direction") = -1,
            "Enqueue the transform on `stream` (direction -1 forward, 1 inverse).");

    static PyTypeObject* fft_call_type = pgk::make_fft_call_type(&set_python_error);
    if (fft_call_type == nullptr) throw py::error_already_set();
    m.attr("FftCall") = py::handle(reinterpret_cast<PyObject*>(fft_call_type));
    m.def(
        "fft_call",
        [](py::object array_type, py::object stream_var, py::object plan, py::object allocator,
           py::tuple in_shape, py::tuple in_strides, py::object in_dtype, py::object device,
           unsigned long long in_align, long long device_index, py::tuple out_shape,
           py::tuple out_strides, py::object out_dtype, unsigned long long out_nbytes,
           int direction, unsigned long long copy_bytes, py::object copy, py::object pre,
           py::object post) {
            pgk::FftCallSpec s;
            s.array_type = array_type.ptr();
            s.stream_var = stream_var.ptr();
            if (py::isinstance<pgk::FftPlan>(plan)) {
                s.native_plan = plan.cast<std::shared_ptr<pgk::FftPlan>>();
                s.work_bytes = s.native_plan->work_bytes();
            } else if (pgk::launch_plan_spec(plan.ptr()) != nullptr) {
                s.kernel_plan = true;  // our own FFT kernel: plan(stream, in, out)
            } else {
                s.work_bytes = plan.attr("work_bytes").cast<unsigned long long>();
            }
            s.plan = plan.ptr();
            s.allocator = allocator.ptr();
            s.in_shape = in_shape.ptr();
            s.in_strides = in_strides.ptr();
            s.in_dtype = in_dtype.ptr();
            s.device = device.ptr();
            s.in_align = in_align;
            s.device_index = device_index;
            s.out_shape = out_shape.ptr();
            s.out_strides = out_strides.ptr();
            s.out_dtype = out_dtype.ptr();
            s.out_nbytes = out_nbytes;
            s.direction = direction;
            s.copy_bytes = copy_bytes;
            s.copy = copy.is_none() ? nullptr : copy.ptr();
            s.pre = pre.is_none() ? nullptr : pre.ptr();
            s.post = post.is_none() ? nullptr : post.ptr();
            PyObject* f = pgk::new_fft_call(s);
            if (f == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(f);
        },
        py::arg("array_type"), py::arg("stream_var"), py::arg("plan"), py::arg("allocator"),
        py::arg("in_shape"), py::arg("in_strides"), py::arg("in_dtype"), py::arg("device"),
        py::arg("in_align"), py::arg("device_index"), py::arg("out_shape"),
        py::arg("out_strides"), py::arg("out_dtype"), py::arg("out_nbytes"),
        py::arg("direction"), py::arg("copy_bytes") = 0, py::arg("copy") = py::none(),
        py::arg("pre") = py::none(), py::arg("post") = py::none(),
        "An FftCall: one planned transform of one input layout as one native call (see "
        "fft_call.hpp). plan: an FftPlan, a LaunchPlan run as plan(stream, in, out), or any "
        "callable plan(stream, in, out, work, direction) with work_bytes. Needs no driver to "
        "be made.");

    // -- streams and events ----------------------------------------------------------
    // -- green contexts (SM partitions) --------------------------------------------------
    m.def("green_contexts_status", []() { return pgk::green_status(); },
          "Why green contexts are unavailable, or '' when the driver has them.");
    m.def(
        "sm_info",
        [](const std::shared_ptr<Context>& c) {
            const pgk::SmInfo i = pgk::sm_info(*c);
            return py::make_tuple(i.sms, i.min_partition, i.alignment);
        },
        py::arg("context"),
        "(SMs, smallest partition, partition alignment) of the context's device; 0 where "
        "the driver does not say.");
    py::class_<pgk::GreenContext, std::shared_ptr<pgk::GreenContext>>(m, "GreenContext")
        .def_property_readonly("sm_count", &pgk::GreenContext::sm_count)
        .def_property_readonly("handle",
                               [](const pgk::GreenContext& g) { return handle(g.context()); })
        .def("make_current", &pgk::GreenContext::make_current);
    m.def(
        "split_sms",
        [](const std::shared_ptr<Context>& c, unsigned sms) {
            auto parts = pgk::split_sms(c, sms);
            return py::make_tuple(parts.first, parts.second);
        },
        py::arg("context"), py::arg("sms"),
        "(reserved, rest): green contexts of at least `sms` SMs and of the remainder.");

    py::class_<pgk::Stream, std::shared_ptr<pgk::Stream>>(m, "Stream")
        .def(py::init<std::shared_ptr<Context>, int, bool>(), py::arg("context"),
             py::arg("priority") = 0, py::arg("non_blocking") = true)
        .def(py::init<std::shared_ptr<pgk::GreenContext>, int>(), py::arg("green"),
             py::arg("priority") = 0)
        .def_property_readonly("handle", [](const pgk::Stream& s) { return handle(s.handle()); })
        .def_property_readonly("priority", &pgk::Stream::priority)
        .def("synchronize",
             [](const pgk::Stream& s) {
                 py::gil_scoped_release release;
                 s.synchronize();
             })
        .def("query", &pgk::Stream::query);

    py::class_<pgk::Event, std::shared_ptr<pgk::Event>>(m, "Event")
        .def(py::init<std::shared_ptr<Context>, bool>(), py::arg("context"),
             py::arg("timing") = true)
        .def("record",
             [](const pgk::Event& e, uintptr_t stream) {
                 e.record(reinterpret_cast<CUstream>(stream));
             },
             py::arg("stream") = 0)
        .def("synchronize",
             [](const pgk::Event& e) {
                 py::gil_scoped_release release;
                 e.synchronize();
             })
        .def("query", &pgk::Event::query)
        .def("elapsed_since", &pgk::Event::elapsed_since, py::arg("start"),
             "milliseconds from `start` to this event")
        .def("wait_on",
             [](const pgk::Event& e, uintptr_t stream) {
                 e.wait_on(reinterpret_cast<CUstream>(stream));
             },
             py::arg("stream"));

    // -- modules ---------------------------------------------------------------------
    py::class_<pgk::Module, std::shared_ptr<pgk::Module>>(m, "Module")
        .def(py::init([](std::shared_ptr<Context> c, const py::bytes& image) {
                 return std::make_shared<pgk::Module>(std::move(c), std::string(image));
             }),
             py::arg("context"), py::arg("image"))
        .def(
            "function",
            [](const pgk::Module& mod, const std::string& name) {
                return handle(mod.function(name));
            },
            py::arg("name"), "The kernel's CUfunction handle, for Context.launch.");
}
