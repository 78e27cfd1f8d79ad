"""Constant-Q transform (librosa.cqt's multirate algorithm) and chroma_cqt.

Octave by octave from the top: an STFT of the signal (window "ones") times a matrix of
the octave's filters in the frequency domain, then the signal is halved in rate
(polyphase) for the next octave down. The filter matrices are host-side setup; the STFTs,
products and resampling are array ops on the signal's device.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, check_audio, on_device, positive_int, positive_rate, to_device
from .chroma import normalize_columns
from .resample import resample
from .spectral import stft
from .windows import get_window, pad_center

__all__ = ["chroma_cqt", "cqt"]

#: librosa's table of window bandwidths (in FFT bins) for the common windows
_BANDWIDTHS = {"hann": 1.50018310546875, "hamming": 1.3629455320350348, "boxcar": 1.0,
               "ones": 1.0, "blackman": 1.7269681554262326, "bartlett": 1.3334961334912805,
               "blackmanharris": 2.0045975283585014}  # fmt: skip

C1_HZ = 440.0 * 2.0 ** ((24 - 69) / 12.0)  # note_to_hz("C1")


def _window_bandwidth(window: Any) -> float:
    if isinstance(window, str) and window in _BANDWIDTHS:
        return _BANDWIDTHS[window]
    w = get_window(window, 1000)
    return float(1000 * np.sum(w**2) / (np.sum(w) ** 2 + np.finfo(w.dtype).tiny))


def _frequencies(n_bins: int, fmin: float, bins_per_octave: int) -> np.ndarray:
    ratios = 2.0 ** (np.arange(0, bins_per_octave, dtype=float) / bins_per_octave)
    octaves = np.ceil(n_bins / bins_per_octave)
    return np.sort(np.multiply.outer(2.0 ** np.arange(octaves), ratios).flatten()[:n_bins]) * fmin


def _relative_bandwidth(freqs: np.ndarray) -> np.ndarray:
    logf = np.log2(freqs)
    per_octave = np.empty_like(freqs)
    per_octave[0] = 1 / (logf[1] - logf[0])
    per_octave[-1] = 1 / (logf[-1] - logf[-2])
    per_octave[1:-1] = 2 / (logf[2:] - logf[:-2])
    return (2.0 ** (2 / per_octave) - 1) / (2.0 ** (2 / per_octave) + 1)


def _lengths(freqs: np.ndarray, sr: float, window: Any, filter_scale: float,
             alpha: np.ndarray) -> tuple[np.ndarray, float]:  # fmt: skip
    """Each filter's length in samples and the highest frequency the bank reaches."""
    q = float(filter_scale) / alpha
    cutoff = float(np.max(freqs * (1 + 0.5 * _window_bandwidth(window) / q)))
    return q * sr / freqs, cutoff


def _float_window(window: Any, n: float) -> np.ndarray:
    """The window of floor(n) points, zero-padded to ceil(n) (librosa's fractional length)."""
    low, high = int(np.floor(n)), int(np.ceil(n))
    w = get_window(window, low)
    return np.pad(w, (0, high - w.size))


