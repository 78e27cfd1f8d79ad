"""The `cuda` provider's decode-step kernels: embedding, rope_at_inplace, kv_cache_write,
sdpa_causal_cache, gather_matmul, silu_mul, add_rmsnorm and linear_rows (conventions in
``pygpukit._ops.decode``; CUDA C in ``kernels/decode_source.py``, silu_mul through the
elementwise kernel maker). Every launch here reads its indices on the device and
allocates only from the current pool, so each is safe inside a CUDA-graph capture."""

from __future__ import annotations

import functools

from pygpukit import GPUArray, KernelProvider
from pygpukit.backend import astype
from pygpukit.core import dtypes as dt

from . import attend_cluster, attend_short, decode_fused_ops, launcher
from . import provider as _provider
from .device_facts import BLOCK, sm_count
from .device_facts import data_ptr as _ptr
from .kernels import decode_source as ks
from .kernels import source
from .kernels.ctypes_table import ctype

FLOATS = ks.FLOATS
INDEX = (dt.int32, dt.int64)


def _grid(index: int, n: int) -> tuple[int]:
    return (max(1, min(-(-n // BLOCK), sm_count(index) * 32)),)


def embedding(weight: GPUArray, ids: GPUArray, out: GPUArray) -> None:
    flat = ids.reshape((-1,)) if ids.is_contiguous else ids.contiguous().reshape((-1,))
    name, src = ks.embed_kernel(weight.dtype, ids.dtype)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQQqqqqqi")
    n, h = flat.size, weight.shape[1]
    fn.launch(_grid(index, n * h), (BLOCK,),
              (_ptr(out), _ptr(weight), _ptr(flat), n, h, weight.shape[0], *weight.strides,
               ctype(ids.dtype).code))  # fmt: skip


def rope_at_inplace(q: GPUArray, k: GPUArray, cos: GPUArray, sin: GPUArray,
                    positions: GPUArray) -> None:  # fmt: skip
    comp = ks._compute(q.dtype, k.dtype, cos.dtype, sin.dtype)
    # one launch for q and k when they share a dtype (a decode step's usual case)
    groups = [(q, k)] if q.dtype is k.dtype else [(q, None), (k, None)]
    for x0, x1 in groups:
        heads1 = x1.shape[2] if x1 is not None and x1.size else 0
        if x0.size == 0 and heads1 == 0:
            continue
        b, s, _, d = x0.shape
        heads0 = x0.shape[2] if x0.size else 0
        other = x1 if x1 is not None else x0
        name, src = ks.rope_at_kernel(x0.dtype, comp)
        index = x0.device.index
        fn = launcher.function(index, name, src, "@QQQQQ" + "q" * 20 + "iii")
        fn.launch(_grid(index, b * s * (heads0 + heads1) * (d // 2)), (BLOCK,),
                  (_ptr(x0), _ptr(other), _ptr(cos), _ptr(sin), _ptr(positions), b, s, heads0,
                   heads1, d // 2, cos.shape[0], *x0.strides, *other.strides, *cos.strides,
                   *sin.strides, *positions.strides, ctype(cos.dtype).code,
                   ctype(sin.dtype).code, ctype(positions.dtype).code))  # fmt: skip


def _kv_write(pairs: list[tuple[GPUArray, GPUArray]], slots: GPUArray) -> None:
    (c0, n0), (c1, n1) = pairs[0], pairs[-1]
    b, h, s, d = n0.shape
    name, src = ks.kv_write_kernel(c0.dtype)
    index = c0.device.index
    fn = launcher.function(index, name, src, "@QQQQQ" + "q" * 23 + "iii")
    fn.launch(_grid(index, len(pairs) * n0.size), (BLOCK,),
              (_ptr(c0), _ptr(c1), _ptr(n0), _ptr(n1), _ptr(slots), len(pairs), b, h, s, d,
               c0.shape[2], *c0.strides, *c1.strides, *n0.strides, *n1.strides,
               slots.strides[0], ctype(n0.dtype).code, ctype(n1.dtype).code,
               ctype(slots.dtype).code))  # fmt: skip


def kv_cache_write(cache: GPUArray, new: GPUArray, slots: GPUArray) -> None:
    _kv_write([(cache, new)], slots)


def kv_cache_write_pair(keys: GPUArray, values: GPUArray, new_keys: GPUArray,
                        new_values: GPUArray, slots: GPUArray) -> None:  # fmt: skip
    _kv_write([(keys, new_keys), (values, new_values)], slots)


def _attend_chunk(rows: int, length: int, index: int) -> int:
    """Cache slots per warp: ks.CHUNK, halved (down to 32, one key per lane) while the
    launch has fewer than 8 warps per SM. Batch-1 decode has only Hq rows (32 for
    TinyLlama: 8 blocks), so long chunks would leave most SMs idle and each warp walking
    its chunk alone."""
    chunk, want = ks.CHUNK, 8 * sm_count(index)
    while chunk > 32 and rows * -(-length // chunk) < want:
        chunk //= 2
    return chunk


def _vector_cache(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray) -> bool:
    """The attention kernel's vector loads serve: keys and values of out's 16-bit dtype,
    unit stride along the head dim; keys: D % 8 == 0, every row 16-byte aligned (16-byte
    loads); values: Dv even, every row 4-byte aligned (pairs of dims)."""
    if out.dtype not in (dt.float16, dt.bfloat16) or k.dtype is not out.dtype:
        return False
    if v.dtype is not out.dtype:
        return False
    d, dv, size = k.shape[3], v.shape[3], out.dtype.itemsize
    if d % 8 or dv % 2 or k.strides[3] != size or v.strides[3] != size or q.shape[3] != d:
        return False
    if _ptr(k) % 16 or any(s % 16 for s in k.strides[:3]):
        return False
    return not (_ptr(v) % 4 or any(s % 4 for s in v.strides[:3]))


def sdpa_causal_cache(q: GPUArray, k: GPUArray, v: GPUArray, starts: GPUArray, ends: GPUArray,
                      out: GPUArray, scale: float, window: int) -> None:  # fmt: skip
    b, hq, sq, d = q.shape
    hkv, length, dv = k.shape[1], k.shape[2], v.shape[3]
    if d > ks.MAX_DIM or dv > ks.MAX_DIM:
        raise NotImplementedError(
            f"cuda sdpa_causal_cache: head_dim {d} / v_dim {dv} over {ks.MAX_DIM}"
        )
    if attend_short.serves_sdpa(q, k, v, out) and attend_short.launch_sdpa(
        q, k, v, starts, ends, out, scale, window
    ):  # the latency-lean cluster kernel (sm_90; head_dim 64 or 128)
        return
    if attend_cluster.serves(q, k, v, out) and attend_cluster.launch(q, k, v, starts, ends, out,
                                                                     scale, window):  # fmt: skip
        return
    rows = b * hq * sq
    chunk = _attend_chunk(rows, length, out.device.index)
    nsplit = -(-length // chunk)
    comp = ks._compute(out.dtype)
    # unnormalised chunk results; inside a capture these come from the graph's pool
    part = GPUArray.empty((rows, nsplit, dv), comp, out.device)
    stats = GPUArray.empty((rows, nsplit, 2), comp, out.device)
    name, src = ks.attend_kernel(out.dtype)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQQQQQQ" + "i" * 5 + "q" * 21 + "dqqqi")
    grid_y = -(-rows // ks.ROWS_PER_BLOCK)
    if grid_y > 65535:
        raise NotImplementedError(f"cuda sdpa_causal_cache: {rows} query rows are too many")
    codes = [ctype(x.dtype).code for x in (q, k, v, starts, ends)]
    fn.launch((nsplit, grid_y, 1), (32 * ks.ROWS_PER_BLOCK,),
              (_ptr(q), _ptr(k), _ptr(v), _ptr(starts), _ptr(ends), _ptr(part), _ptr(stats),
               *codes, rows, hq, hq // hkv, sq, length, d, dv, *q.strides, *k.strides,
               *v.strides, starts.strides[0], ends.strides[0], float(scale), window,
               nsplit, chunk, int(_vector_cache(q, k, v, out))))  # fmt: skip
    merge = launcher.function(index, name + "_merge", src, "@QQQqq")
    merge.launch((rows,), (min(256, max(32, -(-dv // 32) * 32)),),
                 (_ptr(part), _ptr(stats), _ptr(out), nsplit, dv))  # fmt: skip


def gather_matmul(x: GPUArray, weights: GPUArray, ids: GPUArray, out: GPUArray) -> None:
    # a warp per output: memory-bound work for the few rows of a decode step
    t, k = x.shape
    e, n, _ = weights.shape
    name, src = ks.gather_matmul_kernel(out.dtype)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQQQ" + "q" * 10 + "iii")
    if t > 65535:
        raise NotImplementedError(f"cuda gather_matmul: {t} rows are over 65535")
    fn.launch((-(-n // 8), t, 1), (256,),
              (_ptr(out), _ptr(x), _ptr(weights), _ptr(ids), t, n, k, e, *x.strides,
               *weights.strides, ids.strides[0], ctype(x.dtype).code,
               ctype(weights.dtype).code, ctype(ids.dtype).code))  # fmt: skip


@functools.cache
def _silu_mul_spec(d: dt.DataType) -> source.KernelSpec:
    """out = silu(a) * b in d's math type (half types in float)."""
    return source.elementwise(f"pgk_silu_mul_{d.name}", (d, d), d, "(a * pgk_sigmoid(a) * b)", d)


def silu_mul(gate: GPUArray, up: GPUArray, out: GPUArray) -> None:
    d = out.dtype
    gate = gate if gate.dtype is d else astype(gate, d)
    up = up if up.dtype is d else astype(up, d)
    _provider.run(_silu_mul_spec(d), out, [gate, up])


def add_rmsnorm(x: GPUArray, y: GPUArray, gamma: GPUArray, total: GPUArray, out: GPUArray,
                eps: float) -> None:  # fmt: skip
    h = x.shape[-1]
    rows = total.size // h
    x2 = x.reshape((rows, h))  # a view where the rows merge, else a copy
    y2 = y.reshape((rows, h))
    if decode_fused_ops.norm_vec_serves(x2, y2, gamma, total, out):
        decode_fused_ops.add_rmsnorm_vec(x2, y2, gamma, total, out, eps)
        return
    name, src = ks.add_rmsnorm_kernel(total.dtype, out.dtype)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQQQQ" + "q" * 6 + "iiid")
    # enough threads that a row sits in registers (4 per thread: 512 for 2048, 1024 for
    # 4096), at least 128; a decode step has 1 row, so the block's latency is the kernel's
    threads = min(1024, max(128, -(-h // (ks.NORM_PER_THREAD * 32)) * 32))
    fn.launch((rows,), (threads,),
              (_ptr(total), _ptr(out), _ptr(x2), _ptr(y2), _ptr(gamma), h, *x2.strides,
               *y2.strides, gamma.strides[0], ctype(x.dtype).code, ctype(y.dtype).code,
               ctype(gamma.dtype).code, float(eps)))  # fmt: skip


def _vector_rows(x: GPUArray, weight: GPUArray) -> bool:
    """16-byte loads serve: one 16-bit dtype, unit stride along K, K % 8 == 0 and every
    row start 16-byte aligned."""
    if x.dtype is not weight.dtype or x.dtype not in (dt.float16, dt.bfloat16):
        return False
    if x.shape[1] % 8 or x.strides[1] != 2 or weight.strides[1] != 2:
        return False
    return not (_ptr(x) % 16 or _ptr(weight) % 16 or x.strides[0] % 16 or weight.strides[0] % 16)


def linear_rows(x: GPUArray, weight: GPUArray, out: GPUArray) -> None:
    m, k = x.shape
    n = weight.shape[0]
    vector = _vector_rows(x, weight)
    name, src = ks.linear_rows_kernel(out.dtype, x.dtype if vector else None)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQQ" + "q" * 7 + "ii")
    fn.launch((-(-n // 8),), (256,),
              (_ptr(out), _ptr(x), _ptr(weight), m, n, k, *x.strides, *weight.strides,
               ctype(x.dtype).code, ctype(weight.dtype).code))  # fmt: skip


def register(provider: KernelProvider) -> None:
    """Add the decode-step kernels to `provider`."""
    for op, fn in (("embedding", embedding), ("rope_at_inplace", rope_at_inplace),
                   ("kv_cache_write", kv_cache_write),
                   ("kv_cache_write_pair", kv_cache_write_pair),
                   ("sdpa_causal_cache", sdpa_causal_cache),
                   ("gather_matmul", gather_matmul), ("silu_mul", silu_mul),
                   ("add_rmsnorm", add_rmsnorm), ("linear_rows", linear_rows)):  # fmt: skip
        provider.add(op, fn, (*FLOATS, *INDEX))
    decode_fused_ops.register(provider)
