"""The extension's BufferAllocator over a Rust pool's fast table: blocks from the pool's
cache as DeviceBuffer objects, given back when collected. A host pool stands in for the
device (the allocator never touches the driver), so this runs without a GPU."""

from __future__ import annotations

import gc
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

native = pytest.importorskip("pygpukit_cuda._native")
rust = pytest.importorskip("_pygpukit_rust")


def cached_pool(*sizes: int) -> object:
    """A host pool whose cache holds one block of each size (allocated, then freed)."""
    pool = rust.MemoryPool()
    blocks = [pool.allocate(n) for n in sizes]
    del blocks
    return pool


def test_serves_the_cache_and_gives_blocks_back() -> None:
    pool = rust.MemoryPool()
    alloc = native.buffer_allocator(pool.fast_table(), "ctx")
    assert alloc(4096) is None  # nothing cached: the caller takes the pool's own path
    first = pool.allocate(4096)
    ptr = first.ptr
    del first
    buf = alloc(4000)
    assert type(buf).__name__ == "DeviceBuffer"
    assert (buf.ptr, buf.nbytes, buf.context) == (ptr, 4000, "ctx")
    assert repr(buf) == f"<DeviceBuffer 0x{ptr:x} 4000 bytes>"
    assert pool.stats()["used"] == 4096 and pool.stats()["reuses"] == 1
    ref = weakref.ref(buf)
    del buf
    assert ref() is None and pool.stats()["used"] == 0
    pool.check_invariants()


def test_sizes_the_cache_cannot_serve_and_bad_calls() -> None:
    pool = cached_pool(512)
    alloc = native.buffer_allocator(pool.fast_table(), None)
    assert alloc(0) is None and alloc(-5) is None  # the Python path owns these answers
    assert alloc(1 << 20) is None  # no cached block of that class
    with pytest.raises(TypeError, match="one argument: nbytes"):
        alloc()
    with pytest.raises(TypeError):
        alloc("12")
    with pytest.raises(OverflowError):
        alloc(1 << 80)
    with pytest.raises(TypeError, match="cannot create"):
        native.DeviceBuffer()


def test_only_a_fast_table_is_accepted() -> None:
    with pytest.raises(ValueError, match=r"expected a capsule named \"pygpukit\.pool_fast_v1\""):
        native.buffer_allocator(rust.host_allocator_capsule(), None)
    with pytest.raises(ValueError, match="eviction"):
        rust.MemoryPool(enable_eviction=True).fast_table()


def test_the_pool_outlives_its_allocator_while_buffers_live() -> None:
    pool = cached_pool(256)
    alloc = native.buffer_allocator(pool.fast_table(), None)
    buf = alloc(200)
    del alloc
    gc.collect()
    assert pool.stats()["used"] == 512  # the block is still held
    del buf
    assert pool.stats()["used"] == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 70000), st.booleans()), min_size=1, max_size=40))
def test_any_mix_of_fast_and_pool_blocks_returns_to_baseline(steps: list[tuple[int, bool]]) -> None:
    pool = cached_pool(512, 4096, 65536, 131072)
    alloc = native.buffer_allocator(pool.fast_table(), None)
    base = pool.stats()
    held = []
    for nbytes, drop_one in steps:
        buf = alloc(nbytes)
        held.append(buf if buf is not None else pool.allocate(nbytes))
        if drop_one and held:
            held.pop(len(held) // 2)
        pool.check_invariants()
    ptrs = [b.ptr for b in held]
    assert len(set(ptrs)) == len(ptrs)  # no block handed out twice
    del buf
    held.clear()
    assert pool.stats()["used"] == base["used"] == 0
    pool.check_invariants()


def test_the_cuda_allocator_hands_out_native_buffers_from_its_cache() -> None:
    from pygpukit_cuda.allocator import PoolBuffer, RustPoolAllocator

    class HostContext:  # the allocator table of host memory stands in for cuMemAlloc
        def allocator_capsule(self) -> object:
            return rust.host_allocator_capsule()

    ctx = HostContext()
    alloc = RustPoolAllocator(ctx, "cuda:97")
    first = alloc.allocate(1000)
    assert isinstance(first, PoolBuffer)  # an empty cache: the pool's own path
    ptr = first.ptr
    del first
    again = alloc.allocate(1000)
    assert type(again) is native.DeviceBuffer and again.ptr == ptr and again.context is ctx
    empty = alloc.allocate(0)
    assert isinstance(empty, PoolBuffer) and empty.nbytes == 0
    with pytest.raises(ValueError, match="negative size"):
        alloc.allocate(-1)
    del again, empty
    assert alloc.pool.stats()["used"] == 0
    assert alloc.empty_cache() > 0