@functools.lru_cache(maxsize=32)
def _octave_basis(sr: float, freqs: tuple[float, ...], alpha: tuple[float, ...],
                  filter_scale: float, norm: float | None, sparsity: float,
                  window: Any) -> tuple[np.ndarray, int]:  # fmt: skip
    """(complex64 (bins, 1 + n_fft // 2) frequency-domain filters, n_fft) for one octave."""
    f = np.asarray(freqs)
    lengths, _ = _lengths(f, sr, window, filter_scale, np.asarray(alpha))
    filters = []
    for length, freq in zip(lengths, f, strict=True):
        angles = np.arange(-length // 2, length // 2, dtype=float) * 2 * np.pi * freq / sr
        sig = (np.cos(angles) + 1j * np.sin(angles)) * _float_window(window, len(angles))
        if norm is not None:
            total = (
                np.sum(np.abs(sig) ** norm) ** (1.0 / norm)
                if norm != np.inf
                else np.max(np.abs(sig))
            )
            sig = sig / total if total > np.finfo(float).tiny else sig
        filters.append(sig)
    size = int(2.0 ** np.ceil(np.log2(max(lengths))))
    basis = np.asarray([pad_center(s, size=size) for s in filters], dtype=np.complex64)
    basis *= lengths[:, np.newaxis] / float(size)
    spectra = np.fft.fft(basis, n=size, axis=1)[:, : size // 2 + 1]
    if sparsity > 0:  # drop each row's smallest entries holding `sparsity` of its mass
        mags = np.abs(spectra)
        ranked = np.sort(mags, axis=1)
        mass = np.cumsum(ranked / np.sum(mags, axis=1, keepdims=True), axis=1)
        cut = np.argmin(mass < sparsity, axis=1)
        spectra = np.where(mags >= ranked[np.arange(len(cut)), cut][:, None], spectra, 0)
    return spectra.astype(np.complex64), size


def cqt(
    y: Any,
    *,
    sr: float = 22050,
    hop_length: int = 512,
    fmin: float | None = None,
    n_bins: int = 84,
    bins_per_octave: int = 12,
    tuning: float | None = 0.0,
    filter_scale: float = 1,
    norm: float | None = 1,
    sparsity: float = 0.01,
    window: Any = "hann",
    scale: bool = True,
    pad_mode: str = "constant",
    res_type: str = "polyphase",
    dtype: Any = None,
) -> Any:
    """The constant-Q transform (..., n_bins, n_frames), complex, as librosa.cqt.

    Octaves are halved in rate by polyphase resampling (librosa's default is soxr_hq;
    librosa.cqt(..., res_type="polyphase") is the like-for-like reference).
    """
    rate = positive_rate(sr, "cqt")
    hop = positive_int(hop_length, "cqt", "hop_length")
    bins = positive_int(n_bins, "cqt", "n_bins")
    per_octave = positive_int(bins_per_octave, "cqt", "bins_per_octave")
    if res_type != "polyphase":
        raise ValueError(f"cqt: res_type={res_type!r} is not available; use 'polyphase'")
    if bins < 2:
        raise ValueError(f"cqt: n_bins must be >= 2, got {bins}")
    signal, host = to_device(y, "cqt")
    check_audio(signal, "cqt")
    if tuning is None:
        from .tuning import estimate_tuning

        tuning = estimate_tuning(y=signal, sr=rate, bins_per_octave=per_octave)
    low = (C1_HZ if fmin is None else float(fmin)) * 2.0 ** (tuning / per_octave)
    freqs = _frequencies(bins, low, per_octave)
    alpha = _relative_bandwidth(freqs)
    lengths, cutoff = _lengths(freqs, rate, window, filter_scale, alpha)
    if cutoff > rate / 2:
        raise ValueError(
            f"cqt: the top filter reaches {cutoff:.1f} Hz, above the Nyquist frequency "
            f"{rate / 2} (sr={rate}); use fewer bins or a lower fmin"
        )
    octaves = int(np.ceil(bins / per_octave))
    # early downsampling, as librosa: while the whole bank stays well below Nyquist
    twos = (hop & -hop).bit_length() - 1
    count = min(max(0, int(np.ceil(np.log2(rate / 2 / cutoff)) - 1) - 1),
                max(0, twos - octaves + 1))  # fmt: skip
    current, current_sr, current_hop = signal, rate, hop
    if count > 0:
        factor = 2**count
        if signal.shape[-1] < factor:
            raise ValueError(f"cqt: a signal of {signal.shape[-1]} samples is too short")
        current = resample(signal, orig_sr=factor, target_sr=1, scale=True)
        if not scale:
            current = current * float(np.sqrt(factor))
        current_sr, current_hop = rate / factor, hop // factor
    base_sr = current_sr
    per_call = min(per_octave, bins)
    responses: list[GPUArray] = []
    for i in range(octaves):
        part = slice(-per_call, None) if i == 0 else slice(-per_call * (i + 1), -per_call * i)
        make = (
            _octave_basis if isinstance(window, (str, tuple, float)) else _octave_basis.__wrapped__
        )
        basis, n_fft = make(current_sr, tuple(freqs[part]), tuple(alpha[part]),
                            float(filter_scale), norm, float(sparsity), window)  # fmt: skip
        basis = basis * np.float32(np.sqrt(base_sr / current_sr))
        spec = stft(current, n_fft=n_fft, hop_length=current_hop, window="ones",
                    pad_mode=pad_mode)  # fmt: skip
        responses.append(gp.matmul(on_device(basis.astype(spec.dtype.name), spec), spec))
        if current_hop % 2 == 0:
            current_hop //= 2
            current_sr /= 2.0
            current = resample(current, orig_sr=2, target_sr=1, scale=True)
    frames = min(int(r.shape[-1]) for r in responses)
    stacked = gp.concat([r[..., :frames] for r in reversed(responses)], axis=-2)[..., -bins:, :]
    if scale:  # by the filter lengths at the rate after early downsampling (librosa's)
        lengths, _ = _lengths(freqs, base_sr, window, filter_scale, alpha)
        lengths_col = on_device((1 / np.sqrt(lengths)).astype(np.float32)[:, None], stacked)
        stacked = stacked * gp.astype(lengths_col, stacked.dtype)
    if dtype is not None and stacked.dtype.name != np.dtype(dtype).name:
        stacked = gp.astype(stacked, getattr(gp, np.dtype(dtype).name))
    return back(stacked, host)


def chroma_cqt(
    *,
    y: Any = None,
    sr: float = 22050,
    C: Any = None,
    hop_length: int = 512,
    fmin: float | None = None,
    norm: float | None = np.inf,
    threshold: float = 0.0,
    tuning: float | None = None,
    n_chroma: int = 12,
    n_octaves: int = 7,
    window: Any = None,
    bins_per_octave: int | None = 36,
    cqt_mode: str = "full",
) -> Any:
    """Pitch-class energy (..., n_chroma, n_frames) from the CQT magnitude (librosa's)."""
    if cqt_mode != "full":
        raise ValueError(f"chroma_cqt: only cqt_mode='full' is available, got {cqt_mode!r}")
    per_octave = n_chroma if bins_per_octave is None else bins_per_octave
    if C is None:
        if y is None:
            raise ValueError("chroma_cqt: give an audio signal y or a CQT C")
        C = cqt(y, sr=sr, hop_length=hop_length, fmin=fmin, n_bins=n_octaves * per_octave,
                bins_per_octave=per_octave, tuning=tuning)  # fmt: skip
    spec, host = to_device(C, "chroma_cqt", "C")
    mag = gp.abs(spec)
    # fold the CQT bins onto the chroma bins (librosa's cq_to_chroma, base C, no window)
    fold = _cq_to_chroma(int(mag.shape[-2]), per_octave, n_chroma, C1_HZ if fmin is None else fmin)
    chroma = gp.matmul(on_device(fold.astype(mag.dtype.name), mag), mag)
    if threshold is not None:
        chroma = gp.where(chroma < threshold, gp.zeros_like(chroma), chroma)
    if window is not None:
        raise ValueError("chroma_cqt: window smoothing is not available; pass window=None")
    return back(normalize_columns(chroma, norm), host)


def _cq_to_chroma(n_input: int, bins_per_octave: int, n_chroma: int, fmin: float) -> np.ndarray:
    """librosa.filters.cq_to_chroma(base_c=True, window=None): merge bins per chroma class."""
    merge = float(bins_per_octave) / n_chroma
    if not merge.is_integer():
        raise ValueError(f"chroma_cqt: bins_per_octave={bins_per_octave} must be a multiple "
                         f"of n_chroma={n_chroma}")  # fmt: skip
    step = int(merge)
    cq_to_ch = np.repeat(np.eye(n_chroma), step, axis=1)
    cq_to_ch = np.roll(cq_to_ch, -(step // 2), axis=1)
    n_octaves = np.ceil(float(n_input) / bins_per_octave)
    cq_to_ch = np.tile(cq_to_ch, int(n_octaves))[:, :n_input]
    midi_0 = np.mod(12 * (np.log2(fmin) - np.log2(440.0)) + 69, 12)
    roll = int(np.round(midi_0 * (n_chroma / 12.0)))
    return np.roll(cq_to_ch, roll, axis=0).astype(np.float32)
