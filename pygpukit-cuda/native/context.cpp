// The primary context of one device, retained for the Context's lifetime.
#include "context.hpp"

#include "driver_api.hpp"

namespace pgk {

int device_count() {
    int n = 0;
    check(driver().cuDeviceGetCount(&n), "cuDeviceGetCount");
    return n;
}

int driver_version() {
    int v = 0;
    check(driver().cuDriverGetVersion(&v), "cuDriverGetVersion");
    return v;
}

Context::Context(int ordinal) : ordinal_(ordinal) {
    const auto& api = driver();
    check(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    check(api.cuDevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
    make_current();
}

Context::~Context() {
    if (ctx_ != nullptr && driver_loaded()) driver().cuDevicePrimaryCtxRelease(device_);
}

void Context::make_current() const {
    throw_if_lost(ctx_, ordinal_);
    const auto& api = driver();
    CUcontext cur = nullptr;
    check(api.cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
    if (cur != ctx_) check(api.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

std::string Context::name() const {
    char buf[256] = {0};
    check(driver().cuDeviceGetName(buf, sizeof(buf) - 1, device_), "cuDeviceGetName");
    return buf;
}

int Context::attribute(int attr) const {
    int v = 0;
    check(driver().cuDeviceGetAttribute(&v, attr, device_), "cuDeviceGetAttribute");
    return v;
}

size_t Context::total_memory() const {
    size_t n = 0;
    check(driver().cuDeviceTotalMem(&n, device_), "cuDeviceTotalMem_v2");
    return n;
}

std::pair<size_t, size_t> Context::memory_info() const {
    make_current();
    size_t free_b = 0, total = 0;
    check(driver().cuMemGetInfo(&free_b, &total), "cuMemGetInfo_v2");
    return {free_b, total};
}

CUdeviceptr Context::alloc(size_t nbytes) const {
    make_current();
    CUdeviceptr p = 0;
    check(driver().cuMemAlloc(&p, nbytes), "cuMemAlloc_v2");
    return p;
}

void Context::free(CUdeviceptr ptr) const {
    make_current();
    check(driver().cuMemFree(ptr), "cuMemFree_v2");
}

void Context::upload(CUdeviceptr dst, const void* src, size_t nbytes) const {
    make_current();
    check(driver().cuMemcpyHtoD(dst, src, nbytes), "cuMemcpyHtoD_v2");
}

void Context::download(void* dst, CUdeviceptr src, size_t nbytes) const {
    make_current();
    check(driver().cuMemcpyDtoH(dst, src, nbytes), "cuMemcpyDtoH_v2");
}

void Context::copy(CUdeviceptr dst, CUdeviceptr src, size_t nbytes) const {
    make_current();
    check(driver().cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD_v2");
}

void Context::memset8(CUdeviceptr dst, unsigned char value, size_t nbytes) const {
    make_current();
    check(driver().cuMemsetD8(dst, value, nbytes), "cuMemsetD8_v2");
}

void Context::synchronize() const {
    make_current();
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

std::pair<int, int> Context::stream_priority_range() const {
    make_current();
    int least = 0, greatest = 0;
    check(driver().cuCtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange");
    return {least, greatest};
}

}  // namespace pgk
