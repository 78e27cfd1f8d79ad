// Filling the allocator table: each entry makes the context current and calls the driver.
#include "allocator_table.hpp"

#include "driver_api.hpp"

namespace pgk {
namespace {

struct TableCtx {
    std::shared_ptr<Context> context;
};

// Make the table's context current; the CUresult (0 on success), never an exception,
// since these functions are called from Rust.
CUresult current(void* raw) {
    try {
        static_cast<TableCtx*>(raw)->context->make_current();
    } catch (const CudaError& e) {
        return e.code;
    }
    return CUDA_SUCCESS;
}

int t_alloc(void* c, uint64_t n, uint64_t* out) {
    CUresult rc = current(c);
    if (rc != CUDA_SUCCESS) return rc;
    CUdeviceptr p = 0;
    rc = driver().cuMemAlloc(&p, n);
    *out = rc == CUDA_SUCCESS ? p : 0;
    return rc;
}

void t_free(void* c, uint64_t ptr, uint64_t) {
    if (current(c) == CUDA_SUCCESS) driver().cuMemFree(ptr);
}

int t_h2d(void* c, uint64_t dst, const void* src, uint64_t n) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS ? rc : driver().cuMemcpyHtoD(dst, src, n);
}

int t_d2h(void* c, void* dst, uint64_t src, uint64_t n) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS ? rc : driver().cuMemcpyDtoH(dst, src, n);
}

int t_d2d(void* c, uint64_t dst, uint64_t src, uint64_t n) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS ? rc : driver().cuMemcpyDtoD(dst, src, n);
}

int t_pinned_alloc(void* c, uint64_t n, void** out) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS ? rc : driver().cuMemAllocHost(out, n);
}

void t_pinned_free(void* c, void* p, uint64_t) {
    if (current(c) == CUDA_SUCCESS) driver().cuMemFreeHost(p);
}

void t_release(void* c) { delete static_cast<TableCtx*>(c); }

}  // namespace

DeviceAllocatorV1* make_allocator_table(std::shared_ptr<Context> context) {
    auto* t = new DeviceAllocatorV1{};
    t->abi_version = kAllocatorAbiVersion;
    t->struct_size = sizeof(DeviceAllocatorV1);
    t->flags = 0;
    t->ctx = new TableCtx{std::move(context)};
    t->alloc = t_alloc;
    t->free = t_free;
    t->copy_h2d = t_h2d;
    t->copy_d2h = t_d2h;
    t->copy_d2d = t_d2d;
    t->pinned_alloc = t_pinned_alloc;
    t->pinned_free = t_pinned_free;
    t->release = t_release;
    return t;
}

void destroy_allocator_table(DeviceAllocatorV1* table) {
    if (table == nullptr) return;
    t_release(table->ctx);
    delete table;
}

}  // namespace pgk
