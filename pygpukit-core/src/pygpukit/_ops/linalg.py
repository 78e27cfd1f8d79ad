"""Linear algebra functions of the Array API main namespace: matmul and friends.

``tensordot`` and ``vecdot`` are built on the ``matmul`` kernel from views and reshapes;
``matrix_transpose`` is a view.

Kernel convention:

- ``matmul``: ``kernel(x1, x2, out, allow_tf32: bool)``: ``x1`` is (..., M, K), ``x2``
  (..., K, N), both views already broadcast to ``out``'s batch shape (zero strides where
  broadcast) and of ``out.dtype`` (the core casts mixed inputs first); ``out`` is a new
  contiguous (..., M, N) array, M, N >= 1. K may be 0 (the kernel writes zeros). Float16
  and bfloat16 accumulate in float32 and round once; float32 stays exact float32 unless
  ``allow_tf32`` is true (the ``allow_tf32`` setting), which a GPU backend may use for
  TF32 tensor cores; integer products are exact modulo the dtype's wrap-around.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .. import _views
from .. import config as _config
from .._array import GPUArray
from .._dispatch import kernel_for
from .._promotion import promote_types
from ._core import check_numeric, device_of, empty, kernel_on, task_aware
from .complex_parts import conj
from .copying import astype

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def _operands(fn: str, x1: Any, x2: Any) -> tuple[GPUArray, GPUArray]:
    """Check two array operands and cast both to their promoted dtype."""
    for name, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, GPUArray):
            raise TypeError(f"{fn}: {name} must be a GPUArray, got {type(x).__name__}")
    device_of(x1, x2)
    check_numeric(fn, x1, x2)
    dtype = promote_types(x1.dtype, x2.dtype)
    a = x1 if x1.dtype is dtype else astype(x1, dtype)
    b = x2 if x2.dtype is dtype else astype(x2, dtype)
    return a, b


def _matmul_nd(a: GPUArray, b: GPUArray, backend: str | None, what: str) -> GPUArray:
    """(..., M, K) @ (..., K, N) on arrays of one dtype; `what` names the user's shapes."""
    try:
        batch = _views.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of {what} cannot be broadcast") from None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    out = empty((*batch, m, n), a.dtype, a.device)
    fn = kernel_on("matmul", a.device, (a.dtype, b.dtype), backend)
    if out.size:
        allow_tf32 = bool(_config.current().get("allow_tf32"))
        if batch:  # 2-D operands need no broadcast views
            a, b = a.broadcast_to((*batch, m, k)), b.broadcast_to((*batch, k, n))
        fn(a, b, out, allow_tf32)
    return out


def _fast_matmul(x1: GPUArray, x2: GPUArray, backend: str | None) -> GPUArray | None:
    """Two 2-D arrays of one dtype on one device (the decode step's products): the kernel
    and the allow_tf32 setting looked up once per settings snapshot and dtype, slot reads
    only; None when the shapes do not line up (the general path then explains why)."""
    s1, s2 = x1._shape, x2._shape
    if len(s1) != 2 or len(s2) != 2 or s1[1] != s2[0]:
        return None
    device, dtype = x1._device, x1._dtype
    settings = _config.current()
    cache = settings.dispatch_cache
    key = ("matmul2d", dtype.name, device.type, backend)
    hit = cache.get(key)
    if hit is None:
        check_numeric("matmul", x1, x2)
        kernel = kernel_for("matmul", device, (dtype, dtype), backend)
        hit = cache[key] = (kernel.fn, bool(settings.get("allow_tf32")), kernel.gated)
    out = GPUArray.empty((s1[0], s2[1]), dtype, device)
    if s1[0] and s2[1]:
        task_aware(hit[0], hit[2])(x1, x2, out, hit[1])
    return out


