"""MFCCs (a DCT of the log-mel spectrogram) and delta features (Savitzky-Golay derivatives).

Both are linear maps applied with matmul: the DCT as an (n_mfcc, n_mels) matrix, the
delta as a local least-squares derivative over gathered windows of frames.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, on_device, positive_int, to_device
from ._framing import frame
from .convert import power_to_db
from .spectral import melspectrogram

__all__ = ["delta", "mfcc"]


@functools.lru_cache(maxsize=16)
def dct_matrix(n_in: int, n_out: int, dct_type: int, norm: str | None) -> np.ndarray:
    """The first n_out rows of scipy.fftpack.dct's matrix of `dct_type` on n_in points."""
    k = np.arange(n_out)[:, np.newaxis]
    n = np.arange(n_in)[np.newaxis, :]
    if dct_type == 2:
        m = 2.0 * np.cos(np.pi * k * (2 * n + 1) / (2.0 * n_in))
        if norm == "ortho":
            m[0] *= math.sqrt(1.0 / (4 * n_in))
            m[1:] *= math.sqrt(1.0 / (2 * n_in))
        return m
    if dct_type == 3:
        m = 2.0 * np.cos(np.pi * (2 * k + 1) * n / (2.0 * n_in))
        m[:, 0] = 1.0
        if norm == "ortho":
            m[:, 0] /= math.sqrt(n_in)
            m[:, 1:] *= 1.0 / math.sqrt(2.0 * n_in)
        return m
    if dct_type == 1:
        if norm is not None:
            raise ValueError("mfcc: dct_type=1 is offered with norm=None only")
        if n_in < 2:
            raise ValueError("mfcc: dct_type=1 needs at least 2 mel bands")
        m = 2.0 * np.cos(np.pi * k * n / (n_in - 1.0))
        m[:, 0] = 1.0
        m[:, -1] = (-1.0) ** np.arange(n_out)
        return m
    raise ValueError(f"mfcc: dct_type must be 1, 2 or 3, got {dct_type}")


def mfcc(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    n_mfcc: int = 20,
    dct_type: int = 2,
    norm: str | None = "ortho",
    lifter: float = 0,
    **kwargs: Any,
) -> Any:
    """Mel-frequency cepstral coefficients (..., n_mfcc, n_frames), as librosa.feature.mfcc.

    From y: power_to_db(melspectrogram(y, sr, **kwargs)); or from a given log-power mel
    spectrogram S. `lifter` > 0 applies sinusoidal liftering to the coefficients.
    """
    count = positive_int(n_mfcc, "mfcc", "n_mfcc")
    if norm not in (None, "ortho"):
        raise ValueError(f"mfcc: norm must be None or 'ortho', got {norm!r}")
    if lifter < 0:
        raise ValueError(f"mfcc: lifter must be a non-negative number, got {lifter}")
    if S is None:
        if y is None:
            raise ValueError("mfcc: give an audio signal y or a log-power mel spectrogram S")
        host = isinstance(y, np.ndarray)
        log_mel, _ = to_device(power_to_db(melspectrogram(y=y, sr=sr, **kwargs)), "mfcc", "S")
    else:
        log_mel, host = to_device(S, "mfcc", "S")
    n_mels = int(log_mel.shape[-2])
    matrix = dct_matrix(n_mels, min(count, n_mels), dct_type, norm)
    if lifter > 0:
        ramp = np.sin(np.pi * np.arange(1, 1 + matrix.shape[0]) / lifter)
        matrix = matrix * (1 + (lifter / 2) * ramp)[:, np.newaxis]
    coefficients = gp.matmul(on_device(matrix.astype(log_mel.dtype.name), log_mel), log_mel)
    return back(coefficients, host)


@functools.lru_cache(maxsize=16)
def _savgol_taps(width: int, order: int) -> np.ndarray:
    """Weights giving the order-th derivative of a degree-`order` least-squares polynomial
    fitted to `width` consecutive points (librosa's delta fixes the degree to the order).

    With degree == order that derivative is order! times the leading coefficient, the same
    at every point of the window: so scipy's "interp" ends (a fit to the first / last
    window, evaluated at its outer points) equal the first / last interior values.
    """
    offsets = np.arange(width, dtype=np.float64) - width // 2
    fit = np.linalg.pinv(offsets[:, np.newaxis] ** np.arange(order + 1))  # (order + 1, width)
    return math.factorial(order) * fit[order]


#: scipy savgol_filter modes other than "interp", as the np.pad mode of the same padding
_SAVGOL_PADS = {"mirror": "reflect", "nearest": "edge", "constant": "constant", "wrap": "wrap"}


def delta(
    data: Any, *, width: int = 9, order: int = 1, axis: int = -1, mode: str = "interp"
) -> Any:
    """The order-th local derivative of `data` along time (librosa.feature.delta).

    A Savitzky-Golay filter of `width` frames and polynomial degree `order`; `mode`
    handles the ends as scipy.signal.savgol_filter does ("interp" fits the first and
    last windows; "mirror", "nearest", "constant", "wrap" pad).
    """
    arr, host = to_device(data, "delta", "data")
    if axis not in (-1, arr.ndim - 1):
        raise ValueError(f"delta: only the last (time) axis is supported, got axis={axis}")
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)):
        raise TypeError(f"delta: width must be an int, got {type(width).__name__}")
    if width < 3 or width % 2 != 1:
        raise ValueError(f"delta: width must be an odd integer >= 3, got {width}")
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order <= 0:
        raise ValueError(f"delta: order must be a positive integer, got {order!r}")
    if arr.dtype.kind != "f":
        raise TypeError(f"delta: data must be floating point, got {arr.dtype.name}")
    n = int(arr.shape[-1])
    taps = on_device(_savgol_taps(int(width), int(order)).astype(arr.dtype.name)[:, None], arr)
    half = width // 2
    if mode == "interp":
        if width > n:
            raise ValueError(
                f"delta: with mode='interp', width={width} cannot exceed the {n} frames"
            )
        middle = _windows_dot(arr, width, 0, "constant", taps)
        head = gp.broadcast_to(middle[..., :1], (*middle.shape[:-1], half))
        tail = gp.broadcast_to(middle[..., -1:], (*middle.shape[:-1], half))
        return back(gp.concat([head, middle, tail], axis=-1), host)
    if mode not in _SAVGOL_PADS:
        raise ValueError(f"delta: mode must be interp, {', '.join(_SAVGOL_PADS)}; got {mode!r}")
    pad_mode = _SAVGOL_PADS[mode]
    if pad_mode == "wrap":  # the framing gather has no wrap; pad by concatenation instead
        arr = gp.concat([arr[..., n - half :], arr, arr[..., :half]], axis=-1)
        return back(_windows_dot(arr, width, 0, "constant", taps), host)
    return back(_windows_dot(arr, width, half, pad_mode, taps), host)


def _windows_dot(arr: GPUArray, width: int, pad: int, pad_mode: str, taps: GPUArray) -> GPUArray:
    """For every window of `width` consecutive frames, its dot product with `taps`."""
    windows = frame(arr, "delta", frame_length=width, hop_length=1, pad=pad, pad_mode=pad_mode)
    return gp.squeeze(gp.matmul(windows, taps), axis=-1)
