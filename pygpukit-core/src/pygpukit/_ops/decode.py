"""Decode-step ops whose indices live on the device: embedding rows, RoPE at given
positions, KV-cache writes at given slots, and causal attention over a cache with per-row
valid ranges. Nothing here reads the device from the host, so a decode step built from
them can be captured once as a CUDA graph and replayed with new positions each step.

Index arrays (``ids``, ``positions``, ``slots``, ``starts``, ``ends``) are int32 or int64
arrays on the same device as the data. Out-of-range indices: the CPU kernels raise
IndexError naming the index; a GPU kernel cannot raise from inside a captured graph, so
``embedding`` writes a row of NaN for a bad id, and ``rope_at_inplace`` and
``kv_cache_write`` leave the affected elements untouched (the caller checks its counters
on the host, as ``pygpukit.llm`` does).

Kernel calling conventions:

- ``embedding``: ``kernel(weight, ids, out)``: ``weight (V, H)`` floating point,
  ``ids`` any shape, ``out (*ids.shape, H)`` of weight's dtype, contiguous.
- ``rope_at_inplace``: ``kernel(q, k, cos, sin, positions)``: ``q (B, S, Hq, D)`` and
  ``k (B, S, Hk, D)`` rotated in place (half-split pairing, as ``rope_inplace``) with
  table row ``positions[b, s]`` of ``cos``/``sin (P, D // 2)``; float32 math (float64 if
  any operand is float64).
- ``kv_cache_write``: ``kernel(cache, new, slots)``: ``cache (B, H, L, D)``,
  ``new (B, H, S, D)``; ``cache[b, :, slots[b] + s] = new[b, :, s]`` in cache's dtype.
- ``kv_cache_write_pair``: ``kernel(keys, values, new_keys, new_values, slots)``: the
  same for both caches at once (one shape and dtype each).
- ``rope_kv_cache_write``: ``kernel(q, k, v, cos, sin, positions, keys, values, slots)``:
  ``rope_at_inplace(q, k, cos, sin, positions)`` then ``kv_cache_write_pair(keys, values,
  k, v, slots)`` with k and v ``(B, S, Hk, D)`` seen as ``(B, Hk, S, D)``: a decode step's
  RoPE and cache write in one pass (one launch on a GPU).
- ``rope_cache_attention``: ``kernel(q, k, v, cos, sin, positions, keys, values, slots,
  starts, ends, out, scale, window)``: ``rope_kv_cache_write(q, k, v, cos, sin, positions,
  keys, values, slots)`` then ``out = sdpa_causal_cache(q as (B, Hq, S, D), keys, values,
  starts, ends, scale, window)``: a decode step's attention in one pass (one launch on
  sm_90 GPUs), q and k rotated in place and the caches written as the two ops do.
- ``decode_advance``: ``kernel(tokens, chosen, positions, slots, ends)``: the end of a
  decode step, ``tokens[b] = chosen[b]`` and ``positions``, ``slots``, ``ends`` each + 1
  (flat views of ``(B,)`` or ``(B, 1)`` index arrays).
- ``sdpa_causal_cache``: ``kernel(q, k, v, starts, ends, out, scale, window)``:
  ``q (B, Hq, Sq, D)``, ``k (B, Hkv, L, D)``, ``v (B, Hkv, L, Dv)``, ``starts``/``ends``
  ``(B,)``, ``out (B, Hq, Sq, Dv)`` contiguous. Query ``i`` of row ``b`` sits at slot
  ``t = ends[b] - Sq + i`` and sees keys ``j`` with ``starts[b] <= j <= t`` and, when
  ``window > 0``, ``t - j < window``; a query that sees no key gets zeros. GQA as
  ``sdpa_causal`` (query head ``h`` reads kv head ``h // (Hq // Hkv)``).
- ``gather_matmul``: ``kernel(x, weights, ids, out)``: ``x (T, K)``, ``weights (E, N, K)``
  (each group's matrix stored (out, in), as checkpoints keep linear weights), ``ids (T,)``,
  ``out (T, N)`` contiguous of the promoted float dtype: ``out[t] = weights[ids[t]] @ x[t]``
  (mixture-of-experts: each row through the expert the router chose for it). A bad id gives
  a row of NaN on the GPU.
- ``silu_mul``: ``kernel(gate, up, out)``: ``out = silu(gate) * up`` elementwise (the
  gated MLP's middle, one pass instead of two), same shapes, float math for half types.
- ``add_rmsnorm``: ``kernel(x, y, gamma, total, out, eps)``: ``total = x + y`` (rounded to
  total's dtype) and ``out = rmsnorm(total, gamma, eps)`` over the last axis, in one pass
  (a pre-norm decoder's residual add and the next norm); ``total`` and ``out`` contiguous.
- ``linear_rows``: ``kernel(x, weight, out)``: ``out = x @ weight.T`` for a few rows
  ``x (M, K)`` and ``weight (N, K)`` stored (out, in) as checkpoints keep it: the
  matrix-vector products of a decode step, where reading the weight once is all the work.
"""

