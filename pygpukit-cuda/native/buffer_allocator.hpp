// BufferAllocator: device memory for new arrays straight from the Rust pool, through the C
// functions of its "pygpukit.pool_fast_v2" capsule: `allocator(nbytes, stream)` serves the
// stream's cache without waiting, else takes the pool's whole path (fresh memory, the OOM
// ladder, task charging). Each block comes back as a DeviceBuffer (ptr, nbytes, context as
// plain members) that returns it to its stream's cache when collected.
#pragma once

#include <Python.h>

namespace pgk {

constexpr const char* kPoolFastCapsuleName = "pygpukit.pool_fast_v2";

// Makes the DeviceBuffer and BufferAllocator types (once, at import); false with a Python
// error set on failure.
bool make_buffer_types();

PyTypeObject* device_buffer_type();
PyTypeObject* buffer_allocator_type();

// A BufferAllocator over the pool behind `capsule`, whose buffers carry `context`.
// Returns nullptr with a Python error set for a capsule that is not a fast table.
PyObject* new_buffer_allocator(PyObject* capsule, PyObject* context);

// A new DeviceBuffer of `nbytes` from `allocator` (a BufferAllocator) for work on `stream`:
// what calling the allocator does, without building Python arguments. nullptr with a
// MemoryError set when the pool cannot serve it.
PyObject* allocate_buffer(PyObject* allocator, unsigned long long nbytes,
                          unsigned long long stream);

// The device address of a DeviceBuffer; false when `obj` is not one (a foreign buffer).
bool device_buffer_address(PyObject* obj, unsigned long long* ptr);

}  // namespace pgk
