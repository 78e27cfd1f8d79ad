// The few CUDA driver and NVRTC types we use, declared here so no Toolkit is needed to build.
#pragma once

#include <cstddef>
#include <cstdint>

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUgreenCtx = struct CUgreenCtx_st*;
using CUdevResourceDesc = struct CUdevResourceDesc_st*;

// A device resource (cuda.h's CUdevResource): 144 bytes, the SM fields at offset 96. Drivers
// before CUDA 13 fill only smCount (the rest stays 0); the last 8 bytes are CUDA 13's
// nextResource pointer, left null.
struct alignas(8) CUdevResource {
    int type;
    unsigned char internal_padding[92];
    union {
        struct {
            unsigned smCount;
            unsigned minSmPartitionSize;
            unsigned smCoscheduledAlignment;
            unsigned flags;
        } sm;
        unsigned char oversize[48];
    };
};
static_assert(sizeof(CUdevResource) == 144, "CUdevResource must match cuda.h");
constexpr int CU_DEV_RESOURCE_TYPE_SM = 1;
constexpr unsigned CU_GREEN_CTX_DEFAULT_STREAM = 0x1;

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr nvrtcResult NVRTC_SUCCESS = 0;
constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

// Device attributes (CUdevice_attribute values).
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr int CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
constexpr int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// cuLaunchKernel "extra" markers for a packed argument buffer.
#define PGK_LAUNCH_PARAM_END ((void*)0x00)
#define PGK_LAUNCH_PARAM_BUFFER_POINTER ((void*)0x01)
#define PGK_LAUNCH_PARAM_BUFFER_SIZE ((void*)0x02)

// cuLaunchKernelEx's configuration and one launch attribute (cuda.h's CUlaunchConfig and
// CUlaunchAttribute: the id, padding to 8 bytes, a 64-byte value union).
union CUlaunchAttributeValue {
    char pad[64];
    int programmaticStreamSerializationAllowed;
};
struct CUlaunchAttribute {
    int id;
    char pad[4];
    CUlaunchAttributeValue value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute must match cuda.h");
struct CUlaunchConfig {
    unsigned gridDimX, gridDimY, gridDimZ;
    unsigned blockDimX, blockDimY, blockDimZ;
    unsigned sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute* attrs;
    unsigned numAttrs;
};
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
// CUstreamCaptureMode and CUstreamCaptureStatus.
constexpr int CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;
constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
