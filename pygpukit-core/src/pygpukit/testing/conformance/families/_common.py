"""Helpers shared by the conformance families: axes to draw, float64 references, checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType
from ..._strategies import random_numpy
from ..catalog import Layout

#: views every family with one array input runs on (sizes 0 and 1 and 0-d come separately)
VIEW_LAYOUTS = (
    Layout("contiguous", (2, 3, 4)),
    Layout("transposed", (4, 3), transpose=True),
    Layout("reversed-stepped", (5, 6), key=(slice(None, None, -1), slice(None, None, -2))),
    Layout("offset", (3, 4, 5), key=(1, slice(1, 4), slice(2, None))),
    Layout("broadcast", (1, 4), broadcast=(3, 4)),
)
EDGE_LAYOUTS = (Layout("0-d", ()), Layout("size-0", (0, 3)), Layout("size-1", (1,)))


def f64(host: Any) -> np.ndarray:
    """Host data as float64, or complex128 when complex (exact for every PyGPUkit dtype but
    int64 beyond 2**53)."""
    a = np.asarray(host)
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def upload(host: np.ndarray, layout: Layout, device: Device) -> tuple[GPUArray, np.ndarray]:
    """The layout's view of `host` on the device, and the same view of `host`."""
    g = GPUArray.from_numpy(host, device)
    return layout.apply(g), layout.apply(host)


def draw(
    rng: np.random.Generator, shape: tuple[int, ...], d: DataType, bounds: Any = None
) -> np.ndarray:
    return random_numpy(rng, shape, d, bounds)


def random_axes(rng: np.random.Generator, ndim: int) -> int | tuple[int, ...] | None:
    """None, one axis (maybe negative), or a tuple of distinct axes in random order."""
    if ndim == 0:
        return None if rng.random() < 0.5 else ()
    pick = int(rng.integers(0, 4))
    if pick == 0:
        return None
    if pick == 1:
        a = int(rng.integers(0, ndim))
        return a - ndim if rng.random() < 0.5 else a
    n = int(rng.integers(0 if pick == 2 else 1, ndim + 1))
    chosen = rng.permutation(ndim)[:n]
    return tuple(int(a) - ndim if rng.random() < 0.5 else int(a) for a in chosen)


def normalized(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def relative_frobenius(bound: float) -> Callable[[GPUArray, np.ndarray, str], None]:
    """A check: ||actual - expected||_F / ||expected||_F <= bound (and NaNs where expected)."""

    def check(actual: GPUArray, expected: np.ndarray, msg: str) -> None:
        got = f64(actual.to_numpy())
        want = f64(expected)
        if got.shape != want.shape:
            raise AssertionError(f"{msg}: shape is {got.shape}, expected {want.shape}")
        if not np.array_equal(np.isnan(got), np.isnan(want)):
            raise AssertionError(f"{msg}: NaN at different places")
        ok = ~np.isnan(want)
        err = float(np.linalg.norm(got[ok] - want[ok]))
        scale = float(np.linalg.norm(want[ok]))
        rel = err / scale if scale else err
        if not rel <= bound:
            raise AssertionError(
                f"{msg}: relative Frobenius error {rel:.3g} exceeds {bound:g} "
                f"(absolute {err:.3g}, reference norm {scale:.3g})"
            )

    return check
