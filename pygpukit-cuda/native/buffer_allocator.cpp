// DeviceBuffer and BufferAllocator (see buffer_allocator.hpp): plain CPython types, so a new
// array's buffer is one small object made without pybind11 or a Python-level constructor.
#include "buffer_allocator.hpp"
#include "heap_type.hpp"

#include <structmember.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace pgk {
namespace {

// Mirrors the Rust runtime's PoolFastTableV2 (rust/pygpukit-python/src/memory.rs).
struct PoolFastTableV2 {
    uint32_t abi_version;
    uint32_t struct_size;
    const void* pool;
    void* (*allocate_cached)(const void* pool, uint64_t nbytes, uint64_t stream, uint64_t* ptr);
    void* (*allocate)(const void* pool, uint64_t nbytes, uint64_t stream, uint64_t* ptr,
                      char* message, size_t message_len);
    void (*free)(void* block);
};

struct BufferObject {
    PyObject_HEAD
    unsigned long long ptr;
    unsigned long long nbytes;
    PyObject* context;
    PyObject* weakrefs;
    void* block;
    void (*free_block)(void*);
};

struct AllocatorObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PoolFastTableV2 table;
    PyObject* capsule;  // keeps the table's pool reference alive
    PyObject* context;
};

PyTypeObject* g_buffer_type = nullptr;
PyTypeObject* g_allocator_type = nullptr;

void buffer_dealloc(PyObject* self) {
    auto* b = reinterpret_cast<BufferObject*>(self);
    PyTypeObject* type = Py_TYPE(self);
    if (b->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
    if (b->block != nullptr) b->free_block(b->block);  // back to the pool's cache
    Py_XDECREF(b->context);
    type->tp_free(self);
    Py_DECREF(type);
}

PyObject* buffer_repr(PyObject* self) {
    auto* b = reinterpret_cast<BufferObject*>(self);
    char text[96];
    std::snprintf(text, sizeof text, "<DeviceBuffer 0x%llx %llu bytes>", b->ptr, b->nbytes);
    return PyUnicode_FromString(text);
}

PyMemberDef kBufferMembers[] = {
    {"ptr", T_ULONGLONG, offsetof(BufferObject, ptr), READONLY, "the device address"},
    {"nbytes", T_ULONGLONG, offsetof(BufferObject, nbytes), READONLY, "bytes requested"},
    {"context", T_OBJECT, offsetof(BufferObject, context), READONLY, "the native Context"},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(BufferObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

// MemoryError naming the request, the pool's reason and (when the context can say) the
// device's free bytes: the slow path of a failed allocation. When asking the context fails
// (a context lost to a faulted kernel), its error is the one raised.
void raise_out_of_memory(const AllocatorObject* a, long long n, const char* reason) {
    PyObject* info = PyObject_CallMethod(a->context, "memory_info", nullptr);
    if (info == nullptr && !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return;  // the context's own error (a lost context, say) says more than the pool's
    }
    if (info != nullptr && PyTuple_Check(info) && PyTuple_GET_SIZE(info) == 2) {
        PyErr_Format(PyExc_MemoryError,
                     "out of device memory allocating %lld bytes: %s (%S of %S bytes free on "
                     "the device)",
                     n, reason, PyTuple_GET_ITEM(info, 0), PyTuple_GET_ITEM(info, 1));
    } else {
        PyErr_Clear();
        PyErr_Format(PyExc_MemoryError, "out of device memory allocating %lld bytes: %s", n,
                     reason);
    }
    Py_XDECREF(info);
}

// A DeviceBuffer of n bytes for `stream`: from the stream's cache when it can serve the
// request at once, else through the pool's whole path; MemoryError when that fails.
PyObject* allocate(AllocatorObject* a, unsigned long long n, uint64_t stream) {
    uint64_t ptr = 0;
    void* block = nullptr;
    if (n > 0) {  // the pool holds no empty blocks: an empty buffer owns nothing
        block = a->table.allocate_cached(a->table.pool, n, stream, &ptr);
        if (block == nullptr) {
            char reason[512] = {0};
            block = a->table.allocate(a->table.pool, n, stream, &ptr, reason, sizeof reason);
            if (block == nullptr) {
                raise_out_of_memory(a, static_cast<long long>(n), reason);
                return nullptr;
            }
        }
    }
    PyObject* obj = PyType_GenericAlloc(g_buffer_type, 0);
    if (obj == nullptr) {
        if (block != nullptr) a->table.free(block);
        return nullptr;
    }
    auto* b = reinterpret_cast<BufferObject*>(obj);
    b->ptr = ptr;
    b->nbytes = n;
    Py_INCREF(a->context);
    b->context = a->context;
    b->block = block;
    b->free_block = a->table.free;
    return obj;
}

// allocator(nbytes, stream=0) -> DeviceBuffer: from the stream's cache when it can serve the
// request at once, else through the pool's whole path; MemoryError when that fails.
PyObject* allocator_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* a = reinterpret_cast<AllocatorObject*>(self);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1 || nargs > 2 || (kwnames != nullptr && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError,
                        "BufferAllocator takes nbytes and an optional stream handle");
        return nullptr;
    }
    const long long n = PyLong_AsLongLong(args[0]);
    if (n == -1 && PyErr_Occurred()) return nullptr;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "cannot allocate a negative size (%lld bytes)", n);
        return nullptr;
    }
    uint64_t stream = 0;
    if (nargs == 2) {
        stream = PyLong_AsUnsignedLongLong(args[1]);
        if (stream == static_cast<uint64_t>(-1) && PyErr_Occurred()) return nullptr;
    }
    return allocate(a, static_cast<unsigned long long>(n), stream);
}

