"""The Array API `fft` extension: argument checks, padding/cropping, norms and dispatch.

Kernel convention: the core turns every transform into one of three kernels, so a backend
adds FFTs by providing these (cuFFT, pocketfft, ...). Each computes the *unnormalised*
transform over ``axes`` (distinct, non-negative, in the order given; batched over the
other axes) and multiplies the result by the Python float ``scale`` that the core
derives from ``norm``:

- ``fft_c2c``: ``kernel(x, out, axes, forward, scale)``: ``x`` complex (any strided
  view), ``out`` a new contiguous array of ``x``'s shape and dtype; ``forward`` picks
  the sign of the exponent (``exp(-2 pi i jk/n)`` when true).
- ``fft_r2c``: ``kernel(x, out, axes, scale)``: ``x`` float32 or float64, ``out`` the
  complex dtype of its precision, shaped like ``x`` except ``n // 2 + 1`` along
  ``axes[-1]`` (the forward transform's non-negative frequencies).
- ``fft_c2r``: ``kernel(x, out, axes, scale)``: the inverse of ``fft_r2c``: ``out`` is
  float32/float64 and gives the signal lengths; ``x`` is already ``out.shape[a]`` long
  along every axis but the last, and ``out.shape[axes[-1]] // 2 + 1`` along the last.

Dtypes are kept: complex64 stays complex64, float32 rfft gives complex64. float16 and
bfloat16 inputs are computed in float32. Integer and bool inputs raise TypeError, as
the standard asks for floating-point inputs.

A repeated call is a fast path: the checks, output shape, axes and scale depend only on
the function, the input's shape, strides and dtype and the arguments, so once a call has
passed them with the input going straight to the kernel (no cast, pad or crop), that
decision is kept (`_decided`) and a later call with the same key only allocates the output
and runs the kernel. A kernel may also carry ``fresh_for(x, out, *args)``, returning a
callable that repeats that whole call for an input of x's layout (see
`pygpukit.ops_catalog`): then a repeated call is one dict lookup and that one call (the
cuda provider's is native: allocation, cuFFT and scaling in C++).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from .. import _dtypes as dt
from .. import config
from .._array import GPUArray
from .._dispatch import kernel_for
from .._views import normalize_axis
from ._core import empty, kernel_on, task_aware
from .complex_parts import conj
from .copying import assign, astype, fill
from .creation import arange
from .elementwise import apply_binary
from .manipulation import roll

__all__ = [
    "fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft",
    "irfft", "irfftn", "rfft", "rfftfreq", "rfftn",
]  # fmt: skip

_NORMS = ("backward", "ortho", "forward")


# -- argument checks ------------------------------------------------------------------
def _check_x(fn: str, x: Any, want: str) -> GPUArray:
    """x as the dtype the kernel takes: "complex" (reals promoted) or "real" (floats)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"fft.{fn}: x must be a GPUArray, got {type(x).__name__}")
    d = x.dtype
    if d.kind in "biu" or d.is_float8:
        kind = "a real floating" if want == "real" else "a complex (or real) floating"
        raise TypeError(f"fft.{fn}: x must have {kind} dtype, got {d.name}")
    if want == "real":
        if d.is_complex:
            raise TypeError(f"fft.{fn}: x must have a real floating dtype, got {d.name}")
        return x if d in (dt.float32, dt.float64) else astype(x, dt.float32)
    return x if d.is_complex else astype(x, dt.complex_of(d))


def _check_norm(fn: str, norm: Any) -> str:
    if norm not in _NORMS:
        raise ValueError(f"fft.{fn}: norm must be one of {', '.join(_NORMS)}, got {norm!r}")
    return str(norm)


def _length(fn: str, name: str, n: Any) -> int:
    try:
        value = operator.index(n)
    except TypeError:
        raise TypeError(f"fft.{fn}: {name} must be an int, got {type(n).__name__}") from None
    if value < 1:
        raise ValueError(f"fft.{fn}: {name} must be >= 1, got {value}")
    return value


def _one_axis(fn: str, x: GPUArray, axis: Any) -> int:
    if x.ndim == 0:
        raise ValueError(f"fft.{fn}: x must have at least one dimension, got a 0-d array")
    return normalize_axis(axis, x.ndim)


