"""Phase reconstruction and the phase vocoder: griffinlim, phase_vocoder, time/pitch shifts."""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, check_audio, on_device, positive_int, positive_rate, to_device
from .resample import resample_poly
from .spectral import istft, stft

__all__ = ["griffinlim", "phase_vocoder", "pitch_shift", "time_stretch"]


def _phasor(angles: GPUArray, mag: GPUArray | None = None) -> GPUArray:
    """cos(angles) + i sin(angles), times `mag` when given."""
    real, imag = gp.cos(angles), gp.sin(angles)
    if mag is not None:
        real, imag = real * mag, imag * mag
    unit = gp.astype(
        gp.zeros_like(real), gp.complex64 if real.dtype == gp.float32 else gp.complex128
    )
    return unit + gp.astype(real, unit.dtype) + gp.astype(imag, unit.dtype) * 1j


def phase_vocoder(
    D: Any,
    *,
    rate: float,
    hop_length: int | None = None,
    n_fft: int | None = None,
) -> Any:
    """D (..., n_freq, n_frames) resampled in time by `rate` (librosa.phase_vocoder).

    Output frame t reads input time t * rate: magnitudes interpolated between the two
    neighbouring frames, phases advanced by each bin's measured frequency. The running
    phase, a sequential sum in librosa, is a cumulative_sum over the steps here.
    """
    spec, host = to_device(D, "phase_vocoder", "D")
    if not spec.dtype.is_complex or spec.ndim < 2:
        raise TypeError(f"phase_vocoder: D must be a complex (..., n_freq, n_frames) STFT, got "
                        f"{spec.dtype.name} {tuple(spec.shape)}")  # fmt: skip
    if not rate > 0:
        raise ValueError(f"phase_vocoder: rate must be positive, got {rate}")
    n_freq, n_frames = int(spec.shape[-2]), int(spec.shape[-1])
    size = 2 * (n_freq - 1) if n_fft is None else positive_int(n_fft, "phase_vocoder", "n_fft")
    hop = size // 4 if hop_length is None else positive_int(hop_length, "phase_vocoder", "hop")
    steps = np.arange(0, n_frames, rate, dtype=np.float64)
    real = gp.float32 if spec.dtype == gp.complex64 else gp.float64
    zeros = gp.zeros((*spec.shape[:-1], 2), dtype=spec.dtype, device=spec.device)
    padded = gp.concat([spec, zeros], axis=-1)  # librosa pads two empty frames at the end
    left = on_device(steps.astype(np.int64), spec)
    right = on_device(steps.astype(np.int64) + 1, spec)
    first, second = gp.take(padded, left, axis=-1), gp.take(padded, right, axis=-1)
    alpha = on_device(np.mod(steps, 1.0).astype(real.name), spec)
    mag = (1.0 - alpha) * gp.abs(first) + alpha * gp.abs(second)
    # each bin's expected advance per hop, reduced mod 2 pi on the host (float64) so the
    # float32 increments stay small; the running phase is summed in float64. librosa adds
    # the unreduced advance into a float32 accumulator, whose roundoff grows with t.
    advance = np.linspace(0, np.pi * hop, n_freq)
    reduced = on_device(np.mod(advance, 2 * np.pi).astype(real.name)[:, None], spec)
    dphase = gp.angle(second) - gp.angle(first) - reduced  # wrapped below: same mod 2 pi
    dphase = dphase - 2.0 * np.pi * gp.round(dphase / (2.0 * np.pi))
    increments = gp.astype(reduced + dphase, gp.float64)
    # phase at output t: the first frame's phase plus the increments of steps 0 .. t - 1
    start = gp.astype(gp.angle(spec[..., :1]), gp.float64)
    if len(steps) > 1:
        running = gp.cumulative_sum(gp.concat([start, increments[..., :-1]], axis=-1), axis=-1)
    else:
        running = start
    running = gp.remainder(running, 2 * np.pi)  # back to float precision without loss
    return back(_phasor(gp.astype(running, real), mag), host)


def time_stretch(y: Any, *, rate: float, **kwargs: Any) -> Any:
    """y played `rate` times faster at the same pitch (librosa.effects.time_stretch)."""
    if not rate > 0:
        raise ValueError(f"time_stretch: rate must be a positive float, got {rate}")
    signal, host = to_device(y, "time_stretch")
    check_audio(signal, "time_stretch")
    spec = stft(signal, **kwargs)
    stretched = phase_vocoder(spec, rate=rate, hop_length=kwargs.get("hop_length"),
                              n_fft=kwargs.get("n_fft"))  # fmt: skip
    inverse = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    length = round(signal.shape[-1] / rate)
    return back(istft(stretched, dtype=signal.dtype.name, length=length, **inverse), host)