from __future__ import annotations

import math
from typing import Any

from .. import _dtypes as dt
from .._array import GPUArray
from .._promotion import promote_types
from ._core import device_of, empty, kernel_on

__all__ = [
    "embedding", "gather_matmul", "kv_cache_write", "rope_at_inplace", "sdpa_causal_cache",
    "silu_mul", "add_rmsnorm", "linear_rows", "kv_cache_write_pair", "rope_kv_cache_write",
    "decode_advance", "rope_cache_attention",
]  # fmt: skip


def _array(op: str, name: str, x: Any) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{op}: {name} must be a GPUArray, got {type(x).__name__}")
    return x


def _floating(op: str, name: str, x: GPUArray) -> None:
    if not x.dtype.is_floating or x.dtype.is_float8:
        raise TypeError(
            f"{op}: {name} has dtype {x.dtype.name}; it wants float16, bfloat16, float32 or "
            "float64 (cast with .astype() first)"
        )


def _index(op: str, name: str, x: Any, shape: tuple[int, ...] | None = None) -> GPUArray:
    a = _array(op, name, x)
    if a.dtype not in (dt.int32, dt.int64):
        raise TypeError(f"{op}: {name} must be an int32 or int64 array, got {a.dtype.name}")
    if shape is not None and a.shape != shape:
        raise ValueError(f"{op}: {name} has shape {a.shape} but must be {shape}")
    return a


def _ndim(op: str, name: str, x: GPUArray, ndim: int, layout: str) -> None:
    if x.ndim != ndim:
        raise ValueError(f"{op}: {name} must have shape {layout}, got shape {x.shape}")


def _writable(op: str, name: str, x: GPUArray) -> None:
    for axis, (n, stride) in enumerate(zip(x.shape, x.strides, strict=True)):
        if n > 1 and stride == 0:
            raise ValueError(
                f"{op}: {name} is a broadcast view (stride 0 on axis {axis}); its elements "
                "share memory and cannot be written in place"
            )
    x.check_writable(f"{op}: {name}")