def _axes_and_sizes(
    fn: str, x: GPUArray, s: Sequence[int] | None, axes: Sequence[int] | None
) -> tuple[tuple[int, ...], list[int | None]]:
    """The transformed axes (normalised, in order) and each one's requested length."""
    if x.ndim == 0:
        raise ValueError(f"fft.{fn}: x must have at least one dimension, got a 0-d array")
    if axes is None:
        if s is not None:
            raise ValueError(
                f"fft.{fn}: s was given without axes; the standard asks for both (pass axes)"
            )
        chosen = tuple(range(x.ndim))
    else:
        if isinstance(axes, int) or not isinstance(axes, Sequence):
            raise TypeError(f"fft.{fn}: axes must be a sequence of ints, got {axes!r}")
        chosen = tuple(normalize_axis(a, x.ndim, "axes entry") for a in axes)
        if not chosen:
            raise ValueError(f"fft.{fn}: axes must name at least one axis, got {tuple(axes)}")
        if len(set(chosen)) != len(chosen):
            raise ValueError(f"fft.{fn}: axes {tuple(axes)} name an axis more than once")
    if s is None:
        return chosen, [None] * len(chosen)
    if isinstance(s, int) or not isinstance(s, Sequence):
        raise TypeError(f"fft.{fn}: s must be a sequence of ints, got {s!r}")
    if len(s) != len(chosen):
        raise ValueError(
            f"fft.{fn}: s {tuple(s)} and axes {tuple(chosen)} must have the same length"
        )
    sizes: list[int | None] = []
    for v in s:
        if not isinstance(v, bool) and hasattr(v, "__index__") and operator.index(v) == -1:
            sizes.append(None)  # -1: the input's own length
        else:
            sizes.append(_length(fn, "every entry of s", v))
    return chosen, sizes


# -- padding, cropping and scales ------------------------------------------------------
def _fit(x: GPUArray, lengths: dict[int, int], backend: str | None) -> GPUArray:
    """x cropped (a view) or zero-padded (a copy) to `lengths` along their axes."""
    shape = x.shape
    if all(shape[a] == n for a, n in lengths.items()):
        return x  # the common case: no view to make
    crop = [slice(None)] * x.ndim
    pad = False
    for a, n in lengths.items():
        if n < x.shape[a]:
            crop[a] = slice(0, n)
        elif n > x.shape[a]:
            pad = True
    y = x[tuple(crop)]
    if not pad:
        return y
    shape = tuple(lengths.get(a, y.shape[a]) for a in range(y.ndim))
    out = empty(shape, y.dtype, y.device)
    fill(out, 0, backend)
    assign(out[tuple(slice(0, m) for m in y.shape)], y, backend)
    return out


def _scale(norm: str, size: int, forward: bool) -> float:
    """The factor `norm` puts on a transform of `size` points in that direction."""
    if norm == "ortho":
        return 1 / math.sqrt(size)
    scaled = (norm == "forward") == forward  # "forward" scales forward transforms only
    return 1 / size if scaled else 1.0


def _run(op: str, x: GPUArray, out_shape: tuple[int, ...], out_dtype: dt.DataType,
         backend: str | None, *args: Any, key: Any = None, given: Any = None
         ) -> GPUArray:  # fmt: skip
    """Run kernel `op`; with `key`, keep the decision for `_again` when x is the caller's
    own array `given` (nothing was cast, padded or cropped on the way), with the kernel's
    ``fresh_for`` repeat of this very call where it offers one."""
    kernel = kernel_for(op, x.device, (x.dtype,), backend)
    fn = task_aware(kernel.fn, kernel.gated)
    out = empty(out_shape, out_dtype, x.device)
    if out.size:
        fn(x, out, *args)
    if key is not None and x is given:
        # only a provider that gates its own launches may run without the Python gate
        make = getattr(kernel.fn, "fresh_for", None) if kernel.gated and out.size else None
        repeat = make(x, out, *args) if make is not None else None
        if len(_decided) >= _DECIDED_LIMIT:
            _decided.clear()  # endlessly new shapes: start over rather than grow
        _decided[key] = (op, out_shape, out_dtype, args, repeat, config.current())
    return out


#: (function, input shape, strides and dtype name, n/s, axis/axes, norm, backend) -> (kernel,
#: output shape, output dtype, kernel arguments, the kernel's repeat of the call or None, the
#: settings snapshot it was chosen under) of a call whose input went straight to the kernel
_decided: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_DECIDED_LIMIT = 1024


