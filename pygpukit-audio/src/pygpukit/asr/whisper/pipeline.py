"""Whisper: a loaded model with its tokenizer and special tokens; `load(dir)` and `transcribe`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .decoding import DecodeOptions, DecodeResult, decode_window, detect_language
from .frontend import HOP_LENGTH, SAMPLE_RATE, check_audio, log_mel_spectrogram, pad_or_trim
from .loader import load_whisper_model
from .model import WhisperModel
from .tokens import WhisperTokens
from .transcribe import Transcription, transcribe

__all__ = ["Whisper", "load"]


class Whisper:
    """Speech to text: ``load(dir).transcribe(audio)`` for 16 kHz mono audio of any length."""

    def __init__(self, model: WhisperModel, tokenizer: Any, tokens: WhisperTokens) -> None:
        self.model, self.tokenizer, self.tokens = model, tokenizer, tokens

    def __repr__(self) -> str:
        kind = "multilingual" if self.tokens.multilingual else "English-only"
        return f"Whisper({kind}, {self.model!r})"

    @property
    def n_mels(self) -> int:
        return self.model.config.num_mel_bins

    def text_of(self, tokens: Sequence[int]) -> str:
        """The text of sampled tokens (timestamps and other special tokens left out)."""
        return self.tokenizer.decode([t for t in tokens if t < self.tokens.eot])

    def features(self, audio: Any, sample_rate: int = SAMPLE_RATE) -> GPUArray:
        """Log-mel features of one window per clip, (clips, n_mels, frames), on the model's
        device: each clip (shorter than a window) padded with silence to 30 s."""
        y = check_audio(audio, sample_rate)
        if not isinstance(y, GPUArray):  # the features are made where the model runs
            y = gp.from_numpy(y, self.model.device)
        window = self.model.config.n_frames
        mel = pad_or_trim(log_mel_spectrogram(y, self.n_mels, padding=window * HOP_LENGTH), window)
        return mel if mel.ndim == 3 else mel.reshape((1, *mel.shape))

    def detect_language(self, audio: Any, sample_rate: int = SAMPLE_RATE) -> list[dict[str, float]]:
        """Per clip, the probability of each language (from the first 30 s)."""
        cross = self.model.cross_cache(self.model.encode(self.features(audio, sample_rate)))
        return detect_language(self.model, cross, self.tokens)

    def decode(
        self, audio: Any, sample_rate: int = SAMPLE_RATE, **options: Any
    ) -> list[DecodeResult]:
        """Decode the first window of each clip of a batch, (clips, samples) or (samples,),
        in one pass; options are those of :class:`DecodeOptions`."""
        opts = DecodeOptions(**options)
        cross = self.model.cross_cache(self.model.encode(self.features(audio, sample_rate)))
        return decode_window(self.model, cross, self.tokens, opts)

    def transcribe(
        self,
        audio: Any,
        *,
        sample_rate: int = SAMPLE_RATE,
        language: str | None = None,
        task: str = "transcribe",
        temperature: float | Sequence[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
        beam_size: int | None = None,
        patience: float = 1.0,
        length_penalty: float | None = None,
        without_timestamps: bool = False,
        condition_on_previous_text: bool = True,
        initial_prompt: str | None = None,
        compression_ratio_threshold: float | None = 2.4,
        logprob_threshold: float | None = -1.0,
        no_speech_threshold: float | None = 0.6,
        seed: int | None = None,
        progress: bool = False,
    ) -> Transcription:
        """Text and timestamped segments of 16 kHz mono `audio`: a 1-D array, or the path of
        an audio file (any rate and channel count; it is mixed down and resampled).

        Greedy by default, beam search with `beam_size`; `language` None detects it from
        the first 30 s (multilingual models). `temperature` is one value or the fallback
        ladder tried when a window's text repeats itself or is improbable.
        """
        if isinstance(audio, (str, os.PathLike)):
            audio, sample_rate = _read_audio_file(audio), SAMPLE_RATE
        y = check_audio(audio, sample_rate, batch=False)
        if language is not None and self.tokens.multilingual:
            self.tokens.language_id(language)  # an unknown language fails here, not mid-audio
        temps = (temperature,) if isinstance(temperature, (int, float)) else tuple(temperature)
        if not temps:
            raise ValueError("temperature: give at least one value")
        options = DecodeOptions(
            task=task, language=language, beam_size=beam_size, patience=patience,
            length_penalty=length_penalty, without_timestamps=without_timestamps, seed=seed,
        )  # fmt: skip
        return transcribe(
            self, y, options, temperatures=temps,
            compression_ratio_threshold=compression_ratio_threshold,
            logprob_threshold=logprob_threshold, no_speech_threshold=no_speech_threshold,
            condition_on_previous_text=condition_on_previous_text,
            initial_prompt=initial_prompt, progress=progress,
        )  # fmt: skip


def _read_audio_file(path: str | os.PathLike[str]) -> np.ndarray:
    """A file's samples mixed to mono and resampled to 16 kHz (pygpukit.audio.load)."""
    from pygpukit.audio import load as load_audio

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such audio file")
    samples, _ = load_audio(p, sr=SAMPLE_RATE, mono=True)
    return np.asarray(samples)


def load(
    path: str | os.PathLike[str], dtype: Any = None, *, device: Any = None, progress: bool = True
) -> Whisper:
    """A Whisper model folder: config.json, model.safetensors, tokenizer.json and
    (optionally) generation_config.json, as transformers' save_pretrained writes them."""
    from pygpukit.llm.tokenizer import Tokenizer

    folder = Path(path)
    model = load_whisper_model(folder, dtype, device=device, progress=progress)
    tokenizer = Tokenizer.from_pretrained(folder)
    tokens = WhisperTokens.from_pretrained(folder, tokenizer, model.config.vocab_size)
    return Whisper(model, tokenizer, tokens)
