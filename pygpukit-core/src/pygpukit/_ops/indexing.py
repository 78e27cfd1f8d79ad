"""Indexing functions (`take`, `take_along_axis`) and advanced `x[...]` / `x[...] = v`.

Advanced indices supported (NumPy semantics):

- one boolean array after slices and ``...`` only, covering the dimensions it starts at
  (``x[mask]``, ``x[:, mask]``, ``x[..., mask]``), optionally followed by basic indices
  (``x[mask, 1:3]``); the selected elements form one dimension where the mask stood;
  and a Python ``True``/``False`` alone;
- integer arrays (and Python ints) mixed with slices and ``...``: the index arrays
  broadcast together; their dimensions replace the indexed axes when those are adjacent,
  and go first otherwise.

Anything else (``None`` or booleans among integer index arrays, several boolean arrays,
a boolean array after an integer) raises IndexError naming what is unsupported. Lists and NumPy
arrays used as indices are copied to the array's device (they are part of the index
expression, not data). Out-of-range indices raise IndexError naming the index and the
axis: CPU kernels check on the host before touching data; GPU backends check in the
kernel and raise after synchronising.

Kernel conventions (indices may have any integer dtype; negative ones count from the end):

- ``take``: ``kernel(x, indices, out, axis)``: ``out.shape`` is
  ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``.
- ``take_along_axis``: ``kernel(x, indices, out, axis)``: ``x`` and ``indices`` are views
  broadcast to ``out``'s shape everywhere but ``axis``; ``out.shape == indices.shape``.
- ``gather``: ``kernel(x, indices: list[GPUArray], axes: tuple[int, ...], out)``: the
  index arrays are broadcast to one shape B and index the distinct increasing ``axes``
  of ``x``; ``out`` is B followed by the other axes of ``x`` in order.
- ``scatter``: ``kernel(x, indices, axes, values)``: the inverse of ``gather``: ``values``
  (of ``x.dtype``, broadcast to the gather output's shape) are written into ``x``; which
  write wins for a repeated index is unspecified.
- ``mask_select``: ``kernel(x, mask) -> GPUArray``: ``x`` is a view whose leading
  dimensions are the mask's shape (the core moves them first); the kernel allocates
  and returns the selected rows, shape ``(count,) + x.shape[mask.ndim:]`` (the one
  data-dependent shape here).
- ``mask_assign``: ``kernel(x, mask, value)``: ``x`` as for ``mask_select``; ``value`` is
  a Python scalar that fits ``x.dtype``, or a `GPUArray` of ``x.dtype`` with the rank of
  ``(count,) + x.shape[mask.ndim:]`` and broadcastable to it; only the kernel knows
  ``count``, so it checks the leading dimension (ValueError naming both sizes).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import _views
from .._array import GPUArray
from .._indexing import is_basic_index
from ._core import device_of, empty, kernel_on, scalar_or_array
from .copying import astype, fill

__all__ = ["take", "take_along_axis"]


def _check_index_array(indices: Any, fn: str) -> GPUArray:
    if not isinstance(indices, GPUArray):
        raise TypeError(f"{fn}: indices must be a GPUArray, got {type(indices).__name__}")
    if not indices.dtype.is_integer:
        raise TypeError(f"{fn}: indices must have an integer dtype, got {indices.dtype.name}")
    return indices


def take(
    x: GPUArray, indices: GPUArray, /, *, axis: int | None = None, backend: str | None = None
) -> GPUArray:
    """Elements of `x` at `indices` along `axis` (optional only for 1-D `x`)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"take: x must be a GPUArray, got {type(x).__name__}")
    _check_index_array(indices, "take")
    device_of(x, indices)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(
                f"take: axis is required for a {x.ndim}-D array (shape {x.shape}); "
                "use take(reshape(x, (-1,)), indices) for the flattened array"
            )
        axis = 0
    if x.ndim == 0:
        raise ValueError("take: x must have at least one dimension")
    a = _views.normalize_axis(axis, x.ndim)
    fn = kernel_on("take", x.device, (x.dtype, indices.dtype), backend)
    out = empty((*x.shape[:a], *indices.shape, *x.shape[a + 1 :]), x.dtype, x.device)
    if out.size or x.shape[a] == 0:  # an empty axis still has its indices checked
        fn(x, indices, out, a)
    return out