void allocator_dealloc(PyObject* self) {
    auto* a = reinterpret_cast<AllocatorObject*>(self);
    PyTypeObject* type = Py_TYPE(self);
    Py_XDECREF(a->capsule);
    Py_XDECREF(a->context);
    type->tp_free(self);
    Py_DECREF(type);
}

PyMemberDef kAllocatorMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(AllocatorObject, vectorcall), READONLY,
     nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

bool make_buffer_types() {
    PyType_Slot buffer_slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(&buffer_dealloc)},
        {Py_tp_repr, reinterpret_cast<void*>(&buffer_repr)},
        {Py_tp_members, kBufferMembers},
        {Py_tp_doc, const_cast<char*>("A block of a device's Rust pool, given back when "
                                      "collected (made by a BufferAllocator).")},
        {0, nullptr},
    };
    g_buffer_type = make_heap_type("pygpukit_cuda._native.DeviceBuffer", sizeof(BufferObject),
                              buffer_slots, Py_TPFLAGS_DEFAULT);
    if (g_buffer_type == nullptr) return false;
    PyType_Slot allocator_slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(&allocator_dealloc)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_members, kAllocatorMembers},
        {Py_tp_doc, const_cast<char*>("allocator(nbytes, stream=0) -> DeviceBuffer from the "
                                      "pool, for work on that stream; MemoryError when the "
                                      "pool cannot serve it.")},
        {0, nullptr},
    };
    g_allocator_type = make_heap_type("pygpukit_cuda._native.BufferAllocator",
                                 sizeof(AllocatorObject), allocator_slots,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL);
    return g_allocator_type != nullptr;
}

PyTypeObject* device_buffer_type() { return g_buffer_type; }
PyTypeObject* buffer_allocator_type() { return g_allocator_type; }

PyObject* allocate_buffer(PyObject* allocator, unsigned long long nbytes,
                          unsigned long long stream) {
    return allocate(reinterpret_cast<AllocatorObject*>(allocator), nbytes, stream);
}

bool device_buffer_address(PyObject* obj, unsigned long long* ptr) {
    if (Py_TYPE(obj) != g_buffer_type) return false;
    *ptr = reinterpret_cast<BufferObject*>(obj)->ptr;
    return true;
}

PyObject* new_buffer_allocator(PyObject* capsule, PyObject* context) {
    if (!PyCapsule_IsValid(capsule, kPoolFastCapsuleName)) {
        PyErr_Format(PyExc_ValueError,
                     "expected a capsule named \"%s\" (MemoryPool.fast_table()), got %R",
                     kPoolFastCapsuleName, capsule);
        return nullptr;
    }
    auto* table = static_cast<const PoolFastTableV2*>(PyCapsule_GetPointer(capsule,
                                                                          kPoolFastCapsuleName));
    if (table == nullptr) return nullptr;
    if (table->abi_version != 2 || table->struct_size < sizeof(PoolFastTableV2)) {
        PyErr_Format(PyExc_ValueError,
                     "pool fast table version %u of %u bytes; this extension reads version 2 "
                     "of %zu bytes",
                     table->abi_version, table->struct_size, sizeof(PoolFastTableV2));
        return nullptr;
    }
    PyObject* obj = PyType_GenericAlloc(g_allocator_type, 0);
    if (obj == nullptr) return nullptr;
    auto* a = reinterpret_cast<AllocatorObject*>(obj);
    a->vectorcall = &allocator_call;
    a->table = *table;
    Py_INCREF(capsule);
    a->capsule = capsule;
    Py_INCREF(context);
    a->context = context;
    return obj;
}

}  // namespace pgk
