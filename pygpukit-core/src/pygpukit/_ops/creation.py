"""Creation functions of the Array API, plus the seed's `from_numpy`.

Kernel conventions: ``fill(out, value)``; ``arange(out, start, step)`` writes
``start + i * step``; ``eye(out, k)`` writes ones on diagonal k and zeros elsewhere;
``tril``/``triu``: ``kernel(x, out, k)``.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import _dtypes as dt
from .._array import GPUArray
from .._device import Device
from .._promotion import check_int_fits
from .._views import normalize_shape
from ._core import empty as _empty
from ._core import kernel_on, target_device
from .copying import astype, fill


def _dtype_or(dtype: Any, default: dt.DataType) -> dt.DataType:
    return default if dtype is None else dt.as_dtype(dtype)


def empty(shape: Any, *, dtype: Any = None, device: Device | str | None = None) -> GPUArray:
    """A new array with uninitialised contents."""
    return _empty(normalize_shape(shape), _dtype_or(dtype, dt.DEFAULT_FLOAT), target_device(device))


def _fill_scalar(value: Any) -> bool | int | float | complex:
    # NumPy scalars are accepted as their Python value; anything else is refused before
    # a kernel sees it (a string would otherwise fail inside the kernel).
    if isinstance(value, (bool, int, float, complex)):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return value.item()
    raise TypeError(f"fill_value must be a bool, int, float or complex, not {type(value).__name__}")


def full(
    shape: Any,
    fill_value: bool | int | float | complex,
    *,
    dtype: Any = None,
    device: Device | str | None = None,
    backend: str | None = None,
) -> GPUArray:
    """A new array with every element `fill_value`."""
    value = _fill_scalar(fill_value)
    if dtype is None:
        dtype = dt.as_dtype(type(value))
    out = empty(shape, dtype=dtype, device=device)
    fill(out, value, backend)
    return out


def zeros(
    shape: Any,
    *,
    dtype: Any = None,
    device: Device | str | None = None,
    backend: str | None = None,
) -> GPUArray:
    """A new array of zeros."""
    return full(shape, 0, dtype=_dtype_or(dtype, dt.DEFAULT_FLOAT), device=device, backend=backend)


def ones(
    shape: Any,
    *,
    dtype: Any = None,
    device: Device | str | None = None,
    backend: str | None = None,
) -> GPUArray:
    """A new array of ones."""
    return full(shape, 1, dtype=_dtype_or(dtype, dt.DEFAULT_FLOAT), device=device, backend=backend)


def _like(x: GPUArray, dtype: Any, device: Any) -> tuple[dt.DataType, Device]:
    if not isinstance(x, GPUArray):
        raise TypeError(f"expected a GPUArray, got {type(x).__name__}")
    return _dtype_or(dtype, x.dtype), x.device if device is None else target_device(device)


def empty_like(x: GPUArray, /, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """A new array of `x`'s shape with uninitialised contents."""
    d, dev = _like(x, dtype, device)
    return _empty(x.shape, d, dev)


def full_like(
    x: GPUArray,
    /,
    fill_value: bool | int | float | complex,
    *,
    dtype: Any = None,
    device: Any = None,
    backend: str | None = None,
) -> GPUArray:
    """A new array of `x`'s shape (and dtype, device unless given) filled with `fill_value`."""
    d, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=d, device=dev, backend=backend)


def zeros_like(
    x: GPUArray, /, *, dtype: Any = None, device: Any = None, backend: str | None = None
) -> GPUArray:
    """A new array of zeros shaped like `x`."""
    return full_like(x, 0, dtype=dtype, device=device, backend=backend)


def ones_like(
    x: GPUArray, /, *, dtype: Any = None, device: Any = None, backend: str | None = None
) -> GPUArray:
    """A new array of ones shaped like `x`."""
    return full_like(x, 1, dtype=dtype, device=device, backend=backend)


