"""Random arrays (with their NumPy twins) shared by the reduction, search, sort and set tests.

No tests live here; the test modules import `cases` and the tolerance helpers.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pygpukit as gp
from hypothesis import strategies as st

DTYPES = {
    d.name: d
    for d in (gp.bool_, gp.int8, gp.uint8, gp.int16, gp.int32, gp.int64,
              gp.float16, gp.bfloat16, gp.float32, gp.float64)
}  # fmt: skip
FLOATS = ("float16", "bfloat16", "float32", "float64")
NUMERIC = tuple(n for n in DTYPES if n != "bool")
#: one ulp at 1.0 of each floating dtype
EPS = {
    "float16": float(np.finfo(np.float16).eps),
    "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float64": float(np.finfo(np.float64).eps),
}
LAYOUTS = ("contiguous", "transposed", "reversed", "strided", "broadcast")


@dataclass
class Case:
    """One test array: `x` on the device and `host`, the same values as a NumPy array."""

    x: gp.GPUArray
    host: np.ndarray
    layout: str

    @property
    def dtype(self) -> str:
        return self.x.dtype.name


def random_values(
    rng: np.random.Generator, shape: tuple[int, ...], name: str, style: str
) -> np.ndarray:
    """Fresh random data of dtype `name`; small integer ranges so ties and zeros occur."""
    return np.asarray(_values(rng, shape, name, style))


def _values(rng: np.random.Generator, shape: tuple[int, ...], name: str, style: str) -> Any:
    np_dtype = DTYPES[name].to_numpy_dtype()
    if name == "bool":
        return rng.random(shape) < 0.6
    if name == "uint8":
        return rng.integers(0, 7, shape).astype(np_dtype)
    if name.startswith("int"):
        return rng.integers(-5, 6, shape).astype(np_dtype)
    if style == "near_one":  # products that neither overflow nor underflow
        return rng.uniform(0.6, 1.5, shape).astype(np_dtype)
    values = np.asarray(rng.standard_normal(shape) * 3)
    if style == "ties":
        values = np.round(values)  # repeated values, and both signs of zero
    if style == "nan" and values.size:
        values[rng.random(shape) < 0.2] = np.nan
    return values.astype(np_dtype)


def _layout(
    rng: np.random.Generator, shape: tuple[int, ...], name: str, style: str, layout: str
) -> tuple[np.ndarray, Any]:
    """A base array and a function making the same view of it in NumPy and PyGPUkit."""
    if not shape or layout == "contiguous":
        return random_values(rng, shape, name, style), lambda a: a
    if layout == "transposed":
        base = random_values(rng, shape[::-1], name, style)
        return base, lambda a: a.transpose()
    if layout == "reversed":
        base = random_values(rng, shape, name, style)
        return base, lambda a: a[::-1, ..., ::-1] if len(shape) > 1 else a[::-1]
    if layout == "strided":
        base = random_values(rng, (shape[0] * 2, *shape[1:]), name, style)
        return base, lambda a: a[1::2]
    base = random_values(rng, (1, *shape[1:]), name, style)
    return (
        base,
        lambda a: (
            a.broadcast_to(shape) if isinstance(a, gp.GPUArray) else (np.broadcast_to(a, shape))
        ),
    )


@st.composite
def cases(
    draw: st.DrawFn,
    dtypes: tuple[str, ...] = tuple(DTYPES),
    min_dims: int = 0,
    max_dims: int = 3,
    max_side: int = 4,
    styles: tuple[str, ...] = ("plain", "ties", "nan"),
) -> Case:
    """A random array of one of `dtypes`, possibly a non-contiguous view."""
    name = draw(st.sampled_from(dtypes))
    shape = tuple(draw(st.lists(st.integers(0, max_side), min_size=min_dims, max_size=max_dims)))
    layout = draw(st.sampled_from(LAYOUTS))
    style = draw(st.sampled_from(styles))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base, make_view = _layout(rng, shape, name, style, layout)
    x = make_view(gp.from_numpy(base))
    host = np.array(make_view(base))
    assert x.shape == host.shape == shape
    return Case(x, host, layout)


@st.composite
def axes_for(draw: st.DrawFn, ndim: int) -> Any:
    """None, one axis (maybe negative) or a tuple of distinct axes of an ndim array."""
    if ndim == 0:
        return draw(st.sampled_from([None, ()]))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    picked = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in picked)


def as_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis % ndim,)
    return tuple(a % ndim for a in axis)


def to_float64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def assert_close(
    got: gp.GPUArray, want: np.ndarray, dtype: str, scale: Any = 0.0, ulps: float = 2
) -> None:
    """got == want within the rounding of `dtype` (relative) plus `scale`'s (absolute).

    `scale` bounds what accumulation error can reach (e.g. the sum of |x|); errors of
    float32 accumulation count against it for half types.
    """
    g = to_float64(got.to_numpy())
    want = to_float64(want)
    assert g.shape == want.shape, (g.shape, want.shape)
    eps = EPS.get(dtype, EPS["float64"])
    # half types accumulate in float32: only the final rounding is at half precision
    accumulation = EPS["float32"] if dtype in ("float16", "bfloat16") else eps
    tol = ulps * eps * np.abs(want) + 8 * accumulation * np.asarray(scale) + 1e-300
    np.testing.assert_array_equal(np.isnan(g), np.isnan(want))
    ok = np.isnan(want) | (g == want) | (np.abs(g - want) <= tol)
    assert ok.all(), (
        f"{dtype}: got {g[~ok]} want {want[~ok]} (tol {np.broadcast_to(tol, ok.shape)[~ok]})"
    )


def plain_signature(fn: Any) -> str:
    """fn's signature without annotations, e.g. "(x, /, *, axis=None, backend=None)"."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
