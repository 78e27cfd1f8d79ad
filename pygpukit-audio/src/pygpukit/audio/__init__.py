"""pygpukit.audio: librosa-named audio DSP on pygpukit ops, on the CPU or a GPU.

A librosa user changes only the import::

    import pygpukit.audio as librosa
    S = librosa.feature.melspectrogram(y=y, sr=16000, n_fft=400, hop_length=160, n_mels=80)

Functions take a NumPy array (answered in NumPy, computed on the CPU backend) or a
GPUArray (answered on its device), shaped (..., n_samples) for a batch of signals.
"""

from __future__ import annotations

from . import decompose, effects, feature, filters, onset
from ._framing import clear_cache
from .constantq import cqt
from .convert import amplitude_to_db, db_to_amplitude, db_to_power, power_to_db
from .filters import fft_frequencies, hz_to_mel, mel_frequencies, mel_to_hz
from .io import get_samplerate, load, save
from .pitch import yin
from .pitch_hmm import pyin
from .resample import resample, resample_poly
from .spectral import abs2, istft, magphase, melspectrogram, stft
from .streaming import StreamingSTFT
from .tuning import estimate_tuning, piptrack, pitch_tuning
from .vocoder import griffinlim, phase_vocoder
from .windows import get_window, pad_center

__all__ = [
    "StreamingSTFT",
    "decompose",
    "griffinlim",
    "phase_vocoder",
    "abs2",
    "amplitude_to_db",
    "clear_cache",
    "cqt",
    "db_to_amplitude",
    "db_to_power",
    "effects",
    "estimate_tuning",
    "feature",
    "fft_frequencies",
    "filters",
    "get_samplerate",
    "get_window",
    "hz_to_mel",
    "istft",
    "load",
    "magphase",
    "mel_frequencies",
    "mel_to_hz",
    "melspectrogram",
    "onset",
    "pad_center",
    "piptrack",
    "pitch_tuning",
    "power_to_db",
    "pyin",
    "resample",
    "resample_poly",
    "save",
    "stft",
    "yin",
]
