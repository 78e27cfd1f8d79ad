"""Conformance specs of the reductions (sum ... count_nonzero) and the cumulative ops.

The public call draws its axes at random (None, negative, tuples, ``()``) and a random
``keepdims``; the direct kernel call writes the keepdims-shaped output that the
reduction convention of ``_ops/statistical.py`` describes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pygpukit as gp

from .... import _dtypes as dt
from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType
from ...._ops.statistical import accumulator_dtype
from ..catalog import Case, Layout, OpSpec, _with_specials
from ._common import EDGE_LAYOUTS, VIEW_LAYOUTS, draw, f64, normalized, random_axes, upload

#: every dtype the reductions accept (float8 is storage-only)
REDUCIBLE = tuple(d for d in dt.ALL_DTYPES if not d.is_float8)
#: the reductions that take complex inputs too (the others order elements)
TAKES_COMPLEX = {"sum", "prod", "mean", "all", "any", "count_nonzero"}
LAYOUTS = (*VIEW_LAYOUTS, *EDGE_LAYOUTS)

Reference = Callable[[np.ndarray, tuple[int, ...], dict[str, Any]], np.ndarray]


def _sum(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
    if h.dtype.kind in "biu":
        return np.sum(h.astype(np.int64), axis=axes, keepdims=True)
    return np.sum(f64(h), axis=axes, keepdims=True)


def _prod(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
    if h.dtype.kind in "biu":
        return np.prod(h.astype(np.int64), axis=axes, keepdims=True)
    return np.prod(f64(h), axis=axes, keepdims=True)


def _count(h: np.ndarray, axes: tuple[int, ...]) -> int:
    return int(np.prod([h.shape[a] for a in axes]))


def _mean(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.sum(f64(h), axis=axes, keepdims=True) / _count(h, axes)


def _var(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
    n = _count(h, axes)
    c = p["correction"]
    x = f64(h)
    with np.errstate(all="ignore"):
        centred = x - np.sum(x, axis=axes, keepdims=True) / n
        squares = np.sum(centred * centred, axis=axes, keepdims=True)
        return squares / (n - c) if n - c > 0 else np.full(squares.shape, np.nan)


def _std(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
    return np.sqrt(_var(h, axes, p))


def _extreme(fn: Any) -> Reference:
    def ref(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
        x = h if h.dtype.kind in "biu" else f64(h)
        result = fn(x, axis=axes, keepdims=True)  # NaN propagates, as the convention asks
        return np.asarray(result).astype(h.dtype)

    return ref


def _truth(fn: Any) -> Reference:
    def ref(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
        return np.asarray(fn(f64(h) != 0, axis=axes, keepdims=True))

    return ref


def _count_nonzero(h: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
    return np.sum(f64(h) != 0, axis=axes, keepdims=True).astype(np.int64)


def _out_dtype(op: str, d: DataType) -> DataType:
    if op in ("sum", "prod"):
        return accumulator_dtype(op, _stand_in(d), None)
    if op in ("mean", "var", "std"):
        return d if d.is_inexact else dt.DEFAULT_FLOAT
    if op in ("all", "any"):
        return dt.bool_
    if op == "count_nonzero":
        return dt.INDEX_DTYPE
    return d


def _stand_in(d: DataType) -> GPUArray:
    return GPUArray(None, (), d, Device("cpu"))  # type: ignore[arg-type]


#: op: (reference, element bounds or None for the defaults, mix in NaN/inf/-0.0)
REDUCTIONS: dict[str, tuple[Reference, tuple[float, float] | None, bool]] = {
    "sum": (_sum, None, False),
    "prod": (_prod, (-2.0, 2.0), False),
    "mean": (_mean, None, False),
    "var": (_var, None, False),
    "std": (_std, None, False),
    "max": (_extreme(np.max), None, True),
    "min": (_extreme(np.min), None, True),
    "all": (_truth(np.all), (-1.0, 1.0), True),
    "any": (_truth(np.any), (-1.0, 1.0), True),
    "count_nonzero": (_count_nonzero, (-1.0, 1.0), True),
}
#: ops with no identity: a reduced axis of length 0 is an error, not a case
NO_IDENTITY = {"max", "min"}


def _bounds(d: DataType, bounds: tuple[float, float] | None) -> Any:
    if bounds is None:
        return None
    if d.kind == "u":
        return (0, bounds[1])
    return bounds


def _draw_input(rng: np.random.Generator, op: str, layout: Layout, d: DataType) -> np.ndarray:
    _, bounds, specials = REDUCTIONS[op]
    host = draw(rng, layout.parent, d, _bounds(d, bounds))
    if d.is_inexact and bounds is not None and bounds[1] <= 1.0:
        host = np.round(f64(host)).astype(host.dtype)  # whole numbers: zeros occur
    if specials and d.is_floating and layout.label == "contiguous":
        host = _with_specials(rng, host)
    if op == "prod" and d.is_inexact:
        host = np.where(np.abs(f64(host)) < 0.5, 1.0, f64(host)).astype(host.dtype)
    return host


def _reduction_cases(op: str) -> Callable[[np.random.Generator, DataType, Device], list[Case]]:
    ref, _, _ = REDUCTIONS[op]
    fn = getattr(gp, op)

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        out_dtype = _out_dtype(op, d)
        result = []
        for layout in LAYOUTS:
            g, h = upload(_draw_input(rng, op, layout, d), layout, device)
            axis = random_axes(rng, h.ndim)
            axes = normalized(axis, h.ndim)
            if op in NO_IDENTITY and any(h.shape[a] == 0 for a in axes):
                axis = tuple(i for i, n in enumerate(h.shape) if n)  # never an empty reduction
                axes = normalized(axis, h.ndim)
            keepdims = bool(rng.random() < 0.5)
            params: dict[str, Any] = {}
            if op in ("var", "std"):
                params["correction"] = float(rng.integers(0, 2))
            kept = ref(h, axes, params)
            if not out_dtype.is_inexact:
                kept = kept.astype(out_dtype.to_numpy_dtype())
            expected = (
                kept
                if keepdims
                else kept.reshape(tuple(n for i, n in enumerate(kept.shape) if i not in axes))
            )

            def run(name: str, g: GPUArray = g, axis: Any = axis, keepdims: bool = keepdims,
                    params: dict[str, Any] = params) -> GPUArray:  # fmt: skip
                return fn(g, axis=axis, keepdims=keepdims, backend=name, **params)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       axes: tuple[int, ...] = axes, params: Any = params) -> None:  # fmt: skip
                if out.size:
                    kernel(g, out, axes, **params)

            label = f"{layout.label} axis={axis} keepdims={keepdims}"
            result.append(Case(label, run, expected, out_dtype, direct, direct_expected=kept))
        return result

    return cases


# -- cumulative ----------------------------------------------------------------------
CUMULATIVE_LAYOUTS = (
    (Layout("1-d", (7,)), None),
    (Layout("contiguous", (3, 4)), 1),
    (Layout("transposed", (5, 3), transpose=True), 0),
    (Layout("reversed-stepped", (4, 6), key=(slice(None, None, -1), slice(None, None, 2))), -1),
    (Layout("broadcast", (1, 4), broadcast=(3, 4)), 0),
    (Layout("size-0 along the axis", (3, 0)), 1),
    (Layout("size-1", (1,)), 0),
)


def _cumulative_cases(op: str) -> Callable[[np.random.Generator, DataType, Device], list[Case]]:
    fn = getattr(gp, op)
    is_sum = op == "cumulative_sum"

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        out_dtype = accumulator_dtype(op, _stand_in(d), None)
        result = []
        for layout, axis in CUMULATIVE_LAYOUTS:
            bounds = None if is_sum else ((0, 3) if d.kind == "u" else (-2.0, 2.0))
            g, h = upload(draw(rng, layout.parent, d, bounds), layout, device)
            a = 0 if axis is None else axis % h.ndim
            include = bool(rng.random() < 0.5)
            x = h.astype(np.int64) if h.dtype.kind in "biu" else f64(h)
            expected = np.cumsum(x, axis=a) if is_sum else np.cumprod(x, axis=a)
            if include:
                first = np.full(
                    tuple(1 if i == a else n for i, n in enumerate(x.shape)),
                    0 if is_sum else 1, dtype=x.dtype,
                )  # fmt: skip
                expected = np.concatenate([first, expected], axis=a)
            if not out_dtype.is_inexact:
                expected = expected.astype(out_dtype.to_numpy_dtype())

            def run(name: str, g: GPUArray = g, axis: Any = axis, include: bool = include) -> Any:
                return fn(g, axis=axis, include_initial=include, backend=name)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g, a: int = a,
                       include: bool = include) -> None:  # fmt: skip
                if out.size:
                    kernel(g, out, a, include)

            label = f"{layout.label} axis={axis} include_initial={include}"
            result.append(Case(label, run, expected, out_dtype, direct))
        return result

    return cases


def specs() -> list[OpSpec]:
    out = []
    for op in REDUCTIONS:
        kind = "exact" if op in ("max", "min", "all", "any", "count_nonzero") else "reduction"
        dtypes = (*REDUCIBLE, *dt.COMPLEX_DTYPES) if op in TAKES_COMPLEX else REDUCIBLE
        out.append(OpSpec(op, "reduction", dtypes, _reduction_cases(op), kind))
    with_complex = (*REDUCIBLE, *dt.COMPLEX_DTYPES)
    for op in ("cumulative_sum", "cumulative_prod"):
        out.append(OpSpec(op, "reduction", with_complex, _cumulative_cases(op), "reduction"))
    return out
