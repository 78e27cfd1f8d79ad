"""Short-time Fourier transforms (stft, istft), magnitude and phase, and the mel spectrogram.

Everything after the host-side setup (window, frame indices, mel basis) runs as pygpukit
array ops (take, multiply, fft.rfft/irfft, matmul), so NumPy input runs on the CPU
backend and a GPUArray runs on its own device. Shapes follow librosa: a signal is
(..., n) and its STFT is (..., 1 + n_fft // 2, n_frames).

On a GPU the hot path is a few kernels with little host work between them (the host time
of a call must stay under the device time, or the GPU idles between launches): framing,
window and NaN test in one kernel (_fused, _frames), cuFFT, then |X|^2 and the mel product
in one (_mel_power); windows and mel bases stay on the device, found by key; the one read
back, the NaN flag, waits for the framing kernel only (_nan_flag).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from . import _fused, _mel_power, _nan_flag, filters
from ._arrays import (
    back,
    check_audio,
    complex_dtype_of,
    finite_check,
    gp_dtype,
    on_device,
    positive_int,
    positive_rate,
    real_dtype_of,
    to_device,
)
from ._framing import device_constant, device_setup, frame_view
from .windows import get_window, pad_center

__all__ = ["abs2", "istft", "magphase", "melspectrogram", "stft"]


def _analysis_window(window: Any, win_length: int, n_fft: int) -> np.ndarray:
    """The periodic window of win_length points, zero-padded to n_fft (centred)."""
    if isinstance(window, str):  # named windows are cached: ~0.1 ms of host time each call
        return _named_window(window, win_length, n_fft)
    return pad_center(get_window(window, win_length, fftbins=True), size=n_fft)


def _window_on(y: GPUArray, window: Any, win_length: int, n_fft: int,
               real: np.dtype[Any]) -> np.ndarray | GPUArray:  # fmt: skip
    """The analysis window for frames_spectrum: a named one already on y's device (cached
    there), else the host array."""
    if isinstance(window, str):
        return device_constant(("window", window, win_length, n_fft, real.str),
                               lambda: _named_window(window, win_length, n_fft).astype(real),
                               y)  # fmt: skip
    return _analysis_window(window, win_length, n_fft)


@functools.lru_cache(maxsize=32)
def _named_window(window: str, win_length: int, n_fft: int) -> np.ndarray:
    out = pad_center(get_window(window, win_length, fftbins=True), size=n_fft)
    out.flags.writeable = False  # shared between calls
    return out


def _mel_basis(rate: float, size: int, kwargs: dict[str, Any]) -> np.ndarray:
    """filters.mel's basis, cached when its arguments are hashable (~0.5 ms of host time)."""
    try:
        return _cached_mel(rate, size, tuple(sorted(kwargs.items())))
    except TypeError:  # an unhashable argument (an array fmax, say): compute it each time
        return filters.mel(sr=rate, n_fft=size, **kwargs)


def _mel_weights(rate: float, size: int, kwargs: dict[str, Any], real: np.dtype[Any],
                 like: GPUArray) -> tuple[GPUArray, tuple[Any, ...] | None]:  # fmt: skip
    """(filters.mel's basis in NumPy's promotion of its dtype and `real`, on like's device;
    the key it is cached under there, None when the arguments are unhashable)."""
    try:
        key = ("mel", rate, size, tuple(sorted(kwargs.items())), real.str)
        hash(key)
    except TypeError:  # an unhashable argument: device_setup keys on the basis' bytes
        basis = filters.mel(sr=rate, n_fft=size, **kwargs)
        return device_setup(basis.astype(np.result_type(basis.dtype, real)), like), None

    def make() -> np.ndarray:
        basis = _mel_basis(rate, size, kwargs)
        return basis.astype(np.result_type(basis.dtype, real))

    return device_constant(key, make, like), key


@functools.lru_cache(maxsize=16)
def _cached_mel(rate: float, size: int, items: tuple[tuple[str, Any], ...]) -> np.ndarray:
    out = filters.mel(sr=rate, n_fft=size, **dict(items))
    out.flags.writeable = False  # shared between calls
    return out