def _key(fn: str, x: Any, size: Any, axis: Any, norm: Any, backend: Any) -> Any:
    """The fast-path key of a call, or None when its arguments are not plain enough to key
    on (a bool or NumPy int could compare equal to an int that means something else)."""
    if type(x) is not GPUArray or type(norm) is not str:
        return None
    if type(axis) is int and (size is None or type(size) is int):  # fft, rfft, ...: at once
        return (fn, x._shape, x._strides, x._dtype.name, size, axis, norm, backend)
    parts = [size, axis]
    for i, v in enumerate(parts):
        if v is None or type(v) is int:
            continue
        if type(v) not in (tuple, list) or any(type(e) is not int for e in v):
            return None
        parts[i] = tuple(v)  # lists key as the tuples they equal
    return (fn, x._shape, x._strides, x._dtype.name, parts[0], parts[1], norm, backend)


def _again(key: Any, x: GPUArray, backend: str | None) -> GPUArray | None:
    """The result of a call already decided under `key`, or None (take the full path)."""
    entry = _decided.get(key) if key is not None else None
    if entry is None:
        return None
    op, out_shape, out_dtype, args, repeat, snapshot = entry
    if snapshot is not config.current():
        return None  # other settings may choose another kernel: decide again
    if repeat is not None:
        out = repeat(x)  # the provider's whole call (NotImplemented: not this time)
        if out is None:  # never again (its plans were forgotten): decide again
            _decided.pop(key, None)
            return None
        if out is not NotImplemented:
            return out
    fn = kernel_on(op, x._device, (x._dtype,), backend)
    out = empty(out_shape, out_dtype, x._device)
    if out.size:
        fn(x, out, *args)
    return out


# -- complex to complex --------------------------------------------------------------------
def _c2c(fn: str, z: GPUArray, sizes: list[int | None], axes: tuple[int, ...], norm: str,
         forward: bool, backend: str | None, key: Any = None,
         given: Any = None) -> GPUArray:  # fmt: skip
    """The complex transform of the checked, complex `z` (`sizes`: None keeps a length)."""
    lengths = {a: (z.shape[a] if n is None else n) for a, n in zip(axes, sizes, strict=True)}
    for a, n in lengths.items():
        if n < 1:
            raise ValueError(
                f"fft.{fn}: axis {a} has length 0; give a length >= 1 (n or s) to pad it"
            )
    z = _fit(z, lengths, backend)
    scale = _scale(norm, math.prod(lengths.values()), forward)
    return _run("fft_c2c", z, z.shape, z.dtype, backend, axes, forward, scale, key=key, given=given)


