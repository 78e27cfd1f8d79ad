"""Whisper's log-mel front end, as openai-whisper defines it, on pygpukit.audio's STFT and mel bank.

16 kHz mono; 400-sample periodic Hann window, hop 160, centred frames with reflect
padding, the last frame dropped; power spectrum; 80 or 128 Slaney mel bands (librosa's
filters); log10 of max(x, 1e-10), floored at the clip's maximum - 8, then (x + 4) / 4.
The maximum is taken per clip, so a batch gives each clip what it would get alone.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

__all__ = [
    "CHUNK_LENGTH",
    "HOP_LENGTH",
    "N_FFT",
    "N_FRAMES",
    "N_SAMPLES",
    "SAMPLE_RATE",
    "check_audio",
    "log_mel_spectrogram",
    "mel_filters",
    "pad_or_trim",
]

SAMPLE_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
CHUNK_LENGTH = 30  # seconds per encoder window
N_SAMPLES = CHUNK_LENGTH * SAMPLE_RATE  # 480000
N_FRAMES = N_SAMPLES // HOP_LENGTH  # 3000
#: a last axis this short beside a long first axis is (samples, channels), not a batch
MAX_CHANNELS = 8


@lru_cache(maxsize=4)
def mel_filters(n_mels: int) -> np.ndarray:
    """The (n_mels, 201) Slaney mel bank Whisper was trained with (librosa's definition)."""
    if n_mels not in (80, 128):
        raise ValueError(f"n_mels must be 80 or 128 (Whisper's banks), got {n_mels}")
    from pygpukit.audio.filters import mel

    bank = mel(sr=SAMPLE_RATE, n_fft=N_FFT, n_mels=n_mels, dtype=np.float32)
    bank.setflags(write=False)
    return np.asarray(bank)


def check_audio(audio: Any, sample_rate: int = SAMPLE_RATE, *, batch: bool = True) -> Any:
    """Refuse what Whisper cannot hear: another rate, multichannel, empty, NaN or infinite.

    Returns the audio as float32 (a NumPy array or a GPUArray on its own device), shaped
    (samples,) or, with `batch`, (clips, samples).
    """
    audio, confirm = _checked(audio, sample_rate, batch=batch)
    confirm()
    return audio


_NOT_FINITE = "audio holds NaN or infinite samples; clean the signal first"


def _checked(audio: Any, sample_rate: int, *, batch: bool,
             device_test: bool = True) -> tuple[Any, Callable[[], None]]:  # fmt: skip
    """check_audio's work, with a GPUArray's NaN/inf test queued and read by the returned
    call (so the caller can queue its transform first and wait on the device once);
    without `device_test` a GPUArray's samples are left for the caller to test."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, np.integer)):
        raise TypeError(f"sample_rate must be an int, got {type(sample_rate).__name__}")
    if sample_rate != SAMPLE_RATE:
        raise ValueError(
            f"Whisper needs {SAMPLE_RATE} Hz audio, got sample_rate={sample_rate}; resample "
            f"first, e.g. pygpukit.audio.resample(y, orig_sr={sample_rate}, "
            f"target_sr={SAMPLE_RATE})"
        )
    on_device = isinstance(audio, GPUArray)
    if not on_device:
        try:
            audio = np.asarray(audio)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"audio must be an array of samples: {exc}") from None
    kind = audio.dtype.kind if not on_device else ("f" if audio.dtype.is_floating else "?")
    if not on_device and kind not in "fiu":
        raise TypeError(f"audio must hold real samples, got dtype {audio.dtype}")
    if on_device and not audio.dtype.is_floating:
        raise TypeError(f"audio must be a float GPUArray, got dtype {audio.dtype.name}")
    allowed = (1, 2) if batch else (1,)
    if audio.ndim not in allowed:
        raise ValueError(
            f"audio must be mono samples{' (or a batch of clips)' if batch else ''}, got "
            f"shape {audio.shape}; mix multichannel audio down first, e.g. y.mean(axis=-1)"
        )
    if audio.ndim == 2 and audio.shape[-1] <= MAX_CHANNELS < audio.shape[0]:
        raise ValueError(
            f"audio of shape {audio.shape} looks like (samples, channels) multichannel audio; "
            "Whisper wants mono: mix it down first, e.g. y.mean(axis=-1)"
        )
    if audio.shape[-1] == 0 or audio.size == 0:
        raise ValueError(f"audio is empty (shape {audio.shape}); there is nothing to hear")
    if on_device:
        if audio.dtype != gp.float32:  # float32 in: no copy of a long batch
            audio = audio.astype(gp.float32)
        if not device_test:
            return audio, lambda: None
        flag = gp.all(gp.isfinite(audio))

        def confirm() -> None:
            if not bool(flag):
                raise ValueError(_NOT_FINITE)

        return audio, confirm
    if kind in "iu":  # PCM integers: scale to [-1, 1) as soundfile does
        audio = audio.astype(np.float32) / float(np.iinfo(audio.dtype).max + 1)
    audio = np.ascontiguousarray(audio, dtype=np.float32)
    if not bool(np.isfinite(audio).all()):
        raise ValueError(_NOT_FINITE)
    return audio, lambda: None


def pad_or_trim(array: Any, length: int = N_SAMPLES, *, axis: int = -1) -> Any:
    """Cut `array` to `length` along `axis`, or pad it there with zeros (openai-whisper's)."""
    size = array.shape[axis]
    if size > length:
        index = [slice(None)] * array.ndim
        index[axis] = slice(0, length)
        return array[tuple(index)]
    if size == length:
        return array
    pad_shape = list(array.shape)
    pad_shape[axis] = length - size
    if isinstance(array, GPUArray):
        zeros = gp.zeros(tuple(pad_shape), dtype=array.dtype, device=array.device)
        return gp.concat([array, zeros], axis=axis)
    return np.concatenate([array, np.zeros(pad_shape, dtype=array.dtype)], axis=axis)


def log_mel_spectrogram(
    audio: Any,
    n_mels: int = 80,
    *,
    padding: int = 0,
    sample_rate: int = SAMPLE_RATE,
    device: Any = None,
) -> Any:
    """Whisper's log-mel features (..., n_mels, frames) of 16 kHz mono `audio` (..., samples).

    `padding` zero samples are appended first (openai-whisper's transcribe pads 30 s).
    A GPUArray stays on its device and gives a GPUArray; a NumPy array gives a NumPy
    array, computed on `device` (default: pygpukit's default device).
    """
    from pygpukit.audio import _fused, _mel_power
    from pygpukit.audio._framing import device_constant
    from pygpukit.audio.spectral import _window_on, abs2, frames_spectrum

    filters = mel_filters(n_mels)
    on_device = isinstance(audio, GPUArray)
    if padding < 0:
        raise ValueError(f"padding must be >= 0 samples, got {padding}")
    # a GPUArray's NaN test is left to the STFT's framing kernel (no pass of its own)
    y, confirm = _checked(audio, sample_rate, batch=True, device_test=False)
    if padding:
        y = pad_or_trim(y, y.shape[-1] + padding)
    x = y if on_device else gp.from_numpy(y, device)
    tests: list[Callable[[], None]] = [confirm]
    # the STFT's own steps, without stft's second NaN test of the same samples;
    # openai-whisper drops the last of the 1 + n // hop frames, so it is never computed
    n_frames = int(y.shape[-1]) // HOP_LENGTH
    frames = frames_spectrum(x, "log_mel_spectrogram", n_fft=N_FFT, hop_length=HOP_LENGTH,
                             window=_window_on(x, "hann", N_FFT, N_FFT, np.dtype(np.float32)),
                             center=True, pad_mode="reflect", real=np.float32,
                             keep_frames=n_frames,
                             confirm_into=tests if on_device else None,
                             name="audio")  # fmt: skip
    # the bank and the window stay on the device between calls, found by key
    bank = device_constant(("whisper mel", n_mels), lambda: filters, x)
    mel = None
    if _fused.kernels_here(frames) and _mel_power.takes(frames, bank):
        # |X|^2 and the product over each mel's nonzero bins in one kernel
        table = device_constant(("whisper mel bands", n_mels),
                                lambda: _mel_power.bands(filters), x)  # fmt: skip
        mel = _mel_power.mel_power(frames, bank, table)
    if mel is None:
        # |X|^2 in the frames' own (contiguous) order, then a transposed view for the product
        power = _fused.power(frames)
        if power is None:
            power = abs2(frames)
        mel = bank @ gp.matrix_transpose(power)
    logs = _fused.whisper_log(mel)  # one kernel after the max on a GPU
    if logs is None:
        logs = gp.log10(gp.maximum(mel, gp.full((), 1e-10, dtype=gp.float32, device=x.device)))
        peak = gp.max(logs, axis=(-2, -1), keepdims=True)
        logs = (gp.maximum(logs, peak - 8.0) + 4.0) / 4.0
    for test in tests:  # the device's NaN test, read once all the work is queued
        test()
    return logs if on_device else logs.to_numpy()