def matmul(x1: GPUArray, x2: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """Matrix product with Array API semantics: 1-D operands promoted, batches broadcast."""
    if (
        type(x1) is GPUArray
        and type(x2) is GPUArray
        and x1._dtype is x2._dtype
        and x1._device is x2._device
    ):
        out = _fast_matmul(x1, x2, backend)
        if out is not None:
            return out
    a, b = _operands("matmul", x1, x2)
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]:
        return _matmul_nd(a, b, backend, "")  # the common case: no reshapes, no error text
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"matmul: operands must have at least one dimension, got shapes {a.shape} and {b.shape}"
        )
    what = f"shapes {x1.shape} and {x2.shape}"
    a2 = a.reshape((1, a.shape[0])) if a.ndim == 1 else a
    b2 = b.reshape((b.shape[0], 1)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(
            f"matmul: {what} are not aligned: the contracted dimensions are "
            f"{a2.shape[-1]} (last of x1) and {b2.shape[-2]} "
            f"({'only' if b.ndim == 1 else 'second-to-last'} of x2)"
        )
    out = _matmul_nd(a2, b2, backend, what)
    # drop the dimensions that 1-D promotion added
    if a.ndim == 1 and b.ndim == 1:
        return out.reshape(())
    if a.ndim == 1:
        return out.reshape((*out.shape[:-2], out.shape[-1]))
    if b.ndim == 1:
        return out.reshape(out.shape[:-1])
    return out


def matrix_transpose(x: GPUArray, /) -> GPUArray:
    """A view of `x` with its last two axes swapped."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"matrix_transpose: x must be a GPUArray, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose wants at least 2 dimensions, got shape {x.shape}")
    return x.mT


def _tensordot_axes(
    axes: int | tuple[Sequence[int], Sequence[int]], nd1: int, nd2: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2 or not all(isinstance(s, (list, tuple)) for s in axes):
            raise ValueError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")
        ax1, ax2 = tuple(axes[0]), tuple(axes[1])
        if len(ax1) != len(ax2):
            raise ValueError(f"tensordot: axes {axes!r} name different numbers of axes")
        return _views.normalize_axes(ax1, nd1), _views.normalize_axes(ax2, nd2)
    try:
        n = operator.index(axes)
    except TypeError:
        raise TypeError(
            f"tensordot: axes must be an int or a pair of sequences, got {axes!r}"
        ) from None
    if n < 0 or n > nd1 or n > nd2:
        raise ValueError(
            f"tensordot: axes={n} must be in [0, {min(nd1, nd2)}] for arrays of "
            f"{nd1} and {nd2} dimensions"
        )
    return tuple(range(nd1 - n, nd1)), tuple(range(n))


def tensordot(
    x1: GPUArray,
    x2: GPUArray,
    /,
    *,
    axes: int | tuple[Sequence[int], Sequence[int]] = 2,
    backend: str | None = None,
) -> GPUArray:
    """Sum of products over the axes `axes` of x1 and x2 (last N of x1, first N of x2)."""
    a, b = _operands("tensordot", x1, x2)
    ax1, ax2 = _tensordot_axes(axes, a.ndim, b.ndim)
    for i, j in zip(ax1, ax2, strict=True):
        if a.shape[i] != b.shape[j]:
            raise ValueError(
                f"tensordot: axis {i} of x1 (shape {x1.shape}) has size {a.shape[i]} but "
                f"axis {j} of x2 (shape {x2.shape}) has size {b.shape[j]}"
            )
    free1 = [i for i in range(a.ndim) if i not in ax1]
    free2 = [j for j in range(b.ndim) if j not in ax2]
    m = _prod(a.shape[i] for i in free1)
    n = _prod(b.shape[j] for j in free2)
    k = _prod(a.shape[i] for i in ax1)
    lhs = a.transpose((*free1, *ax1)).reshape((m, k))
    rhs = b.transpose((*ax2, *free2)).reshape((k, n))
    out = _matmul_nd(lhs, rhs, backend, f"shapes {x1.shape} and {x2.shape}")
    return out.reshape((*(a.shape[i] for i in free1), *(b.shape[j] for j in free2)))


def vecdot(
    x1: GPUArray, x2: GPUArray, /, *, axis: int = -1, backend: str | None = None
) -> GPUArray:
    """Dot product of vectors along `axis` (counted from the end), other axes broadcast;
    complex x1 is conjugated first, as the standard says."""
    a, b = _operands("vecdot", x1, x2)
    nd = min(a.ndim, b.ndim)
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"vecdot: axis must be an int, got {type(axis).__name__}") from None
    if not -nd <= ax <= -1:
        raise ValueError(
            f"vecdot: axis {axis} must be in [-{nd}, -1] (counted from the last dimension) "
            f"for shapes {x1.shape} and {x2.shape}"
        )
    if a.shape[ax] != b.shape[ax]:
        raise ValueError(
            f"vecdot: shapes {x1.shape} and {x2.shape} differ along axis {ax} "
            f"({a.shape[ax]} vs {b.shape[ax]})"
        )
    k = a.shape[ax]
    if a.dtype.is_complex:  # the standard's vecdot is sum(conj(x1) * x2)
        a = conj(a, backend=backend)
    # move the axis last, then contract (..., 1, K) @ (..., K, 1)
    a = _move_last(a, ax)
    b = _move_last(b, ax)
    try:
        batch = _views.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    except ValueError:
        raise ValueError(
            f"vecdot: shapes {x1.shape} and {x2.shape} cannot be broadcast outside axis {ax}"
        ) from None
    lhs = a.broadcast_to((*batch, k)).expand_dims(-2)
    rhs = b.broadcast_to((*batch, k)).expand_dims(-1)
    out = _matmul_nd(lhs, rhs, backend, f"shapes {x1.shape} and {x2.shape}")
    return out.reshape(batch)


def _move_last(x: GPUArray, axis: int) -> GPUArray:
    a = axis % x.ndim
    return x.transpose((*(i for i in range(x.ndim) if i != a), a))


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= v
    return out
