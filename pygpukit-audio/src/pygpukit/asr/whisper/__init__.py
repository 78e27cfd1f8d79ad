"""pygpukit.asr.whisper: OpenAI's Whisper (tiny through large-v3) on pygpukit ops, CPU or GPU.

A Hugging Face Whisper folder (config.json, model.safetensors, tokenizer.json,
generation_config.json) loads with :func:`load`; the log-mel front end is
openai-whisper's, built on pygpukit.audio's STFT and mel filters::

    from pygpukit.asr import whisper
    model = whisper.load("whisper-small")
    result = model.transcribe("speech.wav", beam_size=5)
    for s in result.segments:
        print(f"[{s.start:.2f} -> {s.end:.2f}] {s.text}")
"""

from __future__ import annotations

from .config import WhisperConfig, load_whisper_config
from .decoding import DecodeOptions, DecodeResult, decode_window, detect_language
from .frontend import (
    CHUNK_LENGTH,
    HOP_LENGTH,
    N_FFT,
    N_FRAMES,
    N_SAMPLES,
    SAMPLE_RATE,
    check_audio,
    log_mel_spectrogram,
    mel_filters,
    pad_or_trim,
)
from .loader import load_whisper_model
from .model import WhisperModel
from .pipeline import Whisper, load
from .tokens import WhisperTokens
from .transcribe import Segment, Transcription, compression_ratio

__all__ = [
    "CHUNK_LENGTH",
    "DecodeOptions",
    "DecodeResult",
    "HOP_LENGTH",
    "N_FFT",
    "N_FRAMES",
    "N_SAMPLES",
    "SAMPLE_RATE",
    "Segment",
    "Transcription",
    "Whisper",
    "WhisperConfig",
    "WhisperModel",
    "WhisperTokens",
    "check_audio",
    "compression_ratio",
    "decode_window",
    "detect_language",
    "load",
    "load_whisper_config",
    "load_whisper_model",
    "log_mel_spectrogram",
    "mel_filters",
    "pad_or_trim",
]