def from_numpy(array: np.ndarray, device: Device | str | None = None) -> GPUArray:
    """Copy a NumPy array to the device, keeping its dtype (float64 stays float64)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy wants a numpy.ndarray, got {type(array).__name__}")
    return GPUArray.from_numpy(array, device)


def asarray(
    obj: Any,
    /,
    *,
    dtype: Any = None,
    device: Device | str | None = None,
    copy: bool | None = None,
) -> GPUArray:
    """An array from a GPUArray, NumPy array, buffer, nested sequence or scalar.

    Python floats become the default float dtype (float32) and ints int64, as the Array
    API lets a library choose; NumPy arrays keep their dtype unless `dtype` is given.
    """
    if isinstance(obj, GPUArray):
        out = obj if device is None else obj.to_device(device)
        if dtype is not None and dt.as_dtype(dtype) is not out.dtype:
            if copy is False:
                raise ValueError("asarray: changing the dtype needs a copy (copy=False)")
            return astype(out, dtype)
        if copy and out is obj:
            return out.copy()
        return out
    if copy is False:
        raise ValueError("asarray: host data must be copied to the device (copy=False)")
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        host = np.from_dlpack(obj)
    else:
        host = np.asarray(obj)
        if host.dtype.kind == "O" or host.dtype == np.uint64:
            _check_python_ints(host)
    if dtype is not None:
        target = dt.as_dtype(dtype)
        if target.is_integer and host.dtype.kind == "f" and host.size:
            lossy = host[~np.isfinite(host) | (host != np.trunc(host))]
            if lossy.size:  # whole floats (and empty input, float64 in NumPy) convert exactly
                raise TypeError(
                    f"asarray: {float(lossy.flat[0])!r} is not a whole number: refusing to "
                    f"truncate floats to {target.name} silently"
                )
            check_int_fits(int(host.min()), target)
            check_int_fits(int(host.max()), target)
        if target.is_integer and host.dtype.kind in "iu" and host.size:
            check_int_fits(int(host.min()), target)
            check_int_fits(int(host.max()), target)
        if host.dtype.kind == "c" and not target.is_complex:
            raise TypeError(
                f"asarray: cannot convert complex data to {target.name} (it would drop the "
                "imaginary part)"
            )
        host = host.astype(target.to_numpy_dtype())
    elif not isinstance(obj, np.ndarray) and host.dtype == np.float64:
        host = host.astype(np.float32)  # Python floats take the default float dtype
    elif not isinstance(obj, np.ndarray) and host.dtype == np.complex128:
        host = host.astype(np.complex64)  # and Python complex numbers the default complex
    elif host.dtype.kind in "OUS":
        raise TypeError(f"asarray: cannot make an array from {type(obj).__name__} {obj!r:.60}")
    return GPUArray.from_numpy(host, target_device(device))


def _int_arg(fn: str, name: str, value: Any) -> int:
    """`value` as an int (bools refused); TypeError naming the function and argument."""
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be an int, got bool {value}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{fn}: {name} must be an int, got {type(value).__name__} {value!r}"
        ) from None


def _check_python_ints(host: np.ndarray) -> None:
    """Python ints beyond int64 make NumPy fall back to uint64 or objects: say which value."""
    for value in host.flat:
        is_int = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        if is_int and not -(2**63) <= int(value) < 2**63:
            raise OverflowError(
                f"asarray: {int(value)} overflows int64 (the integer dtype for Python "
                f"ints holds {-(2**63)} to {2**63 - 1}); pass floats or dtype='float64'"
            )


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: Any = None,
    device: Device | str | None = None,
    backend: str | None = None,
) -> GPUArray:
    """Evenly spaced values in [start, stop)."""
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, (int, float)):
            raise TypeError(f"arange: {name} must be an int or float, got {v!r}")
        if not math.isfinite(v):
            raise ValueError(f"arange: {name} must be finite, got {v!r}")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_int = all(isinstance(v, int) for v in (start, stop, step))
    out_dtype = _dtype_or(dtype, dt.DEFAULT_INT if is_int else dt.DEFAULT_FLOAT)
    if out_dtype.is_complex:
        raise TypeError(f"arange: dtype must be a real dtype, got {out_dtype.name}")
    # integer arithmetic for ints: float division miscounts beyond 2**53
    n = int(max(0, -((start - stop) // step) if is_int else math.ceil((stop - start) / step)))
    if n and out_dtype.is_integer:
        for v in (start, start + (n - 1) * step):  # the ends are the extremes
            check_int_fits(int(v), out_dtype)
    out = _empty((n,), out_dtype, target_device(device))
    if n:
        kernel_on("arange", out.device, (out_dtype,), backend)(out, start, step)
    return out


def linspace(
    start: int | float | complex,
    stop: int | float | complex,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: Device | str | None = None,
    endpoint: bool = True,
    backend: str | None = None,
) -> GPUArray:
    """`num` evenly spaced values from start to stop (inclusive unless endpoint=False)."""
    num = _int_arg("linspace", "num", num)
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    default = dt.DEFAULT_COMPLEX if is_complex else dt.DEFAULT_FLOAT
    out = _empty((num,), _dtype_or(dtype, default), target_device(device))
    if is_complex and not out.dtype.is_complex:
        raise TypeError(f"linspace: complex start/stop need a complex dtype, got {out.dtype}")
    if num:
        div = (num - 1) if endpoint else num
        step = (stop - start) / div if div else 0.0
        kernel_on("linspace", out.device, (out.dtype,), backend)(out, start, stop, step, endpoint)
    return out


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: Any = None,
    device: Device | str | None = None,
    backend: str | None = None,
) -> GPUArray:
    """A 2-D array with ones on diagonal k."""
    _int_arg("eye", "k", k)
    shape = normalize_shape((n_rows, n_rows if n_cols is None else n_cols))
    out = _empty(shape, _dtype_or(dtype, dt.DEFAULT_FLOAT), target_device(device))
    if out.size:
        kernel_on("eye", out.device, (out.dtype,), backend)(out, _int_arg("eye", "k", k))
    return out


def _triangle(op: str, x: GPUArray, k: int, backend: str | None) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{op} wants a GPUArray, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{op} wants an array of at least 2 dimensions, got shape {x.shape}")
    out = _empty(x.shape, x.dtype, x.device)
    if out.size:
        kernel_on(op, x.device, (x.dtype,), backend)(x, out, operator.index(k))
    return out


def tril(x: GPUArray, /, *, k: int = 0, backend: str | None = None) -> GPUArray:
    """Zeros above diagonal k of the last two dimensions."""
    return _triangle("tril", x, k, backend)


def triu(x: GPUArray, /, *, k: int = 0, backend: str | None = None) -> GPUArray:
    """Zeros below diagonal k of the last two dimensions."""
    return _triangle("triu", x, k, backend)


def meshgrid(*arrays: GPUArray, indexing: str = "xy", copy: bool = True) -> list[GPUArray]:
    """Coordinate grids from 1-D arrays: new arrays, or with ``copy=False`` read-only
    broadcast views of the inputs (as ``numpy.meshgrid``)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for i, a in enumerate(arrays):
        if not isinstance(a, GPUArray):
            raise TypeError(f"meshgrid: arrays[{i}] is a {type(a).__name__}, not a GPUArray")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: arrays[{i}] must be 1-D, got shape {a.shape}")
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) >= 2 and i < 2:
            axis = 1 - i
        view_shape = [1] * len(arrays)
        view_shape[axis] = a.shape[0]
        grid = a.reshape(tuple(view_shape)).broadcast_to(tuple(shape))
        out.append(grid.copy() if copy else grid)
    return out


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> GPUArray:
    """An array from any object with ``__dlpack__``.

    Memory on a device PyGPUkit serves (a CUDA tensor of PyTorch or CuPy) is shared, not
    copied, unless ``copy=True`` or another ``device`` is asked for; host data is copied
    to the device.
    """
    if isinstance(x, GPUArray):
        out = x if device is None else x.to_device(device)
        return out.copy() if copy and out is x else out
    shared = _from_device_dlpack(x)
    if shared is not None:
        out = shared if device is None else shared.to_device(device)
        if copy and out is shared:
            return out.copy()
        if copy is False and out is not shared:
            raise ValueError("from_dlpack: moving to another device needs a copy (copy=False)")
        return out
    return asarray(np.from_dlpack(x), device=device, copy=copy)


def _from_device_dlpack(x: Any) -> GPUArray | None:
    """A zero-copy view of `x` when it lives on a device a plugin serves, else None."""
    from .. import _dlpack
    from .._placement import backend_of

    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return None
    kind, index = (int(v) for v in dev())
    name = {v: k for k, v in _dlpack.DEVICE_TYPES.items()}.get(kind)
    if name is None or name == "cpu":
        return None
    target = Device(name, index)
    try:
        backend = backend_of(target)
    except ValueError:
        return None
    stream_of = getattr(backend, "dlpack_consumer_stream", None)
    stream = stream_of(target) if stream_of is not None else None
    try:
        capsule = x.__dlpack__(stream=stream, max_version=(1, 1))
    except TypeError:  # a producer of the legacy protocol
        capsule = x.__dlpack__(stream=stream)
    imported = _dlpack.consume(capsule, x)
    adopt = getattr(backend, "adopt_foreign", None)
    buffer = adopt(imported.owner, target) if adopt is not None else imported.owner
    return GPUArray(buffer, imported.shape, imported.dtype, target, imported.strides,
                    imported.offset, readonly=imported.read_only)  # fmt: skip
