"""Analysis windows with scipy.signal.get_window's names and semantics, computed in NumPy.

Windows are small host-side setup (one vector per call), so they are made here in
float64 and copied to the signal's device by the functions that use them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["get_window", "pad_center"]

#: cosine-sum coefficients a_k in w[n] = sum_k (-1)^k a_k cos(2 pi k n / (M - 1))
_COSINE_SUMS: dict[str, tuple[float, ...]] = {
    "hann": (0.5, 0.5),
    "hamming": (0.54, 0.46),
    "blackman": (0.42, 0.50, 0.08),
    "blackmanharris": (0.35875, 0.48829, 0.14128, 0.01168),
    "nuttall": (0.3635819, 0.4891775, 0.1365995, 0.0106411),
    "flattop": (0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368),
}

#: the other spellings scipy accepts for the same windows
_ALIASES = {
    "hanning": "hann",
    "han": "hann",
    "hamm": "hamming",
    "ham": "hamming",
    "black": "blackman",
    "blk": "blackman",
    "blackharr": "blackmanharris",
    "bkh": "blackmanharris",
    "nutl": "nuttall",
    "nut": "nuttall",
    "flat": "flattop",
    "flt": "flattop",
    "boxcar": "boxcar",
    "box": "boxcar",
    "ones": "boxcar",
    "rect": "boxcar",
    "rectangular": "boxcar",
    "triangle": "triang",
    "tri": "triang",
    "bartlett": "bartlett",
    "bart": "bartlett",
    "brt": "bartlett",
    "cosine": "cosine",
    "halfcosine": "cosine",
    "kaiser": "kaiser",
    "ksr": "kaiser",
    "gaussian": "gaussian",
    "gauss": "gaussian",
    "gss": "gaussian",
    "tukey": "tukey",
    "tuk": "tukey",
}

#: windows that need a parameter, and whether it has a default (tukey's alpha = 0.5)
_PARAMETERS = {"kaiser": None, "gaussian": None, "tukey": 0.5}


def _cosine_sum(coefficients: tuple[float, ...], m: int) -> np.ndarray:
    phase = np.linspace(-np.pi, np.pi, m)  # the symmetric window's points
    w = np.zeros(m)
    for k, a in enumerate(coefficients):
        w += a * np.cos(k * phase)
    return w


def _triang(m: int) -> np.ndarray:
    n = np.arange(1, (m + 1) // 2 + 1)
    if m % 2 == 0:
        half = (2 * n - 1.0) / m
        return np.concatenate([half, half[::-1]])
    half = 2 * n / (m + 1.0)
    return np.concatenate([half, half[-2::-1]])


def _bartlett(m: int) -> np.ndarray:
    n = np.arange(m)
    return np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))


def _tukey(m: int, alpha: float) -> np.ndarray:
    if alpha <= 0:
        return np.ones(m)
    if alpha >= 1:
        return _cosine_sum(_COSINE_SUMS["hann"], m)
    n = np.arange(m)
    width = int(np.floor(alpha * (m - 1) / 2.0))
    head, middle, tail = n[: width + 1], n[width + 1 : m - width - 1], n[m - width - 1 :]
    w1 = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * head / alpha / (m - 1))))
    w2 = np.ones(middle.shape)
    w3 = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * tail / alpha / (m - 1))))
    return np.concatenate([w1, w2, w3])


def _symmetric(name: str, m: int, parameter: float | None) -> np.ndarray:
    """The symmetric window `name` of `m` points (m >= 2)."""
    if name in _COSINE_SUMS:
        return _cosine_sum(_COSINE_SUMS[name], m)
    if name == "boxcar":
        return np.ones(m)
    if name == "triang":
        return _triang(m)
    if name == "bartlett":
        return _bartlett(m)
    if name == "cosine":
        return np.sin(np.pi / m * (np.arange(m) + 0.5))
    if name == "kaiser":
        return np.kaiser(m, float(parameter))  # type: ignore[arg-type]
    if name == "gaussian":
        n = np.arange(m) - (m - 1.0) / 2.0
        return np.exp(-(n**2) / (2.0 * float(parameter) ** 2))  # type: ignore[arg-type]
    if name == "tukey":
        return _tukey(m, float(parameter))  # type: ignore[arg-type]
    raise AssertionError(name)  # _parse only lets known names through


def _parse(window: str | tuple[Any, ...] | float) -> tuple[str, float | None]:
    """(canonical name, parameter) for a scipy-style window spec."""
    if isinstance(window, (int, float)) and not isinstance(window, bool):
        return "kaiser", float(window)  # scipy reads a bare number as a Kaiser beta
    if isinstance(window, tuple):
        if not window or not isinstance(window[0], str):
            raise ValueError(f"get_window: a window tuple is (name, parameter), got {window!r}")
        raw, rest = window[0], window[1:]
    elif isinstance(window, str):
        raw, rest = window, ()
    else:
        raise TypeError(f"get_window: window must be a name, tuple, number, callable or array, "
                        f"got {type(window).__name__}")  # fmt: skip
    name = _ALIASES.get(raw.lower(), raw.lower())
    if name not in _COSINE_SUMS and name not in _ALIASES.values():
        known = sorted(set(_COSINE_SUMS) | set(_ALIASES.values()))
        raise ValueError(f"get_window: unknown window {raw!r}; known: {', '.join(known)}")
    if name in _PARAMETERS:
        if rest:
            return name, float(rest[0])
        if _PARAMETERS[name] is None:
            raise ValueError(f"get_window: the {name} window needs a parameter: ({name!r}, value)")
        return name, _PARAMETERS[name]
    if rest:
        raise ValueError(f"get_window: the {name} window takes no parameter, got {window!r}")
    return name, None


def get_window(
    window: str | tuple[Any, ...] | float | Callable[[int], Any] | np.ndarray | list[float],
    Nx: int,
    *,
    fftbins: bool = True,
) -> np.ndarray:
    """A float64 window of `Nx` points, as librosa.filters.get_window makes it.

    `window` is a scipy name ("hann", "hamming", "blackman", ...), a (name, parameter)
    tuple (("kaiser", 8.6), ("gaussian", 7), ("tukey", 0.25)), a number (a Kaiser beta),
    a callable taking the length, or an array of exactly `Nx` values. `fftbins=True`
    gives the periodic window (for spectral analysis), False the symmetric one.
    """
    if isinstance(Nx, bool) or not isinstance(Nx, (int, np.integer)) or Nx < 0:
        raise ValueError(f"get_window: Nx must be a non-negative int, got {Nx!r}")
    if callable(window):
        return np.asarray(window(int(Nx)), dtype=np.float64)
    if isinstance(window, (np.ndarray, list)):
        values = np.asarray(window, dtype=np.float64)
        if values.shape != (Nx,):
            raise ValueError(
                f"get_window: a window array must have shape ({Nx},), got {values.shape}"
            )
        return values
    name, parameter = _parse(window)
    if Nx <= 1:
        return np.ones(int(Nx))
    # a periodic window is the symmetric one of one more point, last point dropped
    m = int(Nx) + 1 if fftbins else int(Nx)
    w = _symmetric(name, m, parameter)
    return w[:-1] if fftbins else w


def pad_center(data: np.ndarray, *, size: int, axis: int = -1) -> np.ndarray:
    """`data` zero-padded on both sides to `size` along `axis` (extra zero on the right)."""
    n = data.shape[axis]
    if size < n:
        raise ValueError(f"pad_center: target size {size} is smaller than the data ({n})")
    left = (size - n) // 2
    widths = [(0, 0)] * data.ndim
    widths[axis] = (left, size - n - left)
    return np.pad(data, widths)