def _spectrum_real(dtype: Any) -> np.dtype[Any]:
    """The real dtype of the precision of a spectrum asked as `dtype` (complex or real)."""
    try:
        return _cached_real(dtype)
    except TypeError:  # unhashable: let NumPy name the problem
        return real_dtype_of(complex_dtype_of(dtype))


@functools.lru_cache(maxsize=64)
def _cached_real(dtype: Any) -> np.dtype[Any]:
    return real_dtype_of(complex_dtype_of(dtype))  # ~3 us of NumPy dtype parsing, once


def _swap_last_axes(x: GPUArray) -> GPUArray:
    """x's (..., a, b) as a (..., b, a) view: gp.matrix_transpose without its general axis
    checks (~4 us), for the spectra made here (at least 2-D)."""
    *lead, a, b = x.shape
    *steps, sa, sb = x.strides
    return GPUArray(x.buffer, (*lead, b, a), x.dtype, x.device, (*steps, sb, sa), x.offset)


def _lengths(fn: str, n_fft: Any, hop_length: Any, win_length: Any) -> tuple[int, int, int]:
    size = positive_int(n_fft, fn, "n_fft")
    win = size if win_length is None else positive_int(win_length, fn, "win_length")
    if win > size:
        raise ValueError(f"{fn}: win_length={win} must be <= n_fft={size}")
    hop = win // 4 if hop_length is None else positive_int(hop_length, fn, "hop_length")
    if hop < 1:
        raise ValueError(f"{fn}: hop_length must be >= 1 (win_length={win} gives {hop})")
    return size, hop, win


def frames_spectrum(
    y: GPUArray,
    fn: str,
    *,
    n_fft: int,
    hop_length: int,
    window: np.ndarray | GPUArray,
    center: bool,
    pad_mode: str,
    real: Any,
    keep_frames: int | None = None,
    confirm_into: list[Callable[[], None]] | None = None,
    name: str = "y",
) -> GPUArray:
    """The STFT of a checked signal laid out (..., n_frames, 1 + n_fft // 2).

    `keep_frames` keeps only that many leading frames (Whisper drops the last). With
    `confirm_into`, y's NaN/inf test is queued too (on a GPU, inside the framing kernel) and
    the call that reads it and raises is appended: call it once the caller's work is queued
    (its message calls the signal `name`).
    """
    given = y
    n = int(y.shape[-1])
    if not center and n_fft > n:
        raise ValueError(
            f"{fn}: n_fft={n_fft} is longer than the signal ({n} samples) with center=False; "
            "use a smaller n_fft, a longer signal or center=True"
        )
    if center and n_fft > n:  # librosa warns here too: the frames are mostly padding
        warnings.warn(f"{fn}: n_fft={n_fft} is too large for input signal of length={n}",
                      UserWarning, stacklevel=3)  # fmt: skip
    if y.dtype.to_numpy_dtype() != real:
        y = gp.astype(y, gp_dtype(real))
    pad = n_fft // 2 if center else 0
    n_frames = 1 + (n + 2 * pad - n_fft) // hop_length
    if keep_frames is not None:
        n_frames = min(n_frames, keep_frames)
    # a GPUArray window is already on y's device, in `real` (see _window_on)
    weights = window if isinstance(window, GPUArray) else device_setup(window.astype(real), y)
    windowed = None
    bad = None
    kept = None  # this thread's long-lived flag (see _nan_flag), when one serves
    if n + 2 * pad >= n_fft:  # else frame_view below names the problem
        if confirm_into is not None and _fused.kernels_here(y):
            kept = _nan_flag.take(y)
            bad = kept.array if kept is not None else gp.zeros((1,), dtype=gp.int32,
                                                               device=y.device)  # fmt: skip
        # on a GPU: padding, framing, window and NaN test in one kernel (None elsewhere)
        windowed = _fused.windowed_frames(y, weights, hop=hop_length, pad=pad,
                                          pad_mode=pad_mode, n_frames=n_frames,
                                          bad=bad)  # fmt: skip
    if confirm_into is not None:
        if windowed is not None and kept is not None:
            confirm_into.append(kept.reader(fn, name))  # waits for the framing kernel only
        elif windowed is not None and bad is not None:
            confirm_into.append(_flag_reader(bad, fn, name))
        else:  # (the array-op test reads the caller's samples, as before any cast)
            confirm_into.append(finite_check(given, fn, name))
    if windowed is None:
        # an overlapping view, read once by the window product (the one frame-sized copy)
        frames = frame_view(y, fn, frame_length=n_fft, hop_length=hop_length, pad=pad,
                            pad_mode=pad_mode)  # fmt: skip
        windowed = frames[..., :n_frames, :] * weights
    return gp.fft.rfft(windowed, axis=-1)


