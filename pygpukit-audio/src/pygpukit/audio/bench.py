"""The benchmark's `audio` family (python -m pygpukit.benchmark --families audio).

STFT (n_fft 400, hop 160, as Whisper's front end), the 80-band mel spectrogram and
resampling 44.1 kHz -> 16 kHz on a long noise signal, and Whisper's log-mel of a batch of
30 s clips, beside torch.stft / torchaudio on a GPU and librosa / scipy on the CPU. Each is
checked against float64 librosa/scipy where installed, else our own float64 CPU path.
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
from .bench_whisper import whisper_decode_case
from .resample import resample

N_FFT, HOP, N_MELS, SR = 400, 160, 80, 16000
#: 30 s clips in the Whisper log-mel row (the issue's batch)
CLIPS = 64


@cache
def _torch_window(t: Any, device: Any) -> Any:
    return t.hann_window(N_FFT, device=device)


def _torch_stft(t: Any, y: Any) -> Any:
    return t.stft(y, n_fft=N_FFT, hop_length=HOP, window=_torch_window(t, y.device),
                  center=True, pad_mode="constant", return_complex=True)  # fmt: skip


@cache
def _torchaudio_mel(device: Any) -> Any:
    transform = _torchaudio().transforms.MelSpectrogram(
        sample_rate=SR, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS, center=True,
        pad_mode="constant", power=2.0, norm="slaney", mel_scale="slaney",
    )  # fmt: skip
    return transform.to(device)


def _peers(numpy_call: Any, torch_call: Any) -> dict[str, Any]:
    """The CPU peer (librosa/scipy) and torch; CuPy has no audio equivalent (None)."""
    return {"numpy": numpy_call, "cupy": None, "torch": torch_call}


def _librosa() -> Any:
    try:
        import librosa
    except ImportError:  # the runner writes this into the peer's note
        raise ImportError("librosa not installed (pip install librosa)") from None
    return librosa


def _torchaudio() -> Any:
    try:
        import torchaudio
    except ImportError:
        raise ImportError("torchaudio not installed (pip install torchaudio)") from None
    return torchaudio


def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# -- references: librosa / scipy in float64 where installed, else our own CPU path in
# float64 NumPy (the GPU machine has torch but not necessarily librosa) -----------------
def _stft_reference(y: np.ndarray) -> Expected:
    y64 = y.astype(np.float64)
    if _have("librosa"):
        return Expected(_librosa().stft(y64, n_fft=N_FFT, hop_length=HOP))
    return Expected(spectral.stft(y64, n_fft=N_FFT, hop_length=HOP))


def _mel_reference(y: np.ndarray) -> Expected:
    y64 = y.astype(np.float64)
    if _have("librosa"):
        mel = _librosa().feature.melspectrogram(y=y64, sr=SR, n_fft=N_FFT, hop_length=HOP,
                                                n_mels=N_MELS)  # fmt: skip
        return Expected(mel)
    return Expected(spectral.melspectrogram(y=y64, sr=SR, n_fft=N_FFT, hop_length=HOP,
                                            n_mels=N_MELS))  # fmt: skip


def _resample_reference(y: np.ndarray) -> Expected:
    y64 = y.astype(np.float64)
    if _have("scipy"):
        import scipy.signal

        return Expected(scipy.signal.resample_poly(y64, 160, 441))
    return Expected(resample(y64, orig_sr=44100, target_sr=16000))


def references_missing() -> str:
    """Which independent references (librosa, scipy) are absent, or "" when both are here.

    Without them the rows are checked against our own float64 CPU path instead."""
    missing = [m for m in ("librosa", "scipy") if not _have(m)]
    return f"{' and '.join(missing)} not installed" if missing else ""


def cases(sizes: Sizes) -> list[Case]:
    """STFT, mel and resampling cases per signal length in sizes.audio (seconds), the
    Whisper log-mel of a batch of 30 s clips (64 clips; 2 when sizes.audio is under 60 s)
    and Whisper's encoder + decode steps beside transformers (bench_whisper).

    Each row runs whatever peers are installed (a missing one says so in its note); the
    reference is librosa/scipy in float64 where installed, else our CPU path in float64.
    """
    why = references_missing()
    own = f"reference: our float64 CPU path ({why})" if why else "reference: librosa/scipy"
    if why:
        print(f"audio family: {why}; checking against our own float64 CPU path",
              file=sys.stderr)  # fmt: skip
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
                note=f"numpy: librosa.stft; torch: torch.stft (constant padding); {own}",
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
                note="numpy: librosa; torch: torchaudio MelSpectrogram (slaney mels and norm); "
                + own,
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
            f"(a different filter, so its error against this reference is larger); {own}",
        ))  # fmt: skip
    # the full sizes (a minute of audio or more) get the 64 clips and a small model
    # in float16 over 64 decode steps; quick runs 2 clips and tiny over 8
    full = max(sizes.audio) >= 60
    out.append(whisper_log_mel_case(CLIPS if full else 2))
    out.append(whisper_decode_case("small", "float16", 64) if full
               else whisper_decode_case("tiny", "float32", 8))  # fmt: skip
    return out


def whisper_log_mel_case(clips: int) -> ArrayCase:
    """Whisper's 80-band log-mel of `clips` 30 s clips beside openai-whisper's torch.stft
    formula; checked against that formula in float64 NumPy."""
    n = 30 * SR
    frames = n // HOP  # openai-whisper drops the last of the 1 + n // HOP frames
    return ArrayCase(
        "audio", "whisper_log_mel", f"{clips} x 30 s clips, 80 mels float32", "fft_r2c",
        [("normal", (clips, n))], ["float32"], _whisper_ours,
        {"torch": _torch_whisper_log_mel},
        _whisper_reference, 1e-4, Work("GB/s", 4 * clips * n + 4 * clips * N_MELS * frames),
        note="torch: openai-whisper's formula (torch.stft, mel matmul, log10, clamp); "
        "reference: that formula in float64 NumPy",
    )  # fmt: skip


def _whisper_ours(y: Any) -> Any:
    from pygpukit.asr import whisper

    return whisper.log_mel_spectrogram(y, N_MELS)


@cache
def _torch_mel_bank(t: Any, device: Any) -> Any:
    from pygpukit.asr import whisper

    return t.from_numpy(np.ascontiguousarray(whisper.mel_filters(N_MELS))).to(device)


def _torch_whisper_log_mel(t: Any, y: Any) -> Any:
    spec = t.stft(y, N_FFT, HOP, window=_torch_window(t, y.device), return_complex=True)
    power = spec[..., :-1].abs() ** 2
    logs = t.clamp(_torch_mel_bank(t, y.device) @ power, min=1e-10).log10()
    peak = logs.amax(dim=(-2, -1), keepdim=True)
    return (t.maximum(logs, peak - 8.0) + 4.0) / 4.0


def _whisper_reference(y: np.ndarray) -> Expected:
    """openai-whisper's log-mel in float64 NumPy, one clip at a time (bounded memory)."""
    from pygpukit.asr import whisper

    bank = whisper.mel_filters(N_MELS).astype(np.float64)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann
    rows = []
    for clip in y.reshape(-1, y.shape[-1]).astype(np.float64):
        padded = np.pad(clip, N_FFT // 2, mode="reflect")  # torch.stft's default centring
        frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:-1]
        power = np.abs(np.fft.rfft(frames * window, axis=-1)) ** 2
        logs = np.log10(np.maximum(bank @ power.T, 1e-10))
        rows.append((np.maximum(logs, logs.max() - 8.0) + 4.0) / 4.0)
    return Expected(np.stack(rows).reshape(*y.shape[:-1], N_MELS, -1))


def _scipy_poly(y: np.ndarray) -> np.ndarray:
    try:
        import scipy.signal
    except ImportError:
        raise ImportError("scipy not installed (pip install scipy)") from None

    return scipy.signal.resample_poly(y, 160, 441)


def _torchaudio_resample(y: Any) -> Any:
    return _torchaudio().functional.resample(y, 44100, 16000)
