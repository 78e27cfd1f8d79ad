"""Decoding one window per audio: language detection, greedy, sampling and beam search.

The logits of each step come to the host (rows x vocab, small) and pass Whisper's rules
there, in float64: suppressed tokens, no blank first token, and the timestamp grammar
(timestamps come in pairs, never go back, the first token is one, and a timestamp is
forced when the timestamps together outweigh every text token). Tokens are then chosen
greedily, by sampling (pygpukit.llm's sampler) or by beam search over the cache rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pygpukit.llm.sampling import SamplingParams, choose_tokens

from .model import CrossCache, WhisperModel
from .step import select_rows_in_place
from .tokens import TIME_PRECISION, WhisperTokens

__all__ = ["DecodeOptions", "DecodeResult", "detect_language", "decode_window"]

TASKS = ("transcribe", "translate")


@dataclass(frozen=True)
class DecodeOptions:
    """How to decode one 30-second window (the defaults are openai-whisper's)."""

    task: str = "transcribe"
    language: str | None = None  # None: detect it (multilingual models)
    temperature: float = 0.0  # 0: greedy or beam search; > 0: sampling
    beam_size: int | None = None  # None: greedy
    patience: float = 1.0  # beam search stops after round(beam_size * patience) finished
    length_penalty: float | None = None  # None: rank finished beams by mean log-probability
    without_timestamps: bool = False
    max_initial_timestamp: float | None = 1.0  # seconds; None: no limit
    suppress_blank: bool = True
    sample_len: int | None = None  # None: half the decoder's positions
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be 'transcribe' or 'translate', got {self.task!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.beam_size is not None and self.beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {self.beam_size}")
        if self.beam_size is not None and self.temperature > 0:
            raise ValueError("beam search is deterministic: use temperature 0 with beam_size")
        if self.patience <= 0:
            raise ValueError(f"patience must be > 0, got {self.patience}")
        if self.sample_len is not None and self.sample_len < 1:
            raise ValueError(f"sample_len must be >= 1, got {self.sample_len}")


@dataclass
class DecodeResult:
    """One audio's window: the sampled tokens (no end token) and how sure the model was."""

    tokens: list[int]
    language: str | None
    avg_logprob: float
    no_speech_prob: float
    temperature: float
    language_probs: dict[str, float] = field(default_factory=dict)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    top = np.max(x, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    shifted = x - top
    return np.asarray(shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True)))


def detect_language(
    model: WhisperModel, cross: CrossCache, tokens: WhisperTokens
) -> list[dict[str, float]]:
    """Per audio, the probability of each language the model knows (one decoder step)."""
    if not tokens.multilingual:
        raise ValueError("detect_language: this model is English-only")
    cache = model.new_cache(cross.batch, 1)
    logits = model.decode(np.full((cross.batch, 1), tokens.sot), cache, cross, last_only=True)
    ids = np.fromiter(tokens.languages.values(), dtype=np.int64)
    scores = logits.to_numpy().astype(np.float64)[:, ids]
    probs = np.exp(_log_softmax(scores))
    codes = list(tokens.languages)
    return [dict(zip(codes, row.tolist(), strict=True)) for row in probs]


class _Rules:
    """Whisper's logit rules for one decoding call."""

    def __init__(self, tokens: WhisperTokens, options: DecodeOptions, vocab: int) -> None:
        self.t, self.timestamps = tokens, not options.without_timestamps
        self.suppress = np.array(tokens.suppress, dtype=np.int64)
        if self.timestamps:
            self.suppress = np.append(self.suppress, tokens.no_timestamps)
        self.blank = np.array(tokens.begin_suppress if options.suppress_blank else (), np.int64)
        self.max_initial: int | None = None
        if options.max_initial_timestamp is not None:
            self.max_initial = round(options.max_initial_timestamp / TIME_PRECISION)
        self.vocab = vocab

    def apply(self, logits: np.ndarray, seqs: Sequence[Sequence[int]]) -> np.ndarray:
        out = np.asarray(logits, dtype=np.float64).copy()
        out[:, self.suppress] = -np.inf
        if self.blank.size:
            first = np.array([r for r, s in enumerate(seqs) if not s], dtype=np.int64)
            out[np.ix_(first, self.blank)] = -np.inf
        if self.timestamps:
            self._timestamp_grammar(out, seqs)
        return out

    def _timestamp_grammar(self, out: np.ndarray, seqs: Sequence[Sequence[int]]) -> None:
        tb, eot = self.t.timestamp_begin, self.t.eot
        for r, seq in enumerate(seqs):
            last_ts = len(seq) >= 1 and seq[-1] >= tb
            before_ts = len(seq) < 2 or seq[-2] >= tb
            if last_ts and before_ts:
                out[r, tb:] = -np.inf  # a pair just closed: text (or the end) comes next
            elif last_ts:
                out[r, :eot] = -np.inf  # an opened pair: close it (or end), no text
            stamps = [t for t in seq if t >= tb]
            if stamps:  # time never goes back; a new pair starts strictly later
                floor = stamps[-1] if last_ts and not before_ts else stamps[-1] + 1
                out[r, tb:floor] = -np.inf
            if not seq:  # the first token is a timestamp, and an early one
                out[r, :tb] = -np.inf
                if self.max_initial is not None:
                    out[r, tb + self.max_initial + 1 :] = -np.inf
        logprobs = _log_softmax(out)
        with np.errstate(divide="ignore"):
            stamp_mass = np.log(np.exp(logprobs[:, tb:]).sum(axis=-1))
        best_text = logprobs[:, :tb].max(axis=-1)
        out[stamp_mass > best_text, :tb] = -np.inf


def _initial_tokens(
    tokens: WhisperTokens, options: DecodeOptions, language: str | None, prompt: Sequence[int],
    max_prompt: int,
) -> tuple[list[int], int]:  # fmt: skip
    """The decoder's forced start ([prev text], sot, language, task, [no timestamps]) and
    the index of sot in it."""
    seq: list[int] = []
    if prompt:
        if tokens.sot_prev is None:
            raise ValueError("this model has no <|startofprev|> token, so it takes no prompt")
        seq = [tokens.sot_prev, *list(prompt)[-max_prompt:]]
    sot_index = len(seq)
    seq.append(tokens.sot)
    if tokens.multilingual:
        seq.append(tokens.language_id(language or "en"))
        seq.append(tokens.transcribe if options.task == "transcribe" else tokens.translate)  # type: ignore[arg-type]
    if options.without_timestamps:
        seq.append(tokens.no_timestamps)
    return seq, sot_index


def decode_window(
    model: WhisperModel,
    cross: CrossCache,
    tokens: WhisperTokens,
    options: DecodeOptions,
    prompt: Sequence[int] = (),
    languages: Sequence[str | None] | None = None,
) -> list[DecodeResult]:
    """Decode one window for each audio of `cross` (all rows share options and prompt)."""
    n_audio = cross.batch
    half = model.config.max_target_positions // 2
    sample_len = options.sample_len or half
    langs = list(languages) if languages is not None else [options.language] * n_audio
    probs: list[dict[str, float]] = [{} for _ in range(n_audio)]
    if tokens.multilingual and any(lang is None for lang in langs):
        probs = detect_language(model, cross, tokens)
        langs = [lang or max(p, key=p.__getitem__) for lang, p in zip(langs, probs, strict=True)]
    elif not tokens.multilingual:
        langs = ["en" if lang is None else lang for lang in langs]
    starts = [_initial_tokens(tokens, options, lang, prompt, half - 1) for lang in langs]
    start_len = len(starts[0][0])
    if start_len + sample_len > model.config.max_target_positions:
        sample_len = model.config.max_target_positions - start_len
    if sample_len < 1:
        raise ValueError("the prompt leaves no room in the decoder for new tokens")
    rules = _Rules(tokens, options, model.config.vocab_size)
    beams = options.beam_size or 1
    prefix = np.array([s for s, _ in starts for _ in range(beams)], dtype=np.int64)
    rows_cross = cross.repeat_rows(beams)
    cache = model.new_cache(prefix.shape[0], start_len + sample_len)
    logits = model.decode(prefix, cache, rows_cross).to_numpy()
    no_speech = np.zeros(n_audio)
    if tokens.no_speech is not None:
        at_sot = logits[::beams, starts[0][1]].astype(np.float64)
        no_speech = np.exp(_log_softmax(at_sot))[:, tokens.no_speech]
    first = logits[:, -1]
    try:
        if options.beam_size is None:
            picked = _sample(model, cache, rows_cross, first, rules, tokens, options, sample_len)
        else:
            picked = _beam_search(model, cache, rows_cross, first, rules, tokens, options,
                                  sample_len, n_audio)  # fmt: skip
    finally:
        model.release_steps()  # the window's cache and encoder rows are done with
    return [
        DecodeResult(
            seq,
            langs[i],
            score / (len(seq) + 1),
            float(no_speech[i]),
            options.temperature,
            probs[i],
        )
        for i, (seq, score) in enumerate(picked)
    ]


def _sample(
    model: WhisperModel, cache: Any, cross: CrossCache, logits: np.ndarray, rules: _Rules,
    tokens: WhisperTokens, options: DecodeOptions, sample_len: int,
) -> list[tuple[list[int], float]]:  # fmt: skip
    """Greedy (temperature 0) or sampled tokens, one row per audio."""
    rows = logits.shape[0]
    seqs: list[list[int]] = [[] for _ in range(rows)]
    scores = np.zeros(rows)
    done = np.zeros(rows, dtype=bool)
    params = SamplingParams(do_sample=options.temperature > 0,
                            temperature=options.temperature or 1.0)  # fmt: skip
    rng = np.random.default_rng(options.seed)
    for step in range(sample_len):
        filtered = rules.apply(logits, seqs)
        logprobs = _log_softmax(filtered)
        chosen = choose_tokens(filtered, params, rng, [np.zeros(0, np.int64)] * rows)
        for r in range(rows):
            if done[r]:
                chosen[r] = tokens.eot
                continue
            scores[r] += logprobs[r, chosen[r]]
            if chosen[r] == tokens.eot:
                done[r] = True
            else:
                seqs[r].append(int(chosen[r]))
        if done.all() or step == sample_len - 1:
            break
        logits = model.decode(chosen[:, None], cache, cross, last_only=True).to_numpy()
    return list(zip(seqs, scores.tolist(), strict=True))


def _rank(finished: dict[tuple[int, ...], float], length_penalty: float | None) -> tuple[int, ...]:
    def score(item: tuple[tuple[int, ...], float]) -> float:
        n = len(item[0])
        penalty = n if length_penalty is None else ((5 + n) / 6) ** length_penalty
        return item[1] / max(penalty, 1e-9)

    return max(finished.items(), key=score)[0]


def _beam_search(
    model: WhisperModel, cache: Any, cross: CrossCache, logits: np.ndarray, rules: _Rules,
    tokens: WhisperTokens, options: DecodeOptions, sample_len: int, n_audio: int,
) -> list[tuple[list[int], float]]:  # fmt: skip
    """Beam search: `beam_size` cache rows per audio, the best `beam_size` continuations
    kept each step, stopping once round(beam_size * patience) sequences per audio ended."""
    beams = options.beam_size or 1
    wanted = round(beams * options.patience)
    seqs: list[tuple[int, ...]] = [() for _ in range(n_audio * beams)]
    scores = np.zeros(n_audio * beams)
    finished: list[dict[tuple[int, ...], float]] = [{} for _ in range(n_audio)]
    for step in range(sample_len):
        logprobs = _log_softmax(rules.apply(logits, seqs))
        next_seqs, next_scores, sources, next_tokens = [], [], [], []
        for a in range(n_audio):
            candidates: dict[tuple[int, ...], tuple[float, int]] = {}
            for r in range(a * beams, (a + 1) * beams):
                k = min(beams + 1, logprobs.shape[1])
                top = np.argpartition(-logprobs[r], k - 1)[:k]  # the k best, then in order
                top = top[np.argsort(-logprobs[r, top], kind="stable")]
                for tok in top:
                    if np.isfinite(logprobs[r, tok]):
                        candidates[(*seqs[r], int(tok))] = (scores[r] + logprobs[r, tok], r)
            kept = 0
            for seq, (score, src) in sorted(candidates.items(), key=lambda kv: -kv[1][0]):
                if seq[-1] == tokens.eot:
                    if len(finished[a]) < wanted:
                        finished[a][seq[:-1]] = score
                    continue
                next_seqs.append(seq)
                next_scores.append(score)
                sources.append(src)
                next_tokens.append(seq[-1])
                kept += 1
                if kept == beams:
                    break
            while kept < beams:  # fewer live candidates than beams: repeat the last one
                next_seqs.append(next_seqs[-1] if kept else seqs[a * beams])
                next_scores.append(-np.inf)
                sources.append(sources[-1] if kept else a * beams)
                next_tokens.append(next_tokens[-1] if kept else tokens.eot)
                kept += 1
        seqs, scores = next_seqs, np.array(next_scores)
        if all(len(f) >= wanted for f in finished) or step == sample_len - 1:
            break
        select_rows_in_place(cache, sources)  # the step's graph stays bound to the cache
        step_tokens = np.array(next_tokens, dtype=np.int64)[:, None]
        logits = model.decode(step_tokens, cache, cross, last_only=True).to_numpy()
    results = []
    for a in range(n_audio):
        pool = finished[a]
        if not pool:  # none ended within sample_len: rank the live beams
            pool = {seqs[r]: float(scores[r]) for r in range(a * beams, (a + 1) * beams)
                    if np.isfinite(scores[r])}  # fmt: skip
        best = _rank(pool, options.length_penalty)
        results.append((list(best), float(pool[best])))
    return results
