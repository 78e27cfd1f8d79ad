"""Conformance specs of searching, sorting and sets: argmax/argmin, sort/argsort,
searchsorted, and the data-dependent nonzero and unique (compared, never poisoned)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pygpukit as gp

from .... import _dtypes as dt
from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType
from ..catalog import Case, Layout, OpSpec, _with_specials
from ._common import VIEW_LAYOUTS, draw, f64, upload

SEARCHABLE = tuple(d for d in dt.ALL_DTYPES if not d.is_float8)
#: nonzero and unique take complex inputs too (unique orders them as NumPy does)
WITH_COMPLEX = (*SEARCHABLE, *dt.COMPLEX_DTYPES)
IDX = dt.INDEX_DTYPE


def _ties(rng: np.random.Generator, shape: tuple[int, ...], d: DataType) -> np.ndarray:
    """Few distinct values, so equal elements (and the order rules for them) matter."""
    bounds = (0, 3) if d.kind == "u" else (-2.0, 2.0)
    host = draw(rng, shape, d, bounds)
    return np.round(f64(host)).astype(host.dtype) if d.is_inexact else host


def _keys(h: np.ndarray) -> np.ndarray:
    """Sort keys NumPy orders as the convention does (NaN last, -0.0 == 0.0)."""
    return h.astype(np.int64) if h.dtype.kind in "biu" else f64(h)


# -- argmax / argmin -----------------------------------------------------------------
def _arg_cases(op: str) -> Callable[[np.random.Generator, DataType, Device], list[Case]]:
    fn = getattr(gp, op)
    ref = np.argmax if op == "argmax" else np.argmin

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        layouts = (*VIEW_LAYOUTS, Layout("0-d", ()), Layout("size-1", (1,)),
                   Layout("empty rows", (0, 3)))  # fmt: skip
        for layout in layouts:
            host = _ties(rng, layout.parent, d)
            if d.is_floating and layout.label == "contiguous":
                host = _with_specials(rng, host)
            g, h = upload(host, layout, device)
            if layout.label == "empty rows":
                axis: int | None = 1
            elif h.ndim == 0 or rng.random() < 0.3:
                axis = None
            else:
                axis = int(rng.integers(-h.ndim, h.ndim))
            keepdims = bool(rng.random() < 0.5)
            keys = _keys(h)
            if axis is None:
                kept = np.asarray(ref(keys)).reshape((1,) * h.ndim)
            else:
                kept = np.expand_dims(ref(keys, axis=axis), axis)
            kept = kept.astype(np.int64)
            expected = kept if keepdims else (kept.reshape(()) if axis is None
                                              else np.squeeze(kept, axis))  # fmt: skip
            index = None if axis is None or h.ndim == 0 else axis % h.ndim

            def run(name: str, g: GPUArray = g, axis: Any = axis, keepdims: bool = keepdims) -> Any:
                return fn(g, axis=axis, keepdims=keepdims, backend=name)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       index: int | None = index) -> None:  # fmt: skip
                if out.size:
                    kernel(g, out, index)

            label = f"{layout.label} axis={axis} keepdims={keepdims}"
            result.append(Case(label, run, expected, IDX, direct, direct_expected=kept,
                               needs=(IDX,)))  # fmt: skip
        return result

    return cases


# -- sort / argsort ------------------------------------------------------------------
def _stable_order(keys: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable sorting indices along `axis`; descending keeps equal elements in order too."""
    if not descending:
        return np.argsort(keys, axis=axis, kind="stable")
    n = keys.shape[axis]
    flipped = np.flip(keys, axis=axis)
    return np.asarray(n - 1 - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis=axis))