def fft(x: GPUArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward",
        backend: str | None = None) -> GPUArray:  # fmt: skip
    """The one-dimensional discrete Fourier transform along `axis` (length `n`)."""
    key = _key("fft", x, n, axis, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    z = _check_x("fft", x, "complex")
    a = _one_axis("fft", z, axis)
    size = None if n is None else _length("fft", "n", n)
    return _c2c("fft", z, [size], (a,), _check_norm("fft", norm), True, backend, key, x)


def ifft(x: GPUArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward",
         backend: str | None = None) -> GPUArray:  # fmt: skip
    """The one-dimensional inverse discrete Fourier transform along `axis`."""
    key = _key("ifft", x, n, axis, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    z = _check_x("ifft", x, "complex")
    a = _one_axis("ifft", z, axis)
    size = None if n is None else _length("ifft", "n", n)
    return _c2c("ifft", z, [size], (a,), _check_norm("ifft", norm), False, backend, key, x)


def fftn(x: GPUArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str = "backward", backend: str | None = None) -> GPUArray:  # fmt: skip
    """The n-dimensional discrete Fourier transform over `axes` (all when None)."""
    key = _key("fftn", x, s, axes, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    z = _check_x("fftn", x, "complex")
    chosen, sizes = _axes_and_sizes("fftn", z, s, axes)
    return _c2c("fftn", z, sizes, chosen, _check_norm("fftn", norm), True, backend, key, x)


def ifftn(x: GPUArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward", backend: str | None = None) -> GPUArray:  # fmt: skip
    """The n-dimensional inverse discrete Fourier transform over `axes` (all when None)."""
    key = _key("ifftn", x, s, axes, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    z = _check_x("ifftn", x, "complex")
    chosen, sizes = _axes_and_sizes("ifftn", z, s, axes)
    return _c2c("ifftn", z, sizes, chosen, _check_norm("ifftn", norm), False, backend, key, x)


# -- real to complex and back ----------------------------------------------------------
def _r2c(fn: str, x: GPUArray, sizes: list[int | None], axes: tuple[int, ...], norm: str,
         forward: bool, backend: str | None, key: Any = None,
         given: Any = None) -> GPUArray:  # fmt: skip
    """The forward real transform (ihfft passes forward=False for its scale only)."""
    lengths = {a: (x.shape[a] if n is None else n) for a, n in zip(axes, sizes, strict=True)}
    for a, n in lengths.items():
        if n < 1:
            raise ValueError(
                f"fft.{fn}: axis {a} has length 0; give a length >= 1 (n or s) to pad it"
            )
    y = _fit(x, lengths, backend)
    shape = list(y.shape)
    shape[axes[-1]] = y.shape[axes[-1]] // 2 + 1
    scale = _scale(norm, math.prod(lengths.values()), forward)
    return _run(
        "fft_r2c",
        y,
        tuple(shape),
        dt.complex_of(y.dtype),
        backend,
        axes,
        scale,
        key=key,
        given=given,
    )


def _c2r(fn: str, z: GPUArray, sizes: list[int | None], axes: tuple[int, ...], norm: str,
         forward: bool, backend: str | None, key: Any = None,
         given: Any = None) -> GPUArray:  # fmt: skip
    """The inverse real transform (hfft passes forward=True for its scale only)."""
    last = axes[-1]
    lengths = {a: (z.shape[a] if n is None else n) for a, n in zip(axes, sizes, strict=True)}
    if sizes[-1] is None:
        lengths[last] = 2 * (z.shape[last] - 1)
        if lengths[last] < 1:
            raise ValueError(
                f"fft.{fn}: x has length {z.shape[last]} along axis {last}, so the default "
                f"output length 2 * (m - 1) is {lengths[last]}; pass n (or s) >= 1"
            )
    for a, n in lengths.items():
        if n < 1:
            raise ValueError(f"fft.{fn}: axis {a} has length 0; give a length >= 1 (n or s)")
    half = dict(lengths)
    half[last] = lengths[last] // 2 + 1
    y = _fit(z, half, backend)
    shape = list(y.shape)
    shape[last] = lengths[last]
    scale = _scale(norm, math.prod(lengths.values()), forward)
    return _run(
        "fft_c2r", y, tuple(shape), dt.real_of(y.dtype), backend, axes, scale, key=key, given=given
    )


def rfft(x: GPUArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward",
         backend: str | None = None) -> GPUArray:  # fmt: skip
    """The one-dimensional transform of a real signal: the n // 2 + 1 non-negative
    frequencies."""
    key = _key("rfft", x, n, axis, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    y = _check_x("rfft", x, "real")
    a = _one_axis("rfft", y, axis)
    size = None if n is None else _length("rfft", "n", n)
    return _r2c("rfft", y, [size], (a,), _check_norm("rfft", norm), True, backend, key, x)


def irfft(x: GPUArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward",
          backend: str | None = None) -> GPUArray:  # fmt: skip
    """The inverse of `rfft`: a real signal of length `n` (default 2 * (m - 1))."""
    key = _key("irfft", x, n, axis, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    z = _check_x("irfft", x, "complex")
    a = _one_axis("irfft", z, axis)
    size = None if n is None else _length("irfft", "n", n)
    return _c2r("irfft", z, [size], (a,), _check_norm("irfft", norm), False, backend, key, x)


def rfftn(x: GPUArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward", backend: str | None = None) -> GPUArray:  # fmt: skip
    """The n-dimensional transform of a real signal (the last axis halved)."""
    key = _key("rfftn", x, s, axes, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    y = _check_x("rfftn", x, "real")
    chosen, sizes = _axes_and_sizes("rfftn", y, s, axes)
    return _r2c("rfftn", y, sizes, chosen, _check_norm("rfftn", norm), True, backend, key, x)


def irfftn(x: GPUArray, /, *, s: Sequence[int] | None = None,
           axes: Sequence[int] | None = None, norm: str = "backward",
           backend: str | None = None) -> GPUArray:  # fmt: skip
    """The inverse of `rfftn` (the last axis' length defaults to 2 * (m - 1))."""
    key = _key("irfftn", x, s, axes, norm, backend)
    done = _again(key, x, backend)
    if done is not None:
        return done
    z = _check_x("irfftn", x, "complex")
    chosen, sizes = _axes_and_sizes("irfftn", z, s, axes)
    return _c2r("irfftn", z, sizes, chosen, _check_norm("irfftn", norm), False, backend, key, x)


def hfft(x: GPUArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward",
         backend: str | None = None) -> GPUArray:  # fmt: skip
    """The transform of a Hermitian-symmetric signal given by its first half: real output
    of length `n` (default 2 * (m - 1))."""
    z = _check_x("hfft", x, "complex")
    a = _one_axis("hfft", z, axis)
    size = None if n is None else _length("hfft", "n", n)
    norm = _check_norm("hfft", norm)
    return _c2r("hfft", conj(z, backend=backend), [size], (a,), norm, True, backend)


def ihfft(x: GPUArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward",
          backend: str | None = None) -> GPUArray:  # fmt: skip
    """The inverse of `hfft`: the n // 2 + 1 Hermitian half of a real signal's inverse
    transform."""
    y = _check_x("ihfft", x, "real")
    a = _one_axis("ihfft", y, axis)
    size = None if n is None else _length("ihfft", "n", n)
    half = _r2c("ihfft", y, [size], (a,), _check_norm("ihfft", norm), False, backend)
    return conj(half, backend=backend)


# -- frequencies and shifts ----------------------------------------------------------
def _freq_dtype(fn: str, dtype: Any) -> dt.DataType:
    d = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    if not d.is_floating or d.is_float8:
        raise TypeError(f"fft.{fn}: dtype must be a real floating dtype, got {d.name}")
    return d


def _spacing(fn: str, d: Any) -> float:
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise TypeError(f"fft.{fn}: d must be a float, got {type(d).__name__}")
    if d == 0 or not math.isfinite(d):
        raise ValueError(f"fft.{fn}: d must be finite and nonzero, got {d}")
    return float(d)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None,
            backend: str | None = None) -> GPUArray:  # fmt: skip
    """The sample frequencies of `fft`: [0, 1, ..., -2, -1] / (d * n)."""
    size = _length("fftfreq", "n", n)
    out_dtype = _freq_dtype("fftfreq", dtype)
    step = _spacing("fftfreq", d)
    # k for the first (n + 1) // 2 entries, k - n after: computed in float64, rounded once
    k = arange(size, dtype=dt.float64, device=device, backend=backend)
    upper = (size + 1) // 2
    if upper < size:
        assign(k[upper:], apply_binary("subtract", k[upper:], float(size), backend), backend)
    return astype(apply_binary("divide", k, step * size, backend), out_dtype, backend=backend)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None,
             backend: str | None = None) -> GPUArray:  # fmt: skip
    """The sample frequencies of `rfft`: [0, 1, ..., n // 2] / (d * n)."""
    size = _length("rfftfreq", "n", n)
    out_dtype = _freq_dtype("rfftfreq", dtype)
    step = _spacing("rfftfreq", d)
    k = arange(size // 2 + 1, dtype=dt.float64, device=device, backend=backend)
    return astype(apply_binary("divide", k, step * size, backend), out_dtype, backend=backend)


def _shift(fn: str, x: Any, axes: int | Sequence[int] | None, inverse: bool,
           backend: str | None) -> GPUArray:  # fmt: skip
    if not isinstance(x, GPUArray):
        raise TypeError(f"fft.{fn}: x must be a GPUArray, got {type(x).__name__}")
    if axes is None:
        chosen: tuple[int, ...] = tuple(range(x.ndim))
    else:
        listed = (axes,) if isinstance(axes, int) else tuple(axes)
        chosen = tuple(normalize_axis(a, x.ndim, "axes entry") for a in listed)
    if not chosen or x.ndim == 0:
        return roll(x, 0, backend=backend)  # nothing to shift: a copy, as roll gives
    shifts = tuple(-(x.shape[a] // 2) if inverse else x.shape[a] // 2 for a in chosen)
    return roll(x, shifts, axis=chosen, backend=backend)


def fftshift(x: GPUArray, /, *, axes: int | Sequence[int] | None = None,
             backend: str | None = None) -> GPUArray:  # fmt: skip
    """`x` with the zero frequency moved to the centre along `axes` (all when None)."""
    return _shift("fftshift", x, axes, False, backend)


def ifftshift(x: GPUArray, /, *, axes: int | Sequence[int] | None = None,
              backend: str | None = None) -> GPUArray:  # fmt: skip
    """The inverse of `fftshift`."""
    return _shift("ifftshift", x, axes, True, backend)
