"""CPU kernels of the decode-step ops (conventions in `_ops/decode.py`), in NumPy."""

from __future__ import annotations

import numpy as np

from ..._array import GPUArray
from ..._dtypes import FLOAT_DTYPES, float64, int32, int64
from ..._providers import KernelProvider
from .elementwise import UNARY_IMPL
from .views import math_dtype, operand, view

_silu = UNARY_IMPL["silu"]  # the same SiLU as pygpukit.silu


def _indices(name: str, x: GPUArray, size: int) -> np.ndarray:
    """The index values; IndexError naming the first outside [0, size)."""
    values = view(x).astype(np.int64)
    bad = (values < 0) | (values >= size)
    if bad.any():
        raise IndexError(f"{name} {int(values[bad][0])} is outside [0, {size})")
    return values


def embedding(weight: GPUArray, ids: GPUArray, out: GPUArray) -> None:
    rows = _indices("id", ids, weight.shape[0])
    view(out)[...] = view(weight)[rows]


def rope_at(q: GPUArray, k: GPUArray, cos: GPUArray, sin: GPUArray, positions: GPUArray) -> None:
    pos = _indices("position", positions, cos.shape[0])
    for x in (q, k):
        if x.size == 0:
            continue
        wide = float64 in (x.dtype, cos.dtype, sin.dtype)
        compute = np.dtype(np.float64 if wide else np.float32)
        c = view(cos).astype(compute)[pos][:, :, None, :]  # (B, S, 1, D/2)
        s = view(sin).astype(compute)[pos][:, :, None, :]
        half = x.shape[-1] // 2
        target = view(x)
        x1 = target[..., :half].astype(compute)
        x2 = target[..., half:].astype(compute)
        target[..., :half] = x1 * c - x2 * s
        target[..., half:] = x2 * c + x1 * s


def kv_cache_write(cache: GPUArray, new: GPUArray, slots: GPUArray) -> None:
    seq, length = new.shape[2], cache.shape[2]
    starts = _indices("slot", slots, length - seq + 1)  # the whole run must fit
    target, source = view(cache), view(new)
    for b, start in enumerate(starts):
        target[b, :, start : start + seq] = source[b]


def kv_cache_write_pair(keys: GPUArray, values: GPUArray, new_keys: GPUArray,
                        new_values: GPUArray, slots: GPUArray) -> None:  # fmt: skip
    kv_cache_write(keys, new_keys, slots)
    kv_cache_write(values, new_values, slots)


def rope_kv_cache_write(q: GPUArray, k: GPUArray, v: GPUArray, cos: GPUArray, sin: GPUArray,
                        positions: GPUArray, keys: GPUArray, values: GPUArray,
                        slots: GPUArray) -> None:  # fmt: skip
    # both index arrays are checked before anything is written
    _indices("position", positions, cos.shape[0])
    _indices("slot", slots, keys.shape[2] - k.shape[1] + 1)
    rope_at(q, k, cos, sin, positions)
    kv_cache_write_pair(keys, values, k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3), slots)


def rope_cache_attention(q: GPUArray, k: GPUArray, v: GPUArray, cos: GPUArray, sin: GPUArray,
                         positions: GPUArray, keys: GPUArray, values: GPUArray,
                         slots: GPUArray, starts: GPUArray, ends: GPUArray, out: GPUArray,
                         scale: float, window: int) -> None:  # fmt: skip
    rope_kv_cache_write(q, k, v, cos, sin, positions, keys, values, slots)
    sdpa_causal_cache(q.transpose(0, 2, 1, 3), keys, values, starts, ends, out, scale, window)


def decode_advance(tokens: GPUArray, chosen: GPUArray, positions: GPUArray, slots: GPUArray,
                   ends: GPUArray) -> None:  # fmt: skip
    target = view(tokens)
    target[...] = view(chosen).reshape(target.shape)
    for x in (positions, slots, ends):
        view(x)[...] += 1


