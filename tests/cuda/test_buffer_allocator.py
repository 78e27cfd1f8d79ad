"""The extension's BufferAllocator over a Rust pool's fast table: stream-ordered blocks as
DeviceBuffer objects, given back to their stream's cache when collected. A host pool stands
in for the device (the allocator never touches the driver), so this runs without a GPU."""

from __future__ import annotations

import gc
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

native = pytest.importorskip("pygpukit_cuda._native")
rust = pytest.importorskip("_pygpukit_rust")


class HostContext:
    """Stands in for a device Context: host memory through the Rust host allocator table."""

    def __init__(self, free: int = 123, total: int = 456) -> None:
        self.info = (free, total)

    def allocator_capsule(self) -> object:
        return rust.host_allocator_capsule()

    def memory_info(self) -> tuple[int, int]:
        return self.info


def test_serves_the_stream_cache_then_the_pool() -> None:
    pool = rust.MemoryPool()
    alloc = native.buffer_allocator(pool.fast_table(), "ctx")
    first = alloc(4096)  # nothing cached: the pool's whole path
    assert type(first).__name__ == "DeviceBuffer" and first.context == "ctx"
    ptr = first.ptr
    assert pool.stats()["reuses"] == 0
    del first
    buf = alloc(4000)
    assert (buf.ptr, buf.nbytes) == (ptr, 4000)
    assert repr(buf) == f"<DeviceBuffer 0x{ptr:x} 4000 bytes>"
    assert pool.stats()["used"] == 4096 and pool.stats()["reuses"] == 1
    ref = weakref.ref(buf)
    del buf
    assert ref() is None and pool.stats()["used"] == 0
    pool.check_invariants()


def test_blocks_are_reused_on_their_own_stream_only() -> None:
    pool = rust.MemoryPool()
    alloc = native.buffer_allocator(pool.fast_table(), None)
    for size in (3000, 3 << 20):
        a = alloc(size, 7)
        ptr = a.ptr
        del a
        other = alloc(size, 9)  # another stream: never the block stream 7 just freed
        assert other.ptr != ptr
        again = alloc(size, 7)  # its own stream: at once
        assert again.ptr == ptr
        del other, again
    assert pool.stats()["used"] == 0
    pool.check_invariants()


def test_empty_negative_and_bad_calls() -> None:
    pool = rust.MemoryPool()
    alloc = native.buffer_allocator(pool.fast_table(), None)
    empty = alloc(0)
    assert (empty.ptr, empty.nbytes) == (0, 0) and pool.stats()["blocks"] == 0
    with pytest.raises(ValueError, match="negative size"):
        alloc(-5)
    with pytest.raises(TypeError, match="nbytes and an optional stream"):
        alloc()
    with pytest.raises(TypeError):
        alloc("12")
    with pytest.raises(OverflowError):
        alloc(1 << 80)
    with pytest.raises(OverflowError):
        alloc(16, -1)
    with pytest.raises(TypeError, match="cannot create"):
        native.DeviceBuffer()


def test_out_of_memory_names_the_sizes() -> None:
    pool = rust.MemoryPool.from_capsule(rust.host_allocator_capsule(), quota=1 << 20,
                                        device="cuda:98")  # fmt: skip
    alloc = native.buffer_allocator(pool.fast_table(), HostContext(11, 22))
    with pytest.raises(MemoryError, match=r"allocating 2097152 bytes.*quota.*11 of 22 bytes free"):
        alloc(2 << 20)
    assert pool.stats()["used"] == 0
    held = alloc(1000)  # the pool is still usable
    del held


def test_a_kept_cache_is_not_released_for_a_request() -> None:
    cap = rust.host_allocator_capsule()
    for keep, fits in ((False, True), (True, False)):
        pool = rust.MemoryPool.from_capsule(cap, quota=4 << 20, keep_cache=keep)
        alloc = native.buffer_allocator(pool.fast_table(), HostContext())
        alloc(3 << 20, 1)  # freed at once: cached on stream 1
        if fits:
            alloc(3 << 20, 2)  # the ladder frees stream 1's cache for stream 2
        else:
            with pytest.raises(MemoryError):
                alloc(3 << 20, 2)
        pool.check_invariants()


def test_only_a_fast_table_is_accepted() -> None:
    with pytest.raises(ValueError, match=r"expected a capsule named \"pygpukit\.pool_fast_v2\""):
        native.buffer_allocator(rust.host_allocator_capsule(), None)
    with pytest.raises(ValueError, match="eviction"):
        rust.MemoryPool(enable_eviction=True).fast_table()


def test_the_pool_outlives_its_allocator_while_buffers_live() -> None:
    pool = rust.MemoryPool()
    alloc = native.buffer_allocator(pool.fast_table(), None)
    buf = alloc(200)
    del alloc
    gc.collect()
    assert pool.stats()["used"] == 512  # the block is still held
    del buf
    assert pool.stats()["used"] == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3_000_000), st.integers(0, 3), st.booleans()),
                min_size=1, max_size=40))  # fmt: skip
def test_any_traffic_over_streams_returns_to_baseline(steps: list[tuple[int, int, bool]]) -> None:
    pool = rust.MemoryPool()
    alloc = native.buffer_allocator(pool.fast_table(), None)
    held = []
    for nbytes, stream, drop_one in steps:
        held.append(alloc(nbytes, stream))
        if drop_one:
            held.pop(len(held) // 2)
        pool.check_invariants()
    ptrs = [b.ptr for b in held]
    assert len(set(ptrs)) == len(ptrs)  # no block handed out twice
    held.clear()
    assert pool.stats()["used"] == 0
    pool.check_invariants()


def test_the_cuda_device_pool_hands_out_native_buffers() -> None:
    from pygpukit_cuda.allocator import DevicePool

    ctx = HostContext()
    pool = DevicePool(ctx, "cuda:97")
    first = pool.allocate(1000)
    assert type(first) is native.DeviceBuffer and first.context is ctx
    ptr = first.ptr
    del first
    again = pool.allocate(1000, 0)
    assert again.ptr == ptr
    del again
    assert pool.stats()["used"] == 0 and pool.stats()["allocator"] == "rust pool"
    assert pool.empty_cache() > 0
