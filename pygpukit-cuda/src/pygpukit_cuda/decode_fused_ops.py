"""The `cuda` provider's fused decode-step kernels: rope_kv_cache_write, decode_advance and
the 16-byte add_rmsnorm path (CUDA C in ``kernels/decode_fused_source.py``). Each is one
launch where the step had several, and reads its indices on the device (graph-safe)."""

from __future__ import annotations

from pygpukit import GPUArray, KernelProvider
from pygpukit.core import dtypes as dt

from . import launcher
from .device_facts import BLOCK, sm_count
from .device_facts import data_ptr as _ptr
from .kernels import decode_fused_source as fs
from .kernels.ctypes_table import ctype

INDEX = (dt.int32, dt.int64)
#: the longest row the 16-byte add_rmsnorm takes (8 elements a thread, 1024 threads)
NORM_VEC_MAX = 8 * 1024


def _grid(index: int, n: int) -> tuple[int]:
    return (max(1, min(-(-n // BLOCK), sm_count(index) * 32)),)


def rope_kv_cache_write(q: GPUArray, k: GPUArray, v: GPUArray, cos: GPUArray, sin: GPUArray,
                        positions: GPUArray, keys: GPUArray, values: GPUArray,
                        slots: GPUArray) -> None:  # fmt: skip
    x = q.dtype
    if any(a.dtype is not x for a in (k, v, keys, values)):
        # mixed dtypes (rare): the two kernels, with their casts
        from . import decode_ops

        decode_ops.rope_at_inplace(q, k, cos, sin, positions)
        decode_ops.kv_cache_write_pair(keys, values, k.transpose(0, 2, 1, 3),
                                       v.transpose(0, 2, 1, 3), slots)  # fmt: skip
        return
    comp = dt.float64 if dt.float64 in (x, cos.dtype, sin.dtype) else dt.float32
    b, s, hq, d = q.shape
    hk = k.shape[2]
    name, src = fs.rope_kv_kernel(x, comp)
    index = q.device.index
    fn = launcher.function(index, name, src, "@" + "Q" * 9 + "q" * 34 + "iiii")
    n = b * s * (hq + hk) * (d // 2) + b * s * hk * d
    fn.launch(_grid(index, n), (BLOCK,),
              (_ptr(q), _ptr(k), _ptr(v), _ptr(keys), _ptr(values), _ptr(cos), _ptr(sin),
               _ptr(positions), _ptr(slots), b, s, hq, hk, d // 2, cos.shape[0], keys.shape[2],
               *q.strides, *k.strides, *v.strides, *keys.strides, *values.strides,
               *cos.strides, *sin.strides, *positions.strides, slots.strides[0],
               ctype(cos.dtype).code, ctype(sin.dtype).code, ctype(positions.dtype).code,
               ctype(slots.dtype).code))  # fmt: skip


def rope_cache_attention(q: GPUArray, k: GPUArray, v: GPUArray, cos: GPUArray, sin: GPUArray,
                         positions: GPUArray, keys: GPUArray, values: GPUArray,
                         slots: GPUArray, starts: GPUArray, ends: GPUArray, out: GPUArray,
                         scale: float, window: int) -> None:  # fmt: skip
    from . import attend_cluster, attend_short, decode_ops

    # the latency-lean cluster kernel, then the older one (sm_90), then the two passes
    if attend_short.serves(q, k, v, cos, sin, positions, keys, values, slots, starts, ends,
                           out) and attend_short.launch(q, k, v, cos, sin, positions, keys,
                                                        values, slots, starts, ends, out,
                                                        scale, window):  # fmt: skip
        return
    qt = q.transpose(0, 2, 1, 3)
    if (attend_cluster.serves(qt, keys, values, out)
            and attend_cluster.serves_fused(q, k, v, cos, sin, keys, values, out)
            and attend_cluster.launch(qt, keys, values, starts, ends, out, scale, window,
                                      (k, v, cos, sin, positions, slots))):  # fmt: skip
        return
    # the two passes (any GPU, any layout): RoPE with the cache write, then the attention
    rope_kv_cache_write(q, k, v, cos, sin, positions, keys, values, slots)
    decode_ops.sdpa_causal_cache(qt, keys, values, starts, ends, out, scale, window)


def decode_advance(tokens: GPUArray, chosen: GPUArray, positions: GPUArray, slots: GPUArray,
                   ends: GPUArray) -> None:  # fmt: skip
    arrays = (tokens, chosen, positions, slots, ends)
    rows = chosen.size
    # one value per row: the row stride is the first axis's (a (B, 1) array's too)
    strides = [a.strides[0] if a.ndim else 0 for a in arrays]
    name, src = fs.advance_kernel()
    index = tokens.device.index
    fn = launcher.function(index, name, src, "@QQQQQ" + "q" * 6 + "i" * 5)
    fn.launch(_grid(index, rows), (BLOCK,),
              (*(_ptr(a) for a in arrays), rows, *strides,
               *(ctype(a.dtype).code for a in arrays)))  # fmt: skip


def norm_vec_serves(x2: GPUArray, y2: GPUArray, gamma: GPUArray, total: GPUArray,
                    out: GPUArray) -> bool:  # fmt: skip
    """The 16-byte add_rmsnorm takes rows (rows, H) of one 16-bit dtype throughout, unit
    stride along H, H % 8 == 0 and at most NORM_VEC_MAX, every row 16-byte aligned."""
    d = x2.dtype
    if d not in (dt.float16, dt.bfloat16):
        return False
    if any(a.dtype is not d for a in (y2, gamma, total, out)):
        return False
    h = x2.shape[1]
    if h % 8 or h > NORM_VEC_MAX or not total.is_contiguous or not out.is_contiguous:
        return False
    if x2.strides[1] != 2 or y2.strides[1] != 2 or gamma.strides[0] != 2:
        return False
    ptrs = (_ptr(x2), _ptr(y2), _ptr(gamma), _ptr(total), _ptr(out))
    return not (any(p % 16 for p in ptrs) or x2.strides[0] % 16 or y2.strides[0] % 16)


def add_rmsnorm_vec(x2: GPUArray, y2: GPUArray, gamma: GPUArray, total: GPUArray,
                    out: GPUArray, eps: float) -> None:  # fmt: skip
    rows, h = x2.shape
    name, src = fs.add_rmsnorm_vec_kernel(x2.dtype)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQQQQ" + "qqq" + "d")
    # a thread per 8 elements: 256 threads for TinyLlama's 2048, 512 for Llama-8B's 4096
    threads = max(32, -(-h // 256) * 32)
    fn.launch((rows,), (threads,),
              (_ptr(total), _ptr(out), _ptr(x2), _ptr(y2), _ptr(gamma), h, x2.strides[0],
               y2.strides[0], float(eps)))  # fmt: skip


def register(provider: KernelProvider) -> None:
    """Add the fused decode-step ops to `provider`."""
    provider.add("rope_kv_cache_write", rope_kv_cache_write, (*fs.FLOATS, *INDEX))
    provider.add("decode_advance", decode_advance, INDEX)
    provider.add("rope_cache_attention", rope_cache_attention, (*fs.FLOATS, *INDEX))
