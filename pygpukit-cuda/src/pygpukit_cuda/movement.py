"""The `cuda` provider's data-movement kernels: concat, roll, repeat, take,
take_along_axis, gather, scatter, mask_select, mask_assign, sort, argsort, nonzero and
searchsorted, each following the calling convention of its core module
(``pygpukit._ops.manipulation``, ``indexing``, ``sorting``, ``searching``).

Most of them are one kernel, ``pgk_mv_index`` (see ``kernels/movement_source.py``): an
indexed copy over an N-d iteration space whose source offset adds, per index array,
``index * axis_stride``. Out-of-range indices are found in the kernel, which sets a device
flag; the flag is read after the launch (waiting on the current stream only) and raised as
IndexError. Scatter checks every index first, so a bad index leaves ``x`` untouched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pygpukit import GPUArray
from pygpukit.backend import broadcast_shapes
from pygpukit.core import dtypes as dt

from . import launcher
from .device_facts import BLOCK
from .device_facts import data_ptr as _ptr
from .kernels import movement_source as ms

_MAX_GRID = 8192  # grid-stride loops: enough blocks to fill any current GPU


def _launch(index: int, name: str, n: int, args: tuple[Any, ...], *, block: int = BLOCK,
            grid: int | None = None, shared: int = 0) -> None:  # fmt: skip
    fn = launcher.function(index, name, ms.source(), ms.ARG_FORMATS[name])
    if grid is None:
        grid = max(1, min(-(-n // block), _MAX_GRID))
    fn.launch((grid,), (block,), args, shared)


def _new(shape: tuple[int, ...], dtype: dt.DataType, like: GPUArray) -> GPUArray:
    return GPUArray.empty(shape, dtype, like.device)


def _upload(host: np.ndarray, like: GPUArray) -> GPUArray:
    return GPUArray.from_numpy(np.ascontiguousarray(host), like.device)


def _pad(values: Sequence[int], n: int = ms.MAXD) -> list[int]:
    return [*values] + [0] * (n - len(values))


def _nd(shape: Sequence[int], *strides: Sequence[int]) -> list[int]:
    """The PgkNd values: n, ndim, shape, two stride rows."""
    if len(shape) > ms.MAXD:
        raise NotImplementedError(
            f"cuda data-movement kernels take at most {ms.MAXD} dimensions, got {len(shape)}"
        )
    rows = [*strides] + [()] * (2 - len(strides))
    out = [math.prod(shape), len(shape), *_pad(shape)]
    for row in rows:
        out += _pad(row)
    return out


# -- the indexed copy ------------------------------------------------------------------
class _Index:
    """One index array of an indexed copy: its strides over the iteration dims, and the
    stride and length of the axis of x it indexes (its number names it in errors)."""

    __slots__ = ("array", "ax_n", "ax_st", "axis", "strides")

    def __init__(self, array: GPUArray, strides: Sequence[int], ax_st: int, ax_n: int,
                 axis: int) -> None:  # fmt: skip
        self.array, self.strides, self.ax_st, self.ax_n, self.axis = (
            array,
            tuple(strides),
            ax_st,
            ax_n,
            axis,
        )


def _indexed_copy(
    mode: int, a: GPUArray, a_st: Sequence[int], x: GPUArray, x_st: Sequence[int],
    shape: Sequence[int], indices: list[_Index],
) -> None:  # fmt: skip
    """mode 0: a[i] = x[off(i)]; 1: x[off(i)] = a[i] (after checking every index)."""
    n = math.prod(shape)
    if n == 0:
        return
    # size-1 dimensions move nothing: drop them so more arrays fit the 8 dimensions
    keep = [d for d, s in enumerate(shape) if s != 1]
    shape = [shape[d] for d in keep]
    a_st = [a_st[d] for d in keep]
    x_st = [x_st[d] for d in keep]
    if len(shape) > ms.MAXD or len(indices) > ms.MAXD:
        raise NotImplementedError(
            f"cuda indexing kernels take at most {ms.MAXD} dimensions and index arrays"
        )
    flag = _upload(np.zeros(2, np.int64), x)
    idx_st: list[int] = []
    for k in range(ms.MAXD):
        idx_st += _pad([indices[k].strides[d] for d in keep]) if k < len(indices) else _pad([])
    values = [
        n, *_pad(shape), *_pad(a_st), *_pad(x_st),
        *_pad([_ptr(i.array) for i in indices]), *idx_st,
        *_pad([i.ax_st for i in indices]), *_pad([i.ax_n for i in indices]),
        len(shape), len(indices), x.itemsize, 0,
        *_pad([ms.code_of(i.array.dtype) for i in indices]),
    ]  # fmt: skip
    modes = (2, 1) if mode == 1 and indices else (mode,)
    for m in modes:
        values[-ms.MAXD - 1] = m
        _launch(x.device.index, "pgk_mv_index", n, (_ptr(a), _ptr(x), _ptr(flag), *values))
        if indices and m != 1:
            _raise_bad_index(flag, indices)


def _raise_bad_index(flag: GPUArray, indices: list[_Index]) -> None:
    which, value = (int(v) for v in flag.to_numpy())
    if which:
        bad = indices[which - 1]
        raise IndexError(f"index {value} is out of bounds for axis {bad.axis} with size {bad.ax_n}")


def take(x: GPUArray, indices: GPUArray, out: GPUArray, axis: int) -> None:
    lead, tail = axis, x.ndim - axis - 1
    x_st = (*x.strides[:axis], *(0,) * indices.ndim, *x.strides[axis + 1 :])
    i_st = (*(0,) * lead, *indices.strides, *(0,) * tail)
    ix = _Index(indices, i_st, x.strides[axis], x.shape[axis], axis)
    _indexed_copy(0, out, out.strides, x, x_st, out.shape, [ix])


def take_along_axis(x: GPUArray, indices: GPUArray, out: GPUArray, axis: int) -> None:
    x_st = list(x.strides)
    x_st[axis] = 0
    ix = _Index(indices, indices.strides, x.strides[axis], x.shape[axis], axis)
    _indexed_copy(0, out, out.strides, x, x_st, out.shape, [ix])


def _gather_geometry(x: GPUArray, indices: list[GPUArray], axes: tuple[int, ...]
                     ) -> tuple[tuple[int, ...], list[int], list[_Index]]:  # fmt: skip
    b = broadcast_shapes(*(i.shape for i in indices))
    rest = [a for a in range(x.ndim) if a not in axes]
    shape = (*b, *(x.shape[a] for a in rest))
    x_st = [0] * len(b) + [x.strides[a] for a in rest]
    tail = (0,) * len(rest)
    ixs = [
        _Index(i, (*i.broadcast_to(b).strides, *tail), x.strides[a], x.shape[a], a)
        for i, a in zip(indices, axes, strict=True)
    ]
    return shape, x_st, ixs


def gather(x: GPUArray, indices: list[GPUArray], axes: tuple[int, ...], out: GPUArray) -> None:
    shape, x_st, ixs = _gather_geometry(x, indices, axes)
    _indexed_copy(0, out, out.strides, x, x_st, shape, ixs)


def scatter(x: GPUArray, indices: list[GPUArray], axes: tuple[int, ...], values: GPUArray) -> None:
    shape, x_st, ixs = _gather_geometry(x, indices, axes)
    v = values.broadcast_to(shape)
    _indexed_copy(1, v, v.strides, x, x_st, shape, ixs)


def roll(x: GPUArray, out: GPUArray, shifts: tuple[int, ...], axes: tuple[int, ...]) -> None:
    x_st = list(x.strides)
    ixs = []
    for s, a in zip(shifts, axes, strict=True):
        n = x.shape[a]
        if s % n if n else 0:
            src = (np.arange(n, dtype=np.int64) - s) % n
            i_st = [0] * x.ndim
            i_st[a] = 8
            ixs.append(_Index(_upload(src, x), i_st, x.strides[a], n, a))
            x_st[a] = 0
    _indexed_copy(0, out, out.strides, x, x_st, out.shape, ixs)


def repeat(x: GPUArray, repeats: int | GPUArray, out: GPUArray, axis: int) -> None:
    n = x.shape[axis]
    if isinstance(repeats, GPUArray):
        counts = repeats.to_numpy().astype(np.int64)
        src = np.repeat(np.arange(n, dtype=np.int64), counts)
    else:
        src = np.repeat(np.arange(n, dtype=np.int64), int(repeats))
    if src.size == 0:
        return
    x_st = list(x.strides)
    x_st[axis] = 0
    i_st = [0] * x.ndim
    i_st[axis] = 8
    ix = _Index(_upload(src, x), i_st, x.strides[axis], n, axis)
    _indexed_copy(0, out, out.strides, x, x_st, out.shape, [ix])


def concat(inputs: list[GPUArray], out: GPUArray, axis: int) -> None:
    from .provider import copy

    start = 0
    for x in inputs:
        n = x.shape[axis]
        if n and x.size:
            part = GPUArray(out.buffer, x.shape, out.dtype, out.device, out.strides,
                            out.offset + start * out.strides[axis])  # fmt: skip
            copy(x, part)
        start += n


# -- scans and compactions ---------------------------------------------------------------
def _flags(x: GPUArray) -> tuple[GPUArray, GPUArray, int]:
    """int64 flags (x != 0, C order), their exclusive prefix sum, and the count."""
    n = x.size
    flags = _new((n,), dt.int64, x)
    pos = _new((n + 1,), dt.int64, x)
    index = x.device.index
    if n:
        nd = _nd(x.shape, x.strides)
        _launch(index, "pgk_mv_flags", n, (_ptr(flags), _ptr(x), ms.code_of(x.dtype), *nd))
    _launch(index, "pgk_mv_scan", 1, (_ptr(pos), _ptr(flags), n), block=1024, grid=1)
    count = int(pos[n:].to_numpy()[0])
    return flags, pos, count


def _masked_view(x: GPUArray, mask: GPUArray) -> tuple[GPUArray, GPUArray]:
    if mask.ndim == 0:  # a 0-d mask selects x as a whole: one leading axis of length 1
        return x.expand_dims(0), mask.expand_dims(0)
    return x, mask


def mask_select(x: GPUArray, mask: GPUArray) -> GPUArray:
    x, mask = _masked_view(x, mask)
    flags, pos, count = _flags(mask)
    rest = x.shape[mask.ndim :]
    out = _new((count, *rest), x.dtype, x)
    inner = math.prod(rest)
    if count and inner:
        nd = _nd(x.shape, x.strides)
        _launch(x.device.index, "pgk_mv_mask_select", x.size,
                (_ptr(out), _ptr(x), _ptr(flags), _ptr(pos), inner, x.itemsize, *nd))  # fmt: skip
    return out


def _scalar_bits(value: Any, dtype: dt.DataType) -> int:
    host = np.array(value).astype(dtype.to_numpy_dtype())
    raw = host.reshape(1).view(f"u{dtype.itemsize}")
    return int(raw[0])


def mask_assign(x: GPUArray, mask: GPUArray, value: Any) -> None:
    x, mask = _masked_view(x, mask)
    flags, pos, count = _flags(mask)
    rest = x.shape[mask.ndim :]
    inner = math.prod(rest)
    scalar, vals, v_nd = 0, 0, _nd(())
    if isinstance(value, GPUArray):
        if value.ndim == len(rest) + 1 and value.shape[0] not in (1, count):
            raise ValueError(
                f"cannot assign an array of shape {value.shape} to the {count} elements "
                f"selected by a mask of shape {mask.shape}"
            )
        v = value.broadcast_to((count, *rest))
        vals, v_nd = _ptr(v), _nd(v.shape, v.strides)
    else:
        scalar = _scalar_bits(value, x.dtype)
    if count and inner:
        nd = _nd(x.shape, x.strides)
        _launch(x.device.index, "pgk_mv_mask_assign", x.size,
                (_ptr(x), _ptr(flags), _ptr(pos), inner, x.itemsize, scalar, vals,
                 *nd, *v_nd))  # fmt: skip


def nonzero(x: GPUArray) -> tuple[GPUArray, ...]:
    flags, pos, count = _flags(x)
    outs = tuple(_new((count,), dt.int64, x) for _ in range(x.ndim))
    if count:
        ptrs = _pad([_ptr(o) for o in outs])
        _launch(x.device.index, "pgk_mv_nonzero", x.size,
                (_ptr(flags), _ptr(pos), *ptrs, *_nd(x.shape)))  # fmt: skip
    return outs


# -- sorting -----------------------------------------------------------------------------
def _moved(x: GPUArray, axis: int) -> GPUArray:
    """A view of x with `axis` last."""
    order = [a for a in range(x.ndim) if a != axis] + [axis]
    return x.transpose(tuple(order))


def _sorted_into(x: GPUArray, out: GPUArray, axis: int, descending: bool, values: bool) -> None:
    from .provider import copy

    xm, om = _moved(x, axis), _moved(out, axis)
    n = x.shape[axis]
    rows = x.size // n
    index = x.device.index
    xc = xm if xm.is_contiguous else _new(xm.shape, x.dtype, x)
    if xc is not xm:
        copy(xm, xc)
    p = 1 << max(0, (n - 1).bit_length())
    keys = _new((rows * p,), dt.int64, x)  # raw 64-bit order keys
    idx = _new((rows * p,), dt.int64, x)
    is_float = int(x.dtype.kind == "f")
    _launch(index, "pgk_mv_sort_keys", rows * p,
            (_ptr(keys), _ptr(idx), _ptr(xc), ms.code_of(x.dtype), is_float, x.itemsize,
             int(descending), rows, n, p))  # fmt: skip
    if 1 < p <= ms.BITONIC_BLOCK_MAX:
        threads = min(p, 1024)
        _launch(index, "pgk_mv_bitonic_block", rows, (_ptr(keys), _ptr(idx), p),
                block=threads, grid=rows, shared=16 * p)  # fmt: skip
    elif p > 1:
        k = 2
        while k <= p:
            j = k // 2
            while j:
                _launch(index, "pgk_mv_bitonic_step", rows * p,
                        (_ptr(keys), _ptr(idx), rows, p, k, j))  # fmt: skip
                j //= 2
            k *= 2
    direct = om.is_contiguous
    target = om if direct else _new(om.shape, out.dtype, out)
    _launch(index, "pgk_mv_sort_out", rows * n,
            (_ptr(target), _ptr(xc), _ptr(idx), x.itemsize, int(values), rows, n, p))  # fmt: skip
    if not direct:
        copy(target, om)


def sort(x: GPUArray, out: GPUArray, axis: int, descending: bool, stable: bool) -> None:
    if out.size:
        _sorted_into(x, out, axis, descending, True)


def argsort(x: GPUArray, out: GPUArray, axis: int, descending: bool, stable: bool) -> None:
    if out.size:
        _sorted_into(x, out, axis, descending, False)


def searchsorted(x1: GPUArray, x2: Any, out: GPUArray, side: str, sorter: GPUArray | None,
                 compute: dt.DataType) -> None:  # fmt: skip
    if out.size == 0:
        return
    if not isinstance(x2, GPUArray):
        x2 = _upload(np.array(x2, dtype=compute.to_numpy_dtype()), x1)
    is_float = int(compute.kind == "f")
    round_f32 = int(compute is dt.float32)
    nd = _nd(out.shape, x2.strides, out.strides)
    s_ptr, s_st, s_code = (0, 0, 0) if sorter is None else (
        _ptr(sorter), sorter.strides[0], ms.code_of(sorter.dtype))  # fmt: skip
    _launch(x1.device.index, "pgk_mv_searchsorted", out.size,
            (_ptr(out), _ptr(x1), x1.strides[0], ms.code_of(x1.dtype), _ptr(x2),
             ms.code_of(x2.dtype), s_ptr, s_st, s_code, x1.shape[0], is_float, round_f32,
             int(side == "right"), *nd))  # fmt: skip


#: (op name, kernel) pairs the provider registers
KERNELS = (
    ("concat", concat), ("roll", roll), ("repeat", repeat), ("take", take),
    ("take_along_axis", take_along_axis), ("gather", gather), ("scatter", scatter),
    ("mask_select", mask_select), ("mask_assign", mask_assign), ("sort", sort),
    ("argsort", argsort), ("nonzero", nonzero), ("searchsorted", searchsorted),
)  # fmt: skip

_NO_FLOAT8 = tuple(d for d in dt.ALL_DTYPES if not d.is_float8)
#: dtypes served where not every dtype is (order keys have no float8 rules)
DTYPES: dict[str, tuple[dt.DataType, ...]] = {
    op: _NO_FLOAT8 for op in ("sort", "argsort", "nonzero", "searchsorted")
}
# kernels that move whole elements (any itemsize up to 16) serve complex data too
for _op in ("concat", "roll", "repeat", "take", "take_along_axis", "gather", "scatter",
            "mask_select"):  # fmt: skip
    DTYPES[_op] = dt.EVERY_DTYPE


def register(provider: Any) -> None:
    """Add the data-movement kernels to the `cuda` provider."""
    from . import complex_planes

    # complex data: nonzero on the truth values, mask_assign part plane by part plane
    wrapped = {"nonzero": complex_planes.nonzero(nonzero),
               "mask_assign": complex_planes.mask_assign(mask_assign)}  # fmt: skip
    for op, fn in KERNELS:
        if op in wrapped:
            provider.add(op, wrapped[op], (*(DTYPES.get(op) or dt.ALL_DTYPES),
                                           *dt.COMPLEX_DTYPES))  # fmt: skip
        else:
            provider.add(op, fn, DTYPES.get(op))
