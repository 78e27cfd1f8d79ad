/* A null CUDA driver: every entry point pygpukit_cuda's extension resolves, answering as one
 * H100-like GPU whose "device memory" is host memory and whose kernels never run. It lets the
 * whole native launch path (FreshElementwise, LaunchPlan, the launch gate, launch.cpp) run on a
 * machine without a GPU, to measure its host time and count what reaches the driver:
 *
 *     cc -O2 -shared -fPIC -o /tmp/libnullcuda.so scripts/null_libcuda.c
 *     PYGPUKIT_CUDA_DRIVER=/tmp/libnullcuda.so python scripts/native_tiny_op.py
 *
 * Counters (null_counts) say how many launches, programmatic launches and capture queries
 * arrived. Streams remember whether they capture (cuStreamBeginCapture/EndCapture). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

struct null_stream {
    int capturing;
};

static struct { int x; } g_ctx;   /* the one primary context */
static __thread void* g_current;  /* the calling thread's current context */
static unsigned long long g_launches, g_ex_launches, g_capture_queries;
static void* g_last_stream; /* the stream of the latest launch */

/* the stream handle the latest launch went to */
unsigned long long null_last_stream(void) { return (unsigned long long)(uintptr_t)g_last_stream; }

/* launches, programmatic launches (cuLaunchKernelEx), cuStreamIsCapturing calls */
void null_counts(unsigned long long out[3]) {
    out[0] = g_launches;
    out[1] = g_ex_launches;
    out[2] = g_capture_queries;
}

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult c, const char** s) { (void)c; *s = "CUDA_ERROR_NULL_DRIVER"; return 0; }
CUresult cuGetErrorString(CUresult c, const char** s) { (void)c; *s = "null driver error"; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
CUresult cuDeviceGetName(char* buf, int len, int d) {
    (void)d;
    strncpy(buf, "Null GPU", (size_t)len);
    return 0;
}

CUresult cuDeviceGetAttribute(int* v, int attr, int d) {
    (void)d;
    switch (attr) {
        case 1: *v = 1024; break;           /* max threads per block */
        case 8: *v = 49152; break;          /* shared memory per block */
        case 10: *v = 32; break;            /* warp size */
        case 13: *v = 1980000; break;       /* clock rate, kHz */
        case 16: *v = 132; break;           /* multiprocessors */
        case 38: *v = 50 << 20; break;      /* L2 bytes */
        case 75: *v = 9; break;             /* compute capability */
        case 76: *v = 0; break;
        case 97: *v = 232448; break;        /* opt-in shared memory */
        default: *v = 1; break;
    }
    return 0;
}

CUresult cuDeviceTotalMem_v2(size_t* n, int d) { (void)d; *n = (size_t)80 << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) { (void)d; *ctx = &g_ctx; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void* ctx) { g_current = ctx; return 0; }
CUresult cuCtxGetCurrent(void** ctx) { *ctx = g_current; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) { *least = 0; *greatest = -5; return 0; }

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
    void* mem = aligned_alloc(256, (n + 255) / 256 * 256);
    if (mem == NULL) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *p = (CUdeviceptr)(uintptr_t)mem;
    return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void*)(uintptr_t)p); return 0; }
CUresult cuMemGetInfo_v2(size_t* free_b, size_t* total) { *free_b = (size_t)70 << 30; *total = (size_t)80 << 30; return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { memcpy((void*)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { memcpy(d, (void*)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { memmove((void*)(uintptr_t)d, (void*)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) { (void)st; return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) { (void)st; return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) { (void)st; return cuMemcpyDtoD_v2(d, s, n); }
CUresult cuMemAllocHost_v2(void** p, size_t n) { *p = malloc(n ? n : 1); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void* p) { free(p); return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void*)(uintptr_t)d, v, n); return 0; }

CUresult cuStreamCreateWithPriority(void** s, unsigned flags, int prio) {
    (void)flags; (void)prio;
    *s = calloc(1, sizeof(struct null_stream));
    return 0;
}
CUresult cuStreamDestroy_v2(void* s) { free(s); return 0; }
CUresult cuStreamSynchronize(void* s) { (void)s; return 0; }
CUresult cuStreamQuery(void* s) { (void)s; return 0; }
CUresult cuStreamWaitEvent(void* s, void* e, unsigned f) { (void)s; (void)e; (void)f; return 0; }
CUresult cuStreamBeginCapture_v2(void* s, int mode) {
    (void)mode;
    if (s == NULL) return 906; /* the legacy stream cannot capture */
    ((struct null_stream*)s)->capturing = 1;
    return 0;
}
CUresult cuStreamEndCapture(void* s, void** graph) {
    ((struct null_stream*)s)->capturing = 0;
    *graph = malloc(1);
    return 0;
}
CUresult cuStreamIsCapturing(void* s, int* status) {
    ++g_capture_queries;
    *status = s != NULL && s != (void*)1 && s != (void*)2 && ((struct null_stream*)s)->capturing;
    return 0;
}

CUresult cuEventCreate(void** e, unsigned f) { (void)f; *e = malloc(1); return 0; }
CUresult cuEventDestroy_v2(void* e) { free(e); return 0; }
CUresult cuEventRecord(void* e, void* s) { (void)e; (void)s; return 0; }
CUresult cuEventQuery(void* e) { (void)e; return 0; }
CUresult cuEventSynchronize(void* e) { (void)e; return 0; }
CUresult cuEventElapsedTime_v2(float* ms, void* a, void* b) { (void)a; (void)b; *ms = 0.001f; return 0; }

CUresult cuModuleLoadData(void** m, const void* image) { (void)image; *m = malloc(1); return 0; }
CUresult cuModuleUnload(void* m) { free(m); return 0; }
CUresult cuModuleGetFunction(void** f, void* m, const char* name) { (void)m; (void)name; *f = malloc(1); return 0; }
CUresult cuFuncSetAttribute(void* f, int a, int v) { (void)f; (void)a; (void)v; return 0; }
CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
    (void)f;
    *v = attr == 0 ? 1024 : 32; /* max threads per block; registers and the rest small */
    return 0;
}

CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void* s, void** params, void** extra) {
    (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)s;
    (void)params; (void)extra;
    g_last_stream = s;
    ++g_launches;
    return 0;
}
CUresult cuLaunchKernelEx(const void* config, void* f, void** params, void** extra) {
    (void)f; (void)params; (void)extra;
    g_last_stream = ((void* const*)config)[4]; /* CUlaunchConfig.hStream, after 7 unsigneds */
    ++g_launches;
    ++g_ex_launches;
    return 0;
}

CUresult cuGraphInstantiateWithFlags(void** exec, void* g, unsigned long long fl) { (void)g; (void)fl; *exec = malloc(1); return 0; }
CUresult cuGraphLaunch(void* exec, void* s) { (void)exec; (void)s; return 0; }
CUresult cuGraphExecDestroy(void* exec) { free(exec); return 0; }
CUresult cuGraphDestroy(void* g) { free(g); return 0; }
CUresult cuGraphGetNodes(void* g, void** nodes, size_t* n) { (void)g; (void)nodes; *n = 0; return 0; }
