"""Device memory for CUDA arrays: the Rust runtime's pool, one per device (and one per CUDA graph).

`DevicePool` is the one allocator of the backend. It is the Rust `MemoryPool` over this
context's C ABI allocator table (``Context.allocator_capsule()``: cuMemAlloc, cuMemFree,
cuMemcpy*) and the extension's `BufferAllocator` over the pool's fast table: a call
``pool.allocate(nbytes, stream)`` is one native call that returns a `DeviceBuffer` (from the
stream's cache without waiting, else through the pool's whole path).

Memory is stream-ordered in the pool itself: a block returns to the cache of the stream it
was allocated on and is reused there at once; other streams get it only after it went back
to the device (see the Rust pool's module note). A graph's private pool (``keep_cache=True``)
never gives its cache back on out-of-memory: captured work replays into those blocks.
"""

from __future__ import annotations

from typing import Any

from . import _loader


class DevicePool:
    """The Rust MemoryPool of one device (or one graph) and its native BufferAllocator."""

    def __init__(self, context: Any, device: str, *, keep_cache: bool = False) -> None:
        import _pygpukit_rust as rust

        self.context = context
        self.device = device
        self.pool = rust.MemoryPool.from_capsule(
            context.allocator_capsule(), device=device, keep_cache=keep_cache
        )
        #: allocate(nbytes, stream=0) -> DeviceBuffer; MemoryError names the sizes
        self.allocate = _loader.native().buffer_allocator(self.pool.fast_table(), context)

    def empty_cache(self) -> int:
        """Give every cached block back to the driver; the bytes released."""
        return int(self.pool.free_all_cached())

    def stats(self) -> dict[str, Any]:
        out = dict(self.pool.stats())
        out["cache_hits"] = out.get("reuses", 0)
        out["allocator"] = "rust pool"
        return out


def make_device_pool(context: Any, device: str) -> DevicePool:
    """The pool CUDA arrays of one device get their memory from, registered with the Rust
    runtime under the device's name (so the scheduler and `rust.device_pool` see it)."""
    import _pygpukit_rust as rust

    pool = DevicePool(context, device)
    rust.register_device_pool(device, pool.pool)
    return pool
