"""The C ABI allocator table: a pool over a capsule, from Rust's host table and from ctypes."""

import ctypes
import gc

import _pygpukit_rust as rust
import pytest

c_u64, c_void_p, c_int = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int
ALLOC = ctypes.CFUNCTYPE(c_int, c_void_p, c_u64, ctypes.POINTER(c_u64))
FREE = ctypes.CFUNCTYPE(None, c_void_p, c_u64, c_u64)
H2D = ctypes.CFUNCTYPE(c_int, c_void_p, c_u64, c_void_p, c_u64)
D2H = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_u64, c_u64)
D2D = ctypes.CFUNCTYPE(c_int, c_void_p, c_u64, c_u64, c_u64)
RELEASE = ctypes.CFUNCTYPE(None, c_void_p)


class Table(ctypes.Structure):
    """pygpukit_device_allocator_v1, as a C backend would declare it."""

    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("struct_size", ctypes.c_uint32),
        ("flags", c_u64),
        ("ctx", c_void_p),
        ("alloc", ALLOC),
        ("free", FREE),
        ("copy_h2d", H2D),
        ("copy_d2h", D2H),
        ("copy_d2d", D2D),
        ("pinned_alloc", c_void_p),
        ("pinned_free", c_void_p),
        ("stream_create", c_void_p),
        ("stream_destroy", c_void_p),
        ("copy_h2d_async", c_void_p),
        ("copy_d2h_async", c_void_p),
        ("event_create", c_void_p),
        ("event_destroy", c_void_p),
        ("event_record", c_void_p),
        ("event_query", c_void_p),
        ("event_synchronize", c_void_p),
        ("release", RELEASE),
    ]


def make_capsule(table, name=b"pygpukit.device_allocator_v1"):
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
    return new(ctypes.addressof(table), name, None)


class CountingDevice:
    """A fake device in Python/ctypes that counts the calls the pool makes."""

    def __init__(self):
        self.calls = {"alloc": 0, "free": 0, "h2d": 0, "d2h": 0, "d2d": 0, "release": 0}
        self.live = {}
        libc = ctypes.CDLL(None)
        libc.malloc.restype = c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [c_void_p]

        def alloc(_ctx, n, out):
            self.calls["alloc"] += 1
            p = libc.malloc(n)
            self.live[p] = n
            out[0] = p
            return 0

        def free(_ctx, p, n):
            self.calls["free"] += 1
            assert self.live.pop(p) == n
            libc.free(p)

        def h2d(_ctx, dst, src, n):
            self.calls["h2d"] += 1
            ctypes.memmove(dst, src, n)
            return 0

        def d2h(_ctx, dst, src, n):
            self.calls["d2h"] += 1
            ctypes.memmove(dst, src, n)
            return 0

        def d2d(_ctx, dst, src, n):
            self.calls["d2d"] += 1
            ctypes.memmove(dst, src, n)
            return 0

        def release(_ctx):
            self.calls["release"] += 1

        self.table = Table(
            1,
            ctypes.sizeof(Table),
            0,
            None,
            ALLOC(alloc),
            FREE(free),
            H2D(h2d),
            D2H(d2h),
            D2D(d2d),
            *([None] * 11),
            RELEASE(release),
        )


def test_table_size_matches_rust():
    assert ctypes.sizeof(Table) == rust.DEVICE_ALLOCATOR_TABLE_SIZE
    assert rust.DEVICE_ALLOCATOR_CAPSULE_NAME == "pygpukit.device_allocator_v1"


def test_pool_from_rust_host_capsule():
    pool = rust.MemoryPool.from_capsule(
        rust.host_allocator_capsule(), quota=1 << 20, device="cpu:1"
    )
    assert pool.device == "cpu:1" and pool.is_host and pool.quota == 1 << 20
    b = pool.allocate(1000)
    memoryview(b)[:3] = b"abc"
    out = bytearray(3)
    pool.copy_to_host(b, out)
    assert out == b"abc"
    b.free()
    assert pool.stats()["used"] == 0


def test_pool_calls_the_foreign_table():
    dev = CountingDevice()
    pool = rust.MemoryPool.from_capsule(
        make_capsule(dev.table), enable_eviction=True, device="fake:0"
    )
    assert not pool.is_host
    a, b = pool.allocate(4096), pool.allocate(4096)
    with pytest.raises(BufferError, match="not host memory"):
        memoryview(a)
    pool.copy_from_host(a, b"q" * 4096)
    pool.copy_device(b, a, 4096)
    out = bytearray(4096)
    pool.copy_to_host(b, out)
    assert out == b"q" * 4096
    pool.evict(a)  # one device-to-host copy, then a host-to-device on restore
    pool.copy_to_host(a, out)
    assert out == b"q" * 4096
    assert dev.calls == {"alloc": 2, "free": 0, "h2d": 2, "d2h": 3, "d2d": 1, "release": 0}
    a.free()
    b.free()
    assert pool.free_all_cached() == 8192
    assert dev.calls["free"] == 2 and not dev.live
    del pool, a, b
    gc.collect()
    assert dev.calls["release"] == 1


def test_bad_capsules_are_refused():
    dev = CountingDevice()
    with pytest.raises(ValueError):
        rust.MemoryPool.from_capsule(make_capsule(dev.table, b"something.else"))
    with pytest.raises(ValueError):
        rust.MemoryPool.from_capsule(object())
    dev.table.abi_version = 2
    with pytest.raises(ValueError, match="version"):
        rust.MemoryPool.from_capsule(make_capsule(dev.table))
    dev.table.abi_version = 1
    dev.table.struct_size = 16
    with pytest.raises(ValueError, match="bytes"):
        rust.MemoryPool.from_capsule(make_capsule(dev.table))
    dev.table.struct_size = ctypes.sizeof(Table)
    dev.table.copy_d2d = D2D()
    with pytest.raises(ValueError, match="copy_d2d"):
        rust.MemoryPool.from_capsule(make_capsule(dev.table))