def _flag_reader(bad: Any, fn: str, name: str) -> Callable[[], None]:
    """The call that reads the framing kernel's NaN/inf flag and raises as finite_check."""

    def confirm() -> None:
        if int(bad.to_numpy()[0]):
            raise ValueError(f"{fn}: {name} contains NaN or infinite samples")

    return confirm


def stft(
    y: Any,
    *,
    n_fft: int = 2048,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    pad_mode: str = "constant",
) -> Any:
    """The short-time Fourier transform, shape (..., 1 + n_fft // 2, n_frames).

    Same arguments and result as librosa.stft: frames of n_fft samples every hop_length
    (default win_length // 4), windowed by a periodic `window` of win_length (default
    n_fft) points centred in the frame; `center` pads n_fft // 2 on each side with
    `pad_mode`. `dtype` is the complex result type (default: that of y's precision).
    """
    signal, host = to_device(y, "stft")
    check_audio(signal, "stft", finite=False)
    size, hop, win = _lengths("stft", n_fft, hop_length, win_length)
    real = _spectrum_real(signal.dtype.name if dtype is None else dtype)
    confirm: list[Callable[[], None]] = []  # the NaN test, read after the transform is queued
    spectrum = frames_spectrum(
        signal,
        "stft",
        n_fft=size,
        hop_length=hop,
        window=_window_on(signal, window, win, size, real),
        center=center,
        pad_mode=pad_mode,
        real=real,
        confirm_into=confirm,
    )
    confirm[0]()
    return back(_swap_last_axes(spectrum), host)


