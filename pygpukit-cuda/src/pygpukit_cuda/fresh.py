"""Public API for the native elementwise fast path (``FreshElementwise``, see
``native/fresh_elementwise.hpp``): other providers (pygpukit-triton) make one per op, teach
it their launch plans, and set it as their kernel's ``fresh`` (see `pygpukit.ops_catalog`).

    fresh = pygpukit_cuda.fresh.new(2)           # None without the native extension
    kernel.fresh = fresh
    ...                                         # after a Python-path launch:
    pygpukit_cuda.fresh.teach(fresh, out, [x1, x2], plan)

A taught plan must be a native LaunchPlan whose only slots are the device pointers of
(out, x1[, x2]) in that order, with every other parameter fixed for the element count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import use_front_doors

from . import _loader, streams

_doors_in = False  # whether the public elementwise functions have the native front door


def new(arity: int) -> Any:
    """A FreshElementwise of `arity` (1 or 2) array operands, or None where the native
    extension is not loaded (a kernel's ``fresh`` is then None: the core skips it)."""
    try:
        native = _loader.native()
    except _loader.CudaUnavailable:
        return None
    _use_native_doors(native)
    return native.fresh_elementwise(GPUArray, streams._current, arity)


def _use_native_doors(native: Any) -> None:
    """Put the native FrontDoor (native/front_door.hpp) in front of every public elementwise
    function, once: the first fresh path made is the first one a door could call."""
    global _doors_in
    if not _doors_in:
        _doors_in = True
        use_front_doors(lambda known, arity, general, declined, *settings: native.front_door(
            known, arity, GPUArray, general, declined, *settings))  # fmt: skip


def teachable(out: GPUArray, inputs: Sequence[Any]) -> bool:
    """Whether a launch on these operands is one the fast path replays: every operand a
    contiguous GPUArray of one dtype and of the output's shape, in a pool of its device."""
    first = inputs[0]
    for x in inputs:
        if type(x) is not GPUArray or x.dtype is not first.dtype or x.shape != out.shape:
            return False
        if not x.is_contiguous:
            return False
    return out.is_contiguous and _pool(out) is not None


def teach(fresh: Any, out: GPUArray, inputs: Sequence[Any], plan: Any,
          aligned: bool | None = None) -> bool:  # fmt: skip
    """Teach `fresh` the launch `plan` made for `out` and `inputs` (see the module
    docstring); False, teaching nothing, where the operands are not `teachable`, the plan
    is not native (a stand-in context) or the arity differs. `aligned`: whether the plan
    holds for 16-byte aligned inputs (the fast path's key); by default, whether these
    inputs are. A plan compiled for aligned pointers must be taught with True only."""
    if fresh is None or type(plan).__name__ != "LaunchPlan" or len(inputs) != fresh.arity:
        return False
    if not teachable(out, inputs):
        return False
    if aligned is None:
        aligned = not any((x.buffer.ptr + x.offset) & 15 for x in inputs)
    first = inputs[0]
    fresh.remember(
        out.device, first.dtype, out.size, aligned, plan, _pool(out).allocate, out.dtype,
        first.dtype.itemsize, out.dtype.itemsize, out.device.index,
    )  # fmt: skip
    return True


def _pool(out: GPUArray) -> Any:
    """The BufferAllocator of `out`'s device, or None before the device made one."""
    from .device import _allocators

    return _allocators.get(out.device.index)


__all__ = ["new", "teach", "teachable"]
