"""Input checks shared by the audio functions: NumPy or GPUArray in, the same kind out."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray


def to_device(y: Any, fn: str, name: str = "y") -> tuple[GPUArray, bool]:
    """`y` as a GPUArray, and whether the caller gave a NumPy array (answered in NumPy).

    NumPy input runs on the CPU backend and comes back as NumPy, so a librosa user only
    changes the import; a GPUArray stays on its device.
    """
    if isinstance(y, GPUArray):
        return y, False
    if isinstance(y, np.ndarray):
        # "cpu" by name: the default device is the GPU where one is present, and NumPy in
        # means the CPU backend (from_numpy keeps 0-d as 0-d)
        return gp.from_numpy(np.require(y, requirements="C"), "cpu"), True
    raise TypeError(
        f"{fn}: {name} must be a numpy.ndarray or a pygpukit GPUArray, got {type(y).__name__}"
    )


def back(x: GPUArray, host: bool) -> Any:
    """The result in the caller's kind: NumPy when the input was NumPy."""
    return x.to_numpy() if host else x


def on_device(values: np.ndarray, like: GPUArray) -> GPUArray:
    """A host-side setup array (window, filter bank, index) copied to `like`'s device."""
    return gp.asarray(np.ascontiguousarray(values), device=like.device)


def check_audio(
    y: GPUArray, fn: str, name: str = "y", *, mono: bool = False, finite: bool = True
) -> None:
    """Raise on what librosa's valid_audio rejects: non-float, 0-d, empty, NaN or inf.

    `mono`: the function takes one channel per call (shape (n,)), as pitch trackers do.
    `finite=False` leaves the NaN/inf test to the caller (see `finite_check`).
    """
    if y.dtype.is_complex or y.dtype.kind != "f":
        raise TypeError(f"{fn}: {name} must be a real floating-point signal, got {y.dtype.name}")
    if y.ndim == 0:
        raise ValueError(f"{fn}: {name} must have at least one dimension, got a 0-d array")
    if mono and y.ndim != 1:
        raise ValueError(
            f"{fn}: {name} must be mono (one dimension), got shape {tuple(y.shape)}; "
            "pass one channel, e.g. y[0], or average the channels"
        )
    if y.shape[-1] == 0:
        raise ValueError(f"{fn}: {name} is an empty signal (shape {tuple(y.shape)})")
    if finite and not bool(gp.all(gp.isfinite(y))):
        raise ValueError(f"{fn}: {name} contains NaN or infinite samples")


def finite_check(y: GPUArray, fn: str, name: str = "y") -> Callable[[], None]:
    """Queue the NaN/inf test of y now; the returned call reads it and raises.

    Reading the flag waits for the device, so a caller queues its own work first and
    reads it last: the GPU never idles between the test and the work.
    """
    flag = gp.all(gp.isfinite(y))

    def confirm() -> None:
        if not bool(flag):
            raise ValueError(f"{fn}: {name} contains NaN or infinite samples")

    return confirm


def positive_int(value: Any, fn: str, name: str) -> int:
    """`value` as an int >= 1, or a TypeError / ValueError naming the argument."""
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be an int, got bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int, got {type(value).__name__}") from None
    if number < 1:
        raise ValueError(f"{fn}: {name} must be >= 1, got {number}")
    return number


def positive_rate(sr: Any, fn: str) -> float:
    """A sample rate as a positive finite float."""
    if type(sr) in (int, float) and 0 < sr < math.inf:  # the common case, no NumPy (~3 us)
        return float(sr)
    if isinstance(sr, bool) or not isinstance(sr, (int, float, np.integer, np.floating)):
        raise TypeError(f"{fn}: sr must be a number (samples per second), got {sr!r}")
    if not np.isfinite(sr) or sr <= 0:
        raise ValueError(f"{fn}: sr must be a positive sample rate, got {sr}")
    return float(sr)


def real_dtype_of(dtype: Any) -> np.dtype[Any]:
    """float32 for complex64, float64 for complex128; floats map to themselves."""
    d = np.dtype(dtype)
    if d.kind == "c":
        return np.dtype(np.float32) if d.itemsize == 8 else np.dtype(np.float64)
    return d


def complex_dtype_of(dtype: Any) -> np.dtype[Any]:
    """complex64 for float32 (and smaller floats), complex128 for float64."""
    d = np.dtype(dtype)
    if d.kind == "c":
        return d
    return np.dtype(np.complex128) if d.itemsize >= 8 else np.dtype(np.complex64)


def gp_dtype(dtype: np.dtype[Any]) -> Any:
    """The pygpukit dtype object with NumPy dtype `dtype`'s name."""
    return getattr(gp, np.dtype(dtype).name)