def _sorted_check(h: np.ndarray, axis: int, descending: bool) -> Any:
    """For unstable argsort: the indices are a permutation that sorts `h` along `axis`."""
    keys = _keys(h)
    want = np.take_along_axis(keys, _stable_order(keys, axis, descending), axis=axis)

    def check(actual: GPUArray, expected: np.ndarray, msg: str) -> None:
        idx = actual.to_numpy().astype(np.int64)
        perm = np.sort(idx, axis=axis)
        ramp = np.broadcast_to(
            np.arange(h.shape[axis]).reshape([-1 if i == axis else 1 for i in range(h.ndim)]),
            h.shape,
        )
        if idx.shape != h.shape or not np.array_equal(perm, ramp):
            raise AssertionError(f"{msg}: indices are not a permutation along axis {axis}")
        got = np.take_along_axis(keys, idx, axis=axis)
        if not np.array_equal(got, want, equal_nan=True):
            raise AssertionError(f"{msg}: the indices do not sort the input")

    return check


def _sort_cases(op: str) -> Callable[[np.random.Generator, DataType, Device], list[Case]]:
    fn = getattr(gp, op)

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        layouts = (*VIEW_LAYOUTS, Layout("size-0", (0, 3)), Layout("1-d", (9,)))
        for layout in layouts:
            host = _ties(rng, layout.parent, d)
            if d.is_floating and layout.label in ("contiguous", "1-d"):
                host = _with_specials(rng, host)
            g, h = upload(host, layout, device)
            axis = int(rng.integers(-h.ndim, h.ndim))
            a = axis % h.ndim
            descending = bool(rng.random() < 0.5)
            stable = bool(rng.random() < 0.7)
            order = _stable_order(_keys(h), a, descending)
            check = None
            if op == "sort":
                expected = np.take_along_axis(np.asarray(h), order, axis=a)
                out_dtype = d
            else:
                expected = order.astype(np.int64)
                out_dtype = IDX
                if not stable:
                    check = _sorted_check(np.asarray(h), a, descending)

            def run(name: str, g: GPUArray = g, axis: int = axis, desc: bool = descending,
                    stable: bool = stable) -> Any:  # fmt: skip
                return fn(g, axis=axis, descending=desc, stable=stable, backend=name)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g, a: int = a,
                       desc: bool = descending, stable: bool = stable) -> None:  # fmt: skip
                if out.size:
                    kernel(g, out, a, desc, stable)

            label = f"{layout.label} axis={axis} descending={descending} stable={stable}"
            needs = (IDX,) if op == "argsort" else ()
            result.append(Case(label, run, expected, out_dtype, direct, check=check,
                               needs=needs))  # fmt: skip
        return result

    return cases


# -- searchsorted --------------------------------------------------------------------
def _searchsorted_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, n, values_layout, side, use_sorter in (
        ("values 2-d", 9, Layout("contiguous", (3, 4)), "left", False),
        ("values transposed", 9, Layout("transposed", (4, 3), transpose=True), "right", False),
        ("values reversed", 6, Layout("reversed", (7,), key=(slice(None, None, -1),)), "left",
         True),
        ("empty x1", 0, Layout("contiguous", (5,)), "right", False),
        ("empty values", 5, Layout("size-0", (0, 2)), "left", False),
        ("scalar value", 8, Layout("0-d", ()), "right", True),
    ):  # fmt: skip
        raw = _ties(rng, (n,), d)
        values_host = _ties(rng, values_layout.parent, d)
        if d.is_floating and n:
            raw[int(rng.integers(0, n))] = np.nan  # NaN sorts after every number
            if values_host.size:
                values_host.reshape(-1)[0] = np.nan
        keys = _keys(raw)
        order = np.argsort(keys, kind="stable")
        x1_host = raw if use_sorter else raw[order]
        x1 = GPUArray.from_numpy(x1_host, device)
        sorter = GPUArray.from_numpy(order.astype(np.int64), device) if use_sorter else None
        g2, h2 = upload(values_host, values_layout, device)
        found = np.searchsorted(keys[order], _keys(np.asarray(h2)), side=side)  # type: ignore[call-overload]
        expected = np.asarray(found).astype(np.int64)
        value: Any = g2
        if label == "scalar value":
            value = np.asarray(h2).item()
            value = bool(value) if d.kind == "b" else value

        def run(name: str, x1: GPUArray = x1, value: Any = value, side: str = side,
                sorter: Any = sorter) -> Any:  # fmt: skip
            return gp.searchsorted(x1, value, side=side, sorter=sorter, backend=name)

        def direct(kernel: Callable[..., Any], out: GPUArray, x1: GPUArray = x1,
                   value: Any = value, side: str = side, sorter: Any = sorter) -> None:  # fmt: skip
            if out.size:
                kernel(x1, value, out, side, sorter, d)

        result.append(Case(f"{label} side={side} sorter={use_sorter}", run, expected, IDX,
                           direct, needs=(IDX,)))  # fmt: skip
    return result


