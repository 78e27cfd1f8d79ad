"""Hypothesis strategies that build GPUArrays from random NumPy data.

Every array is new (never a cached constant) and filled from a NumPy generator seeded by
hypothesis, so failures shrink and replay. Elements are bounded so arithmetic stays in
range; `views` adds the layouts kernels most often get wrong: transposed, reversed and
stepped slices, broadcast (zero-stride) views, offsets, and sizes 0 and 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .. import _dtypes as dt
from .._array import GPUArray
from .._device import Device
from .._dtypes import DataType, as_dtype

Shape = tuple[int, ...]

#: kind names accepted by `dtypes`: "bool", "signed", "unsigned", "integer", "float"
#: (arithmetic floats, float16 to float64), "complex", "float8", "numeric" (real), "all"
#: (every real dtype; add "complex" for those)
_KINDS: dict[str, tuple[DataType, ...]] = {
    "bool": (dt.bool_,),
    "signed": tuple(d for d in dt.INTEGER_DTYPES if d.kind == "i"),
    "unsigned": tuple(d for d in dt.INTEGER_DTYPES if d.kind == "u"),
    "integer": dt.INTEGER_DTYPES,
    "float": dt.FLOAT_DTYPES,
    "complex": dt.COMPLEX_DTYPES,
    "float8": tuple(d for d in dt.ALL_DTYPES if d.is_float8),
    "numeric": dt.NUMERIC_DTYPES,
    "all": dt.ALL_DTYPES,
}


def dtypes(kinds: str | Iterable[str] = "numeric") -> st.SearchStrategy[DataType]:
    """PyGPUkit dtypes of the given kinds (see `_KINDS`), e.g. ``dtypes(["integer", "bool"])``."""
    names = [kinds] if isinstance(kinds, str) else list(kinds)
    chosen: list[DataType] = []
    for name in names:
        if name not in _KINDS:
            raise ValueError(f"unknown dtype kind {name!r}; choose from {', '.join(_KINDS)}")
        chosen += [d for d in _KINDS[name] if d not in chosen]
    return st.sampled_from(chosen)


def shapes(
    min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 5
) -> st.SearchStrategy[Shape]:
    """Array shapes; with the defaults they include 0-d, size 0 and size 1."""
    if not 0 <= min_dims <= max_dims or not 0 <= min_side <= max_side:
        raise ValueError(
            f"need 0 <= min_dims <= max_dims and 0 <= min_side <= max_side, got dims "
            f"[{min_dims}, {max_dims}] and sides [{min_side}, {max_side}]"
        )
    side = st.integers(min_side, max_side)
    return st.lists(side, min_size=min_dims, max_size=max_dims).map(tuple)


def default_bounds(dtype: Any) -> tuple[float, float]:
    """Element bounds that keep products of two elements inside `dtype`'s range (for
    complex dtypes: of each part)."""
    d = as_dtype(dtype)
    if d.kind == "b":
        return (0, 1)
    if d.kind == "u":
        return (0, 15)
    if d.kind == "i":
        return (-11, 11)
    return (-10.0, 10.0)


def random_numpy(
    rng: np.random.Generator, shape: Shape, dtype: Any, bounds: tuple[float, float] | None = None
) -> np.ndarray:
    """Random host data of `dtype` in `bounds` (inclusive for ints); never all zeros."""
    d = as_dtype(dtype)
    lo, hi = default_bounds(d) if bounds is None else bounds
    if d.kind == "b":
        values: np.ndarray = rng.random(shape) < 0.5
    elif d.is_integer:
        values = rng.integers(int(lo), int(hi), size=shape, endpoint=True)
    elif d.is_complex:  # both parts in [lo, hi]
        values = rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)
    else:
        values = rng.uniform(lo, hi, size=shape)
    out = np.asarray(values).astype(d.to_numpy_dtype())
    if out.size and not out.any() and (hi != 0 or lo != 0):
        out.reshape(-1)[0] = out.dtype.type(hi if hi != 0 else lo)  # a 0 draw says little
    return out


@st.composite
def numpy_arrays(
    draw: st.DrawFn,
    dtype: Any,
    shape: Shape | st.SearchStrategy[Shape],
    elements: tuple[float, float] | None = None,
) -> np.ndarray:
    """Host NumPy arrays of `dtype` with random elements in `elements` (lo, hi)."""
    d = draw(dtype) if isinstance(dtype, st.SearchStrategy) else as_dtype(dtype)
    s = draw(shape) if isinstance(shape, st.SearchStrategy) else tuple(shape)
    seed = draw(st.integers(0, 2**32 - 1))
    return random_numpy(np.random.default_rng(seed), s, d, elements)


def arrays(
    dtype: Any,
    shape: Shape | st.SearchStrategy[Shape],
    elements: tuple[float, float] | None = None,
    device: Device | str | None = None,
) -> st.SearchStrategy[GPUArray]:
    """Fresh contiguous GPUArrays; `dtype` and `shape` may be values or strategies."""
    return numpy_arrays(dtype, shape, elements).map(lambda h: GPUArray.from_numpy(h, device))


def broadcastable_shapes(
    shape: Shape, min_dims: int = 0, max_dims: int | None = None, max_side: int = 4
) -> st.SearchStrategy[Shape]:
    """Shapes that broadcast with `shape` (leading dims added, sides dropped to 1)."""
    top = max(len(shape), 1) + 1 if max_dims is None else max_dims

    @st.composite
    def build(draw: st.DrawFn) -> Shape:
        ndim = draw(st.integers(min_dims, top))
        out = []
        for i in range(ndim):
            j = len(shape) - ndim + i  # the matching dimension of `shape`, if any
            if j < 0:
                out.append(draw(st.integers(1, max_side)))
            else:
                out.append(draw(st.sampled_from([shape[j], 1])))
        return tuple(out)

    return build()


@st.composite
def array_pairs(
    draw: st.DrawFn,
    dtypes1: st.SearchStrategy[DataType] | None = None,
    dtypes2: st.SearchStrategy[DataType] | None = None,
    *,
    shape: st.SearchStrategy[Shape] | None = None,
    elements1: tuple[float, float] | None = None,
    elements2: tuple[float, float] | None = None,
    device: Device | str | None = None,
) -> tuple[GPUArray, GPUArray]:
    """Two fresh arrays whose shapes broadcast together, for binary ops.

    `dtypes2` defaults to the dtype drawn for the first array, so pairs share a dtype
    unless you ask for mixed ones.
    """
    d1 = draw(dtypes() if dtypes1 is None else dtypes1)
    d2 = d1 if dtypes2 is None else draw(dtypes2)
    s1 = draw(shapes(max_dims=3, max_side=4) if shape is None else shape)
    s2 = draw(broadcastable_shapes(s1))
    if draw(st.booleans()):
        s1, s2 = s2, s1
    a = draw(arrays(d1, s1, elements1, device))
    b = draw(arrays(d2, s2, elements2, device))
    return a, b


#: the view kinds `views` can produce
VIEW_KINDS = ("contiguous", "transposed", "reversed", "stepped", "offset", "broadcast", "expanded")


@st.composite
def views(
    draw: st.DrawFn,
    dtype: Any | st.SearchStrategy[DataType] = None,
    shape: st.SearchStrategy[Shape] | None = None,
    elements: tuple[float, float] | None = None,
    *,
    kinds: Sequence[str] = VIEW_KINDS,
    device: Device | str | None = None,
) -> GPUArray:
    """A view of a fresh array: transposed, reversed, stepped, offset, broadcast, ...

    The view's own shape is drawn from `shape` (default: 0 to 3 dims, sides 0 to 4); the
    parent array is made larger as each kind needs, so the view is never contiguous
    unless `kind` is "contiguous" or its shape makes that moot (sizes 0 and 1).
    """
    unknown = set(kinds) - set(VIEW_KINDS)
    if unknown:
        raise ValueError(f"unknown view kinds {sorted(unknown)}; choose from {VIEW_KINDS}")
    if dtype is None:
        d = draw(dtypes())
    elif isinstance(dtype, st.SearchStrategy):
        d = draw(dtype)
    else:
        d = as_dtype(dtype)
    target: Shape = draw(shapes(max_side=4) if shape is None else shape)
    kind = draw(st.sampled_from(list(kinds)))
    if kind in ("transposed", "reversed", "stepped", "expanded") and not target:
        kind = "contiguous"  # nothing to permute or step in 0-d; broadcast/offset still apply
    nd = len(target)
    if kind == "transposed":
        perm = draw(st.permutations(range(nd)))
        parent_shape = [0] * nd
        for i, p in enumerate(perm):
            parent_shape[p] = target[i]
        parent = draw(arrays(d, tuple(parent_shape), elements, device))
        return parent.transpose(tuple(perm))
    if kind == "reversed":
        parent = draw(arrays(d, target, elements, device))
        return parent[tuple(slice(None, None, -1) for _ in target)]
    if kind == "stepped":
        steps = [draw(st.sampled_from([2, 3, -2])) for _ in target]
        spans = tuple(max(n * abs(s) - abs(s) + 1, 0) for n, s in zip(target, steps, strict=True))
        parent = draw(arrays(d, spans, elements, device))
        return parent[tuple(slice(None, None, s) for s in steps)]
    if kind == "offset":
        parent = draw(arrays(d, (2, *(n + 1 for n in target)), elements, device))
        key = (1, *(slice(1, None) for _ in target))
        return parent[key]
    if kind == "broadcast":
        small = tuple(draw(st.sampled_from([n, 1])) for n in target)
        lead = draw(st.integers(0, min(nd, 1)))
        parent = draw(arrays(d, small[lead:], elements, device))
        return parent.broadcast_to(target)
    if kind == "expanded":
        axis = draw(st.integers(0, nd - 1))
        if target[axis] != 1:
            kind = "contiguous"
        else:
            parent = draw(arrays(d, target[:axis] + target[axis + 1 :], elements, device))
            return parent.expand_dims(axis)
    return draw(arrays(d, target, elements, device))