def sdpa_causal_cache(q: GPUArray, k: GPUArray, v: GPUArray, starts: GPUArray, ends: GPUArray,
                      out: GPUArray, scale: float, window: int) -> None:  # fmt: skip
    b_, hq, sq, d = q.shape
    hkv, length = k.shape[1], k.shape[2]
    group = hq // hkv
    lo = view(starts).astype(np.int64)
    hi = view(ends).astype(np.int64)
    compute = math_dtype(out.dtype)
    qs, ks, vs = operand(q, out.dtype), operand(k, out.dtype), operand(v, out.dtype)
    result = view(out)
    keys = np.arange(length)[None, :]
    for b in range(b_):
        slot = hi[b] - sq + np.arange(sq)[:, None]  # (Sq, 1): each query's own slot
        allowed = (keys >= lo[b]) & (keys <= slot)
        if window:
            allowed &= slot - keys < window
        qg = qs[b].reshape(hkv, group * sq, d)
        scores = (qg @ np.swapaxes(ks[b], -1, -2)).reshape(hkv, group, sq, length)
        scores = scores * compute.type(scale)
        scores = np.where(allowed, scores, -np.inf)
        with np.errstate(all="ignore"):
            top = scores.max(axis=-1, keepdims=True)
            p = np.exp(scores - np.where(np.isfinite(top), top, 0))
            total = p.sum(axis=-1, keepdims=True)
            p = np.where(total > 0, p / np.where(total > 0, total, 1), 0)
        res = p.reshape(hkv, group * sq, length).astype(compute) @ vs[b]
        result[b] = res.reshape(hq, sq, -1)


def gather_matmul(x: GPUArray, weights: GPUArray, ids: GPUArray, out: GPUArray) -> None:
    groups = _indices("id", ids, weights.shape[0])
    xs, ws, target = operand(x, out.dtype), operand(weights, out.dtype), view(out)
    for g in np.unique(groups):  # one product per group, over the rows that chose it
        rows = np.nonzero(groups == g)[0]
        target[rows] = xs[rows] @ ws[g].T


def silu_mul(gate: GPUArray, up: GPUArray, out: GPUArray) -> None:
    view(out)[...] = _silu(operand(gate, out.dtype)) * operand(up, out.dtype)


def add_rmsnorm(x: GPUArray, y: GPUArray, gamma: GPUArray, total: GPUArray, out: GPUArray,
                eps: float) -> None:  # fmt: skip
    view(total)[...] = operand(x, total.dtype) + operand(y, total.dtype)
    a = operand(total, out.dtype)  # the rounded sum, as a separate norm would read it
    inv = 1 / np.sqrt(np.square(a).mean(axis=-1, keepdims=True) + eps)
    view(out)[...] = a * inv * operand(gamma, out.dtype)


def linear_rows(x: GPUArray, weight: GPUArray, out: GPUArray) -> None:
    view(out)[...] = operand(x, out.dtype) @ operand(weight, out.dtype).T


def register(provider: KernelProvider) -> None:
    """Add the decode-step kernels to the CPU provider."""
    index = (int32, int64)
    provider.add("embedding", embedding, (*FLOAT_DTYPES, *index))
    provider.add("rope_at_inplace", rope_at, (*FLOAT_DTYPES, *index))
    provider.add("kv_cache_write", kv_cache_write, (*FLOAT_DTYPES, *index))
    provider.add("kv_cache_write_pair", kv_cache_write_pair, (*FLOAT_DTYPES, *index))
    provider.add("sdpa_causal_cache", sdpa_causal_cache, (*FLOAT_DTYPES, *index))
    provider.add("rope_kv_cache_write", rope_kv_cache_write, (*FLOAT_DTYPES, *index))
    provider.add("decode_advance", decode_advance, index)
    provider.add("rope_cache_attention", rope_cache_attention, (*FLOAT_DTYPES, *index))
    provider.add("gather_matmul", gather_matmul, (*FLOAT_DTYPES, *index))
    provider.add("silu_mul", silu_mul, FLOAT_DTYPES)
    provider.add("add_rmsnorm", add_rmsnorm, FLOAT_DTYPES)
    provider.add("linear_rows", linear_rows, FLOAT_DTYPES)