def _overlap_add(frames: GPUArray, hop: int) -> GPUArray:
    """Sum of (..., n_frames, width) frames placed hop samples apart: (..., length).

    With no scatter-add among the array ops, each frame is cut into R = ceil(width /
    hop) hop-sized pieces; piece r of frame t lands in output block t + r, so the sum is
    R shifted adds of whole (n_frames, hop) slabs (R is small: n_fft / hop).
    """
    n_frames, width = int(frames.shape[-2]), int(frames.shape[-1])
    pieces = -(-width // hop)
    lead = tuple(frames.shape[:-2])
    if pieces * hop > width:
        fill = gp.zeros((*lead, n_frames, pieces * hop - width), dtype=frames.dtype,
                        device=frames.device)  # fmt: skip
        frames = gp.concat([frames, fill], axis=-1)
    blocks = gp.reshape(frames, (*lead, n_frames, pieces, hop))
    total: GPUArray | None = None
    for r in range(pieces):
        parts = [blocks[..., r, :]]
        if r:
            parts.insert(0, gp.zeros((*lead, r, hop), dtype=frames.dtype, device=frames.device))
        if pieces - 1 - r:
            parts.append(gp.zeros((*lead, pieces - 1 - r, hop), dtype=frames.dtype,
                                  device=frames.device))  # fmt: skip
        shifted = gp.concat(parts, axis=-2) if len(parts) > 1 else parts[0]
        total = shifted if total is None else total + shifted
    assert total is not None
    return gp.reshape(total, (*lead, (n_frames + pieces - 1) * hop))


def window_sumsquare(
    *, window: Any, n_frames: int, hop_length: int, win_length: int, n_fft: int, dtype: Any
) -> np.ndarray:
    """The overlap-added squared window (what istft divides by), as librosa computes it."""
    total = np.zeros(n_fft + hop_length * (n_frames - 1), dtype=dtype)
    square = pad_center(get_window(window, win_length, fftbins=True) ** 2, size=n_fft)
    for t in range(n_frames):  # host-side setup, O(n_frames) vector adds
        total[t * hop_length : t * hop_length + n_fft] += square
    return total


def istft(
    stft_matrix: Any,
    *,
    hop_length: int | None = None,
    win_length: int | None = None,
    n_fft: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    length: int | None = None,
) -> Any:
    """The inverse STFT by weighted overlap-add, as librosa.istft (same arguments).

    `length` crops or zero-pads the result to exactly that many samples.
    """
    spec, host = to_device(stft_matrix, "istft", "stft_matrix")
    if not spec.dtype.is_complex:
        raise TypeError(f"istft: stft_matrix must be complex, got {spec.dtype.name}")
    if spec.ndim < 2:
        raise ValueError(
            f"istft: stft_matrix must be (..., n_freq, n_frames), got shape {tuple(spec.shape)}"
        )
    if spec.shape[-1] == 0:
        raise ValueError("istft: stft_matrix has no frames")
    size = 2 * (int(spec.shape[-2]) - 1) if n_fft is None else n_fft
    size, hop, win = _lengths("istft", size, hop_length, win_length)
    real = real_dtype_of(spec.dtype.name if dtype is None else dtype)
    n_frames = int(spec.shape[-1])
    if length is not None:
        length = positive_int(length, "istft", "length")
        padded = length + 2 * (size // 2) if center else length
        n_frames = min(n_frames, -(-padded // hop))
        spec = spec[..., :n_frames]
    ifft_window = _analysis_window(window, win, size)
    frames = gp.fft.irfft(gp.matrix_transpose(spec), n=size, axis=-1)
    if frames.dtype.name != real.name:
        frames = gp.astype(frames, gp_dtype(real))
    signal = _overlap_add(frames * on_device(ifft_window.astype(real), frames), hop)

    start = size // 2 if center else 0
    full = size + hop * (n_frames - 1)
    expected = length if length is not None else full - 2 * start
    stop = start + expected
    signal = signal[..., start : min(stop, full)]
    short = stop - min(stop, full)
    if short > 0:  # `length` asked for more than the frames cover: zeros, as librosa
        tail = gp.zeros((*signal.shape[:-1], short), dtype=signal.dtype, device=signal.device)
        signal = gp.concat([signal, tail], axis=-1)
    envelope = window_sumsquare(window=window, n_frames=n_frames, hop_length=hop,
                                win_length=win, n_fft=size, dtype=real)  # fmt: skip
    envelope = np.concatenate([envelope[start:stop], np.zeros(max(0, stop - full), real)])
    # divide only where the window overlap is not ~0 (librosa's rule), else leave as is
    envelope = np.where(envelope > np.finfo(real).tiny, envelope, 1).astype(real)
    return back(signal / on_device(envelope, signal), host)


def abs2(x: Any) -> Any:
    """|x|^2 elementwise (real part squared plus imaginary part squared for complex x)."""
    arr, host = to_device(x, "abs2", "x")
    if arr.dtype.is_complex:
        return back(gp.square(gp.real(arr)) + gp.square(gp.imag(arr)), host)
    return back(gp.square(arr), host)


def magphase(D: Any, *, power: float = 1) -> tuple[Any, Any]:
    """(|D| ** power, D / |D|): magnitude and unit-modulus phase (phase 1 where D == 0)."""
    spec, host = to_device(D, "magphase", "D")
    mag = gp.abs(spec)
    zeros = gp.astype(mag == 0, mag.dtype)  # 1 where D == 0: phase 1 there, no 0 / 0
    phase = spec / gp.astype(mag + zeros, spec.dtype) + gp.astype(zeros, spec.dtype)
    return back(mag if power == 1 else mag**power, host), back(phase, host)


def spectrogram_of(
    fn: str,
    y: Any,
    S: Any,
    *,
    n_fft: int,
    hop_length: int,
    win_length: int | None,
    window: Any,
    center: bool,
    pad_mode: str,
    power: float,
) -> tuple[GPUArray, bool, int]:
    """(|STFT(y)| ** power or the given S, host flag, n_fft), laid out (..., n_freq, t)."""
    if S is not None:
        spec, host = to_device(S, fn, "S")
        if spec.ndim < 2:
            raise ValueError(f"{fn}: S must be (..., n_freq, n_frames), got {tuple(spec.shape)}")
        return spec, host, 2 * (int(spec.shape[-2]) - 1)
    spectrum, confirm, host, size = _spectrum_of(fn, y, n_fft=n_fft, hop_length=hop_length,
                                                 win_length=win_length, window=window,
                                                 center=center, pad_mode=pad_mode)  # fmt: skip
    mag = _power_of(spectrum, power)
    confirm()
    return _swap_last_axes(mag), host, size


def _spectrum_of(fn: str, y: Any, *, n_fft: int, hop_length: int, win_length: int | None,
                 window: Any, center: bool, pad_mode: str
                 ) -> tuple[GPUArray, Callable[[], None], bool, int]:  # fmt: skip
    """(STFT of y laid out (..., n_frames, n_freq), the call that reads y's NaN test (make
    it once the caller's work is queued), host flag, n_fft)."""
    if y is None:
        raise ValueError(f"{fn}: give an audio signal y or a spectrogram S")
    signal, host = to_device(y, fn)
    check_audio(signal, fn, finite=False)
    size, hop, win = _lengths(fn, n_fft, hop_length, win_length)
    confirm: list[Callable[[], None]] = []
    real = _spectrum_real(signal.dtype.name)
    spectrum = frames_spectrum(
        signal,
        fn,
        n_fft=size,
        hop_length=hop,
        window=_window_on(signal, window, win, size, real),
        center=center,
        pad_mode=pad_mode,
        real=real,
        confirm_into=confirm,
    )
    return spectrum, confirm[0], host, size


def _power_of(spectrum: GPUArray, power: float) -> GPUArray:
    """|spectrum| ** power (|X|^2 in one kernel on a GPU)."""
    fused = _fused.power(spectrum) if power == 2 else None
    if fused is not None:
        return fused
    mag = gp.abs(spectrum)
    if power != 1:
        mag = gp.square(mag) if power == 2 else mag**power
    return mag


def melspectrogram(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    n_fft: int = 2048,
    hop_length: int = 512,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    power: float = 2.0,
    **kwargs: Any,
) -> Any:
    """The mel-scaled spectrogram (..., n_mels, n_frames), as librosa.feature.melspectrogram.

    From y: |stft(y)| ** power; or from a given magnitude/power spectrogram S. `kwargs`
    go to `filters.mel` (n_mels, fmin, fmax, htk, norm, dtype).
    """
    rate = positive_rate(sr, "melspectrogram")
    if S is not None or power != 2:
        spec, host, size = spectrogram_of("melspectrogram", y, S, n_fft=n_fft,
                                          hop_length=hop_length, win_length=win_length,
                                          window=window, center=center, pad_mode=pad_mode,
                                          power=power)  # fmt: skip
        weights, _ = _mel_weights(rate, size, kwargs, spec.dtype.to_numpy_dtype(), spec)
        if spec.dtype != weights.dtype:  # the product's dtype: NumPy's promotion of the two
            spec = gp.astype(spec, weights.dtype)
        return back(gp.matmul(weights, spec), host)
    spectrum, confirm, host, size = _spectrum_of("melspectrogram", y, n_fft=n_fft,
                                                 hop_length=hop_length, win_length=win_length,
                                                 window=window, center=center,
                                                 pad_mode=pad_mode)  # fmt: skip
    real = _spectrum_real(spectrum.dtype.name)
    weights, key = _mel_weights(rate, size, kwargs, real, spectrum)
    mel = None
    if key is not None and _fused.kernels_here(spectrum) and _mel_power.takes(spectrum, weights):
        # on a GPU: |X|^2 and the product over each mel's nonzero bins in one kernel
        table = device_constant(("mel bands", key),
                                lambda: _mel_power.bands(_mel_basis(rate, size, kwargs)),
                                spectrum)  # fmt: skip
        mel = _mel_power.mel_power(spectrum, weights, table)
    if mel is None:
        spec = _swap_last_axes(_power_of(spectrum, 2))
        if spec.dtype != weights.dtype:  # the product's dtype: NumPy's promotion of the two
            spec = gp.astype(spec, weights.dtype)
        mel = gp.matmul(weights, spec)
    confirm()
    return back(mel, host)
