"""Harmonic-percussive source separation by median filtering (librosa.decompose.hpss)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, positive_int, to_device
from ._framing import frame
from .spectral import magphase

__all__ = ["hpss", "median_filter_last", "softmask"]


def median_filter_last(x: GPUArray, size: int) -> GPUArray:
    """scipy.ndimage.median_filter along the last axis, "reflect" edges (rank size // 2).

    Windows come from one gather, are sorted along the window axis and the middle value
    taken, so it runs as array ops on x's device.
    """
    n = int(x.shape[-1])
    windows = frame(x, "hpss", frame_length=size, hop_length=1, pad=size // 2, pad_mode="symmetric")
    ranked = gp.sort(windows[..., :n, :], axis=-1)  # even sizes give one extra window
    return ranked[..., size // 2]


def softmask(X: Any, X_ref: Any, *, power: float = 1, split_zeros: bool = False) -> Any:
    """X^p / (X^p + X_ref^p): a soft mask favouring X (librosa.util.softmask).

    Where both are ~0 the mask is 0.5 with split_zeros, else 0; power=inf gives the hard
    mask X > X_ref.
    """
    x, host = to_device(X, "softmask", "X")
    ref, _ = to_device(X_ref, "softmask", "X_ref")
    if tuple(x.shape) != tuple(ref.shape):
        raise ValueError(f"softmask: X {tuple(x.shape)} and X_ref {tuple(ref.shape)} differ")
    if bool(gp.any(x < 0)) or bool(gp.any(ref < 0)):
        raise ValueError("softmask: X and X_ref must be non-negative")
    if power <= 0:
        raise ValueError(f"softmask: power must be strictly positive, got {power}")
    if not np.isfinite(power):
        return back(gp.astype(x > ref, x.dtype), host)
    peak = gp.maximum(x, ref)
    empty = peak < float(np.finfo(x.dtype.name).tiny)
    peak = gp.where(empty, gp.ones_like(peak), peak)
    mask = (x / peak) ** power
    ref_mask = (ref / peak) ** power
    total = mask + ref_mask
    mask = mask / gp.where(empty, gp.ones_like(total), total)
    return back(gp.where(empty, gp.full_like(mask, 0.5 if split_zeros else 0.0), mask), host)


def hpss(
    S: Any,
    *,
    kernel_size: int | tuple[int, int] = 31,
    power: float = 2.0,
    mask: bool = False,
    margin: float | tuple[float, float] = 1.0,
) -> tuple[Any, Any]:
    """(harmonic, percussive) parts of a spectrogram S (..., n_freq, n_frames).

    Harmonic energy is smooth in time, percussive smooth in frequency: median filters of
    kernel_size frames / bins along each give the two estimates, turned into soft masks.
    Complex S keeps its phase; mask=True returns the masks.
    """
    spec, host = to_device(S, "hpss", "S")
    if spec.ndim < 2:
        raise ValueError(f"hpss: S must be (..., n_freq, n_frames), got {tuple(spec.shape)}")
    if spec.dtype.is_complex:
        mag, phase = magphase(spec)
    else:
        mag, phase = spec, None
    win_harm, win_perc = kernel_size if isinstance(kernel_size, tuple) else (kernel_size,) * 2
    win_harm = positive_int(win_harm, "hpss", "kernel_size")
    win_perc = positive_int(win_perc, "hpss", "kernel_size")
    margin_harm, margin_perc = margin if isinstance(margin, tuple) else (margin, margin)
    if margin_harm < 1 or margin_perc < 1:
        raise ValueError(f"hpss: margins must be >= 1.0, got {margin}")
    harmonic = median_filter_last(mag, win_harm)
    percussive = gp.matrix_transpose(median_filter_last(gp.matrix_transpose(mag), win_perc))
    split_zeros = margin_harm == 1 and margin_perc == 1
    mask_harm = softmask(harmonic, percussive * margin_harm, power=power, split_zeros=split_zeros)
    mask_perc = softmask(percussive, harmonic * margin_perc, power=power, split_zeros=split_zeros)
    if mask:
        return back(mask_harm, host), back(mask_perc, host)
    parts = [mag * mask_harm, mag * mask_perc]
    if phase is not None:
        parts = [gp.astype(p, phase.dtype) * phase for p in parts]
    return back(parts[0], host), back(parts[1], host)
