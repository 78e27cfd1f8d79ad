"""The benchmark's `audio` family (python -m pygpukit.benchmark --families audio).

STFT (n_fft 400, hop 160, as Whisper's front end), the 80-band mel spectrogram and
resampling 44.1 kHz -> 16 kHz on a long noise signal, beside torch.stft / torchaudio on a
GPU and librosa / scipy on the CPU, each checked against a float64 librosa/scipy result.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from typing import Any

import numpy as np
from pygpukit.benchmark.cases import ArrayCase, Case, Expected, Sizes
from pygpukit.benchmark.results import Work

from . import spectral
from .resample import resample

N_FFT, HOP, N_MELS, SR = 400, 160, 80, 16000


@cache
def _torch_window(t: Any, device: Any) -> Any:
    return t.hann_window(N_FFT, device=device)


def _torch_stft(t: Any, y: Any) -> Any:
    return t.stft(y, n_fft=N_FFT, hop_length=HOP, window=_torch_window(t, y.device),
                  center=True, pad_mode="constant", return_complex=True)  # fmt: skip


@cache
def _torchaudio_mel(device: Any) -> Any:
    import torchaudio

    transform = torchaudio.transforms.MelSpectrogram(
        sample_rate=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS, center=True,
        pad_mode="constant", power=2.0, norm="slaney", mel_scale="slaney",
    )  # fmt: skip
    return transform.to(device)


def _peers(numpy_call: Any, torch_call: Any) -> dict[str, Any]:
    """The CPU peer (librosa/scipy) and torch; CuPy has no audio equivalent (None)."""
    return {"numpy": numpy_call, "cupy": None, "torch": torch_call}


def _librosa() -> Any:
    import librosa

    return librosa


def _stft_reference(y: np.ndarray) -> Expected:
    return Expected(_librosa().stft(y.astype(np.float64), n_fft=N_FFT, hop_length=HOP))


def _mel_reference(y: np.ndarray) -> Expected:
    mel = _librosa().feature.melspectrogram(y=y.astype(np.float64), sr=SR, n_fft=N_FFT,
                                            hop_length=HOP, n_mels=N_MELS)  # fmt: skip
    return Expected(mel)


def _resample_reference(y: np.ndarray) -> Expected:
    import scipy.signal

    return Expected(scipy.signal.resample_poly(y.astype(np.float64), 160, 441))


def references_missing() -> str:
    """Why the references (librosa, scipy) cannot be computed here, or "" when they can."""
    missing = [m for m in ("librosa", "scipy") if importlib.util.find_spec(m) is None]
    return f"{' and '.join(missing)} not installed" if missing else ""


def cases(sizes: Sizes) -> list[Case]:
    """One STFT, mel and resampling case per signal length in sizes.audio (seconds).

    Without librosa and scipy (the float64 references) the family is empty, and says so.
    """
    why = references_missing()
    if why:
        print(f"audio family skipped: {why} (pip install librosa scipy)", file=sys.stderr)
        return []
    out: list[Case] = []
    for seconds in sizes.audio:
        n = seconds * SR
        frames = 1 + n // HOP
        label = f"{seconds} s at 16 kHz float32"
        out += [
            ArrayCase(
                "audio", "stft", f"{label}, n_fft 400 hop 160", "fft_r2c", [("normal", (n,))],
                ["float32"], lambda y: spectral.stft(y, n_fft=N_FFT, hop_length=HOP),
                _peers(lambda xp, y: _librosa().stft(y, n_fft=N_FFT, hop_length=HOP), _torch_stft),
                _stft_reference, 1e-5, Work("GB/s", 4 * n + 8 * (N_FFT // 2 + 1) * frames),
                note="numpy: librosa.stft; torch: torch.stft (constant padding)",
            ),
            ArrayCase(
                "audio", "melspectrogram", f"{label}, 80 mels", "fft_r2c", [("normal", (n,))],
                ["float32"],
                lambda y: spectral.melspectrogram(y=y, sr=SR, n_fft=N_FFT, hop_length=HOP,
                                                  n_mels=N_MELS),
                _peers(lambda xp, y: _librosa().feature.melspectrogram(
                    y=y, sr=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS),
                    lambda t, y: _torchaudio_mel(y.device)(y)),
                _mel_reference, 1e-5, Work("GB/s", 4 * n + 4 * N_MELS * frames),
                note="numpy: librosa; torch: torchaudio MelSpectrogram (slaney mels and norm)",
            ),
        ]  # fmt: skip
        n44 = seconds * 44100
        out.append(ArrayCase(
            "audio", "resample", f"{seconds} s 44.1 kHz -> 16 kHz float32", "take",
            [("normal", (n44,))], ["float32"],
            lambda y: resample(y, orig_sr=44100, target_sr=16000),
            _peers(lambda xp, y: _scipy_poly(y), lambda t, y: _torchaudio_resample(y)),
            _resample_reference, 1e-5, Work("GB/s", 4 * n44 + 4 * seconds * 16000),
            note="numpy: scipy resample_poly (same filter); torch: torchaudio's sinc resampler "
            "(a different filter, so its error against this reference is larger)",
        ))  # fmt: skip
    return out


def _scipy_poly(y: np.ndarray) -> np.ndarray:
    import scipy.signal

    return scipy.signal.resample_poly(y, 160, 441)


def _torchaudio_resample(y: Any) -> Any:
    import torchaudio

    return torchaudio.functional.resample(y, 44100, 16000)
