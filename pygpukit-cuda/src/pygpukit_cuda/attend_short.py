"""The latency-lean decode attention (RoPE, cache write, cache attention in one sm_90 cluster
launch, or the cache attention alone; CUDA C in ``kernels/attend_short_source.py``), and which
calls it takes.

``rope_cache_attention`` tries it first, then the older cluster kernel of
``attend_cluster.py``, then the two passes; ``sdpa_causal_cache`` tries it (`serves_sdpa`:
the same rules, q of the caches' dtype, no tables) before the older cluster kernel. It takes
a call when (see `serves`):

- the device is sm_90+, ``ENABLED`` and ``attend_cluster.ENABLED`` are on and no cluster
  launch was refused there;
- q, the new keys and values, both caches and the output share a 16-bit dtype, and the
  cos/sin tables have it too (the decoder rounds its tables to the model dtype);
- head_dim is 64 or 128, keys and values alike; at most 4 new tokens per row and at most 16
  query rows (query heads per KV head times new tokens) per KV head; caches of at most
  ``MAX_SLOTS`` slots; batch * KV heads <= 65535;
- every row it reads 16 bytes at a time is 16-byte aligned with unit stride along head_dim:
  q, the new keys and values, both caches, and the tables' rows.

Set ``PYGPUKIT_ATTEND_SHORT=0`` (or ``ENABLED = False``) to time the older cluster kernel;
``PYGPUKIT_SDPA_CLUSTER=0`` turns both cluster kernels off (the two passes).
"""

from __future__ import annotations

import os

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import attend_cluster, launch_limits, launcher
from .device_facts import compute_capability
from .device_facts import data_ptr as _ptr
from .kernels import attend_short_source as ks

#: whether this kernel may serve (the env variable is read at import)
ENABLED = os.environ.get("PYGPUKIT_ATTEND_SHORT", "1") != "0"
#: the longest cache it takes (its blocks walk longer ranges tile by tile, as the older
#: cluster kernel does, up to the same bound)
MAX_SLOTS = attend_cluster.MAX_SLOTS

_ARGS = "@" + "Q" * 12 + "q" * 22 + "i" * 6 + "f" + "i"
#: the largest window passed as is (wider windows mask nothing in a cache this short)
_WINDOW_CAP = 1 << 30


def _rows16(x: GPUArray, axes: int) -> bool:
    """Unit stride along the last axis, 16-byte aligned start and other strides."""
    size = x.dtype.itemsize
    aligned = _ptr(x) % 16 == 0 and all(s % 16 == 0 for s in x.strides[:axes])
    return x.strides[-1] == size and aligned


