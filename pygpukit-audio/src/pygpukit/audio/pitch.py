"""Fundamental-frequency estimation with YIN (librosa.yin), on pygpukit ops.

Per frame: the autocorrelation by FFT, YIN's cumulative-mean-normalised difference, the
first trough under the threshold (else the global minimum), refined by a parabola.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, check_audio, positive_int, positive_rate, to_device
from ._framing import frame

__all__ = ["yin"]


def _fast_length(n: int) -> int:
    """The smallest 2^a 3^b 5^c >= n (a size FFTs handle quickly, as scipy picks)."""
    best = 1 << max(0, (n - 1).bit_length())
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            size = p35
            while size < n:
                size *= 2
            best = min(best, size)
            p35 *= 3
        p5 *= 5
    return best


def check_pitch_range(fn: str, sr: float, fmin: Any, fmax: Any, frame_length: int) -> None:
    """librosa's rules for fmin / fmax against the rate and the frame."""
    if fmin is None or fmax is None:
        raise ValueError(f'{fn}: both "fmin" and "fmax" must be given')
    if fmax > sr / 2:
        raise ValueError(f"{fn}: fmax={fmax} is above the Nyquist frequency {sr / 2} (sr={sr})")
    if fmin >= fmax:
        raise ValueError(f"{fn}: fmin={fmin} must be less than fmax={fmax}")
    if fmin <= 0:
        raise ValueError(f"{fn}: fmin={fmin} must be strictly positive")
    if sr / fmin >= frame_length - 1:
        raise ValueError(
            f"{fn}: fmin={fmin} is too low for frame_length={frame_length} at sr={sr}; "
            f"use fmin > {sr / (frame_length - 1):.3f} or a longer frame"
        )


def difference_function(frames: GPUArray, min_period: int, max_period: int) -> GPUArray:
    """YIN's cumulative-mean-normalised difference for lags min_period..max_period.

    frames: (..., n_frames, frame_length); the result: (..., n_frames, lags).
    """
    length = int(frames.shape[-1])
    size = _fast_length(2 * length - 1)
    spectrum = gp.fft.rfft(frames, n=size, axis=-1)
    power = gp.square(gp.real(spectrum)) + gp.square(gp.imag(spectrum))
    acf = gp.fft.irfft(gp.astype(power, spectrum.dtype), n=size, axis=-1)[..., : max_period + 1]
    energy = gp.cumulative_sum(gp.square(frames), axis=-1)
    # d[k] = 2 (acf[0] - acf[k]) - E[k - 1] for k >= 1 (librosa's form), d[0] = 0
    diff = 2.0 * (acf[..., :1] - acf[..., 1 : max_period + 1]) - energy[..., :max_period]
    numerator = diff[..., min_period - 1 :]
    lags = gp.asarray(np.arange(1, max_period + 1, dtype=frames.dtype.name), device=frames.device)
    mean = gp.cumulative_sum(diff, axis=-1) / lags
    denominator = mean[..., min_period - 1 :]
    return numerator / (denominator + float(np.finfo(frames.dtype.name).tiny))


def parabolic_shifts(x: GPUArray) -> GPUArray:
    """Offset of the vertex of the parabola through each point and its neighbours (last
    axis); 0 at the ends and where the vertex would move more than one step."""
    left, mid, right = x[..., :-2], x[..., 1:-1], x[..., 2:]
    a = right + left - 2.0 * mid
    b = (right - left) / 2.0
    safe = gp.where(gp.abs(b) >= gp.abs(a), gp.ones_like(a), a)
    inner = gp.where(gp.abs(b) >= gp.abs(a), gp.zeros_like(a), -b / safe)
    edge = gp.zeros_like(x[..., :1])
    return gp.concat([edge, inner, edge], axis=-1)


def troughs(x: GPUArray) -> GPUArray:
    """librosa's localmin along the last axis, the first point a trough if below the next."""
    first = x[..., :1] < x[..., 1:2]
    middle = (x[..., 1:-1] < x[..., :-2]) & (x[..., 1:-1] <= x[..., 2:])
    last = x[..., -1:] < x[..., -2:-1]
    return gp.concat([first, middle, last], axis=-1)


class PeriodAnalysis(NamedTuple):
    """What yin and pyin share: the framed signal's normalized difference function."""

    rate: float
    hop: int
    signal: GPUArray
    host: bool
    cmnd: GPUArray
    shifts: GPUArray
    min_period: int


def analyse_periods(
    fn: str,
    y: Any,
    sr: float,
    fmin: float,
    fmax: float,
    frame_length: int,
    hop_length: int | None,
    center: bool,
    pad_mode: str,
) -> PeriodAnalysis:
    """Check the arguments, frame y and compute its cumulative mean normalized difference
    (..., n_frames, n_periods) and parabolic shifts over the periods fmax..fmin allow."""
    rate = positive_rate(sr, fn)
    length = positive_int(frame_length, fn, "frame_length")
    check_pitch_range(fn, rate, fmin, fmax, length)
    hop = length // 4 if hop_length is None else positive_int(hop_length, fn, "hop_length")
    signal, host = to_device(y, fn)
    check_audio(signal, fn)
    pad = length // 2 if center else 0
    frames = frame(signal, fn, frame_length=length, hop_length=hop, pad=pad, pad_mode=pad_mode)
    min_period = int(np.floor(rate / fmax))
    max_period = min(int(np.ceil(rate / fmin)), length - 1)
    cmnd = difference_function(frames, min_period, max_period)
    return PeriodAnalysis(rate, hop, signal, host, cmnd, parabolic_shifts(cmnd), min_period)


def yin(
    y: Any,
    *,
    fmin: float,
    fmax: float,
    sr: float = 22050,
    frame_length: int = 2048,
    hop_length: int | None = None,
    trough_threshold: float = 0.1,
    center: bool = True,
    pad_mode: str = "constant",
) -> Any:
    """f0 in Hz per frame, (..., n_frames), as librosa.yin."""
    a = analyse_periods("yin", y, sr, fmin, fmax, frame_length, hop_length, center, pad_mode)
    rate, cmnd, shifts, min_period, host = a.rate, a.cmnd, a.shifts, a.min_period, a.host
    below = troughs(cmnd) & (cmnd < trough_threshold)
    first_below = gp.argmax(gp.astype(below, gp.int8), axis=-1, keepdims=True)
    lowest = gp.argmin(cmnd, axis=-1, keepdims=True)
    period_index = gp.where(gp.any(below, axis=-1, keepdims=True), first_below, lowest)
    shift = gp.take_along_axis(shifts, period_index, axis=-1)
    period = float(min_period) + gp.astype(period_index, cmnd.dtype) + shift
    return back(rate / period[..., 0], host)
