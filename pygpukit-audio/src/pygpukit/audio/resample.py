"""Polyphase resampling by any rational ratio (scipy.signal.resample_poly's filter and timing).

The output is written as a matmul: outputs come in groups of `up` that each read a window
of the input starting `down` samples after the previous group's, so a (groups, L) gather
of the input times an (L, up) matrix of polyphase taps gives every output at once.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, check_audio, gp_dtype, on_device, to_device
from ._framing import frame
from .windows import get_window

__all__ = ["resample", "resample_poly"]

#: most gathered samples per chunk (bounds the working memory of very long signals)
_CHUNK_ELEMENTS = 1 << 25


def _lowpass(up: int, down: int) -> np.ndarray:
    """scipy's anti-aliasing filter: Kaiser(5)-windowed sinc at 1 / max(up, down), times up."""
    rate = max(up, down)
    cutoff = 1.0 / rate
    half = 10 * rate
    taps = np.arange(2 * half + 1) - half
    h = cutoff * np.sinc(cutoff * taps) * get_window(("kaiser", 5.0), 2 * half + 1, fftbins=False)
    return h / np.sum(h) * up  # unit gain at DC before the zero-stuffing gain `up`


@functools.lru_cache(maxsize=16)
def _plan(up: int, down: int) -> tuple[np.ndarray, int, int]:
    """(taps (L, up), first input offset s_min, L) for output m = q * up + r.

    Following resample_poly, output m is sum_n x[n] h[m * down + d0 - n * up] with d0 the
    delay that centres the filter; writing n = q * down + s makes the tap index
    r * down + d0 - s * up, which does not depend on q: one (L, up) matrix serves all q.
    """
    h = _lowpass(up, down)
    half = (h.size - 1) // 2
    pre_pad = down - half % down
    d0 = ((half + pre_pad) // down) * down - pre_pad
    s_min = -((h.size - 1 - d0) // up)  # ceil((d0 - len(h) + 1) / up)
    s_max = ((up - 1) * down + d0) // up
    s = np.arange(s_min, s_max + 1)[:, np.newaxis]
    index = np.arange(up)[np.newaxis, :] * down + d0 - s * up
    taps = np.where((index >= 0) & (index < h.size), h[np.clip(index, 0, h.size - 1)], 0.0)
    return taps, int(s_min), int(s_max - s_min + 1)


def resample_poly(x: Any, up: int, down: int, *, axis: int = -1) -> Any:
    """x resampled by up / down along the last axis, as scipy.signal.resample_poly does.

    The output has ceil(n * up / down) samples; the filter is scipy's default (a Kaiser
    window with beta 5, 10 zero crossings per side at the lower of the two rates).
    """
    if axis != -1:
        raise ValueError(f"resample_poly: only the last axis is resampled here, got axis={axis}")
    y, host = to_device(x, "resample_poly", "x")
    check_audio(y, "resample_poly", "x")
    for name, value in (("up", up), ("down", down)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"resample_poly: {name} must be an int >= 1, got {value!r}")
    g = math.gcd(int(up), int(down))
    up, down = int(up) // g, int(down) // g
    if up == down == 1:
        return back(gp.copy(y), host)
    return back(_apply(y, up, down), host)


def _apply(y: GPUArray, up: int, down: int) -> GPUArray:
    n_in = int(y.shape[-1])
    n_out = -(-n_in * up // down)
    groups = -(-n_out // up)
    taps, s_min, width = _plan(up, down)
    weights = on_device(taps.astype(y.dtype.name), y)
    lead = tuple(y.shape[:-1])
    # z: the signal shifted so that group q reads z[q * down : q * down + width], with
    # zeros where the filter reaches past either end
    left = max(0, -s_min)
    body = y[..., max(0, s_min) :]
    right = max(0, (groups - 1) * down + width - left - int(body.shape[-1]))
    parts = [body]
    if left:
        parts.insert(0, gp.zeros((*lead, left), dtype=y.dtype, device=y.device))
    if right:
        parts.append(gp.zeros((*lead, right), dtype=y.dtype, device=y.device))
    z = gp.concat(parts, axis=-1) if len(parts) > 1 else body
    per_chunk = max(1, _CHUNK_ELEMENTS // max(1, width * math.prod(lead)))
    pieces = []
    for q0 in range(0, groups, per_chunk):
        q1 = min(groups, q0 + per_chunk)
        segment = z[..., q0 * down : (q1 - 1) * down + width]
        windows = frame(segment, "resample", frame_length=width, hop_length=down, pad=0,
                        pad_mode="constant")  # fmt: skip
        out = gp.matmul(windows, weights)  # (..., q1 - q0, up)
        pieces.append(gp.reshape(out, (*lead, (q1 - q0) * up)))
    full = pieces[0] if len(pieces) == 1 else gp.concat(pieces, axis=-1)
    return full[..., :n_out]


def _fix_length(y: GPUArray, size: int) -> GPUArray:
    """y cropped or zero-padded at the end to `size` samples (librosa's fix_length)."""
    n = int(y.shape[-1])
    if n >= size:
        return y[..., :size]
    tail = gp.zeros((*y.shape[:-1], size - n), dtype=y.dtype, device=y.device)
    return gp.concat([y, tail], axis=-1)


def resample(
    y: Any,
    *,
    orig_sr: float,
    target_sr: float,
    res_type: str = "polyphase",
    fix: bool = True,
    scale: bool = False,
    axis: int = -1,
) -> Any:
    """y from orig_sr to target_sr, as librosa.resample(..., res_type="polyphase").

    Only polyphase filtering is offered (librosa's default is soxr_hq, a different
    filter); it needs integer rates, and any ratio of them works. `fix` trims or pads
    to ceil(n * target_sr / orig_sr) samples; `scale` divides by sqrt(target / orig).
    """
    if res_type != "polyphase":
        raise ValueError(
            f"resample: res_type={res_type!r} is not available; pygpukit.audio resamples with "
            "res_type='polyphase' (scipy.signal.resample_poly's filter)"
        )
    if axis != -1:
        raise ValueError(f"resample: only the last axis is resampled here, got axis={axis}")
    signal, host = to_device(y, "resample")
    check_audio(signal, "resample")
    rates = []
    for name, rate in (("orig_sr", orig_sr), ("target_sr", target_sr)):
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)):
            raise TypeError(f"resample: {name} must be a number, got {rate!r}")
        if not np.isfinite(rate) or rate <= 0:
            raise ValueError(f"resample: {name} must be a positive sample rate, got {rate}")
        if int(rate) != rate:
            raise ValueError(
                f"resample: polyphase resampling needs integer rates, got {name}={rate}"
            )
        rates.append(int(rate))
    source, target = rates
    if source == target:
        return back(gp.copy(signal), host)
    g = math.gcd(source, target)
    out = _apply(signal, target // g, source // g)
    ratio = target / source
    if fix:
        out = _fix_length(out, int(np.ceil(signal.shape[-1] * ratio)))
    if scale:
        out = out / float(np.sqrt(ratio))
    if out.dtype.name != signal.dtype.name:
        out = gp.astype(out, gp_dtype(np.dtype(signal.dtype.name)))
    return back(out, host)