def pitch_shift(
    y: Any,
    *,
    sr: float,
    n_steps: float,
    bins_per_octave: int = 12,
    res_type: str = "polyphase",
    scale: bool = False,
    **kwargs: Any,
) -> Any:
    """y shifted by n_steps (fractional) steps of 1 / bins_per_octave octave, same duration.

    As librosa.effects.pitch_shift: time_stretch by 2^(-n_steps / bins_per_octave), then
    resample back. The resampling is polyphase by the ratio as a fraction (denominator up
    to 1000, exact for octaves), where librosa's default is soxr_hq.
    """
    rate_hz = positive_rate(sr, "pitch_shift")
    bins = positive_int(bins_per_octave, "pitch_shift", "bins_per_octave")
    if res_type != "polyphase":
        raise ValueError(f"pitch_shift: res_type={res_type!r} is not available; use 'polyphase'")
    signal, host = to_device(y, "pitch_shift")
    rate = 2.0 ** (-float(n_steps) / bins)
    stretched = time_stretch(signal, rate=rate, **kwargs)
    ratio = Fraction(rate).limit_denominator(1000)  # new length / stretched length
    shifted = resample_poly(stretched, ratio.numerator, ratio.denominator)
    if scale:
        shifted = shifted / float(np.sqrt(rate))
    n = int(signal.shape[-1])
    if shifted.shape[-1] >= n:
        shifted = shifted[..., :n]
    else:
        tail = gp.zeros((*shifted.shape[:-1], n - shifted.shape[-1]), dtype=shifted.dtype,
                        device=shifted.device)  # fmt: skip
        shifted = gp.concat([shifted, tail], axis=-1)
    del rate_hz  # the sample rate cancels out of the ratio (sr / rate -> sr)
    return back(shifted, host)


def griffinlim(
    S: Any,
    *,
    n_iter: int = 32,
    hop_length: int | None = None,
    win_length: int | None = None,
    n_fft: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    length: int | None = None,
    pad_mode: str = "constant",
    momentum: float = 0.99,
    init: str | None = "random",
    random_state: int | np.random.RandomState | np.random.Generator | None = None,
) -> Any:
    """A signal whose STFT magnitude approximates S (fast Griffin-Lim, librosa.griffinlim).

    The random initial phases come from NumPy (random_state as in librosa, so a seed
    gives librosa's start); the iterations are stft / istft on S's device.
    """
    mag, host = to_device(S, "griffinlim", "S")
    if mag.dtype.is_complex or mag.ndim < 2:
        raise TypeError(f"griffinlim: S must be a real (..., n_freq, n_frames) magnitude, got "
                        f"{mag.dtype.name} {tuple(mag.shape)}")  # fmt: skip
    if momentum < 0:
        raise ValueError(f"griffinlim: momentum must be >= 0, got {momentum}")
    if momentum > 1:
        warnings.warn(f"griffinlim: momentum={momentum} > 1 can be unstable", stacklevel=2)
    iterations = int(n_iter)
    if iterations < 0:
        raise ValueError(f"griffinlim: n_iter must be >= 0, got {n_iter}")
    if random_state is None:
        rng: Any = np.random.default_rng()
    elif isinstance(random_state, int):
        rng = np.random.RandomState(seed=random_state)  # librosa's choice for an int seed
    else:
        rng = random_state
    shape = tuple(int(s) for s in mag.shape)
    if init == "random":
        angles = _phasor(on_device((2 * np.pi * rng.random(size=shape)).astype(mag.dtype.name),
                                   mag))  # fmt: skip
    elif init is None:
        angles = gp.astype(
            gp.ones_like(mag), gp.complex64 if mag.dtype == gp.float32 else gp.complex128
        )
    else:
        raise ValueError(f"griffinlim: init must be None or 'random', got {init!r}")
    inverse_kw = dict(hop_length=hop_length, win_length=win_length, n_fft=n_fft, window=window,
                      center=center, dtype=dtype, length=length)  # fmt: skip
    size = 2 * (shape[-2] - 1) if n_fft is None else n_fft
    forward_kw = dict(n_fft=size, hop_length=hop_length, win_length=win_length, window=window,
                      center=center, pad_mode=pad_mode)  # fmt: skip
    complex_mag = gp.astype(mag, angles.dtype)
    angles = angles * complex_mag
    previous: GPUArray | None = None
    tiny = float(np.finfo(mag.dtype.name).tiny)
    for _ in range(iterations):
        rebuilt = stft(istft(angles, **inverse_kw), **forward_kw)
        angles = rebuilt
        if previous is not None:
            angles = angles - (momentum / (1 + momentum)) * previous
        angles = angles / gp.astype(gp.abs(angles) + tiny, angles.dtype) * complex_mag
        previous = rebuilt
    return back(istft(angles, **inverse_kw), host)