def take_along_axis(
    x: GPUArray, indices: GPUArray, /, *, axis: int = -1, backend: str | None = None
) -> GPUArray:
    """Elements of `x` at `indices` along `axis`, the other axes matched (and broadcast)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"take_along_axis: x must be a GPUArray, got {type(x).__name__}")
    _check_index_array(indices, "take_along_axis")
    device_of(x, indices)
    if x.ndim == 0 or indices.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis: x (shape {x.shape}) and indices (shape {indices.shape}) must "
            "have the same number of dimensions, at least one"
        )
    a = _views.normalize_axis(axis, x.ndim)
    others = [(n, m) for i, (n, m) in enumerate(zip(x.shape, indices.shape, strict=True)) if i != a]
    try:
        batch = _views.broadcast_shapes(tuple(n for n, _ in others), tuple(m for _, m in others))
    except ValueError:
        raise ValueError(
            f"take_along_axis: x (shape {x.shape}) and indices (shape {indices.shape}) do "
            f"not broadcast outside axis {a}"
        ) from None
    x_shape = (*batch[:a], x.shape[a], *batch[a:])
    out_shape = (*batch[:a], indices.shape[a], *batch[a:])
    fn = kernel_on("take_along_axis", x.device, (x.dtype, indices.dtype), backend)
    out = empty(out_shape, x.dtype, x.device)
    if out.size:
        fn(x.broadcast_to(x_shape), indices.broadcast_to(out_shape), out, a)
    return out


# -- x[key] and x[key] = value -------------------------------------------------------


def _as_index(item: Any, device: Any) -> Any:
    """Lists and NumPy arrays in an index become GPUArrays on the indexed array's device."""
    if isinstance(item, (list, np.ndarray)):
        host = np.asarray(item)
        if host.size == 0 and host.dtype.kind == "f":
            host = host.astype(np.int64)  # [] indexes nothing, as in NumPy
        if host.dtype.kind not in "biu":
            raise IndexError(
                f"arrays used as indices must be of integer or boolean type, got {host.dtype}"
            )
        return GPUArray.from_numpy(host, device)
    if isinstance(item, GPUArray) and not (item.dtype.is_integer or item.dtype.kind == "b"):
        raise IndexError(
            f"arrays used as indices must be of integer or boolean type, got {item.dtype.name}"
        )
    return item


def _is_mask(item: Any) -> bool:
    return isinstance(item, GPUArray) and item.dtype.kind == "b"


def _parse(x: GPUArray, key: Any) -> tuple[Any, ...]:
    items = key if isinstance(key, tuple) else (key,)
    items = tuple(_as_index(it, x.device) for it in items)
    for it in items:
        if isinstance(it, GPUArray):
            device_of(x, it)
        elif not (it is None or it is Ellipsis or isinstance(it, slice) or _is_int(it)):
            raise IndexError(
                "only integers, slices, '...', None and integer or boolean arrays are "
                f"valid indices, got {type(it).__name__} {it!r:.40}"
            )
    return items


def _is_int(item: Any) -> bool:
    try:
        operator.index(item)
    except TypeError:
        return False
    return True


