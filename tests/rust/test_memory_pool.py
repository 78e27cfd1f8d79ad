"""Memory pool through the bindings: allocation, reuse, quota errors, fragmentation, buffers."""

import gc
import re

import _pygpukit_rust as rust
import numpy as np
import pytest

KIB = 1024
MIB = 1024 * 1024


@pytest.fixture
def pool():
    p = rust.MemoryPool(quota=64 * MIB, enable_eviction=True)
    yield p
    gc.collect()
    s = p.stats()
    assert (s["used"], s["blocks"], s["evicted_bytes"]) == (0, 0, 0), s
    p.check_invariants()
    assert p.free_all_cached() == s["cached"]
    assert p.stats()["reserved"] == 0


def test_seed_snippet():
    import _pygpukit_rust as rust

    pool = rust.MemoryPool(
        quota=100 * 1024 * 1024, enable_eviction=True
    )  # CPU host allocator by default
    block = pool.allocate(4096)
    assert block.nbytes == 4096 and pool.stats()["used"] == 4096
    del block
    gc.collect()
    assert pool.stats()["used"] == 0


def test_block_properties(pool):
    a, b = pool.allocate(1000), pool.allocate(3 * MIB + 1)
    assert (a.nbytes, b.nbytes) == (1000, 3 * MIB + 1)
    assert a.capacity >= 1000 and b.capacity >= b.nbytes
    assert a.id != b.id
    assert a.ptr % 64 == 0 and b.ptr % 64 == 0
    assert not a.evicted and not a.freed
    assert a.pool == pool and pool.device == "cpu" and pool.is_host
    assert len(a) == 1000


def test_reuse_after_free(pool):
    a = pool.allocate(4096)
    first = a.ptr
    a.free()
    a.free()  # idempotent
    assert a.freed
    with pytest.raises(ValueError, match="freed"):
        _ = a.ptr
    b = pool.allocate(4000)  # same size class
    s = pool.stats()
    assert b.ptr == first
    assert (s["allocations"], s["reuses"], s["device_allocs"]) == (2, 1, 1)


def test_drop_returns_block(pool):
    pool.allocate(5000)  # dropped at once
    gc.collect()
    s = pool.stats()
    assert s["used"] == 0 and s["cached"] == pool.allocate(5000).capacity


def test_quota_error_states_bytes(pool):
    small = rust.MemoryPool(quota=64 * KIB)
    keep = small.allocate(48 * KIB)
    with pytest.raises(MemoryError) as err:
        small.allocate(32 * KIB)
    msg = str(err.value)
    assert re.search(r"requested 32768 bytes", msg), msg
    assert re.search(r"in use 49152 bytes", msg), msg
    assert re.search(r"cached 0 bytes", msg), msg
    assert re.search(r"quota 65536 bytes", msg), msg
    keep.free()
    assert small.stats()["used"] == 0


def test_bad_sizes(pool):
    for bad in (0, -1, 2**70):
        with pytest.raises(ValueError):
            pool.allocate(bad)
    with pytest.raises(ValueError):
        rust.MemoryPool(quota=-5)
    with pytest.raises(ValueError):
        rust.MemoryPool(quota=0)
    with pytest.raises(TypeError):
        pool.allocate("12")
    b = pool.allocate(16)
    with pytest.raises(ValueError, match="outside"):
        pool.copy_from_host(b, b"x" * 17)
    with pytest.raises(ValueError):
        pool.copy_from_host(b, b"x", offset=-1)


def test_fragmentation_and_coalescing(pool):
    blocks = [pool.allocate(2 * MIB) for _ in range(3)]
    s = pool.stats()
    assert (s["segments"], s["used"], s["fragmentation"]) == (1, 6 * MIB, 2 * MIB)
    blocks[1].free()
    assert pool.stats()["fragmentation"] == 4 * MIB
    blocks[2].free()  # merges with the hole and the tail
    big = pool.allocate(5 * MIB)
    assert big.ptr == blocks[0].ptr + 2 * MIB
    assert pool.stats()["segments"] == 1
    big.free()
    blocks[0].free()
    s = pool.stats()
    assert (s["fragmentation"], s["cached"], s["segments"]) == (0, 8 * MIB, 1)


def test_free_all_cached_returns_bytes(pool):
    for n in (100, 5000, 2 * MIB):
        pool.allocate(n).free()
    s = pool.stats()
    assert s["cached"] == 512 + 5120 + 8 * MIB
    assert pool.free_all_cached() == s["cached"]
    s = pool.stats()
    assert (s["cached"], s["reserved"], s["segments"]) == (0, 0, 0)
    assert pool.free_all_cached() == 0


def test_peak_and_reset(pool):
    a = pool.allocate(64 * KIB)
    b = pool.allocate(64 * KIB)
    b.free()
    assert pool.stats()["peak"] == 128 * KIB
    pool.reset_peak()
    assert pool.stats()["peak"] == 64 * KIB
    a.free()


def test_numpy_views_are_zero_copy(pool):
    b = pool.allocate(4096)
    view = np.frombuffer(b, np.uint8)
    assert view.ctypes.data == b.ptr and view.size == 4096
    view[:] = np.arange(4096) % 251
    out = bytearray(4096)
    pool.copy_to_host(b, out)
    assert bytes(out) == view.tobytes()
    floats = np.frombuffer(b, np.float32)
    assert floats.size == 1024
    del view, floats


def test_host_copies_and_device_copy(pool):
    src, dst = pool.allocate(1024), pool.allocate(1024)
    data = np.random.default_rng(1).integers(0, 256, 1024, dtype=np.uint8)
    pool.copy_from_host(src, data)
    pool.copy_from_host(dst, bytes(1024))
    pool.copy_device(dst, src, 100, dst_offset=10, src_offset=20)
    out = np.zeros(1024, np.uint8)
    pool.copy_to_host(dst, out)
    assert (out[10:110] == data[20:120]).all()
    assert not out[:10].any() and not out[110:].any()
    with pytest.raises(ValueError):
        pool.copy_device(dst, src, 1000, dst_offset=100)
    with pytest.raises(ValueError, match="another pool"):
        rust.MemoryPool().copy_device(dst, src, 1)


def test_buffer_export_pins_and_keeps_alive(pool):
    b = pool.allocate(256)
    view = np.frombuffer(b, np.uint8)
    with pytest.raises(BufferError):
        pool.evict(b)
    with pytest.raises(BufferError):
        b.free()
    del view
    assert pool.evict(b) is True
    arr = np.frombuffer(pool.allocate(300), np.uint8)  # only the array holds the block
    gc.collect()
    arr[:] = 9
    assert pool.stats()["blocks"] == 2 and arr.sum() == 9 * 300
    del arr
    gc.collect()
    assert pool.stats()["blocks"] == 1
    b.free()


def test_registry():
    cpu = rust.device_pool("cpu")
    assert cpu == rust.device_pool("cpu") and cpu.device == "cpu"
    with pytest.raises(KeyError):
        rust.device_pool("nowhere:7")
    mine = rust.MemoryPool(quota=MIB)
    rust.register_device_pool("test:memory", mine)
    assert rust.device_pool("test:memory") == mine
    assert "test:memory" in rust.registered_devices()
    before = cpu.stats()["used"]
    b = cpu.allocate(128)
    assert cpu.stats()["used"] == before + 512
    b.free()
    assert cpu.stats()["used"] == before