def embedding(weight: GPUArray, ids: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """Rows of `weight` (V, H) at token `ids` (any shape): (*ids.shape, H)."""
    op = "embedding"
    _array(op, "weight", weight)
    _floating(op, "weight", weight)
    _ndim(op, "weight", weight, 2, "(vocab, hidden)")
    _index(op, "ids", ids)
    device = device_of(weight, ids)
    fn = kernel_on(op, device, (weight.dtype, ids.dtype), backend)
    out = empty((*ids.shape, weight.shape[1]), weight.dtype, device)
    if out.size:
        fn(weight, ids, out)
    return out


def _check_rope(op: str, q: GPUArray, k: GPUArray, cos: GPUArray, sin: GPUArray,
                positions: GPUArray) -> None:  # fmt: skip
    for name, x in (("q", q), ("k", k), ("cos", cos), ("sin", sin)):
        _array(op, name, x)
        _floating(op, name, x)
    _ndim(op, "q", q, 4, "(batch, seq, heads, head_dim)")
    _ndim(op, "k", k, 4, "(batch, seq, kv_heads, head_dim)")
    if q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{op}: q {q.shape} and k {k.shape} must agree on batch, seq, head_dim")
    d = q.shape[-1]
    if d % 2:
        raise ValueError(f"{op}: head_dim must be even to split into halves, got {d}")
    for name, table in (("cos", cos), ("sin", sin)):
        if table.ndim != 2 or table.shape[1] != d // 2 or table.shape[0] == 0:
            raise ValueError(
                f"{op}: {name} has shape {table.shape} but must be (positions, head_dim // 2)"
                f" with head_dim {d}"
            )
    if cos.shape != sin.shape:
        raise ValueError(f"{op}: cos {cos.shape} and sin {sin.shape} differ")
    _index(op, "positions", positions, q.shape[:2])
    for name, x in (("q", q), ("k", k)):
        _writable(op, name, x)
        if x.buffer in (cos.buffer, sin.buffer):
            raise ValueError(f"{op}: {name} shares memory with the cos/sin tables")
    if q.buffer is k.buffer and q.offset == k.offset and q.size:
        raise ValueError(f"{op}: q and k are the same array; it would be rotated twice")


def rope_at_inplace(
    q: GPUArray,
    k: GPUArray,
    cos: GPUArray,
    sin: GPUArray,
    positions: GPUArray,
    /,
    *,
    backend: str | None = None,
) -> None:
    """Rotate q (B, S, Hq, D) and k (B, S, Hk, D) in place by the rows `positions` (B, S)
    of the tables cos, sin (P, D // 2): half-split (GPT-NeoX) pairing, as rope_inplace."""
    op = "rope_at_inplace"
    _check_rope(op, q, k, cos, sin, positions)
    device = device_of(q, k, cos, sin, positions)
    fn = kernel_on(op, device, (q.dtype, k.dtype, cos.dtype, sin.dtype, positions.dtype),
                   backend)  # fmt: skip
    if q.size or k.size:
        fn(q, k, cos, sin, positions)


def _check_kv(op: str, cache: GPUArray, new: GPUArray, slots: GPUArray) -> None:
    for name, x in (("cache", cache), ("new", new)):
        _array(op, name, x)
        _floating(op, name, x)
        _ndim(op, name, x, 4, "(batch, heads, length, head_dim)")
    if new.shape[:2] != cache.shape[:2] or new.shape[3] != cache.shape[3]:
        raise ValueError(
            f"{op}: new {new.shape} must match cache {cache.shape} on batch, heads, head_dim"
        )
    if new.shape[2] > cache.shape[2]:
        raise ValueError(f"{op}: {new.shape[2]} new positions exceed the cache's {cache.shape[2]}")
    _index(op, "slots", slots, (cache.shape[0],))
    _writable(op, "cache", cache)
    if new.buffer is cache.buffer:
        raise ValueError(f"{op}: new shares memory with the cache; pass a copy")


def kv_cache_write(
    cache: GPUArray, new: GPUArray, slots: GPUArray, /, *, backend: str | None = None
) -> None:
    """cache[b, :, slots[b] : slots[b] + S] = new[b] for cache (B, H, L, D), new (B, H, S, D)."""
    op = "kv_cache_write"
    _check_kv(op, cache, new, slots)
    device = device_of(cache, new, slots)
    fn = kernel_on(op, device, (cache.dtype, new.dtype, slots.dtype), backend)
    if new.size:
        fn(cache, new, slots)


def kv_cache_write_pair(
    keys: GPUArray,
    values: GPUArray,
    new_keys: GPUArray,
    new_values: GPUArray,
    slots: GPUArray,
    /,
    *,
    backend: str | None = None,
) -> None:
    """kv_cache_write of keys and of values in one call (one launch on a GPU): both caches
    of one shape and dtype, both new blocks of one shape."""
    op = "kv_cache_write_pair"
    _check_kv(op, keys, new_keys, slots)
    _check_kv(op, values, new_values, slots)
    if keys.shape != values.shape or keys.dtype != values.dtype:
        raise ValueError(f"{op}: keys {keys.shape} {keys.dtype.name} and values {values.shape} "
                         f"{values.dtype.name} differ; write them with kv_cache_write")  # fmt: skip
    if new_keys.shape != new_values.shape or keys.buffer is values.buffer:
        raise ValueError(f"{op}: new keys {new_keys.shape} and values {new_values.shape} must "
                         "have one shape, and the caches must be separate arrays")  # fmt: skip
    device = device_of(keys, values, new_keys, new_values, slots)
    dtypes = (keys.dtype, values.dtype, new_keys.dtype, new_values.dtype, slots.dtype)
    fn = kernel_on(op, device, dtypes, backend)
    if new_keys.size:
        fn(keys, values, new_keys, new_values, slots)


def rope_kv_cache_write(
    q: GPUArray,
    k: GPUArray,
    v: GPUArray,
    cos: GPUArray,
    sin: GPUArray,
    positions: GPUArray,
    keys: GPUArray,
    values: GPUArray,
    slots: GPUArray,
    /,
    *,
    backend: str | None = None,
) -> None:
    """rope_at_inplace(q, k, cos, sin, positions), then the rotated k and v (B, S, Hk, D)
    written into keys and values (B, Hk, L, D) at slots[b] + s: one pass for a decode step."""
    op = "rope_kv_cache_write"
    _check_rope_kv(op, q, k, v, cos, sin, positions, keys, values, slots)
    device = device_of(q, k, v, cos, sin, positions, keys, values, slots)
    dtypes = (q.dtype, k.dtype, v.dtype, cos.dtype, sin.dtype, positions.dtype, keys.dtype,
              slots.dtype)  # fmt: skip
    fn = kernel_on(op, device, dtypes, backend)
    if q.size or k.size:
        fn(q, k, v, cos, sin, positions, keys, values, slots)


def _check_rope_kv(op: str, q: GPUArray, k: GPUArray, v: GPUArray, cos: GPUArray,
                   sin: GPUArray, positions: GPUArray, keys: GPUArray, values: GPUArray,
                   slots: GPUArray) -> None:  # fmt: skip
    _check_rope(op, q, k, cos, sin, positions)
    _array(op, "v", v)
    if v.shape != k.shape:
        raise ValueError(f"{op}: v {v.shape} must have k's shape {k.shape}")
    kt, vt = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)
    _check_kv(op, keys, kt, slots)
    _check_kv(op, values, vt, slots)
    if keys.shape != values.shape or keys.dtype != values.dtype or keys.buffer is values.buffer:
        raise ValueError(
            f"{op}: keys {keys.shape} {keys.dtype.name} and values {values.shape} "
            f"{values.dtype.name} must be separate caches of one shape and dtype"
        )


