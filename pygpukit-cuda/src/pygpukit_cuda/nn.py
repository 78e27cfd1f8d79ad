"""The `cuda` provider's fused row ops: softmax, log_softmax, layernorm, rmsnorm.

Kernels follow ``pygpukit._ops.nn``'s calling convention (out preallocated with the
promoted float dtype; layernorm/rmsnorm normalise the last axis). Each row goes to a warp
(rows of up to 512), a block of 256 (up to 4096) or a block of 1024 threads (longer rows),
see ``kernels/nn_source.py``; contiguous, aligned rows of one dtype take the vector path
(16-byte accesses, the row in registers, a warp or a block of up to 512 threads per row).
"""

from __future__ import annotations

import math
from typing import Any

from pygpukit import GPUArray, KernelProvider
from pygpukit.core import dtypes as dt

from . import launcher
from .device_facts import data_ptr as _ptr
from .kernels import nn_source as ns
from .kernels.ctypes_table import ctype
from .reductions import MAX_DIMS, _merge, _pad

FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def _group(n: int) -> tuple[int, int]:
    """(threads per row, threads per block) for rows of n elements."""
    if n <= 32 * ns.CACHE:
        return 32, 256
    if n <= 256 * ns.CACHE:
        return 256, 256
    return 1024, 1024


#: the vector path serves these row ops (False turns it off: scripts/bench_bandwidth.py compares)
VECTOR_ROWS = True
#: up to this many rows (a decode step's few tokens), the vector path gives each thread one
#: 16-byte piece of a row instead of up to VEC_PER_THREAD: a lone row's loads then spread
#: over a block rather than queue in one warp (a 1 x 1024 bf16 rmsnorm took 3.2 us so)
FEW_ROWS = 64


def _vector_group(x: GPUArray, out: GPUArray, axis: int, kept: list[tuple[int, ...]], n: int,
                  params: tuple[GPUArray | None, ...], nrows: int) -> int:  # fmt: skip
    """Threads per row on the vector path (whole rows in registers, 16-byte accesses), or
    0 where it does not apply: x, out, gamma and beta all of one dtype, unit element stride
    along the row, 16-byte aligned rows (pointers and every row stride), and n a multiple
    of the vector width, with at most VEC_MAX_GROUP * VEC_PER_THREAD vectors per row."""
    if not VECTOR_ROWS:
        return 0
    size, v = x.dtype.itemsize, ns.vec_width(x.dtype)
    arrays = [x, out] + [p for p in params if p is not None]
    if any(a.dtype is not x.dtype or _ptr(a) % 16 for a in arrays):
        return 0
    if x.strides[axis] != size or out.strides[axis] != size or n % v:
        return 0
    if any(p is not None and p.strides[0] != size for p in params):
        return 0
    if any(k[1] % 16 or k[2] % 16 for k in kept):
        return 0
    nv = n // v
    group = 32
    while group * ns.VEC_PER_THREAD < nv:
        group *= 2
    if group > ns.VEC_MAX_GROUP:
        return 0
    if nrows <= FEW_ROWS:
        while group < nv and group < ns.VEC_MAX_GROUP:
            group *= 2
    return group


def run_rows(op: str, x: GPUArray, out: GPUArray, axis: int, gamma: GPUArray | None = None,
             beta: GPUArray | None = None, eps: float = 0.0) -> None:  # fmt: skip
    """Launch `op` over the rows of x along `axis` into out."""
    for name, a in (("x", x), ("gamma", gamma), ("beta", beta), ("out", out)):
        if a is not None and a.dtype not in FLOATS:
            raise TypeError(f"the cuda backend's {op} wants float arrays, {name} is {a.dtype.name}")
    kept = _merge([(x.shape[d], x.strides[d], out.strides[d]) for d in range(x.ndim)
                   if d != axis and x.shape[d] != 1])  # fmt: skip
    if len(kept) > MAX_DIMS:
        raise NotImplementedError(f"{op}: too many non-mergeable dimensions in {x.shape}")
    nrows = math.prod(k[0] for k in kept)
    n = x.shape[axis]
    if nrows == 0 or n == 0:
        return
    lay = [nrows, n, len(kept), 0]
    lay += _pad([k[0] for k in kept]) + _pad([k[1] for k in kept]) + _pad([k[2] for k in kept])
    vgroup = _vector_group(x, out, axis, kept, n, (gamma, beta), nrows)
    if vgroup:
        # a warp per row, 8 rows a block; a longer row has the block (pgk_gred's rule)
        group, block = vgroup, vgroup if vgroup > 32 else 256
        name, source = ns.nn_vector_kernel(op, x.dtype)
    else:
        group, block = _group(n)
        name, source = ns.nn_kernel(op, x.dtype, out.dtype)
    fn = launcher.function(out.device.index, name, source, ns.ROWS_FORMAT)

    def param(p: GPUArray | None) -> tuple[int, int, int]:
        if p is None:
            return 0, 0, ctype(dt.float32).code
        return _ptr(p), p.strides[0], ctype(p.dtype).code

    (gp_, gs, gc), (bp, bs, bc) = param(gamma), param(beta)
    grid = -(-nrows // (block // group))
    fn.launch((grid,), (block,), (
        _ptr(out), _ptr(x), gp_, bp, *lay, x.strides[axis], out.strides[axis], gs, bs, gc, bc,
        group, float(eps),
    ))  # fmt: skip


def softmax(x: GPUArray, out: GPUArray, axis: int) -> None:
    run_rows("softmax", x, out, axis)


def log_softmax(x: GPUArray, out: GPUArray, axis: int) -> None:
    run_rows("log_softmax", x, out, axis)


def layernorm(x: GPUArray, gamma: GPUArray, beta: GPUArray, out: GPUArray, eps: float) -> None:
    run_rows("layernorm", x, out, x.ndim - 1, gamma, beta, eps)


def rmsnorm(x: GPUArray, gamma: GPUArray, out: GPUArray, eps: float) -> None:
    run_rows("rmsnorm", x, out, x.ndim - 1, gamma, None, eps)


def register(provider: KernelProvider) -> None:
    """Add softmax, log_softmax, layernorm and rmsnorm to `provider`."""
    kernels: dict[str, Any] = {"softmax": softmax, "log_softmax": log_softmax,
                               "layernorm": layernorm, "rmsnorm": rmsnorm}  # fmt: skip
    for op, fn in kernels.items():
        provider.add(op, fn, FLOATS)
