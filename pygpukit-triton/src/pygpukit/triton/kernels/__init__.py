"""The seeds' kernel calls, writing into arrays the caller made:

    kernels.rmsnorm(x, w, out, eps=1e-5)
    kernels.layernorm(x, w, b, out, eps=1e-5)
    kernels.softmax(x, out, axis=-1)
    kernels.rotary(q, k, cos, sin)          # in place, half-split (NeoX) pairing

Arguments are `TritonArray`s (``from_gpuarray(x)``) or GPUArrays. They run the same
Triton programs as the ``triton`` provider, on the current stream.
"""

from __future__ import annotations

from typing import Any

from pygpukit import GPUArray

from ..array import TritonArray
from ..availability import require

FLOATS = ("float16", "bfloat16", "float32", "float64")


def _array(name: str, x: Any) -> GPUArray:
    if isinstance(x, TritonArray):
        return x.array
    if isinstance(x, GPUArray):
        return x
    raise TypeError(f"{name} must be a TritonArray (from_gpuarray) or GPUArray, got "
                    f"{type(x).__name__}")  # fmt: skip


def _check(op: str, named: dict[str, GPUArray]) -> None:
    require()
    devices = {a.device for a in named.values()}
    if len(devices) > 1:
        raise ValueError(f"{op}: arrays are on different devices ({sorted(map(str, devices))})")
    for name, a in named.items():
        if a.dtype.name not in FLOATS:
            raise TypeError(f"{op}: {name} has dtype {a.dtype.name}; it wants {', '.join(FLOATS)}")


def _row_param(op: str, name: str, p: GPUArray, x: GPUArray) -> None:
    if p.shape != (x.shape[-1],):
        raise ValueError(f"{op}: {name} has shape {p.shape}, want ({x.shape[-1]},) for x {x.shape}")


def _same_shape(op: str, x: GPUArray, out: GPUArray) -> None:
    if x.ndim == 0:
        raise ValueError(f"{op}: x must have at least one dimension")
    if out.shape != x.shape:
        raise ValueError(f"{op}: out has shape {out.shape} but x has {x.shape}")
    out.check_writable(f"{op}: out")


def rmsnorm(x: Any, weight: Any, out: Any, eps: float = 1e-5) -> None:
    """out = x / sqrt(mean(x**2, last axis) + eps) * weight."""
    xa, wa, oa = _array("x", x), _array("weight", weight), _array("out", out)
    _check("rmsnorm", {"x": xa, "weight": wa, "out": oa})
    _same_shape("rmsnorm", xa, oa)
    _row_param("rmsnorm", "weight", wa, xa)
    from .rows import rmsnorm as run

    run(xa, wa, oa, float(eps))


def layernorm(x: Any, weight: Any, bias: Any, out: Any, eps: float = 1e-5) -> None:
    """out = (x - mean) / sqrt(var + eps) * weight + bias over the last axis."""
    xa, wa, ba, oa = (_array(n, a) for n, a in
                      (("x", x), ("weight", weight), ("bias", bias), ("out", out)))  # fmt: skip
    _check("layernorm", {"x": xa, "weight": wa, "bias": ba, "out": oa})
    _same_shape("layernorm", xa, oa)
    _row_param("layernorm", "weight", wa, xa)
    _row_param("layernorm", "bias", ba, xa)
    from .rows import layernorm as run

    run(xa, wa, ba, oa, float(eps))


def softmax(x: Any, out: Any, axis: int = -1) -> None:
    """out = softmax(x) along `axis` (max subtracted first)."""
    xa, oa = _array("x", x), _array("out", out)
    _check("softmax", {"x": xa, "out": oa})
    _same_shape("softmax", xa, oa)
    if not -xa.ndim <= axis < xa.ndim:
        raise IndexError(f"softmax: axis {axis} is out of range for {xa.ndim}-D x")
    from .rows import softmax as run

    run(xa, oa, axis % xa.ndim)


def rotary(q: Any, k: Any, cos: Any, sin: Any) -> None:
    """Rotate q (..., seq, heads, dim) and k (..., seq, kv_heads, dim) in place with the
    (seq, dim // 2) tables; the same rule as ``gp.rope_inplace``."""
    import pygpukit as gp

    qa, ka, ca, sa = (_array(n, a) for n, a in (("q", q), ("k", k), ("cos", cos), ("sin", sin)))
    require()
    gp.rope_inplace(qa, ka, ca, sa, backend="triton")


__all__ = ["layernorm", "rmsnorm", "rotary", "softmax"]
