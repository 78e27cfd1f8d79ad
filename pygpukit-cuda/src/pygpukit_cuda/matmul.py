"""The `cuda` provider's matmul kernel: cuBLASLt for the float dtypes, NVRTC kernels for
the integers and wherever cuBLASLt is absent or has no algorithm.

Follows ``pygpukit._ops.linalg``'s convention ``kernel(x1, x2, out, allow_tf32)``: x1
(..., M, K) and x2 (..., K, N) are views broadcast to out's batch shape and of out's dtype;
out is a new contiguous (..., M, N) array. Batch dimensions are merged where the strides
allow; a batch broadcast on x2 whose x1 batches are evenly spaced rows becomes one larger
product (batch * M rows).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from pygpukit import GPUArray, KernelProvider
from pygpukit.core import dtypes as dt

from . import cublaslt, gemv, launcher, plans, provider, slicing
from .device_facts import compute_capability as _cc
from .device_facts import data_ptr as _ptr
from .dims import merge_dims
from .kernels import gemm_source

MATMUL_DTYPES = gemm_source.SIMT_DTYPES


def _merge_batch(shape: tuple[int, ...], *strides: tuple[int, ...]
                 ) -> list[tuple[int, tuple[int, ...]]]:  # fmt: skip
    """Batch dimensions as (size, per-operand strides), size-1 ones dropped and neighbours
    merged where every operand steps evenly across both (no dimension at all for a batch of
    one, where `merge_dims` reports a single size-1 dimension)."""
    return [(size, tuple(st)) for size, st in merge_dims(shape, list(strides)) if size != 1]


def _fold_rows(x1: GPUArray, x2: GPUArray) -> int | None:
    """When x2 is the same matrix for every batch and x1's (batch..., M) rows are evenly
    spaced, the product is one (batch * M, K) @ (K, N): return batch * M, else None."""
    bshape = x1.shape[:-2]
    if not bshape or math.prod(bshape) <= 1:
        return None
    if any(s != 0 for size, s in zip(bshape, x2.strides[:-2], strict=True) if size > 1):
        return None
    m = x1.shape[-2]
    expected = x1.strides[-2] * m
    for size, s in zip(reversed(bshape), reversed(x1.strides[:-2]), strict=True):
        if size == 1:
            continue
        if s != expected:
            return None
        expected *= size
    return math.prod(bshape) * m


_ready = plans.MATMUL


def _ready_key(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool, a_ptr: int,
               b_ptr: int, c_ptr: int) -> tuple[Any, ...]:  # fmt: skip
    # out is a new contiguous array whose shape follows from the operands'; the low 8 bits
    # of each pointer fix every alignment the plan promised cuBLASLt (it looks at most 256).
    # The dtype's name and the device's index, not the objects: their hashes are Python
    # functions, which cost a decode-step product about 0.5 us on the lent H100's host.
    return (x1._shape, x1._strides, x2._shape, x2._strides, out._dtype.name, allow_tf32,
            out._device.index, a_ptr & 255, b_ptr & 255, c_ptr & 255)  # fmt: skip


def matmul(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool) -> None:
    """out = x1 @ x2 (the core's matmul kernel convention)."""
    dtype = out.dtype
    if len(x1._shape) == 2 and len(x2._shape) == 2:
        m, k = x1._shape
        n = x2._shape[1]
        if m * n * k > slicing.SLICE_FLOPS // 2:  # cheap test first: most products are small
            rows = slicing.rows_per_slice(m, n, k)
            if rows is not None and _sliced(x1, x2, out, allow_tf32, rows):
                return
    elif (
        len(out._shape) >= 3
        and out.size * x1._shape[-1] > slicing.SLICE_FLOPS // 2
        and _batch_sliced(x1, x2, out, allow_tf32)
    ):
        return
    if x1._dtype is dtype and x2._dtype is dtype:
        a_ptr = x1._buffer.ptr + x1._offset
        b_ptr = x2._buffer.ptr + x2._offset
        c_ptr = out._buffer.ptr + out._offset
        key = _ready_key(x1, x2, out, allow_tf32, a_ptr, b_ptr, c_ptr)
        ready = _ready.get(key)
        if ready is not None:
            ready(a_ptr, b_ptr, c_ptr)
            return
    if dtype not in MATMUL_DTYPES and not dtype.is_complex:
        raise TypeError(f"the cuda backend has no matmul kernel for {dtype.name}")
    if x1.dtype is not dtype or x2.dtype is not dtype:
        raise TypeError(
            f"cuda matmul: operands must already be {dtype.name} (got {x1.dtype.name} and "
            f"{x2.dtype.name}); the core casts them"
        )
    k = x1.shape[-1]
    if out.size == 0:
        return
    if k == 0:
        provider.fill(out, 0)  # a kernel, so it runs on the current stream
        return
    if gemv.serves(x1, x2, out):  # decode shapes: one launch, no cuBLASLt host time
        ready = gemv.run(x1, x2, out)
        if ready is not None:
            _ready.put(_ready_key(x1, x2, out, allow_tf32, _ptr(x1), _ptr(x2), _ptr(out)), ready)
            return
    lt = cublaslt.library() if dtype in cublaslt.DTYPES else None
    if lt is not None and _lt_matmul(lt, x1, x2, out, allow_tf32):
        return
    if dtype.is_complex:  # no NVRTC kernel of ours multiplies complex matrices
        why = cublaslt.status() if lt is None else "cuBLASLt offered no algorithm"
        raise TypeError(f"cuda matmul of {dtype.name} needs cuBLASLt: {why}")
    _nvrtc_matmul(x1, x2, out, allow_tf32)


def _sliced(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool, rows: int) -> bool:
    """out = x1 @ x2 as products of `rows` rows of x1 and out each (see slicing.py), by
    cuBLASLt where it takes the operands, else by our NVRTC kernel (whose 64-row tiles the
    256-row slices keep whole, so each output element is computed as in the whole launch);
    False, before any work, when neither serves the dtype. cuBLASLt's slices run the
    algorithm it chose for the whole product (`_pinned_slices`) where it accepts that."""
    dtype = out.dtype
    if x1.dtype is not dtype or x2.dtype is not dtype:
        return False
    lt = cublaslt.library() if dtype in cublaslt.DTYPES else None
    if lt is None and dtype not in MATMUL_DTYPES:
        return False
    m = x1.shape[0]
    first = _pinned_slices(lt, x1, x2, out, allow_tf32, rows) if lt is not None else 0
    for start in range(first, m, rows):
        stop = min(m, start + rows)
        if start:
            slicing.between_slices()
        # row blocks of x1 and of the contiguous out are views: no copies
        if lt is None:
            _nvrtc_matmul(x1[start:stop], x2, out[start:stop], allow_tf32)
        elif not _lt_matmul(lt, x1[start:stop], x2, out[start:stop], allow_tf32):
            if start == 0:
                return False
            _nvrtc_matmul(x1[start:], x2, out[start:], allow_tf32)
            break
    return True


def _pinned_slices(lt: Any, x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool,
                   rows: int) -> int:  # fmt: skip
    """Run the row slices of a 2-D product with the algorithm cuBLASLt picks (and the trial
    confirms) for the whole product, so that each element comes out bit-identical to the
    whole product's: left to itself cuBLASLt picks per shape, and a slice's pick (split-K,
    another tile) rounds differently. Returns the first row not done: 0 when the operands
    have no plain layout or no whole plan, later when cuBLASLt refuses the algorithm for a
    slice's shape (the rest then plan alone). The whole plan is the one an unsliced call
    would use (its trial, on first sight of the shape, runs whole)."""
    size = out.dtype.itemsize
    if x1.ndim != 2 or x2.ndim != 2 or any(s % size for s in (*x1.strides, *x2.strides)):
        return 0
    a, b = _ElementView(x1, size), _ElementView(x2, size)
    if not (a.fits() and b.fits()):
        return 0
    index, dtype = out.device.index, out.dtype
    (m, k), n = x1.shape, x2.shape[1]
    sa, sb = (a.strides[0], a.strides[1]), (b.strides[0], b.strides[1])
    out_ptr = _ptr(out)
    whole = cublaslt.plan_for(lt, index, dtype, allow_tf32, m, n, k, a.ptr, sa, b.ptr, sb,
                              out_ptr)  # fmt: skip
    if whole is None:
        return 0
    products: dict[int, cublaslt.Product] = {}  # slice rows -> its pinned product
    for start in range(0, m, rows):
        count = min(m, start + rows) - start
        a_ptr, c_ptr = a.ptr + start * sa[0] * size, out_ptr + start * n * size
        if count not in products:
            plan = cublaslt.plan_for(lt, index, dtype, allow_tf32, count, n, k, a_ptr, sa,
                                     b.ptr, sb, c_ptr, like=whole)  # fmt: skip
            if plan is None:
                return start
            products[count] = cublaslt.Product(plan, index)
        if start:
            slicing.between_slices()
        products[count](a_ptr, b.ptr, c_ptr)
    return m


def _batch_sliced(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool) -> bool:
    """A batched product of a best-effort task as runs of its leading batch dimension, each
    run a product of its own (a single batch too large for a slice is then sliced by rows);
    False when it runs whole."""
    if out.size == 0:
        return False
    per_batch = 2 * (out.size // out.shape[0]) * x1.shape[-1]
    step = slicing.batches_per_slice(out.shape[0], per_batch)
    if step is None:
        return False
    for start in range(0, out.shape[0], step):
        if start:
            slicing.between_slices()
        if step == 1:  # one batch: its product may be sliced by rows in turn
            matmul(x1[start], x2[start], out[start], allow_tf32)
        else:
            stop = start + step
            matmul(x1[start:stop], x2[start:stop], out[start:stop], allow_tf32)
    return True


# -- cuBLASLt --------------------------------------------------------------------------
def _lt_matmul(lt: Any, x1: GPUArray, x2: GPUArray, out: GPUArray,
               allow_tf32: bool) -> bool:  # fmt: skip
    size = out.dtype.itemsize
    if any(s % size for s in (*x1.strides, *x2.strides)):
        return False
    a = _ElementView(x1, size)
    b = _ElementView(x2, size)
    ok = _lt_try(lt, a, b, x1, x2, out, allow_tf32)
    if isinstance(ok, cublaslt.Product):  # one call on the operands' own pointers: remember it
        _ready.put(_ready_key(x1, x2, out, allow_tf32, a.ptr, b.ptr, _ptr(out)), ok)
        return True
    if ok is None:  # a stride pattern no layout expresses: copy that operand and retry
        a2 = a if a.fits() else _ElementView(x1.contiguous(), size)
        b2 = b if b.fits() else _ElementView(x2.contiguous(), size)
        ok = _lt_try(lt, a2, b2, a2.x, b2.x, out, allow_tf32)
    return bool(ok)


class _ElementView:
    """An operand's pointer and strides in elements."""

    def __init__(self, x: GPUArray, size: int) -> None:
        self.x = x
        self.ptr = _ptr(x)
        self.strides = tuple(s // size for s in x.strides)

    def fits(self) -> bool:
        rows, cols = self.x.shape[-2:]
        return cublaslt.as_operand(rows, cols, self.strides[-2], self.strides[-1]) is not None


def _single(lt: Any, index: int, dtype: dt.DataType, allow_tf32: bool, m: int, n: int,
            k: int, a: _ElementView, b: _ElementView, out_ptr: int, batch: int = 1,
            a_batch: int = 0, b_batch: int = 0) -> cublaslt.Product | bool:  # fmt: skip
    """Run one cuBLASLt call on the operands' own pointers; its Product, or False when
    cuBLASLt has no algorithm."""
    sa, sb = (a.strides[-2], a.strides[-1]), (b.strides[-2], b.strides[-1])
    plan = cublaslt.plan_for(lt, index, dtype, allow_tf32, m, n, k, a.ptr, sa, b.ptr, sb,
                             out_ptr, batch, a_batch, b_batch)  # fmt: skip
    if plan is None:
        return False
    ready = cublaslt.Product(plan, index)
    ready(a.ptr, b.ptr, out_ptr)
    return ready


def _lt_try(lt: Any, a: _ElementView, b: _ElementView, x1: GPUArray, x2: GPUArray,
            out: GPUArray, allow_tf32: bool) -> cublaslt.Product | bool | None:  # fmt: skip
    """A Product when done in one call on a's and b's pointers, True when done otherwise;
    False when cuBLASLt has no algorithm; None when a layout is missing."""
    index = out.device.index
    dtype = out.dtype
    m, k = x1.shape[-2:]
    n = x2.shape[-1]
    sa, sb = (a.strides[-2], a.strides[-1]), (b.strides[-2], b.strides[-1])
    if not (a.fits() and b.fits()):
        return None
    rows = _fold_rows(x1, x2)
    if rows is not None:
        return _single(lt, index, dtype, allow_tf32, rows, n, k, a, b, _ptr(out))
    bshape = out.shape[:-2]
    c_strides = tuple(s // dtype.itemsize for s in out.strides[:-2])
    dims = _merge_batch(bshape, a.strides[:-2], b.strides[:-2], c_strides)
    if not dims:
        return _single(lt, index, dtype, allow_tf32, m, n, k, a, b, _ptr(out))
    inner, (ia, ib, ic) = dims[-1]
    if len(dims) == 1:
        return _single(lt, index, dtype, allow_tf32, m, n, k, a, b, _ptr(out), inner, ia, ib)
    size = dtype.itemsize
    for idx in itertools.product(*(range(s) for s, _ in dims[:-1])):
        oa = sum(i * st[0] for i, (_, st) in zip(idx, dims, strict=False)) * size
        ob = sum(i * st[1] for i, (_, st) in zip(idx, dims, strict=False)) * size
        oc = sum(i * st[2] for i, (_, st) in zip(idx, dims, strict=False)) * size
        if not cublaslt.gemm(lt, index, dtype, allow_tf32, m, n, k, a.ptr + oa, sa, b.ptr + ob,
                             sb, _ptr(out) + oc, inner, ia, ib):  # fmt: skip
            return False
    del ic  # out's batches are contiguous: gemm derives their stride from m * n
    return True


# -- NVRTC kernels ---------------------------------------------------------------------
def _nvrtc_matmul(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool) -> None:
    index = out.device.index
    dtype = out.dtype
    m, k = x1.shape[-2:]
    n = x2.shape[-1]
    bshape = out.shape[:-2]
    dims = _merge_batch(bshape, x1.strides[:-2], x2.strides[:-2])
    if len(dims) > gemm_source.MAX_BATCH_DIMS:
        x1, x2 = x1.contiguous(), x2.contiguous()
        dims = _merge_batch(bshape, x1.strides[:-2], x2.strides[:-2])
    count = math.prod(bshape) if bshape else 1
    tensor_cores = _cc(index) >= 80 and (
        dtype in (dt.float16, dt.bfloat16) or (dtype is dt.float32 and allow_tf32)
    )
    name, src = gemm_source.mma_kernel(dtype) if tensor_cores else gemm_source.simt_kernel(dtype)
    pad = gemm_source.MAX_BATCH_DIMS - len(dims)
    shape = [s for s, _ in dims] + [1] * pad
    sa = [st[0] for _, st in dims] + [0] * pad
    sb = [st[1] for _, st in dims] + [0] * pad
    block = 128 if tensor_cores else 256
    grid_y = -(-m // 64)
    if grid_y > 65535:
        raise NotImplementedError(f"cuda matmul: M={m} is over the kernel's 4M-row limit")
    grid = (-(-n // 64), grid_y, min(count, 65535))
    fn = launcher.function(index, name, src, gemm_source.ARG_FORMAT)
    s1, s2 = x1.strides[-2:], x2.strides[-2:]
    fn.launch(grid, (block,), (_ptr(x1), _ptr(x2), _ptr(out), m, n, k, s1[0], s1[1], s2[0],
                               s2[1], count, len(dims), *shape, *sa, *sb))  # fmt: skip


def register(provider: KernelProvider) -> None:
    """Add matmul to the cuda provider."""
    provider.add("matmul", matmul, (*MATMUL_DTYPES, *dt.COMPLEX_DTYPES))


def describe() -> dict[str, Any]:
    """What serves matmul here (for diagnostics and the benchmark)."""
    return {"cublaslt": cublaslt.status(), "gemv": gemv.status()}
