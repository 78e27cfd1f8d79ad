"""Device memory for CUDA arrays: the Rust runtime's pool, or a small Python cache.

`make_device_allocator(context, device)` is the one place the backend gets its allocator
from. By default it is the Rust `MemoryPool` over this context's C ABI allocator table
(``Context.allocator_capsule()``, ABI ``pygpukit.device_allocator_v1``: cuMemAlloc,
cuMemFree, cuMemcpy*), registered as the device's pool so the scheduler and transfer engine
see it. ``PYGPUKIT_CUDA_ALLOCATOR=caching`` (or a missing Rust runtime) gives the Python
caching allocator instead: freed blocks kept by rounded size, the cache released and the
allocation retried once on out-of-memory.

All kernels run on the default stream, in order, so a block freed by one op can be reused
by the next without waiting.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import defaultdict
from typing import Any

_ROUND = 512  # bytes; cuMemAlloc aligns to at least 256


class CudaBuffer:
    """A block of device memory; returned to its allocator when garbage collected."""

    __slots__ = ("__weakref__", "allocator", "nbytes", "ptr", "size")

    def __init__(self, ptr: int, nbytes: int, size: int, allocator: CachingAllocator | None):
        self.ptr = ptr
        self.nbytes = nbytes
        #: the rounded size actually reserved
        self.size = size
        self.allocator = allocator

    @property
    def context(self) -> Any:
        return self.allocator.context if self.allocator is not None else None

    def __del__(self) -> None:
        alloc = self.allocator
        if alloc is not None and self.ptr:
            # at interpreter shutdown the driver may already be gone
            with contextlib.suppress(Exception):
                alloc.release(self.ptr, self.size, self.nbytes)

    def __repr__(self) -> str:
        return f"<CudaBuffer 0x{self.ptr:x} {self.nbytes} bytes>"


class CachingAllocator:
    """cuMemAlloc'd blocks, kept after free in per-size lists for reuse."""

    def __init__(self, context: Any, device: str) -> None:
        self.context = context
        self.device = device
        self._free: dict[int, list[int]] = defaultdict(list)
        self._lock = threading.Lock()
        self._stats = {
            "used": 0, "cached": 0, "reserved": 0, "peak": 0, "allocations": 0,
            "frees": 0, "cache_hits": 0, "live_blocks": 0, "oom_retries": 0,
        }  # fmt: skip

    def allocate(self, nbytes: int) -> CudaBuffer:
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative size ({nbytes} bytes)")
        if nbytes == 0:
            return CudaBuffer(0, 0, 0, None)
        size = -(-nbytes // _ROUND) * _ROUND
        s = self._stats
        with self._lock:
            blocks = self._free.get(size)
            ptr = blocks.pop() if blocks else 0
            if ptr:
                s["cached"] -= size
                s["cache_hits"] += 1
        if not ptr:
            ptr = self._fresh(size)
        with self._lock:
            s["used"] += size
            s["peak"] = max(s["peak"], s["used"])
            s["allocations"] += 1
            s["live_blocks"] += 1
        return CudaBuffer(ptr, nbytes, size, self)

    def _fresh(self, size: int) -> int:
        try:
            return int(self.context.alloc(size))
        except RuntimeError as exc:
            if "OUT_OF_MEMORY" not in str(exc):
                raise
        with self._lock:
            self._stats["oom_retries"] += 1
        self.empty_cache()
        try:
            return int(self.context.alloc(size))
        except RuntimeError as exc:
            if "OUT_OF_MEMORY" not in str(exc):
                raise
            free, total = self.context.memory_info()
            raise MemoryError(
                f"{self.device}: out of memory allocating {size} bytes "
                f"({self._stats['used']} bytes in use by PyGPUkit, {free} of {total} free "
                "on the device)"
            ) from None

    def release(self, ptr: int, size: int, nbytes: int) -> None:
        with self._lock:
            self._free[size].append(ptr)
            s = self._stats
            s["used"] -= size
            s["cached"] += size
            s["frees"] += 1
            s["live_blocks"] -= 1

    def empty_cache(self) -> int:
        """Give every cached block back to the driver; the bytes released."""
        with self._lock:
            blocks = [(size, p) for size, ptrs in self._free.items() for p in ptrs]
            self._free.clear()
            self._stats["cached"] = 0
        for _, p in blocks:
            self.context.free(p)
        return sum(size for size, _ in blocks)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            out = dict(self._stats)
        out["reserved"] = out["used"] + out["cached"]
        out["allocator"] = "python cache"
        return out


class PoolBuffer:
    """A block of the Rust pool; it goes back to the pool when garbage collected."""

    __slots__ = ("__weakref__", "block", "context", "nbytes", "ptr")

    def __init__(self, block: Any, nbytes: int, context: Any) -> None:
        self.block = block
        # eviction is off for device pools, so the pointer never moves
        self.ptr = block.ptr if block is not None else 0
        self.nbytes = nbytes
        self.context = context

    def __repr__(self) -> str:
        return f"<PoolBuffer 0x{self.ptr:x} {self.nbytes} bytes>"


class RustPoolAllocator:
    """The Rust runtime's MemoryPool over this context's native allocator table."""

    def __init__(self, context: Any, device: str) -> None:
        import _pygpukit_rust as rust

        self.context = context
        self.device = device
        self.pool = rust.MemoryPool.from_capsule(context.allocator_capsule(), device=device)
        rust.register_device_pool(device, self.pool)
        #: the extension's BufferAllocator over the pool's cache, when both sides have one
        self.fast = _fast_allocator(self.pool, context)

    def allocate(self, nbytes: int) -> Any:
        """A PoolBuffer, or the extension's DeviceBuffer when the pool's cache serves the
        request without waiting (the common case: one native call, one small object)."""
        fast = self.fast
        if fast is not None:
            buffer = fast(nbytes)
            if buffer is not None:
                return buffer
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative size ({nbytes} bytes)")
        if nbytes == 0:
            return PoolBuffer(None, 0, self.context)  # the pool refuses empty blocks
        try:
            block = self.pool.allocate(nbytes)
        except MemoryError as exc:
            free, total = self.context.memory_info()
            raise MemoryError(
                f"{self.device}: out of memory allocating {nbytes} bytes: {exc} "
                f"({free} of {total} bytes free on the device)"
            ) from None
        return PoolBuffer(block, nbytes, self.context)

    def empty_cache(self) -> int:
        return int(self.pool.free_all_cached())

    def stats(self) -> dict[str, Any]:
        out = dict(self.pool.stats())
        out["cache_hits"] = out.get("reuses", 0)
        out["allocator"] = "rust pool"
        return out


def _fast_allocator(pool: Any, context: Any) -> Any:
    """The extension's BufferAllocator over `pool`, or None when the Rust runtime or the
    extension predates it (both are optional speed-ups of the same pool)."""
    from . import _loader

    make_table = getattr(pool, "fast_table", None)
    try:
        make = getattr(_loader.native(), "buffer_allocator", None)
    except _loader.CudaUnavailable:
        return None
    if make_table is None or make is None:
        return None
    return make(make_table(), context)


def make_device_allocator(context: Any, device: str) -> RustPoolAllocator | CachingAllocator:
    """The allocator CUDA arrays of one device get their memory from (the swap point)."""
    if os.environ.get("PYGPUKIT_CUDA_ALLOCATOR", "pool") != "caching":
        try:
            return RustPoolAllocator(context, device)
        except ImportError:
            pass  # no Rust runtime: the Python cache below still works
    return CachingAllocator(context, device)