def decode_advance(
    tokens: GPUArray,
    chosen: GPUArray,
    positions: GPUArray,
    slots: GPUArray,
    ends: GPUArray,
    /,
    *,
    backend: str | None = None,
) -> None:
    """The end of a decode step in one pass: tokens = chosen (the greedy ids fed back) and
    positions, slots, ends each advanced by one; every array holds one value per row."""
    op = "decode_advance"
    arrays = {"tokens": tokens, "chosen": chosen, "positions": positions, "slots": slots,
              "ends": ends}  # fmt: skip
    rows = _index(op, "chosen", chosen).size
    for name, x in arrays.items():
        _index(op, name, x)
        if x.size != rows or x.ndim > 2 or (x.ndim == 2 and x.shape[1] != 1):
            raise ValueError(f"{op}: {name} has shape {x.shape}; every array wants one value "
                             f"per row, ({rows},) or ({rows}, 1)")  # fmt: skip
        if name != "chosen":
            _writable(op, name, x)
    buffers = [x.buffer for name, x in arrays.items() if name != "chosen"]
    if len({id(b) for b in buffers}) < len(buffers):
        raise ValueError(f"{op}: tokens, positions, slots and ends must be separate arrays")
    device = device_of(*arrays.values())
    fn = kernel_on(op, device, tuple(x.dtype for x in arrays.values()), backend)
    if rows:
        fn(tokens, chosen, positions, slots, ends)