def serves(q: GPUArray, new_k: GPUArray, new_v: GPUArray, cos: GPUArray, sin: GPUArray,
           positions: GPUArray, keys: GPUArray, values: GPUArray, slots: GPUArray,
           starts: GPUArray, ends: GPUArray, out: GPUArray) -> bool:  # fmt: skip
    """Whether this kernel takes the rope_cache_attention call (q (B, S, Hq, D), new_k and
    new_v (B, S, Hkv, D), caches (B, Hkv, L, D)); the rules are the module docstring's."""
    index = out.device.index
    on = ENABLED and attend_cluster.ENABLED  # PYGPUKIT_SDPA_CLUSTER=0: no cluster kernel
    if not on or index in attend_cluster._refused or compute_capability(index) < 90:
        return False
    d = out.dtype
    if d not in (dt.float16, dt.bfloat16):
        return False
    if any(a.dtype is not d for a in (q, new_k, new_v, keys, values, cos, sin)):
        return False
    if any(a.dtype not in (dt.int32, dt.int64) for a in (positions, slots, starts, ends)):
        return False
    b, s, hq, hd = q.shape
    hkv, length = keys.shape[1], keys.shape[2]
    if hd not in ks.DIMS or keys.shape[3] != hd or values.shape[3] != hd:
        return False
    if s > ks.NEW_TOKENS or (hq // hkv) * s > ks.ROWS[-1] or length > MAX_SLOTS:
        return False
    if b * hkv > 65535 or not out.is_contiguous:
        return False
    if cos.shape[1] * 2 < hd or sin.shape[1] * 2 < hd:
        return False
    return all(_rows16(x, 3) for x in (q, new_k, new_v, keys, values)) and all(
        _rows16(x, 1) for x in (cos, sin)
    )


def serves_sdpa(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray) -> bool:
    """Whether this kernel takes the sdpa_causal_cache call (q (B, Hq, Sq, D), caches
    (B, Hkv, L, D)): the rules above with q of the caches' dtype and no tables."""
    index = out.device.index
    if not (ENABLED and attend_cluster.ENABLED) or index in attend_cluster._refused:
        return False
    if compute_capability(index) < 90 or out.dtype not in (dt.float16, dt.bfloat16):
        return False
    if any(a.dtype is not out.dtype for a in (q, k, v)):
        return False
    b, hq, sq, hd = q.shape
    hkv, length = k.shape[1], k.shape[2]
    if hd not in ks.DIMS or k.shape[3] != hd or v.shape[3] != hd:
        return False
    if (hq // hkv) * sq > ks.ROWS[-1] or length > MAX_SLOTS or b * hkv > 65535:
        return False
    return out.is_contiguous and all(_rows16(x, 3) for x in (q, k, v))


def _launch(out: GPUArray, q_ptr: int, q_strides: tuple[int, int, int], group: int, sq: int,
            keys: GPUArray, values: GPUArray, starts: GPUArray, ends: GPUArray, scale: float,
            window: int, rope: tuple[int, ...], tables: int, flags: int) -> bool:  # fmt: skip
    # rope: the new keys', values', tables', positions' and slots' pointers, then the new
    # keys' and values' (B, S, Hkv) strides, the tables' row strides, the positions' (B, S)
    # strides and the slots' stride
    b, hkv, length, hd = keys.shape
    rows = ks.rows_bound(group * sq)
    assert rows is not None
    name, src = ks.attend_short_kernel(out.dtype, hd, rows)
    index = out.device.index
    fn = launcher.function(index, name, src, _ARGS)
    flags |= (starts.dtype is dt.int64) << 2 | (ends.dtype is dt.int64) << 3
    args = (
        q_ptr, _ptr(keys), _ptr(values), *rope[:6], _ptr(starts), _ptr(ends), _ptr(out),
        *q_strides, *keys.strides[:3], *values.strides[:3], *rope[6:], starts.strides[0],
        ends.strides[0], group, sq, hkv, length, tables, min(window, _WINDOW_CAP),
        float(scale), flags,
    )  # fmt: skip
    try:
        fn.launch((ks.CLUSTER, b * hkv, 1), (ks.THREADS,), args)
    except RuntimeError as exc:
        # a driver or GPU refusing the cluster launch: the older paths from now on (they
        # share the refusal set, so the older cluster kernel is not tried either)
        if not launch_limits.cluster_launch_refused(exc):
            raise
        attend_cluster._refused.add(index)
        return False
    return True


def launch_sdpa(q: GPUArray, k: GPUArray, v: GPUArray, starts: GPUArray, ends: GPUArray,
                out: GPUArray, scale: float, window: int) -> bool:  # fmt: skip
    """The cache attention alone into `out` (B, Hq, Sq, D); False if the cluster launch was
    refused. The new-token pointers are q's (the kernel never reads them without flag 16)."""
    hq, sq = q.shape[1], q.shape[2]
    p = _ptr(q)
    rope = (p,) * 6 + (0,) * 11
    return _launch(out, p, (q.strides[0], q.strides[2], q.strides[1]), hq // k.shape[1], sq,
                   k, v, starts, ends, scale, window, rope, 0, 0)  # fmt: skip


def launch(q: GPUArray, new_k: GPUArray, new_v: GPUArray, cos: GPUArray, sin: GPUArray,
           positions: GPUArray, keys: GPUArray, values: GPUArray, slots: GPUArray,
           starts: GPUArray, ends: GPUArray, out: GPUArray, scale: float,
           window: int) -> bool:  # fmt: skip
    """Run the fused kernel into `out` (B, Hq, S, D), rotating q and new_k in place and
    writing the new keys and values into the caches; False if the driver refused the
    cluster launch (the caller then takes another path, and this device is not tried
    again)."""
    s, hq = q.shape[1], q.shape[2]
    flags = 16 | (positions.dtype is dt.int64) | (slots.dtype is dt.int64) << 1
    rope = (_ptr(new_k), _ptr(new_v), _ptr(cos), _ptr(sin), _ptr(positions), _ptr(slots),
            *new_k.strides[:3], *new_v.strides[:3], cos.strides[0], sin.strides[0],
            *positions.strides, slots.strides[0])  # fmt: skip
    return _launch(out, _ptr(q), (q.strides[0], q.strides[1], q.strides[2]),
                   hq // keys.shape[1], s, keys, values, starts, ends, scale, window, rope,
                   cos.shape[0], flags)  # fmt: skip
