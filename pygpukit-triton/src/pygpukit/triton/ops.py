"""Ops this package adds to PyGPUkit: `pygpukit.triton.swiglu` (dispatched like any op, so
another provider may serve it too)."""

from __future__ import annotations

from pygpukit import GPUArray
from pygpukit.backend import empty, kernel


def swiglu(gate: GPUArray, up: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """silu(gate) * up in one pass: the gated MLP activation of Llama-family models."""
    for name, a in (("gate", gate), ("up", up)):
        if not isinstance(a, GPUArray):
            raise TypeError(f"swiglu: {name} must be a GPUArray, got {type(a).__name__}")
        if a.dtype.name not in ("float16", "bfloat16", "float32", "float64"):
            raise TypeError(f"swiglu: {name} has dtype {a.dtype.name}; it wants floats")
    if gate.shape != up.shape:
        raise ValueError(f"swiglu: gate {gate.shape} and up {up.shape} must have one shape")
    if gate.dtype is not up.dtype:
        raise TypeError(f"swiglu: gate is {gate.dtype.name} but up is {up.dtype.name}")
    fn = kernel("swiglu", gate, up, backend=backend)
    out = empty(gate.shape, gate.dtype, gate.device)
    if out.size:
        fn(gate, up, out)
    return out
