"""Long-form transcription: 30-second windows, timestamped segments, temperature fallback.

The audio's log-mel is computed once (with one window of silence appended) and decoded
window by window, as openai-whisper does: a window whose timestamps close a pair
before its end is re-entered at the last closed timestamp, so speech cut at a window
edge is heard whole in the next one. A window that decodes to repetitive text (gzip
compression ratio over the threshold) or to improbable text (low mean log-probability)
is decoded again at the next temperature, unless the model judged it silence.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .decoding import DecodeOptions, DecodeResult, decode_window
from .frontend import HOP_LENGTH, SAMPLE_RATE, log_mel_spectrogram, pad_or_trim
from .tokens import TIME_PRECISION

if TYPE_CHECKING:
    from .pipeline import Whisper

__all__ = ["Segment", "Transcription", "compression_ratio", "transcribe"]


@dataclass
class Segment:
    """A stretch of speech: times in seconds from the start of the audio, and its text."""

    id: int
    seek: int  # first frame of the window it was decoded from
    start: float
    end: float
    text: str
    tokens: list[int]
    temperature: float
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float


@dataclass
class Transcription:
    """The whole audio's text, its segments and the language it was decoded as."""

    text: str
    language: str | None
    segments: list[Segment] = field(default_factory=list)


def compression_ratio(text: str) -> float:
    """Bytes of `text` over bytes of its zlib compression (high: the text repeats itself)."""
    raw = text.encode("utf-8")
    return len(raw) / len(zlib.compress(raw)) if raw else 0.0


def _silent(result: DecodeResult, no_speech_min: float | None, logprob_min: float | None) -> bool:
    """The model judged the window silence (<|nospeech|> likely) and its text improbable."""
    if no_speech_min is None or result.no_speech_prob <= no_speech_min:
        return False
    return logprob_min is None or result.avg_logprob <= logprob_min


def _decode_with_fallback(
    whisper: Whisper, features: Any, options: DecodeOptions, prompt: Sequence[int],
    temperatures: Sequence[float], thresholds: tuple[float | None, float | None, float | None],
) -> tuple[DecodeResult, str, float]:  # fmt: skip
    ratio_max, logprob_min, no_speech_min = thresholds
    cross = whisper.model.cross_cache(whisper.model.encode(features))
    result: DecodeResult | None = None
    for t in temperatures:
        opts = replace(options, temperature=t, beam_size=options.beam_size if t == 0 else None)
        result = decode_window(whisper.model, cross, whisper.tokens, opts, prompt)[0]
        text = whisper.text_of(result.tokens)
        ratio = compression_ratio(text)
        retry = (ratio_max is not None and ratio > ratio_max) or (
            logprob_min is not None and result.avg_logprob < logprob_min
        )
        if not retry or _silent(result, no_speech_min, logprob_min):
            return result, text, ratio
    assert result is not None
    return result, text, ratio


def transcribe(
    whisper: Whisper,
    audio: Any,
    options: DecodeOptions,
    *,
    temperatures: Sequence[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
    compression_ratio_threshold: float | None = 2.4,
    logprob_threshold: float | None = -1.0,
    no_speech_threshold: float | None = 0.6,
    condition_on_previous_text: bool = True,
    initial_prompt: str | None = None,
    progress: bool = False,
) -> Transcription:
    """Transcribe (or translate) 16 kHz mono `audio` of any length."""
    from tqdm.auto import tqdm

    cfg, tok = whisper.model.config, whisper.tokens
    window = cfg.n_frames
    if not isinstance(audio, GPUArray):  # the features are made where the model runs
        audio = gp.from_numpy(np.ascontiguousarray(audio), whisper.model.device)
    mel = log_mel_spectrogram(audio, cfg.num_mel_bins, padding=window * HOP_LENGTH)
    content = mel.shape[-1] - window
    if options.language is None and tok.multilingual:  # one language for the whole audio
        first = pad_or_trim(mel[:, :window], window)
        cross = whisper.model.cross_cache(whisper.model.encode(first))
        from .decoding import detect_language

        probs = detect_language(whisper.model, cross, tok)[0]
        options = replace(options, language=max(probs, key=probs.__getitem__))
    per_token = window / cfg.max_source_positions  # frames per timestamp step (2)
    tb = tok.timestamp_begin
    prompt: list[int] = []
    if initial_prompt:
        prompt = whisper.tokenizer.encode(" " + initial_prompt.strip(), add_special_tokens=False)
    segments: list[Segment] = []
    thresholds = (compression_ratio_threshold, logprob_threshold, no_speech_threshold)
    seek = 0
    # counted in frames, shown in seconds of audio
    with tqdm(total=content, unit="s", unit_scale=HOP_LENGTH / SAMPLE_RATE,
              disable=not progress, desc="transcribing") as bar:  # fmt: skip
        while seek < content:
            size = min(window, content - seek)
            offset = seek * HOP_LENGTH / SAMPLE_RATE
            features = pad_or_trim(mel[:, seek : seek + size], window)
            result, _, ratio = _decode_with_fallback(
                whisper, features, options, prompt, temperatures, thresholds
            )
            previous = seek
            if _silent(result, no_speech_threshold, logprob_threshold):
                seek += size
                bar.update(seek - previous)
                continue
            tokens = np.array(result.tokens, dtype=np.int64)
            is_stamp = tokens >= tb
            new: list[tuple[float, float, list[int]]] = []
            single_end = len(tokens) >= 2 and not is_stamp[-2] and is_stamp[-1]
            pairs = np.flatnonzero(is_stamp[:-1] & is_stamp[1:]) + 1
            if pairs.size:
                cuts = [*pairs.tolist(), len(tokens)] if single_end else pairs.tolist()
                last = 0
                for cut in cuts:
                    part = tokens[last:cut]
                    start = (part[0] - tb) * TIME_PRECISION
                    end = (part[-1] - tb) * TIME_PRECISION
                    new.append((offset + start, offset + end, part.tolist()))
                    last = cut
                if single_end:
                    seek += size
                else:  # re-enter at the last closed timestamp
                    seek += int((tokens[last - 1] - tb) * per_token)
            else:
                duration = size * HOP_LENGTH / SAMPLE_RATE
                stamps = tokens[is_stamp]
                if stamps.size and stamps[-1] != tb:
                    duration = (stamps[-1] - tb) * TIME_PRECISION
                new.append((offset, offset + duration, tokens.tolist()))
                seek += size
            if seek <= previous:  # a window that ended on <|0.00|>: never loop in place
                seek = previous + size
            for start, end, part_tokens in new:
                text = whisper.text_of(part_tokens)
                if not text.strip() or end <= start:
                    continue
                segments.append(Segment(
                    len(segments), previous, round(start, 3), round(end, 3), text,
                    part_tokens, result.temperature, result.avg_logprob, ratio,
                    result.no_speech_prob,
                ))  # fmt: skip
            if condition_on_previous_text and result.temperature <= 0.5:
                prompt = prompt + [t for t in result.tokens]
            else:
                prompt = []
            bar.update(min(seek, content) - previous)
    text = "".join(s.text for s in segments)
    return Transcription(text, options.language, segments)
