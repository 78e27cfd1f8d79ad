// The C ABI allocator table the Rust memory pool takes (pygpukit.device_allocator_v1),
// filled with this context's cuMemAlloc/cuMemFree/cuMemcpy* calls.
#pragma once

#include <cstdint>
#include <memory>

#include "context.hpp"

namespace pgk {

constexpr const char* kAllocatorCapsuleName = "pygpukit.device_allocator_v1";
constexpr uint32_t kAllocatorAbiVersion = 1;

// Layout fixed by rust/pygpukit-runtime/src/memory/allocator_table.rs (version 1).
struct DeviceAllocatorV1 {
    uint32_t abi_version;
    uint32_t struct_size;
    uint64_t flags;
    void* ctx;
    int (*alloc)(void*, uint64_t, uint64_t*);
    void (*free)(void*, uint64_t, uint64_t);
    int (*copy_h2d)(void*, uint64_t, const void*, uint64_t);
    int (*copy_d2h)(void*, void*, uint64_t, uint64_t);
    int (*copy_d2d)(void*, uint64_t, uint64_t, uint64_t);
    int (*pinned_alloc)(void*, uint64_t, void**);
    void (*pinned_free)(void*, void*, uint64_t);
    int (*stream_create)(void*, void**);
    void (*stream_destroy)(void*, void*);
    int (*copy_h2d_async)(void*, uint64_t, const void*, uint64_t, void*);
    int (*copy_d2h_async)(void*, void*, uint64_t, uint64_t, void*);
    int (*event_create)(void*, void**);
    void (*event_destroy)(void*, void*);
    int (*event_record)(void*, void*, void*);
    int (*event_query)(void*, void*);
    int (*event_synchronize)(void*, void*);
    void (*release)(void*);
};

// A heap table whose `ctx` keeps `context` alive until the pool calls `release`.
DeviceAllocatorV1* make_allocator_table(std::shared_ptr<Context> context);
// Free a table and its context reference (for a table the pool never took).
void destroy_allocator_table(DeviceAllocatorV1* table);
// Make current the context of `table_ctx`, the `ctx` of a table made here and not yet
// released; false for any other handle (a foreign table's) or when it cannot be made current.
bool make_table_context_current(const void* table_ctx);

}  // namespace pgk