# -- nonzero and unique (data-dependent sizes) -----------------------------------------
def _nonzero_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    layouts = (*VIEW_LAYOUTS, Layout("size-0", (0, 3)), Layout("1-d", (9,)),
               Layout("all zero", (2, 3), key=(slice(0, 0),)))  # fmt: skip
    for layout in layouts:
        host = _ties(rng, layout.parent, d)
        if d.is_floating and layout.label == "contiguous":
            host = _with_specials(rng, host)  # NaN is nonzero, -0.0 is zero
        g, h = upload(host, layout, device)
        expected = tuple(i.astype(np.int64) for i in np.nonzero(f64(h) != 0))

        def run(name: str, g: GPUArray = g) -> Any:
            return gp.nonzero(g, backend=name)

        result.append(Case(layout.label, run, expected, IDX, parts=(IDX,) * len(expected)))
    return result


def _unique_reference(flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """values, first indices, inverse, counts; each NaN its own value, at the end."""
    keys = _keys(flat)
    nan = np.isnan(keys) if keys.dtype.kind in "fc" else np.zeros(keys.shape, bool)
    numbers = np.flatnonzero(~nan)
    _, first, inverse_num, counts = np.unique(
        keys[numbers], return_index=True, return_inverse=True, return_counts=True
    )
    first_idx = numbers[first]
    nan_idx = np.flatnonzero(nan)
    values = np.concatenate([flat[first_idx], flat[nan_idx]])
    indices = np.concatenate([first_idx, nan_idx]).astype(np.int64)
    inverse = np.empty(flat.shape, np.int64)
    inverse[numbers] = inverse_num.reshape(-1)
    inverse[nan_idx] = len(first_idx) + np.arange(len(nan_idx))
    all_counts = np.concatenate([counts, np.ones(len(nan_idx), np.int64)]).astype(np.int64)
    return values, indices, inverse, all_counts


def _unique_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    layouts = (*VIEW_LAYOUTS, Layout("0-d", ()), Layout("size-0", (0, 3)))
    for layout in layouts:
        host = _ties(rng, layout.parent, d)
        if d.is_inexact and layout.label == "contiguous":
            host.reshape(-1)[[1, 5]] = np.nan
        g, h = upload(host, layout, device)
        values, indices, inverse, counts = _unique_reference(np.asarray(h).reshape(-1))
        expected = (values, indices, inverse.reshape(np.shape(h)), counts)

        def run(name: str, g: GPUArray = g) -> Any:
            return tuple(gp.unique_all(g, backend=name))

        result.append(Case(layout.label, run, expected, d, parts=(d, IDX, IDX, IDX)))
    return result


def specs() -> list[OpSpec]:
    return [
        OpSpec("argmax", "searching", SEARCHABLE, _arg_cases("argmax"), "exact"),
        OpSpec("argmin", "searching", SEARCHABLE, _arg_cases("argmin"), "exact"),
        OpSpec("sort", "sorting", SEARCHABLE, _sort_cases("sort"), "exact"),
        OpSpec("argsort", "sorting", SEARCHABLE, _sort_cases("argsort"), "exact"),
        OpSpec("searchsorted", "searching", SEARCHABLE, _searchsorted_cases, "exact"),
        OpSpec("nonzero", "searching", WITH_COMPLEX, _nonzero_cases, "exact"),
        OpSpec("unique", "sets", WITH_COMPLEX, _unique_cases, "exact", function="unique_all"),
    ]
