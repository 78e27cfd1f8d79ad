"""Reading and writing audio files: soundfile when installed, else the stdlib `wave` (PCM WAV)."""

from __future__ import annotations

import os
import wave
from importlib import import_module
from types import ModuleType
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .resample import resample

__all__ = ["get_samplerate", "load", "save"]

PathLike = str | os.PathLike[str]

#: PCM sample widths (bytes) the stdlib reader decodes, and each one's NumPy type
_PCM_TYPES = {1: np.uint8, 2: np.int16, 4: np.int32}


def _soundfile() -> ModuleType | None:
    """The soundfile module, or None when it (or its libsndfile) is missing."""
    try:
        return import_module("soundfile")
    except (ImportError, OSError):
        return None


def _read_wave(path: PathLike) -> tuple[np.ndarray, int]:
    """(float32 samples (n, channels) in [-1, 1), rate) of a PCM WAV, by the stdlib."""
    try:
        with wave.open(os.fspath(path), "rb") as f:
            channels, width, rate = f.getnchannels(), f.getsampwidth(), f.getframerate()
            frames = f.getnframes()
            raw = f.readframes(frames)
    except (wave.Error, EOFError, RuntimeError) as exc:
        # RuntimeError: Python 3.12's wave raises it (with no message) for a chunk whose
        # declared size runs past the end of the file
        raise ValueError(
            f"load: {os.fspath(path)!r} is not a readable PCM WAV file ({exc})"
        ) from None
    if len(raw) != frames * channels * width:
        raise ValueError(
            f"load: {os.fspath(path)!r} is truncated: the header promises {frames} frames, "
            f"the file holds {len(raw) // max(1, channels * width)}"
        )
    if width == 3:  # 24-bit: widen each little-endian triple to int32 (sign kept by the shift)
        triples = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = (triples[:, 0] << 8 | triples[:, 1] << 16 | triples[:, 2] << 24) >> 8
        samples = ints.astype(np.float32) / float(1 << 23)
    elif width in _PCM_TYPES:
        ints = np.frombuffer(raw, _PCM_TYPES[width])
        if width == 1:  # 8-bit WAV is unsigned, centred on 128
            samples = (ints.astype(np.float32) - 128.0) / 128.0
        else:
            samples = ints.astype(np.float32) / float(1 << (8 * width - 1))
    else:
        raise ValueError(f"load: {os.fspath(path)!r} has {8 * width}-bit samples; not PCM")
    return samples.reshape(-1, channels), rate


def _read(path: PathLike) -> tuple[np.ndarray, int]:
    sf = _soundfile()
    if sf is None:
        return _read_wave(path)
    try:
        data, rate = sf.read(os.fspath(path), dtype="float32", always_2d=True)
    except sf.LibsndfileError as exc:
        raise ValueError(
            f"load: {os.fspath(path)!r} is not a readable audio file ({exc})"
        ) from None
    return data, int(rate)


def get_samplerate(path: PathLike) -> int:
    """The sample rate of an audio file, read from its header."""
    _exists(path, "get_samplerate")
    sf = _soundfile()
    if sf is None:
        return _read_wave(path)[1]
    try:
        return int(sf.info(os.fspath(path)).samplerate)
    except sf.LibsndfileError as exc:
        raise ValueError(f"get_samplerate: {os.fspath(path)!r} is not readable ({exc})") from None


def _exists(path: PathLike, fn: str) -> None:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{fn}: path must be a str or os.PathLike, got {type(path).__name__}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{fn}: no such file: {os.fspath(path)!r}")


def load(
    path: PathLike,
    *,
    sr: float | None = 22050,
    mono: bool = True,
    offset: float = 0.0,
    duration: float | None = None,
    dtype: Any = np.float32,
    res_type: str = "polyphase",
    device: Any = None,
) -> tuple[Any, float]:
    """(samples, rate) of an audio file, as librosa.load: resampled to `sr` (None keeps
    the file's rate), averaged to mono unless mono=False ((channels, n) then).

    `offset` and `duration` (seconds) pick a span. Resampling is polyphase (librosa's
    default, soxr_hq, is a different filter). `device` returns a GPUArray there.
    """
    _exists(path, "load")
    data, rate = _read(path)
    start = round(max(0.0, offset) * rate)
    stop = data.shape[0] if duration is None else start + round(duration * rate)
    y = np.ascontiguousarray(data[start:stop].T)  # (channels, n), librosa's layout
    if mono:
        y = np.mean(y, axis=0)
    elif y.shape[0] == 1:
        y = y[0]
    if y.shape[-1] == 0:
        raise ValueError(f"load: {os.fspath(path)!r} has no samples in the span asked for")
    out_rate: float = rate
    if sr is not None and sr != rate:
        y = resample(y, orig_sr=rate, target_sr=sr, res_type=res_type)
        out_rate = sr
    y = y.astype(dtype, copy=False)
    return (gp.from_numpy(y, device) if device is not None else y), out_rate


def save(path: PathLike, y: Any, sr: int, *, subtype: str | None = None) -> None:
    """Write y ((n,) mono or (channels, n)) as an audio file at rate `sr`.

    With soundfile, the format follows the extension and `subtype` ("PCM_16", "FLOAT",
    ...); without it, a 16-bit PCM WAV is written by the stdlib (samples clipped to
    [-1, 1]).
    """
    samples = y.to_numpy() if isinstance(y, GPUArray) else np.asarray(y)
    if samples.ndim not in (1, 2) or samples.shape[-1] == 0:
        raise ValueError(f"save: y must be (n,) or (channels, n) with n > 0, got {samples.shape}")
    if samples.dtype.kind != "f":
        raise TypeError(f"save: y must be floating point, got {samples.dtype}")
    if not np.all(np.isfinite(samples)):
        raise ValueError("save: y contains NaN or infinite samples")
    if isinstance(sr, bool) or not isinstance(sr, (int, np.integer)) or sr <= 0:
        raise ValueError(f"save: sr must be a positive int, got {sr!r}")
    frames = samples.T if samples.ndim == 2 else samples  # (n, channels) on disk
    sf = _soundfile()
    if sf is not None:
        sf.write(os.fspath(path), frames, int(sr), subtype=subtype)
        return
    if subtype not in (None, "PCM_16"):
        raise ValueError(f"save: subtype {subtype!r} needs soundfile (pip install soundfile)")
    ints = np.round(np.clip(frames, -1.0, 1.0) * 32767.0).astype("<i2")
    with wave.open(os.fspath(path), "wb") as f:
        f.setnchannels(1 if samples.ndim == 1 else samples.shape[0])
        f.setsampwidth(2)
        f.setframerate(int(sr))
        f.writeframes(ints.tobytes())
