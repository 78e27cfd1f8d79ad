"""Manipulation functions of the Array API: reshaping, joining, flipping and repeating.

Pure view changes (``broadcast_to``, ``broadcast_arrays``, ``expand_dims``, ``flip``,
``moveaxis``, ``permute_dims``, ``transpose``, ``reshape`` when strides allow,
``squeeze``, ``unstack``) run no kernel: they return `GPUArray` views sharing the input's
buffer. ``tile`` copies a broadcast view with the ``copy`` kernel and ``stack`` runs the
``concat`` kernel on ``expand_dims`` views.

Kernel conventions (what a provider's kernel receives):

- ``concat``: ``kernel(inputs: list[GPUArray], out, axis: int)``: every input already has
  ``out.dtype`` (the core casts the others first) and ``out``'s shape except along the
  non-negative ``axis``; inputs of size 0 along ``axis`` may be in the list.
- ``roll``: ``kernel(x, out, shifts: tuple[int, ...], axes: tuple[int, ...])``: same
  shape and dtype; ``axes`` are distinct and non-negative, ``shifts`` reduced modulo the
  axis length; element ``i`` moves to ``(i + shift) % n`` along each axis.
- ``repeat``: ``kernel(x, repeats, out, axis: int)``: ``repeats`` is a Python int or a
  1-D integer `GPUArray` of length ``x.shape[axis]``, every entry already checked to be
  non-negative, and ``out.shape[axis]`` is the total count (the core reads an array of
  repeats on the host to size ``out``: the output shape depends on the data).

Kernels are looked up with the dtypes they receive: after the core's casts, concat's
inputs all have the result dtype.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .. import _views
from .._array import GPUArray
from .._promotion import promote_types
from ._core import device_of, empty, kernel_on
from .copying import astype
from .copying import copy as _copy

__all__ = [
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "transpose",
    "unstack",
]  # fmt: skip


def _check_array(x: Any, fn: str, name: str = "x") -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{fn}: {name} must be a GPUArray, got {type(x).__name__}")
    return x


def _check_arrays(arrays: Any, fn: str) -> list[GPUArray]:
    if isinstance(arrays, GPUArray) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{fn} wants a list or tuple of GPUArrays, got {type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{fn} needs at least one array")
    for i, a in enumerate(arrays):
        _check_array(a, fn, f"arrays[{i}]")
    device_of(*arrays)  # raises if they live on different devices
    return list(arrays)


def _to_dtype(xs: list[GPUArray]) -> list[GPUArray]:
    """Cast every array to their promoted dtype (kernels then see one dtype)."""
    target = xs[0].dtype
    for x in xs[1:]:
        target = promote_types(target, x.dtype)
    return [x if x.dtype is target else astype(x, target) for x in xs]


# -- views ----------------------------------------------------------------------------


def broadcast_to(x: GPUArray, /, shape: Sequence[int]) -> GPUArray:
    """A read-only-by-convention view of `x` broadcast to `shape` (zero strides)."""
    return _check_array(x, "broadcast_to").broadcast_to(shape)


def broadcast_arrays(*arrays: GPUArray) -> list[GPUArray]:
    """Views of `arrays` broadcast against each other."""
    for i, a in enumerate(arrays):
        _check_array(a, "broadcast_arrays", f"arrays[{i}]")
    shape = _views.broadcast_shapes(*(a.shape for a in arrays))
    return [a.broadcast_to(shape) for a in arrays]


def expand_dims(x: GPUArray, /, axis: int = 0) -> GPUArray:
    """A view of `x` with a new axis of size 1 at `axis` (in [-ndim-1, ndim])."""
    return _check_array(x, "expand_dims").expand_dims(axis)


def squeeze(x: GPUArray, /, axis: int | tuple[int, ...]) -> GPUArray:
    """A view of `x` without the size-1 axes `axis` (ValueError if one is not size 1)."""
    _check_array(x, "squeeze")
    drop = _views.normalize_axes(axis, x.ndim) if x.ndim or axis != () else ()
    for a in drop:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of size {x.shape[a]}")
    keep = [i for i in range(x.ndim) if i not in drop]
    shape = tuple(x.shape[i] for i in keep)
    strides = tuple(x.strides[i] for i in keep)
    return x._view(shape, strides, x.offset)


def permute_dims(x: GPUArray, /, axes: tuple[int, ...]) -> GPUArray:
    """A view of `x` with its axes reordered: output axis i is input axis axes[i]."""
    _check_array(x, "permute_dims")
    perm = _views.normalize_axes(tuple(axes), x.ndim)
    if len(perm) != x.ndim:
        raise ValueError(
            f"permute_dims: axes {tuple(axes)} must name each of the {x.ndim} axes once"
        )
    return x.transpose(perm)


def transpose(a: GPUArray, axes: Sequence[int] | None = None) -> GPUArray:
    """A view of `a` with its axes reversed, or permuted by `axes` (the seed API)."""
    _check_array(a, "transpose", "a")
    if axes is None:
        return a.transpose(tuple(reversed(range(a.ndim))))
    return permute_dims(a, tuple(axes))


def moveaxis(
    x: GPUArray, source: int | tuple[int, ...], destination: int | tuple[int, ...], /
) -> GPUArray:
    """A view of `x` with axes `source` moved to positions `destination`."""
    _check_array(x, "moveaxis")
    src = _views.normalize_axes(source, x.ndim)
    dst = _views.normalize_axes(destination, x.ndim)
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: source {source} and destination {destination} differ in length"
        )
    rest = [a for a in range(x.ndim) if a not in src]
    order: list[int] = [-1] * x.ndim
    for s, d in zip(src, dst, strict=True):
        order[d] = s
    it = iter(rest)
    perm = tuple(next(it) if o == -1 else o for o in order)
    return x.transpose(perm)


def flip(x: GPUArray, /, *, axis: int | tuple[int, ...] | None = None) -> GPUArray:
    """A view of `x` with the order of elements reversed along `axis` (negative strides)."""
    _check_array(x, "flip")
    axes = _views.normalize_axes(axis, x.ndim)
    strides = list(x.strides)
    offset = x.offset
    if x.size:  # an empty array has nothing to reverse and no last element to start at
        for a in axes:
            offset += (x.shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
    return x._view(x.shape, tuple(strides), offset)


def reshape(x: GPUArray, /, shape: tuple[int, ...], *, copy: bool | None = None) -> GPUArray:
    """`x` with a new shape: a view when strides allow; copy=True always copies,
    copy=False raises ValueError rather than copy."""
    _check_array(x, "reshape")
    if copy is True:
        new_shape = _views.resolve_reshape(x.size, shape)
        return _copy(x).reshape(new_shape)
    return x.reshape(shape, copy=copy)


def unstack(x: GPUArray, /, *, axis: int = 0) -> tuple[GPUArray, ...]:
    """Views of `x` split along `axis`, each without that axis."""
    _check_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: a 0-d array has no axis to split along")
    a = _views.normalize_axis(axis, x.ndim)
    keys = [(*(slice(None),) * a, i) for i in range(x.shape[a])]
    return tuple(x[key] for key in keys)


# -- data-moving ----------------------------------------------------------------------


def concat(
    arrays: tuple[GPUArray, ...] | list[GPUArray],
    /,
    *,
    axis: int | None = 0,
    backend: str | None = None,
) -> GPUArray:
    """Join `arrays` along an existing `axis` (None: flatten each first)."""
    xs = _check_arrays(arrays, "concat")
    if axis is None:
        xs = [x.reshape(-1) for x in xs]
        axis = 0
    ndim = xs[0].ndim
    if ndim == 0:
        raise ValueError("concat: 0-d arrays cannot be joined along an axis; use stack")
    a = _views.normalize_axis(axis, ndim)
    first = xs[0].shape
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != ndim or x.shape[:a] + x.shape[a + 1 :] != first[:a] + first[a + 1 :]:
            raise ValueError(
                f"concat along axis {a}: arrays[0] has shape {first} but arrays[{i}] has "
                f"shape {x.shape} (all dimensions but the axis must match)"
            )
    xs = _to_dtype(xs)
    out_shape = (*first[:a], sum(x.shape[a] for x in xs), *first[a + 1 :])
    out = empty(out_shape, xs[0].dtype, xs[0].device)
    fn = kernel_on("concat", out.device, (out.dtype,), backend)
    if out.size:
        fn(xs, out, a)
    return out


def stack(
    arrays: tuple[GPUArray, ...] | list[GPUArray],
    /,
    *,
    axis: int = 0,
    backend: str | None = None,
) -> GPUArray:
    """Join same-shape `arrays` along a new `axis`."""
    xs = _check_arrays(arrays, "stack")
    for i, x in enumerate(xs[1:], 1):
        if x.shape != xs[0].shape:
            raise ValueError(
                f"stack: arrays[0] has shape {xs[0].shape} but arrays[{i}] has shape "
                f"{x.shape} (all must match)"
            )
    a = _views.normalize_axis(axis, xs[0].ndim + 1)
    return concat([x.expand_dims(a) for x in xs], axis=a, backend=backend)


def roll(
    x: GPUArray,
    /,
    shift: int | tuple[int, ...],
    *,
    axis: int | tuple[int, ...] | None = None,
    backend: str | None = None,
) -> GPUArray:
    """Elements of `x` shifted by `shift` along `axis`, wrapping around (None: flattened)."""
    _check_array(x, "roll")
    shifts = tuple(shift) if isinstance(shift, (list, tuple)) else (shift,)
    try:
        shifts = tuple(operator.index(s) for s in shifts)
    except TypeError:
        raise TypeError(f"roll: shift must be an int or a tuple of ints, got {shift!r}") from None
    axes: tuple[int, ...]
    if axis is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: with axis=None, shift must be one int, got {shift!r}")
        axes = (0,)
    else:
        axes_in = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
        axes = tuple(_views.normalize_axis(a, x.ndim) for a in axes_in)
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        elif len(shifts) != len(axes):
            raise ValueError(f"roll: shift {shift!r} and axis {axis!r} must have the same length")
    fn = kernel_on("roll", x.device, (x.dtype,), backend)
    out = empty(x.shape, x.dtype, x.device)
    src, dst = (x.reshape(-1), out.reshape(-1)) if axis is None else (x, out)
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes, strict=True):  # the same axis named twice rolls by the sum
        total[a] = total.get(a, 0) + s
    keys = tuple(total)
    reduced = tuple(total[a] % src.shape[a] if src.shape[a] else 0 for a in keys)
    if out.size:
        fn(src, dst, reduced, keys)
    return out


def repeat(
    x: GPUArray,
    repeats: int | GPUArray,
    /,
    *,
    axis: int | None = None,
    backend: str | None = None,
) -> GPUArray:
    """Each element of `x` repeated `repeats` times along `axis` (None: flattened)."""
    _check_array(x, "repeat")
    if axis is None:
        src, a = x.reshape(-1), 0
    else:
        src = x if x.ndim else x.reshape((1,))  # a 0-d array repeats as a 1-element vector
        a = _views.normalize_axis(axis, src.ndim)
    n = src.shape[a]
    reps: int | GPUArray
    if isinstance(repeats, GPUArray):
        reps, count = _check_repeats_array(repeats, n, src)
    else:
        try:
            reps = operator.index(repeats)
        except TypeError:
            raise TypeError(
                f"repeat: repeats must be an int or an integer GPUArray, not "
                f"{type(repeats).__name__}"
            ) from None
        if reps < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {reps}")
        count = n * reps
    out = empty((*src.shape[:a], count, *src.shape[a + 1 :]), x.dtype, x.device)
    dtypes = (x.dtype,) if isinstance(reps, int) else (x.dtype, reps.dtype)
    fn = kernel_on("repeat", x.device, dtypes, backend)
    if out.size:
        fn(src, reps, out, a)
    return out


def _check_repeats_array(repeats: GPUArray, n: int, x: GPUArray) -> tuple[GPUArray, int]:
    """Validate an array of repeats; its sum sizes the output, so it is read on the host."""
    if not repeats.dtype.is_integer:
        raise TypeError(f"repeat: repeats must have an integer dtype, got {repeats.dtype.name}")
    device_of(x, repeats)
    if repeats.ndim > 1 or (repeats.ndim == 1 and repeats.shape[0] not in (1, n)):
        raise ValueError(
            f"repeat: repeats of shape {repeats.shape} does not broadcast to the {n} "
            "elements along the axis"
        )
    host = repeats.to_numpy().reshape(-1)
    if host.size and host.min() < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {int(host.min())}")
    if host.size == n and repeats.ndim == 1:
        return repeats, int(host.sum())
    # one count for every element: a broadcast view keeps the kernel's convention
    return repeats.reshape((1,)).broadcast_to((n,)), int(host[0]) * n


def tile(x: GPUArray, repetitions: tuple[int, ...], /, *, backend: str | None = None) -> GPUArray:
    """`x` repeated `repetitions[i]` times along each axis i (NumPy's alignment rules)."""
    _check_array(x, "tile")
    try:
        reps = tuple(operator.index(r) for r in repetitions)
    except TypeError:
        raise TypeError(f"tile: repetitions must be a tuple of ints, got {repetitions!r}") from None
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got {reps}")
    ndim = max(len(reps), x.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - x.ndim) + x.shape
    # View x as (1, d0, 1, d1, ...), broadcast to (r0, d0, r1, d1, ...), then copy.
    interleaved = tuple(v for d in shape for v in (1, d))
    target = tuple(v for r, d in zip(reps, shape, strict=True) for v in (r, d))
    view = x.reshape(interleaved).broadcast_to(target)
    out = empty(target, x.dtype, x.device)
    if out.size:
        kernel_on("copy", x.device, (x.dtype,), backend)(view, out)
    return out.reshape(tuple(r * d for r, d in zip(reps, shape, strict=True)))