def sdpa_causal_cache(
    q: GPUArray,
    k: GPUArray,
    v: GPUArray,
    starts: GPUArray,
    ends: GPUArray,
    /,
    scale: float | None = None,
    *,
    window: int = 0,
    backend: str | None = None,
) -> GPUArray:
    """Causal attention of q (B, Hq, Sq, D) over cache slots [starts[b], ends[b]) of
    k (B, Hkv, L, D) and v (B, Hkv, L, Dv); the last query sits at slot ends[b] - 1, and
    with `window` > 0 a query sees only the `window` slots ending at its own."""
    op = "sdpa_causal_cache"
    s, out_dtype = _check_sdpa(op, q, k, v, starts, ends, scale, window)
    device = device_of(q, k, v, starts, ends)
    fn = kernel_on(op, device, (q.dtype, k.dtype, v.dtype, starts.dtype, ends.dtype), backend)
    out = empty((q.shape[0], q.shape[1], q.shape[2], v.shape[3]), out_dtype, device)
    if out.size:
        fn(q, k, v, starts, ends, out, s, window)
    return out


def _check_sdpa(op: str, q: GPUArray, k: GPUArray, v: GPUArray, starts: GPUArray,
                ends: GPUArray, scale: float | None, window: int) -> tuple[float, Any]:  # fmt: skip
    """sdpa_causal_cache's checks; (the scale to use, the output dtype)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        _array(op, name, x)
        _floating(op, name, x)
        _ndim(op, name, x, 4, "(batch, heads, seq, head_dim)")
    b, hq, sq, d = q.shape
    if k.shape[0] != b or v.shape[0] != b or k.shape[1:3] != v.shape[1:3]:
        raise ValueError(f"{op}: q {q.shape}, k {k.shape}, v {v.shape} disagree on batch/kv")
    if k.shape[3] != d or d == 0:
        raise ValueError(f"{op}: q and k must share a head_dim >= 1, got {d} and {k.shape[3]}")
    hkv = k.shape[1]
    if hkv == 0 or hq % hkv:
        raise ValueError(f"{op}: q's {hq} heads must be a multiple of k/v's {hkv} heads")
    if sq > k.shape[2]:
        raise ValueError(f"{op}: {sq} queries exceed the cache's {k.shape[2]} slots")
    _index(op, "starts", starts, (b,))
    _index(op, "ends", ends, (b,))
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f"{op}: window must be an int >= 0 (0: no window), got {window!r}")
    if scale is None:
        s = 1.0 / math.sqrt(d)
    elif isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"{op}: scale must be a float or None, got {type(scale).__name__}")
    else:
        s = float(scale)
    return s, promote_types(promote_types(q.dtype, k.dtype), v.dtype)


def rope_cache_attention(
    q: GPUArray,
    k: GPUArray,
    v: GPUArray,
    cos: GPUArray,
    sin: GPUArray,
    positions: GPUArray,
    keys: GPUArray,
    values: GPUArray,
    slots: GPUArray,
    starts: GPUArray,
    ends: GPUArray,
    /,
    scale: float | None = None,
    *,
    window: int = 0,
    backend: str | None = None,
) -> GPUArray:
    """A decode step's attention in one pass: rope_kv_cache_write(q, k, v, cos, sin,
    positions, keys, values, slots), then sdpa_causal_cache of the rotated q (B, S, Hq, D)
    seen as (B, Hq, S, D) over keys and values [starts, ends): (B, Hq, S, Dv)."""
    op = "rope_cache_attention"
    _check_rope_kv(op, q, k, v, cos, sin, positions, keys, values, slots)
    qt = q.transpose(0, 2, 1, 3)
    s, out_dtype = _check_sdpa(op, qt, keys, values, starts, ends, scale, window)
    arrays = (q, k, v, cos, sin, positions, keys, values, slots, starts, ends)
    device = device_of(*arrays)
    dtypes = (q.dtype, k.dtype, v.dtype, cos.dtype, sin.dtype, positions.dtype, keys.dtype,
              slots.dtype, starts.dtype, ends.dtype)  # fmt: skip
    fn = kernel_on(op, device, dtypes, backend)
    out = empty((qt.shape[0], qt.shape[1], qt.shape[2], values.shape[3]), out_dtype, device)
    if out.size:
        fn(*arrays, out, s, window)
    return out


def gather_matmul(x: GPUArray, weights: GPUArray, ids: GPUArray, /, *,
                  backend: str | None = None) -> GPUArray:  # fmt: skip
    """Row t of x (T, K) times the matrix weights[ids[t]] (E, N, K) transposed: (T, N)."""
    op = "gather_matmul"
    for name, a in (("x", x), ("weights", weights)):
        _array(op, name, a)
        _floating(op, name, a)
    _ndim(op, "x", x, 2, "(rows, in_features)")
    _ndim(op, "weights", weights, 3, "(groups, out_features, in_features)")
    if weights.shape[2] != x.shape[1]:
        raise ValueError(f"{op}: x {x.shape} has {x.shape[1]} features, weights {weights.shape} "
                         f"take {weights.shape[2]}")  # fmt: skip
    _index(op, "ids", ids, (x.shape[0],))
    device = device_of(x, weights, ids)
    fn = kernel_on(op, device, (x.dtype, weights.dtype, ids.dtype), backend)
    out = empty((x.shape[0], weights.shape[1]), promote_types(x.dtype, weights.dtype), device)
    if out.size:
        fn(x, weights, ids, out)
    return out


def silu_mul(gate: GPUArray, up: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """silu(gate) * up in one pass (SwiGLU's middle); gate and up have the same shape."""
    op = "silu_mul"
    for name, a in (("gate", gate), ("up", up)):
        _array(op, name, a)
        _floating(op, name, a)
    if gate.shape != up.shape:
        raise ValueError(f"{op}: gate {gate.shape} and up {up.shape} must have the same shape")
    device = device_of(gate, up)
    fn = kernel_on(op, device, (gate.dtype, up.dtype), backend)
    out = empty(gate.shape, promote_types(gate.dtype, up.dtype), device)
    if out.size:
        fn(gate, up, out)
    return out


def add_rmsnorm(
    x: GPUArray, y: GPUArray, gamma: GPUArray, /, eps: float = 1e-6, *,
    backend: str | None = None,
) -> tuple[GPUArray, GPUArray]:  # fmt: skip
    """(x + y, rmsnorm(x + y, gamma, eps)) in one pass: a residual add and the next norm."""
    op = "add_rmsnorm"
    for name, a in (("x", x), ("y", y), ("gamma", gamma)):
        _array(op, name, a)
        _floating(op, name, a)
    if x.shape != y.shape or x.ndim == 0:
        raise ValueError(f"{op}: x {x.shape} and y {y.shape} must have one shape (ndim >= 1)")
    if gamma.shape != (x.shape[-1],):
        raise ValueError(f"{op}: gamma has shape {gamma.shape}, wants ({x.shape[-1]},)")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"{op}: eps must be a float >= 0, got {eps!r}")
    device = device_of(x, y, gamma)
    fn = kernel_on(op, device, (x.dtype, y.dtype, gamma.dtype), backend)
    total_dtype = promote_types(x.dtype, y.dtype)
    total = empty(x.shape, total_dtype, device)
    out = empty(x.shape, promote_types(total_dtype, gamma.dtype), device)
    if out.size:
        fn(x, y, gamma, total, out, float(eps))
    return total, out


#: most rows linear_rows takes: past this a matmul reads the weight as few times
LINEAR_ROWS_MAX = 8


def linear_rows(x: GPUArray, weight: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """x (M, K) @ weight.T for weight (N, K) and M <= 8 rows: a decode step's products."""
    op = "linear_rows"
    for name, a in (("x", x), ("weight", weight)):
        _array(op, name, a)
        _floating(op, name, a)
        _ndim(op, name, a, 2, "(rows, in_features)" if name == "x" else "(out, in_features)")
    if x.shape[1] != weight.shape[1]:
        raise ValueError(f"{op}: x {x.shape} and weight {weight.shape} disagree on in_features")
    if x.shape[0] > LINEAR_ROWS_MAX:
        raise ValueError(f"{op}: {x.shape[0]} rows; it takes at most {LINEAR_ROWS_MAX}")
    device = device_of(x, weight)
    fn = kernel_on(op, device, (x.dtype, weight.dtype), backend)
    out = empty((x.shape[0], weight.shape[0]), promote_types(x.dtype, weight.dtype), device)
    if out.size:
        fn(x, weight, out)
    return out
