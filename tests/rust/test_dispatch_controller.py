"""Dispatch support through the bindings: the kernel cache, and the launch gate's C table."""

import _pygpukit_rust as rust
import pytest


def test_kernel_cache_lru_and_stats():
    cache = rust.KernelCache(capacity_bytes=300, max_entries=10)
    h = [rust.KernelCache.hash_source(f"__global__ void k{i}() {{}}") for i in range(5)]
    assert len(h[0]) == 32 and len(set(h)) == 5
    assert rust.KernelCache.hash_source(b"abc") == rust.KernelCache.hash_source("abc")
    handle = object()
    assert cache.put(h[0], b"\x01" * 100, arch="sm_90", handle=handle) == []
    cache.put(h[1], b"\x02" * 100, arch="sm_90")
    cache.put(h[2], b"\x03" * 100, arch="sm_90")
    image, got = cache.get(h[0], arch="sm_90")
    assert image == b"\x01" * 100 and got is handle
    assert cache.get(h[0], arch="sm_80") is None  # another arch is another module
    assert cache.get(h[0], arch="sm_90", options="-G") is None
    assert cache.put(h[3], b"\x04" * 50, arch="sm_90") == []  # h[1] evicted (no handle)
    assert cache.get(h[1], arch="sm_90") is None
    assert cache.lru_order() == [h[2], h[0], h[3]]
    assert cache.put(h[4], b"\x05" * 200, arch="sm_90") == [handle]  # h[2] and h[0] evicted
    with pytest.raises(ValueError):
        cache.put(h[4], b"x" * 301)
    s = cache.stats()
    assert (s["hits"], s["misses"], s["evictions"], s["entries"], s["bytes"], s["rejected"]) == (
        1,
        3,
        3,
        2,
        250,
        1,
    )
    assert cache.remove(h[3], arch="sm_90") and not cache.contains(h[3], arch="sm_90")
    cache.clear()
    assert len(cache) == 0 and cache.stats()["bytes"] == 0


def test_kernel_cache_entry_limit():
    cache = rust.KernelCache(capacity_bytes=1 << 20, max_entries=2)
    for i in range(4):
        cache.put(str(i), bytes([i]) * 10, compiler_version="12.4")
    assert cache.lru_order() == ["2", "3"]
    assert cache.stats()["evictions"] == 2
    with pytest.raises(ValueError):
        rust.KernelCache(capacity_bytes=0)


def test_launch_gate_table_is_a_named_capsule():
    cap = rust.launch_gate_table()
    assert type(cap).__name__ == "PyCapsule" and "pygpukit.launch_gate_v1" in repr(cap)
