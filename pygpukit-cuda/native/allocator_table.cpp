// Filling the allocator table: each entry makes the context current and calls the driver.
#include "allocator_table.hpp"

#include <mutex>
#include <unordered_set>

#include "driver_api.hpp"

namespace pgk {
namespace {

struct TableCtx {
    std::shared_ptr<Context> context;
};

// The TableCtx handles this extension made and the pool has not released: the launch
// gate is handed such a handle by the runtime's copier and must not trust any other.
std::mutex g_tables_lock;
std::unordered_set<const void*> g_tables;

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

// The async slot, used by the Rust transfer engine with the caller's stream (or its own).
// Streams and events are opaque pointers to Rust; 0 is the legacy default stream.
int t_stream_create(void* c, void** out) {
    CUresult rc = current(c);
    if (rc != CUDA_SUCCESS) return rc;
    CUstream s = nullptr;
    rc = driver().cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0);
    *out = rc == CUDA_SUCCESS ? static_cast<void*>(s) : nullptr;
    return rc;
}

void t_stream_destroy(void* c, void* s) {
    if (s != nullptr && current(c) == CUDA_SUCCESS) driver().cuStreamDestroy(static_cast<CUstream>(s));
}

int t_h2d_async(void* c, uint64_t dst, const void* src, uint64_t n, void* s) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS ? rc
                              : driver().cuMemcpyHtoDAsync(dst, src, n, static_cast<CUstream>(s));
}

int t_d2h_async(void* c, void* dst, uint64_t src, uint64_t n, void* s) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS ? rc
                              : driver().cuMemcpyDtoHAsync(dst, src, n, static_cast<CUstream>(s));
}

int t_event_create(void* c, void** out) {
    CUresult rc = current(c);
    if (rc != CUDA_SUCCESS) return rc;
    CUevent e = nullptr;
    // No timing: record and query are cheaper, and these events only order copies.
    rc = driver().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    *out = rc == CUDA_SUCCESS ? static_cast<void*>(e) : nullptr;
    return rc;
}

void t_event_destroy(void* c, void* e) {
    if (e != nullptr && current(c) == CUDA_SUCCESS) driver().cuEventDestroy(static_cast<CUevent>(e));
}

int t_event_record(void* c, void* e, void* s) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS
               ? rc
               : driver().cuEventRecord(static_cast<CUevent>(e), static_cast<CUstream>(s));
}

// 0 = complete, 1 = not ready (the table's convention), else the CUresult.
int t_event_query(void* c, void* e) {
    CUresult rc = current(c);
    if (rc != CUDA_SUCCESS) return rc;
    rc = driver().cuEventQuery(static_cast<CUevent>(e));
    return rc == CUDA_ERROR_NOT_READY ? 1 : rc;
}

int t_event_synchronize(void* c, void* e) {
    CUresult rc = current(c);
    return rc != CUDA_SUCCESS ? rc : driver().cuEventSynchronize(static_cast<CUevent>(e));
}

void t_release(void* c) {
    {
        std::lock_guard<std::mutex> hold(g_tables_lock);
        g_tables.erase(c);
    }
    delete static_cast<TableCtx*>(c);
}

}  // namespace

bool make_table_context_current(const void* table_ctx) {
    std::lock_guard<std::mutex> hold(g_tables_lock);  // held: the table cannot go meanwhile
    if (g_tables.count(table_ctx) == 0) return false;
    try {
        return current(const_cast<void*>(table_ctx)) == CUDA_SUCCESS;
    } catch (...) {  // called from Rust: nothing may escape
        return false;
    }
}

DeviceAllocatorV1* make_allocator_table(std::shared_ptr<Context> context) {
    auto* t = new DeviceAllocatorV1{};
    t->abi_version = kAllocatorAbiVersion;
    t->struct_size = sizeof(DeviceAllocatorV1);
    t->flags = 0;
    t->ctx = new TableCtx{std::move(context)};
    {
        std::lock_guard<std::mutex> hold(g_tables_lock);
        g_tables.insert(t->ctx);
    }
    t->alloc = t_alloc;
    t->free = t_free;
    t->copy_h2d = t_h2d;
    t->copy_d2h = t_d2h;
    t->copy_d2d = t_d2d;
    t->pinned_alloc = t_pinned_alloc;
    t->pinned_free = t_pinned_free;
    t->stream_create = t_stream_create;
    t->stream_destroy = t_stream_destroy;
    t->copy_h2d_async = t_h2d_async;
    t->copy_d2h_async = t_d2h_async;
    t->event_create = t_event_create;
    t->event_destroy = t_event_destroy;
    t->event_record = t_event_record;
    t->event_query = t_event_query;
    t->event_synchronize = t_event_synchronize;
    t->release = t_release;
    return t;
}

void destroy_allocator_table(DeviceAllocatorV1* table) {
    if (table == nullptr) return;
    t_release(table->ctx);
    delete table;
}

}  // namespace pgk
