"""Ops this package adds to PyGPUkit: `pygpukit.triton.swiglu` (dispatched like any op, so
another provider may serve it too)."""

from __future__ import annotations

import numpy as np
from pygpukit import GPUArray
from pygpukit.backend import DataType, empty, kernel


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


def swiglu_reference(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """NumPy's swiglu in float64: the conformance suite's reference (`register_op`)."""
    g = gate.astype(np.float64)
    return g / (1.0 + np.exp(-g)) * up.astype(np.float64)


def swiglu_inputs(rng: np.random.Generator, dtype: DataType) -> tuple[np.ndarray, ...]:
    """Random gate and up of one random shape (up to 3-d, sizes 0 to 70, so a vector
    width's tail is covered) for the conformance suite."""
    shape = tuple(int(n) for n in rng.integers(0, 71, size=int(rng.integers(0, 4))))
    np_dtype = dtype.to_numpy_dtype()
    return tuple(rng.uniform(-6.0, 6.0, shape).astype(np_dtype) for _ in range(2))
