"""Time-domain effects and silence handling: preemphasis, an energy VAD, split and trim."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, check_audio, positive_int, to_device
from .convert import amplitude_to_db
from .features import rms
from .vocoder import pitch_shift, time_stretch

__all__ = [
    "energy_vad",
    "harmonic",
    "hpss",
    "percussive",
    "pitch_shift",
    "preemphasis",
    "split",
    "time_stretch",
    "trim",
]


def preemphasis(y: Any, *, coef: float = 0.97, zi: Any = None, return_zf: bool = False) -> Any:
    """y[n] - coef * y[n - 1], as librosa.effects.preemphasis.

    `zi` is the filter state before the first sample (default 2 y[0] - y[1], librosa's
    linear extrapolation); with return_zf the final state (-coef * y[-1]) comes back
    too, to continue on the next block of a stream.
    """
    signal, host = to_device(y, "preemphasis")
    check_audio(signal, "preemphasis")
    if signal.shape[-1] < 2 and zi is None:
        raise ValueError("preemphasis: y needs at least 2 samples (or pass zi)")
    if zi is None:
        state = 2.0 * signal[..., 0:1] - signal[..., 1:2]
    else:
        state = gp.astype(to_device(np.asarray(zi) if not isinstance(zi, GPUArray) else zi,
                                    "preemphasis", "zi")[0], signal.dtype)  # fmt: skip
        state = gp.broadcast_to(gp.reshape(state, (*state.shape[:-1], 1)) if state.ndim
                                else gp.reshape(state, (1,)), (*signal.shape[:-1], 1))  # fmt: skip
    first = signal[..., :1] + state
    rest = signal[..., 1:] - coef * signal[..., :-1]
    out = gp.concat([first, rest], axis=-1)
    if return_zf:
        return back(out, host), back(-coef * signal[..., -1:], host)
    return back(out, host)


def energy_vad(
    y: Any,
    *,
    top_db: float = 60.0,
    frame_length: int = 2048,
    hop_length: int = 512,
    amin: float = 1e-5,
) -> Any:
    """Voice (non-silence) activity by energy: True for frames within top_db of the loudest.

    Per signal of a batch: the RMS of each frame (centred frames, as librosa.feature.rms)
    in dB relative to that signal's loudest frame; (..., n_frames) booleans. Frame t
    covers samples [t * hop_length - frame_length // 2, t * hop_length + frame_length // 2).
    """
    if top_db < 0:
        raise ValueError(f"energy_vad: top_db must be non-negative, got {top_db}")
    signal, host = to_device(y, "energy_vad")
    energy = rms(y=signal, frame_length=frame_length, hop_length=hop_length)[..., 0, :]
    loudest = gp.max(energy, axis=-1, keepdims=True)
    # 20 log10(e / max) > -top_db without a log: e > max * 10^(-top_db / 20); frames at
    # or below `amin` RMS (-100 dBFS) never count, so digital silence is all inactive
    active = (energy > loudest * float(10.0 ** (-top_db / 20.0))) & (energy > amin)
    return back(active, host)


def _nonsilent(y: Any, fn: str, top_db: float, ref: Any, frame_length: int, hop_length: int,
               aggregate: Callable[..., Any]) -> tuple[np.ndarray, int]:  # fmt: skip
    """librosa's rule: RMS in dB (ref over all channels), channels merged by `aggregate`.

    The mask is small (one value per frame) and the caller turns it into intervals on
    the host, so it comes back as NumPy.
    """
    signal, _ = to_device(y, fn)
    check_audio(signal, fn)
    length = positive_int(frame_length, fn, "frame_length")
    hop = positive_int(hop_length, fn, "hop_length")
    energy = rms(y=signal, frame_length=length, hop_length=hop)[..., 0, :]
    db = amplitude_to_db(energy, ref=ref, top_db=None)
    values = db.to_numpy() if isinstance(db, GPUArray) else np.asarray(db)
    if values.ndim > 1:
        values = aggregate(values.reshape(-1, values.shape[-1]), axis=0)
    return values > -top_db, int(signal.shape[-1])


def split(
    y: Any,
    *,
    top_db: float = 60,
    ref: float | Callable[..., Any] = np.max,
    frame_length: int = 2048,
    hop_length: int = 512,
    aggregate: Callable[..., Any] = np.max,
) -> Any:
    """(n_intervals, 2) [start, end) sample spans of non-silence, as librosa.effects.split
    (a GPUArray on y's device when y is one)."""
    active, n = _nonsilent(y, "split", top_db, ref, frame_length, hop_length, aggregate)
    edges = [np.flatnonzero(np.diff(active.astype(int))) + 1]
    if active[0]:
        edges.insert(0, np.array([0]))
    if active[-1]:
        edges.append(np.array([len(active)]))
    spans = np.minimum(np.concatenate(edges) * hop_length, n).reshape(-1, 2)
    return gp.asarray(spans, device=y.device) if isinstance(y, GPUArray) else spans


def trim(
    y: Any,
    *,
    top_db: float = 60,
    ref: float | Callable[..., Any] = np.max,
    frame_length: int = 2048,
    hop_length: int = 512,
    aggregate: Callable[..., Any] = np.max,
) -> tuple[Any, np.ndarray]:
    """(y without its leading and trailing silence, [start, end]), as librosa.effects.trim."""
    active, n = _nonsilent(y, "trim", top_db, ref, frame_length, hop_length, aggregate)
    frames = np.flatnonzero(active)
    if frames.size:
        start = int(frames[0] * hop_length)
        end = min(n, int((frames[-1] + 1) * hop_length))
    else:
        start, end = 0, 0
    return y[..., start:end], np.asarray([start, end])


def _stft_kw(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    keys = ("n_fft", "hop_length", "win_length", "window", "center", "pad_mode")
    unknown = set(kwargs) - set(keys)
    if unknown:
        raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unknown))}")
    forward = dict(kwargs)
    inverse = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    return forward, inverse


def hpss(
    y: Any,
    *,
    kernel_size: int | tuple[int, int] = 31,
    power: float = 2.0,
    margin: float | tuple[float, float] = 1.0,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """(harmonic, percussive) signals of y, as librosa.effects.hpss (stft, hpss, istft)."""
    from .decompose import hpss as split_spectrum
    from .spectral import istft, stft

    signal, host = to_device(y, "hpss")
    check_audio(signal, "hpss")
    forward, inverse = _stft_kw(kwargs)
    spec = stft(signal, **forward)
    harmonic, percussive = split_spectrum(spec, kernel_size=kernel_size, power=power,
                                          margin=margin)  # fmt: skip
    n = int(signal.shape[-1])
    parts = [istft(p, length=n, dtype=signal.dtype.name, **inverse) for p in (harmonic, percussive)]
    return back(parts[0], host), back(parts[1], host)


def harmonic(y: Any, **kwargs: Any) -> Any:
    """The harmonic part of y (librosa.effects.harmonic)."""
    return hpss(y, **kwargs)[0]


def percussive(y: Any, **kwargs: Any) -> Any:
    """The percussive part of y (librosa.effects.percussive)."""
    return hpss(y, **kwargs)[1]
