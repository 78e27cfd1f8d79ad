"""CPU kernels of the nn ops: one fused NumPy pass each (conventions in `_ops/nn.py`)."""

from __future__ import annotations

import numpy as np

from ..._array import GPUArray
from ..._dtypes import FLOAT_DTYPES, NUMERIC_DTYPES, float64
from ..._providers import KernelProvider
from .elementwise import UNARY_IMPL
from .views import math_dtype, operand, view

_gelu = UNARY_IMPL["gelu"]  # the same GELU as pygpukit.gelu, so the fused op matches it


def softmax(x: GPUArray, out: GPUArray, axis: int) -> None:
    a = operand(x, out.dtype)
    with np.errstate(all="ignore"):
        shifted = a - a.max(axis=axis, keepdims=True)
        e = np.exp(shifted)
        view(out)[...] = e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: GPUArray, out: GPUArray, axis: int) -> None:
    a = operand(x, out.dtype)
    with np.errstate(all="ignore"):
        shifted = a - a.max(axis=axis, keepdims=True)
        view(out)[...] = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def layernorm(x: GPUArray, gamma: GPUArray, beta: GPUArray, out: GPUArray, eps: float) -> None:
    # statistics in float64: in float32, a row of nearly equal values loses most digits
    # of x - mean, and the normalization then magnifies that error
    a = operand(x, out.dtype).astype(np.float64, copy=False)
    centred = a - a.mean(axis=-1, keepdims=True)
    var = np.square(centred).mean(axis=-1, keepdims=True)
    inv = 1 / np.sqrt(var + eps)
    view(out)[...] = centred * inv * operand(gamma, out.dtype) + operand(beta, out.dtype)


def rmsnorm(x: GPUArray, gamma: GPUArray, out: GPUArray, eps: float) -> None:
    a = operand(x, out.dtype)
    inv = 1 / np.sqrt(np.square(a).mean(axis=-1, keepdims=True) + eps)
    view(out)[...] = a * inv * operand(gamma, out.dtype)


def _attend(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float,
            causal: bool) -> None:  # fmt: skip
    *batch, hq, sq, d = q.shape
    hkv, skv = k.shape[-3], k.shape[-2]
    group = hq // hkv
    # (*B, Hkv, G, Sq, D): the G query heads of a group share one key/value head
    qg = operand(q, out.dtype).reshape(*batch, hkv, group, sq, d)
    # contiguous: NumPy takes its BLAS path for broadcast matmul only on such operands
    kt = np.ascontiguousarray(np.swapaxes(operand(k, out.dtype), -1, -2))[..., None, :, :]
    vg = operand(v, out.dtype)[..., None, :, :]
    scores = np.matmul(qg, kt) * math_dtype(out.dtype).type(scale)
    if causal:  # bottom-right aligned: query i sees keys j <= i + (Skv - Sq)
        hidden = np.arange(skv)[None, :] > np.arange(sq)[:, None] + (skv - sq)
        scores[..., hidden] = -np.inf
    with np.errstate(all="ignore"):
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
    view(out)[...] = np.matmul(p, vg).reshape(out.shape)


def sdpa_causal(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float) -> None:
    _attend(q, k, v, out, scale, True)


def sdpa(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float) -> None:
    _attend(q, k, v, out, scale, False)


def rope(q: GPUArray, k: GPUArray, cos: GPUArray, sin: GPUArray) -> None:
    for x in (q, k):
        if x.size == 0:
            continue
        wide = float64 in (x.dtype, cos.dtype, sin.dtype)
        compute = np.dtype(np.float64 if wide else np.float32)
        c = view(cos).astype(compute)[:, None, :]  # (S, 1, D/2): broadcast over heads
        s = view(sin).astype(compute)[:, None, :]
        half = x.shape[-1] // 2
        target = view(x)
        x1 = target[..., :half].astype(compute)
        x2 = target[..., half:].astype(compute)
        target[..., :half] = x1 * c - x2 * s
        target[..., half:] = x2 * c + x1 * s


def bias_add(x: GPUArray, bias: GPUArray) -> None:
    target = view(x)
    with np.errstate(all="ignore"):  # integer wrap-around, as in x += bias
        target[...] = operand(x, x.dtype) + operand(bias, x.dtype)


def linear_bias_gelu(
    x: GPUArray, weight: GPUArray, bias: GPUArray, out: GPUArray, approximate: str
) -> None:
    y = operand(x, out.dtype) @ operand(weight, out.dtype).T
    y += operand(bias, out.dtype)
    view(out)[...] = _gelu(y, approximate)


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    for op, fn in (("softmax", softmax), ("log_softmax", log_softmax),
                   ("layernorm", layernorm), ("rmsnorm", rmsnorm),
                   ("sdpa_causal", sdpa_causal), ("sdpa", sdpa), ("rope_inplace", rope),
                   ("linear_bias_gelu", linear_bias_gelu)):  # fmt: skip
        provider.add(op, fn, FLOAT_DTYPES)
    provider.add("bias_add_inplace", bias_add, NUMERIC_DTYPES)
