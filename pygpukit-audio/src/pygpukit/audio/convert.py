"""Decibel conversions (power_to_db, amplitude_to_db and their inverses), as librosa's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, to_device

__all__ = ["amplitude_to_db", "db_to_amplitude", "db_to_power", "power_to_db"]

#: NumPy reducers a librosa user passes as `ref`, answered by the array op of that name
_REDUCERS: dict[Any, Callable[[GPUArray], GPUArray]] = {
    np.max: gp.max,
    np.amax: gp.max,
    np.min: gp.min,
    np.amin: gp.min,
    np.mean: gp.mean,
}


def _reference(ref: Any, magnitude: GPUArray, host: bool) -> Any:
    """abs(ref), or ref(magnitude) for a callable (np.max runs as gp.max on the device)."""
    if not callable(ref):
        return abs(float(ref))
    reducer = _REDUCERS.get(ref)
    if reducer is not None:
        return reducer(magnitude)
    value = ref(magnitude.to_numpy() if host else magnitude)
    return value if isinstance(value, GPUArray) else abs(float(value))


def _real_magnitude(S: Any, fn: str) -> tuple[GPUArray, bool]:
    arr, host = to_device(S, fn, "S")
    if arr.dtype.kind not in "fc":
        raise TypeError(f"{fn}: S must be floating point or complex, got {arr.dtype.name}")
    return (gp.abs(arr) if arr.dtype.is_complex else arr), host


def _to_db(magnitude: GPUArray, ref_value: Any, amin: float, top_db: float | None) -> GPUArray:
    log_spec = 10.0 * gp.log10(gp.maximum(magnitude, amin))
    if isinstance(ref_value, GPUArray):
        log_spec = log_spec - 10.0 * gp.log10(gp.maximum(ref_value, amin))
    else:
        log_spec = log_spec - 10.0 * float(np.log10(max(amin, ref_value)))
    if top_db is not None:
        # one floor for the whole array (librosa's rule, also for a batch)
        log_spec = gp.maximum(log_spec, gp.max(log_spec) - top_db)
    return log_spec


def _check(fn: str, amin: float, top_db: float | None) -> None:
    if amin <= 0:
        raise ValueError(f"{fn}: amin must be strictly positive, got {amin}")
    if top_db is not None and top_db < 0:
        raise ValueError(f"{fn}: top_db must be non-negative, got {top_db}")


def power_to_db(
    S: Any,
    *,
    ref: float | Callable[..., Any] = 1.0,
    amin: float = 1e-10,
    top_db: float | None = 80.0,
) -> Any:
    """10 log10(S / ref), floored at amin and at max - top_db (librosa.power_to_db)."""
    _check("power_to_db", amin, top_db)
    magnitude, host = _real_magnitude(S, "power_to_db")
    ref_value = _reference(ref, magnitude, host)
    return back(_to_db(magnitude, ref_value, amin, top_db), host)


def amplitude_to_db(
    S: Any,
    *,
    ref: float | Callable[..., Any] = 1.0,
    amin: float = 1e-5,
    top_db: float | None = 80.0,
) -> Any:
    """20 log10(|S| / ref), floored at amin and at max - top_db (librosa.amplitude_to_db)."""
    _check("amplitude_to_db", amin, top_db)
    magnitude, host = _real_magnitude(S, "amplitude_to_db")
    ref_value = _reference(ref, magnitude, host)
    ref_power = gp.square(ref_value) if isinstance(ref_value, GPUArray) else ref_value**2
    return back(_to_db(gp.square(magnitude), ref_power, amin**2, top_db), host)


def db_to_power(S_db: Any, *, ref: float = 1.0) -> Any:
    """ref * 10 ** (S_db / 10): the inverse of power_to_db (without its floors)."""
    arr, host = to_device(S_db, "db_to_power", "S_db")
    return back(ref * gp.pow(10.0, arr * 0.1), host)


def db_to_amplitude(S_db: Any, *, ref: float = 1.0) -> Any:
    """ref * 10 ** (S_db / 20): the inverse of amplitude_to_db (without its floors)."""
    arr, host = to_device(S_db, "db_to_amplitude", "S_db")
    return back(gp.sqrt(ref**2 * gp.pow(10.0, arr * 0.1)), host)
