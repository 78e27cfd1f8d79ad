// The CUDA driver, opened with dlopen at run time, and `check` for every call's result.
#pragma once

#include <stdexcept>
#include <string>

#include "cuda_types.hpp"

namespace pgk {

// A failed driver call: the message names the call and the driver's error name and text.
class CudaError : public std::runtime_error {
public:
    CudaError(const std::string& msg, CUresult code) : std::runtime_error(msg), code(code) {}
    CUresult code;
};

// A sticky error (a kernel faulted: illegal address, trap, ...): the context is unusable for
// the rest of the process. Raised as pygpukit_cuda.errors.CudaContextLostError in Python.
class CudaContextLostError : public CudaError {
public:
    using CudaError::CudaError;
};

// X(name, symbol, return, params): every driver entry point we call. `symbol` is what
// libcuda exports (the _v2 names carry the 64-bit ABI).
#define PGK_DRIVER_FUNCTIONS(X)                                                              \
    X(cuInit, "cuInit", CUresult, (unsigned))                                                \
    X(cuDriverGetVersion, "cuDriverGetVersion", CUresult, (int*))                            \
    X(cuGetErrorName, "cuGetErrorName", CUresult, (CUresult, const char**))                  \
    X(cuGetErrorString, "cuGetErrorString", CUresult, (CUresult, const char**))              \
    X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int*))                                \
    X(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice*, int))                                \
    X(cuDeviceGetName, "cuDeviceGetName", CUresult, (char*, int, CUdevice))                  \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int*, int, CUdevice))         \
    X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult, (size_t*, CUdevice))                \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext*, CUdevice)) \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice))      \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext))                             \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult, (CUcontext*))                            \
    X(cuCtxSynchronize, "cuCtxSynchronize", CUresult, ())                                    \
    X(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", CUresult, (int*, int*))    \
    X(cuMemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr*, size_t))                         \
    X(cuMemFree, "cuMemFree_v2", CUresult, (CUdeviceptr))                                    \
    X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult, (size_t*, size_t*))                         \
    X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult, (CUdeviceptr, const void*, size_t))         \
    X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void*, CUdeviceptr, size_t))               \
    X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUresult, (CUdeviceptr, CUdeviceptr, size_t))         \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult,                                   \
      (CUdeviceptr, const void*, size_t, CUstream))                                          \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult,                                   \
      (void*, CUdeviceptr, size_t, CUstream))                                                \
    X(cuMemAllocHost, "cuMemAllocHost_v2", CUresult, (void**, size_t))                       \
    X(cuMemFreeHost, "cuMemFreeHost", CUresult, (void*))                                     \
    X(cuMemsetD8, "cuMemsetD8_v2", CUresult, (CUdeviceptr, unsigned char, size_t))           \
    X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", CUresult,                    \
      (CUstream*, unsigned, int))                                                            \
    X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult, (CUstream))                           \
    X(cuStreamSynchronize, "cuStreamSynchronize", CUresult, (CUstream))                      \
    X(cuStreamQuery, "cuStreamQuery", CUresult, (CUstream))                                  \
    X(cuStreamWaitEvent, "cuStreamWaitEvent", CUresult, (CUstream, CUevent, unsigned))       \
    X(cuEventCreate, "cuEventCreate", CUresult, (CUevent*, unsigned))                        \
    X(cuEventDestroy, "cuEventDestroy_v2", CUresult, (CUevent))                              \
    X(cuEventRecord, "cuEventRecord", CUresult, (CUevent, CUstream))                         \
    X(cuEventQuery, "cuEventQuery", CUresult, (CUevent))                                     \
    X(cuEventSynchronize, "cuEventSynchronize", CUresult, (CUevent))                         \
    X(cuModuleLoadData, "cuModuleLoadData", CUresult, (CUmodule*, const void*))              \
    X(cuModuleUnload, "cuModuleUnload", CUresult, (CUmodule))                                \
    X(cuModuleGetFunction, "cuModuleGetFunction", CUresult, (CUfunction*, CUmodule, const char*)) \
    X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult, (CUfunction, int, int))            \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", CUresult, (int*, int, CUfunction))           \
    X(cuLaunchKernel, "cuLaunchKernel", CUresult,                                            \
      (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,      \
       CUstream, void**, void**))                                                            \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", CUresult,                                   \
      (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                          \
    X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", CUresult, (CUstream, int))            \
    X(cuStreamEndCapture, "cuStreamEndCapture", CUresult, (CUstream, CUgraph*))              \
    X(cuStreamIsCapturing, "cuStreamIsCapturing", CUresult, (CUstream, int*))                \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", CUresult,                  \
      (CUgraphExec*, CUgraph, unsigned long long))                                           \
    X(cuGraphLaunch, "cuGraphLaunch", CUresult, (CUgraphExec, CUstream))                     \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", CUresult, (CUgraphExec))                     \
    X(cuGraphDestroy, "cuGraphDestroy", CUresult, (CUgraph))                                 \
    X(cuGraphGetNodes, "cuGraphGetNodes", CUresult, (CUgraph, void**, size_t*))

