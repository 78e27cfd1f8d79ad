"""The one-launch cache attention of a decode step on sm_90+ GPUs (thread-block clusters;
CUDA C in ``kernels/attend_cluster_source.py``), and when it serves a call.

``sdpa_causal_cache`` tries it, and ``rope_cache_attention`` its fused variant (RoPE of q
and the new keys and their cache write done by the same launch), where the leaner kernel of
``attend_short.py`` does not take the call; every other call (an
older GPU, float32 or float64 caches, head dims over 128 or not a multiple of 8, more than
16 query rows per KV head, caches over 4096 slots) takes the split-key kernel and its merge.
Set ``PYGPUKIT_SDPA_CLUSTER=0`` (or ``ENABLED = False``) to time the old path against it.
"""

from __future__ import annotations

import os

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import launch_limits, launcher
from .device_facts import compute_capability
from .device_facts import data_ptr as _ptr
from .kernels import attend_cluster_source as ac
from .kernels.ctypes_table import ctype

#: whether the cluster kernel may serve (the env variable is read at import)
ENABLED = os.environ.get("PYGPUKIT_SDPA_CLUSTER", "1") != "0"
#: the longest cache it takes: a cluster's 8 blocks walk the keys, 64 a tile, so past this
#: the split-key kernel's many warps read a long context faster
MAX_SLOTS = 4096
#: devices where a cluster launch was refused (then the old path serves them)
_refused: set[int] = set()

_ARGS = "@QQQQQQ" + "iii" + "q" * 19 + "dq"
#: the fused variant's extra arguments: new keys and values, tables, positions, slots
_FUSED_ARGS = _ARGS + "QQQQQQ" + "q" * 16 + "iiii"


def _aligned16(x: GPUArray) -> bool:
    return _ptr(x) % 16 == 0 and all(s % 16 == 0 for s in x.strides[:3])


def serves(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray) -> bool:
    """Whether the cluster kernel takes this call (the layout and device checks)."""
    index = out.device.index
    if not ENABLED or index in _refused or compute_capability(index) < 90:
        return False
    if out.dtype not in (dt.float16, dt.bfloat16) or k.dtype is not out.dtype:
        return False
    b, hq, sq, d = q.shape
    hkv, length, dv = k.shape[1], k.shape[2], v.shape[3]
    if v.dtype is not out.dtype or d % 8 or dv % 8 or ac.dim_bound(d, dv) is None:
        return False
    if (hq // hkv) * sq > ac.ROWS or b * hkv > 65535 or length > MAX_SLOTS:
        return False
    size = out.dtype.itemsize
    if k.strides[3] != size or v.strides[3] != size:
        return False
    return _aligned16(k) and _aligned16(v)


def serves_fused(q_rope: GPUArray, new_k: GPUArray, new_v: GPUArray, cos: GPUArray,
                 sin: GPUArray, keys: GPUArray, values: GPUArray,
                 out: GPUArray) -> bool:  # fmt: skip
    """Whether the fused variant (RoPE and the cache write first) takes a call whose
    attention `serves` takes: q, the new keys and values of the caches' dtype, float32 or
    16-bit tables (float math), at most ac.NEW_TOKENS new tokens per row."""
    d = out.dtype
    if any(a.dtype is not d for a in (q_rope, new_k, new_v, keys, values)):
        return False
    return dt.float64 not in (cos.dtype, sin.dtype) and q_rope.shape[1] <= ac.NEW_TOKENS


def launch(q: GPUArray, k: GPUArray, v: GPUArray, starts: GPUArray, ends: GPUArray,
           out: GPUArray, scale: float, window: int,
           rope: tuple[GPUArray, ...] | None = None) -> bool:  # fmt: skip
    """Run the cluster kernel into `out` (contiguous); False if the driver refused the
    launch (the caller then runs the old path, and this device is not tried again).
    `rope`: (new_k, new_v, cos, sin, positions, slots) for the fused variant, which rotates
    q (given here as its (B, Hq, S, D) view) and the new keys in place and writes the new
    keys and values into the caches k and v before attending."""
    b, hq, sq, d = q.shape
    hkv, length, dv = k.shape[1], k.shape[2], v.shape[3]
    bound = ac.dim_bound(d, dv)
    assert bound is not None
    name, src = ac.attend_cluster_kernel(out.dtype, bound, rope is not None)
    index = out.device.index
    fn = launcher.function(index, name, src, _ARGS if rope is None else _FUSED_ARGS)
    args: tuple[object, ...] = (
        _ptr(q), _ptr(k), _ptr(v), _ptr(starts), _ptr(ends), _ptr(out),
        ctype(q.dtype).code, ctype(starts.dtype).code, ctype(ends.dtype).code,
        hq, hq // hkv, sq, hkv, length, d, dv, *q.strides, *k.strides[:3],
        *v.strides[:3], starts.strides[0], ends.strides[0], float(scale), window,
    )  # fmt: skip
    if rope is not None:
        new_k, new_v, cos, sin, positions, slots = rope
        args += (_ptr(new_k), _ptr(new_v), _ptr(cos), _ptr(sin), _ptr(positions), _ptr(slots),
                 cos.shape[0], *new_k.strides, *new_v.strides, *cos.strides, *sin.strides,
                 *positions.strides, slots.strides[0], ctype(cos.dtype).code,
                 ctype(sin.dtype).code, ctype(positions.dtype).code,
                 ctype(slots.dtype).code)  # fmt: skip
    try:
        fn.launch((ac.CLUSTER, b * hkv, 1), (ac.THREADS,), args)
    except RuntimeError as exc:
        # refused: the two-kernel path from now on
        if not launch_limits.cluster_launch_refused(exc):
            raise
        _refused.add(index)
        return False
    return True