def _mask_parts(x: GPUArray, items: tuple[Any, ...]) -> tuple[GPUArray, GPUArray, int] | None:
    """For a key with one boolean mask after slices and '...' only: (view, mask, position).

    The view has the mask's dimensions moved first; position is where the selected
    elements' dimension goes in the result. None when the key has no such mask.
    """
    at = next((i for i, it in enumerate(items) if _is_mask(it)), None)
    if at is None or not all(isinstance(it, slice) or it is Ellipsis for it in items[:at]):
        return None
    mask, prefix, rest = items[at], items[:at], items[at + 1 :]
    if not is_basic_index(rest):
        raise IndexError(
            "a boolean array index can only be followed by integers, slices, '...' and "
            f"None; got {tuple(type(it).__name__ for it in rest)}"
        )
    if sum(1 for it in (*prefix, *rest) if it is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_slices = sum(1 for it in prefix if isinstance(it, slice))
    used_after = sum(1 for it in rest if it is not None and it is not Ellipsis)
    pos = x.ndim - mask.ndim - used_after if Ellipsis in prefix else n_slices
    covered = x.shape[pos : pos + mask.ndim]
    # an empty mask dimension selects nothing from a dimension of any length (as NumPy)
    if (pos < n_slices or pos + mask.ndim > x.ndim
            or any(k not in (n, 0) for n, k in zip(covered, mask.shape, strict=True))):  # fmt: skip
        raise IndexError(
            f"boolean index of shape {mask.shape} does not match the dimensions it covers "
            f"in the array of shape {x.shape}"
        )
    lead: list[Any] = []
    for it in prefix:
        lead.extend([slice(None)] * (pos - n_slices) if it is Ellipsis else [it])
    pairs = zip(covered, mask.shape, strict=True)
    spans = (slice(None) if k == n else slice(0, 0) for n, k in pairs)
    key = (*lead, *spans, *rest)
    v = x[key] if key else x
    dims = list(range(v.ndim))
    order = dims[pos : pos + mask.ndim] + dims[:pos] + dims[pos + mask.ndim :]
    return v.transpose(tuple(order)), mask, pos


def _move_first_to(x: GPUArray, pos: int) -> GPUArray:
    """A view with axis 0 moved to `pos` (where NumPy puts a mask's selected elements)."""
    if pos == 0:
        return x
    dims = list(range(1, x.ndim))
    return x.transpose((*dims[:pos], 0, *dims[pos:]))


def _int_parts(
    x: GPUArray, items: tuple[Any, ...]
) -> tuple[GPUArray, list[GPUArray], tuple[int, ...], bool]:
    """(sliced view, broadcast index arrays, indexed axes, adjacent) for integer arrays."""
    if any(it is None for it in items):
        raise IndexError("None (newaxis) mixed with index arrays is not supported")
    if any(_is_mask(it) for it in items) or any(isinstance(it, bool) for it in items):
        raise IndexError(
            "a boolean index is only supported after slices and '...' (covering the "
            "dimensions it starts at), not mixed with integers or integer index arrays"
        )
    n_ellipsis = sum(1 for it in items if it is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_used = len(items) - n_ellipsis
    if n_used > x.ndim:
        raise IndexError(
            f"too many indices: array is {x.ndim}-dimensional, but {n_used} were given"
        )
    full: list[Any] = []
    for it in items:
        if it is Ellipsis:
            full.extend([slice(None)] * (x.ndim - n_used))
        else:
            full.append(it)
    full.extend([slice(None)] * (x.ndim - len(full)))
    axes = tuple(i for i, it in enumerate(full) if not isinstance(it, slice))
    arrays: list[GPUArray] = []
    for i in axes:
        it = full[i]
        if not isinstance(it, GPUArray):
            it = _int_index(operator.index(it), x.shape[i], i, x.device)
        arrays.append(it)
    shape = _views.broadcast_shapes(*(a.shape for a in arrays))
    arrays = [a.broadcast_to(shape) for a in arrays]
    view = x[tuple(slice(None) if i in axes else it for i, it in enumerate(full))]
    adjacent = axes == tuple(range(axes[0], axes[0] + len(axes)))
    return view, arrays, axes, adjacent


def _int_index(i: int, n: int, axis: int, device: Any) -> GPUArray:
    """A Python int among index arrays: checked here, since broadcasting may hide it."""
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return GPUArray.from_numpy(np.asarray(i, np.int64), device)


def _front_layout(result: GPUArray, first_axis: int, nb: int, adjacent: bool) -> GPUArray:
    """A view of the result in the kernels' layout (index dims first); identity if not adjacent."""
    if not adjacent or first_axis == 0:
        return result
    dims = list(range(result.ndim))
    order = dims[first_axis : first_axis + nb] + dims[:first_axis] + dims[first_axis + nb :]
    return result.transpose(tuple(order))


def getitem_advanced(x: GPUArray, key: Any) -> GPUArray:
    """`x[key]` for a boolean mask or integer index arrays (see the module docstring)."""
    if key is True or key is False:
        return x.expand_dims(0)[: int(key)]
    items = _parse(x, key)
    masked = _mask_parts(x, items)
    if masked is not None:
        v, mask, pos = masked
        fn = kernel_on("mask_select", x.device, (x.dtype, mask.dtype))
        result: GPUArray = fn(v, mask)
        return _move_first_to(result, pos)
    view, arrays, axes, adjacent = _int_parts(x, items)
    b = arrays[0].shape
    rest = [view.shape[i] for i in range(view.ndim) if i not in axes]
    shape = (*rest[: axes[0]], *b, *rest[axes[0] :]) if adjacent else (*b, *rest)
    out = empty(shape, x.dtype, x.device)
    fn = kernel_on("gather", x.device, (x.dtype, *(a.dtype for a in arrays)))
    if out.size or any(view.shape[i] == 0 for i in axes):
        fn(view, arrays, axes, _front_layout(out, axes[0], len(b), adjacent))
    return out


def _value_of(x: GPUArray, value: Any) -> GPUArray | bool | int | float | complex:
    src = scalar_or_array(value, "value")
    if isinstance(src, GPUArray):
        device_of(x, src)
        if src.dtype is not x.dtype:
            src = astype(src, x.dtype)
    return src


def setitem_advanced(x: GPUArray, key: Any, value: Any) -> None:
    """`x[key] = value` for a boolean mask or integer index arrays."""
    x.check_writable("the assignment target")
    if key is True or key is False:
        from .copying import assign

        assign(x.expand_dims(0)[: int(key)], value)
        return
    items = _parse(x, key)
    src = _value_of(x, value)
    masked = _mask_parts(x, items)
    if masked is not None:
        v, mask, pos = masked
        tail = v.shape[mask.ndim :]
        if isinstance(src, GPUArray):
            # the value is laid out as the result (count at pos); move count first
            target = (*tail[:pos], "count", *tail[pos:])
            _check_value_shape(src.shape, target)
            src = src.reshape((1,) * (len(target) - src.ndim) + src.shape)
            src = src.transpose((pos, *(i for i in range(src.ndim) if i != pos)))
        else:
            _check_scalar(x, src)
        kernel_on("mask_assign", x.device, (x.dtype, mask.dtype))(v, mask, src)
        return
    view, arrays, axes, adjacent = _int_parts(x, items)
    b = arrays[0].shape
    rest = [view.shape[i] for i in range(view.ndim) if i not in axes]
    shape = (*rest[: axes[0]], *b, *rest[axes[0] :]) if adjacent else (*b, *rest)
    if not isinstance(src, GPUArray):
        _check_scalar(x, src)
        filled = empty((), x.dtype, x.device)
        fill(filled, src)
        src = filled
    _check_value_shape(src.shape, shape)
    values = src.broadcast_to(shape)
    fn = kernel_on("scatter", x.device, (x.dtype, *(a.dtype for a in arrays)))
    fn(view, arrays, axes, _front_layout(values, axes[0], len(b), adjacent))


def _check_scalar(x: GPUArray, value: bool | int | float | complex) -> None:
    # reuse fill's checks (ints that do not fit, NaN into integers) on a 0-element view
    fill(x.expand_dims(0)[:0], value)


def _check_value_shape(shape: tuple[int, ...], target: tuple[Any, ...]) -> None:
    """ValueError unless `shape` broadcasts to `target` ("count" matches any size)."""
    if len(shape) > len(target):
        raise ValueError(f"cannot assign an array of shape {shape} to an index of shape {target}")
    for n, t in zip(reversed(shape), reversed(target), strict=False):
        if n != 1 and t != "count" and n != t:
            raise ValueError(
                f"cannot assign an array of shape {shape} to an index of shape {target}"
            )