struct DriverApi {
#define PGK_DECLARE(name, symbol, ret, params) ret(*name) params = nullptr;
    PGK_DRIVER_FUNCTIONS(PGK_DECLARE)
#undef PGK_DECLARE
    // cuEventElapsedTime changed its exported name in CUDA 12.8; we take either.
    CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
    // Optional (CUDA 11.8+ drivers): launches with attributes (programmatic dependent
    // launch); null on an older driver, which then launches every kernel plainly.
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
};

// Green contexts (SM partitions): optional, since drivers before CUDA 12.4 lack them.
struct GreenApi {
    CUresult (*cuDeviceGetDevResource)(CUdevice, CUdevResource*, int) = nullptr;
    CUresult (*cuDevSmResourceSplitByCount)(CUdevResource*, unsigned*, const CUdevResource*,
                                            CUdevResource*, unsigned, unsigned) = nullptr;
    CUresult (*cuDevResourceGenerateDesc)(CUdevResourceDesc*, CUdevResource*, unsigned) = nullptr;
    CUresult (*cuGreenCtxCreate)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned) = nullptr;
    CUresult (*cuGreenCtxDestroy)(CUgreenCtx) = nullptr;
    CUresult (*cuCtxFromGreenCtx)(CUcontext*, CUgreenCtx) = nullptr;
    CUresult (*cuGreenCtxStreamCreate)(CUstream*, CUgreenCtx, unsigned, int) = nullptr;
    CUresult (*cuGreenCtxGetDevResource)(CUgreenCtx, CUdevResource*, int) = nullptr;
};

// The green-context entry points, or null when the driver lacks one; `green_status` says
// which is missing ("" when all are there).
const GreenApi& green_api();
const std::string& green_status();

// Open libcuda (once) and call cuInit. Returns false and records why on failure.
bool load_driver(const std::string& path);
// Whether load_driver succeeded.
bool driver_loaded();
// One line: "CUDA driver <version> (<path>)", or why it is missing.
const std::string& driver_status();
// The loaded function table; throws CudaError when the driver is missing.
const DriverApi& driver();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a driver result code.
std::string error_text(CUresult code);
// Throw CudaError naming `call` unless `code` is CUDA_SUCCESS; CudaContextLostError (and
// the current context remembered as lost) for the sticky codes of a faulted kernel.
void check(CUresult code, const char* call);
// Whether `code` leaves the context unusable (CUDA_ERROR_ILLEGAL_ADDRESS, LAUNCH_FAILED, ...).
bool is_context_lost_code(CUresult code);
// Throw CudaContextLostError when `ctx` (of device `ordinal`) was lost earlier: later calls
// fail fast with the first error instead of reaching the driver again.
void throw_if_lost(CUcontext ctx, int ordinal);

}  // namespace pgk
