"""Conformance specs of the data-moving ops: concat, roll, repeat, take, take_along_axis,
and the advanced-indexing kernels gather, scatter, mask_select and mask_assign.

``x[key]`` and ``x[key] = v`` take no ``backend=`` argument, so their cases force the
provider with the per-op ``dispatch`` setting (after checking it can serve the call).
The in-place kernels (scatter, mask_assign) write into a view of a larger array: the
whole parent is compared, so a write outside the view is caught.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import pygpukit as gp

from .... import _dtypes as dt
from ...._array import GPUArray
from ...._device import Device
from ...._dispatch import kernel_for
from ...._dtypes import DataType
from ..catalog import Case, Layout, OpSpec
from ._common import draw, upload

IDX = dt.INDEX_DTYPE
Cases = Callable[[np.random.Generator, DataType, Device], list[Case]]


@contextmanager
def forced(op: str, name: str, device: Device, dtypes: tuple[DataType, ...]) -> Iterator[None]:
    """Run `op` on provider `name` inside the block (DispatchError if it cannot)."""
    kernel_for(op, device, dtypes, name)
    with gp.config.use(dispatch={op: name}):
        yield


# -- concat --------------------------------------------------------------------------
CONCAT = (
    # label, layouts of the inputs, axis
    ("three views along axis 1",
     (Layout("contiguous", (2, 3)), Layout("transposed", (2, 2), transpose=True),
      Layout("reversed", (2, 3), key=(slice(None), slice(None, None, -2)))), 1),
    ("with an empty input, axis 0",
     (Layout("empty", (0, 4)), Layout("offset", (3, 5), key=(slice(1, 3), slice(1, None))),
      Layout("broadcast", (1, 4), broadcast=(2, 4))), 0),
    ("3-d along axis -1", (Layout("a", (2, 2, 1)), Layout("b", (2, 2, 3))), -1),
    ("axis None", (Layout("a", (2, 3), transpose=True), Layout("b", (4,))), None),
    ("one input", (Layout("only", (3, 2)),), 0),
)  # fmt: skip


def _concat_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, layouts, axis in CONCAT:
        pairs = [upload(draw(rng, lay.parent, d), lay, device) for lay in layouts]
        gs = [g for g, _ in pairs]
        hs = [np.asarray(h) for _, h in pairs]
        expected = np.concatenate(hs, axis=axis)
        flat = [g.reshape(-1) for g in gs] if axis is None else gs
        a = 0 if axis is None else axis % expected.ndim

        def run(name: str, gs: list[GPUArray] = gs, axis: Any = axis) -> Any:
            return gp.concat(gs, axis=axis, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, xs: list[GPUArray] = flat,
                   a: int = a) -> None:  # fmt: skip
            if out.size:
                kernel(xs, out, a)

        result.append(Case(label, run, expected, d, direct, strided_out=axis is not None))
    return result


# -- roll ----------------------------------------------------------------------------
ROLL = (
    ("flattened", Layout("contiguous", (3, 4)), 5, None),
    ("transposed, two axes", Layout("transposed", (4, 3), transpose=True), (1, -2), (0, 1)),
    ("reversed-stepped, big shift", Layout("rs", (5, 6), key=(slice(None, None, -1),
                                                               slice(None, None, 2))), -7, -1),
    ("same axis twice", Layout("contiguous", (2, 5)), (1, 2), (1, 1)),
    ("broadcast", Layout("broadcast", (1, 4), broadcast=(3, 4)), 1, 1),
    ("size-0", Layout("empty", (0, 3)), 2, 1),
    ("0-d flattened", Layout("0-d", ()), 3, None),
)  # fmt: skip


def _roll_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, layout, shift, axis in ROLL:
        g, h = upload(draw(rng, layout.parent, d), layout, device)
        expected = np.roll(np.asarray(h), shift, axis=axis)
        shifts: tuple[int, ...] = shift if isinstance(shift, tuple) else (shift,)
        if axis is None:
            keys: tuple[int, ...] = (0,)
            totals = {0: sum(shifts)}
        else:
            names = axis if isinstance(axis, tuple) else (axis,)
            if len(shifts) == 1:
                shifts = shifts * len(names)
            totals = {}
            for s, a in zip(shifts, names, strict=True):
                totals[a % h.ndim] = totals.get(a % h.ndim, 0) + s
            keys = tuple(totals)
        src = g.reshape(-1) if axis is None else g
        reduced = tuple(totals[a] % src.shape[a] if src.shape[a] else 0 for a in keys)

        def run(name: str, g: GPUArray = g, shift: Any = shift, axis: Any = axis) -> Any:
            return gp.roll(g, shift, axis=axis, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, src: GPUArray = src,
                   reduced: tuple[int, ...] = reduced, keys: tuple[int, ...] = keys,
                   flat: bool = axis is None) -> None:  # fmt: skip
            if out.size:
                kernel(src, out.reshape(-1) if flat else out, reduced, keys)

        result.append(Case(label, run, expected, d, direct))
    return result


# -- repeat --------------------------------------------------------------------------
def _repeat_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, layout, reps, axis in (
        ("int along axis 1 of a transposed view", Layout("t", (4, 3), transpose=True), 2, 1),
        ("int64 array along axis 0", Layout("c", (3, 2)), np.array([0, 2, 1], np.int64), 0),
        ("int32 array, reversed view", Layout("r", (4,), key=(slice(None, None, -1),)),
         np.array([3, 0, 1, 2], np.int32), 0),
        ("flattened", Layout("c", (2, 3)), 2, None),
        ("zero repeats", Layout("c", (2, 3)), 0, 0),
        ("one-element array broadcast", Layout("c", (2, 3)), np.array([2], np.int64), 1),
    ):  # fmt: skip
        g, h = upload(draw(rng, layout.parent, d), layout, device)
        expected = np.repeat(np.asarray(h), reps, axis=axis)
        greps: Any = reps
        kernel_reps: Any = reps
        needs: tuple[DataType, ...] = ()
        src = g.reshape(-1) if axis is None else g
        a = 0 if axis is None else axis
        if isinstance(reps, np.ndarray):
            greps = GPUArray.from_numpy(reps, device)
            needs = (dt.as_dtype(reps.dtype),)
            n = src.shape[a]
            kernel_reps = greps if reps.size == n else greps.broadcast_to((n,))

        def run(name: str, g: GPUArray = g, reps: Any = greps, axis: Any = axis) -> Any:
            return gp.repeat(g, reps, axis=axis, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, src: GPUArray = src,
                   reps: Any = kernel_reps, a: int = a) -> None:  # fmt: skip
            if out.size:
                kernel(src, reps, out, a)

        result.append(Case(label, run, expected, d, direct, strided_out=True, needs=needs))
    return result


# -- take / take_along_axis ------------------------------------------------------------
def _index_host(rng: np.random.Generator, shape: tuple[int, ...], n: int, d: Any) -> np.ndarray:
    """Indices into an axis of length n, negative ones included where the dtype allows."""
    lo = 0 if np.dtype(d).kind == "u" else -n
    return rng.integers(lo, n, size=shape).astype(d)


def _take_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, layout, idx_shape, idx_dtype, axis in (
        ("1-d, axis None", Layout("c", (7,)), (5,), np.int64, None),
        ("2-d indices into axis 1 of a transposed view", Layout("t", (4, 3), transpose=True),
         (2, 2), np.int32, 1),
        ("axis -1 of an offset view", Layout("o", (3, 4, 5), key=(1, slice(1, 4), slice(2, None))),
         (4,), np.int16, -1),
        ("uint8 indices, axis 0", Layout("r", (5, 2), key=(slice(None, None, -1),)), (3,),
         np.uint8, 0),
        ("empty indices", Layout("c", (3, 4)), (0,), np.int64, 0),
    ):  # fmt: skip
        g, h = upload(draw(rng, layout.parent, d), layout, device)
        a = 0 if axis is None else axis % h.ndim
        idx = _index_host(rng, idx_shape, h.shape[a], idx_dtype)
        gi = GPUArray.from_numpy(idx, device)
        expected = np.take(np.asarray(h), idx.astype(np.int64), axis=a)

        def run(name: str, g: GPUArray = g, gi: GPUArray = gi, axis: Any = axis) -> Any:
            return gp.take(g, gi, axis=axis, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g, gi: GPUArray = gi,
                   a: int = a) -> None:  # fmt: skip
            if out.size:
                kernel(g, gi, out, a)

        result.append(Case(label, run, expected, d, direct, strided_out=True,
                           needs=(dt.as_dtype(idx.dtype),)))  # fmt: skip
    return result


def _take_along_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, layout, idx_shape, axis in (
        ("last axis, more indices than elements", Layout("c", (3, 4)), (3, 6), -1),
        ("axis 0 of a transposed view", Layout("t", (5, 3), transpose=True), (2, 5), 0),
        ("indices broadcast", Layout("c", (3, 4)), (1, 2), 1),
        ("x broadcast", Layout("b", (1, 4), broadcast=(1, 4)), (3, 2), 1),
    ):  # fmt: skip
        g, h = upload(draw(rng, layout.parent, d), layout, device)
        a = axis % h.ndim
        idx = _index_host(rng, idx_shape, h.shape[a], np.int64)
        gi = GPUArray.from_numpy(idx, device)
        batch = np.broadcast_shapes(
            tuple(n for i, n in enumerate(h.shape) if i != a),
            tuple(n for i, n in enumerate(idx.shape) if i != a),
        )
        x_shape = (*batch[:a], h.shape[a], *batch[a:])
        out_shape = (*batch[:a], idx.shape[a], *batch[a:])
        expected = np.take_along_axis(
            np.broadcast_to(np.asarray(h), x_shape), np.broadcast_to(idx, out_shape), axis=a
        )

        def run(name: str, g: GPUArray = g, gi: GPUArray = gi, axis: int = axis) -> Any:
            return gp.take_along_axis(g, gi, axis=axis, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g, gi: GPUArray = gi,
                   a: int = a, xs: Any = x_shape, os: Any = out_shape) -> None:  # fmt: skip
            if out.size:
                kernel(g.broadcast_to(xs), gi.broadcast_to(os), out, a)

        result.append(Case(label, run, expected, d, direct, strided_out=True, needs=(IDX,)))
    return result


# -- gather / scatter (integer index arrays) -------------------------------------------
def _gather_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    parent = draw(rng, (4, 5, 6), d)
    x = GPUArray.from_numpy(parent, device)[:, ::-1]  # a reversed view, (4, 5, 6)
    hx = parent[:, ::-1]
    i0 = _index_host(rng, (2, 3), 4, np.int64)
    i2 = _index_host(rng, (3,), 6, np.int32)
    i1 = _index_host(rng, (2,), 5, np.int64)
    i2b = _index_host(rng, (2,), 6, np.int64)
    for label, key_h, axes in (
        ("axes 0 and 2 (not adjacent)", (i0, slice(None), i2), (0, 2)),
        ("axes 1 and 2 (adjacent)", (slice(None), i1, i2b), (1, 2)),
        ("one array", (Ellipsis, i2b), (2,)),
    ):  # fmt: skip
        key = tuple(GPUArray.from_numpy(k, device) if isinstance(k, np.ndarray) else k
                    for k in key_h)  # fmt: skip
        norm = tuple(k.astype(np.int64) if isinstance(k, np.ndarray) else k for k in key_h)
        expected = np.asarray(hx[norm])
        arrays = [k for k in key if isinstance(k, GPUArray)]
        b = np.broadcast_shapes(*(k.shape for k in arrays))
        barrays = [k.broadcast_to(b) for k in arrays]
        adjacent = axes == tuple(range(axes[0], axes[0] + len(axes)))
        kernel_layout = expected
        if adjacent and axes[0]:  # kernels see the index dims first
            nb = len(b)
            dims = list(range(expected.ndim))
            order = dims[axes[0] : axes[0] + nb] + dims[: axes[0]] + dims[axes[0] + nb :]
            kernel_layout = np.transpose(expected, order)
        dtypes = (d, *(k.dtype for k in arrays))

        def run(name: str, key: Any = key, dtypes: Any = dtypes) -> Any:
            with forced("gather", name, device, dtypes):
                return x[key]

        def direct(kernel: Callable[..., Any], out: GPUArray, barrays: Any = barrays,
                   axes: tuple[int, ...] = axes) -> None:  # fmt: skip
            if out.size:
                kernel(x, barrays, axes, out)

        result.append(Case(label, run, expected, d, direct, strided_out=True,
                           direct_expected=np.ascontiguousarray(kernel_layout),
                           needs=tuple(k.dtype for k in arrays)))  # fmt: skip
    return result


def _inplace_case(
    label: str, parent: np.ndarray, key: Any, gkey: Any, value: Any, op: str, d: DataType,
    device: Device, dtypes: tuple[DataType, ...],
) -> Case:  # fmt: skip
    """x[key] = value on a stepped view of a fresh copy of `parent`; the result is the parent."""
    want = parent.copy()
    host_value = value.to_numpy() if isinstance(value, GPUArray) else value
    want[:, ::2][key] = host_value

    def run(name: str) -> Any:
        g = GPUArray.from_numpy(parent, device)
        with forced(op, name, device, dtypes):
            g[:, ::2][gkey] = value
        return g

    return Case(label, run, want, d, needs=tuple(x for x in dtypes if x is not d))


def _scatter_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    parent = draw(rng, (4, 6), d)  # updated through the view [:, ::2], shape (4, 3)
    rows = rng.permutation(4)[:2].astype(np.int64)
    cols = rng.permutation(3)[:2].astype(np.int32)
    values = draw(rng, (2,), d)
    grid = draw(rng, (2, 3), d)
    scalar = np.asarray(draw(rng, (), d)).item()
    result = []
    for label, key, value in (
        ("pairs of indices, array value", (rows, cols), values),
        ("rows, broadcast row value", (rows,), grid[:1]),
        ("rows and a slice, scalar", (rows, slice(None)), scalar),
    ):  # fmt: skip
        gkey = tuple(GPUArray.from_numpy(k, device) if isinstance(k, np.ndarray) else k
                     for k in key)  # fmt: skip
        gvalue = GPUArray.from_numpy(value, device) if isinstance(value, np.ndarray) else value
        dtypes = (d, *(k.dtype for k in gkey if isinstance(k, GPUArray)))
        result.append(_inplace_case(label, parent, key, gkey, gvalue, "scatter", d, device,
                                    dtypes))  # fmt: skip
    return result


# -- boolean masks ---------------------------------------------------------------------
def _mask_select_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    parent = draw(rng, (3, 8), d)
    x = GPUArray.from_numpy(parent, device)[:, ::2]  # (3, 4), stepped
    hx = parent[:, ::2]
    result = []
    for label, mask, key in (
        ("full mask", rng.random((3, 4)) < 0.5, lambda m: m),
        ("mask after a slice", rng.random(4) < 0.5, lambda m: (slice(None), m)),
        ("all-false mask", np.zeros(3, bool), lambda m: m),
    ):  # fmt: skip
        gmask = GPUArray.from_numpy(mask, device)
        expected = np.asarray(hx[key(mask)])

        gkey = key(gmask)

        def run(name: str, gkey: Any = gkey) -> Any:
            with forced("mask_select", name, device, (d, dt.bool_)):
                return x[gkey]

        result.append(Case(label, run, expected, d, needs=(dt.bool_,)))
    return result


def _mask_assign_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    parent = draw(rng, (4, 6), d)
    mask = rng.random((4, 3)) < 0.5
    mask[0, 0] = True
    rows = np.array([True, False, True, True])
    count = int(mask.sum())
    result = []
    for label, key_h, value in (
        ("scalar", mask, np.asarray(draw(rng, (), d)).item()),
        ("array of the selected count", mask, draw(rng, (count,), d)),
        ("broadcast row into selected rows", rows, draw(rng, (1, 3), d)),
    ):  # fmt: skip
        gkey = GPUArray.from_numpy(key_h, device)
        gvalue = GPUArray.from_numpy(value, device) if isinstance(value, np.ndarray) else value
        result.append(_inplace_case(label, parent, key_h, gkey, gvalue, "mask_assign", d,
                                    device, (d, dt.bool_)))  # fmt: skip
    return result


def specs() -> list[OpSpec]:
    every = dt.ALL_DTYPES
    return [
        OpSpec("concat", "manipulation", every, _concat_cases, "exact"),
        OpSpec("roll", "manipulation", every, _roll_cases, "exact"),
        OpSpec("repeat", "manipulation", every, _repeat_cases, "exact"),
        OpSpec("take", "indexing", every, _take_cases, "exact"),
        OpSpec("take_along_axis", "indexing", every, _take_along_cases, "exact"),
        OpSpec("gather", "indexing", every, _gather_cases, "exact", function="asarray"),
        OpSpec("scatter", "indexing", every, _scatter_cases, "exact", function="asarray"),
        OpSpec("mask_select", "indexing", every, _mask_select_cases, "exact", function="asarray"),
        OpSpec("mask_assign", "indexing", every, _mask_assign_cases, "exact", function="asarray"),
    ]
