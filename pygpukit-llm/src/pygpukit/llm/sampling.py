"""Choosing the next token from logits: penalties, temperature, top-k, top-p, min-p.

The logits of the last position (batch, vocab) are small, so choosing runs on the host
in float64 with a seeded NumPy generator: the same seed gives the same tokens on every
device. The filters follow transformers' order and definitions (repetition penalty,
temperature, top-k, top-p, min-p), so a seeded run is reproducible and comparable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SamplingParams", "choose_tokens"]


@dataclass(frozen=True)
class SamplingParams:
    """How to pick a token; the defaults pick greedily."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1.0: off
    min_p: float = 0.0  # 0.0: off
    repetition_penalty: float = 1.0  # 1.0: off

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(
                f"temperature must be > 0 (use do_sample=False for greedy), got {self.temperature}"
            )
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0, got {self.repetition_penalty}")


def apply_repetition_penalty(scores: np.ndarray, seen: list[np.ndarray], penalty: float) -> None:
    """Make tokens already in row b's context less likely (CTRL's rule), in place."""
    if penalty == 1.0:
        return
    for b, tokens in enumerate(seen):
        ids = np.unique(tokens)
        s = scores[b, ids]
        scores[b, ids] = np.where(s < 0, s * penalty, s / penalty)


def _filter(scores: np.ndarray, p: SamplingParams) -> np.ndarray:
    """Scores with -inf where top-k, top-p or min-p rule a token out."""
    out = scores.copy()
    vocab = out.shape[-1]
    if p.top_k and p.top_k < vocab:
        kth = np.sort(out, axis=-1)[:, -p.top_k][:, None]
        out[out < kth] = -np.inf
    if p.top_p < 1.0:
        order = np.argsort(out, axis=-1, kind="stable")  # ascending
        sorted_scores = np.take_along_axis(out, order, axis=-1)
        probs = _softmax(sorted_scores)
        cumulative = np.cumsum(probs, axis=-1)
        drop_sorted = cumulative <= 1 - p.top_p
        drop_sorted[:, -1] = False  # always keep the most likely token
        drop = np.zeros_like(drop_sorted)
        np.put_along_axis(drop, order, drop_sorted, axis=-1)
        out[drop] = -np.inf
    if p.min_p > 0.0:
        probs = _softmax(out)
        threshold = p.min_p * probs.max(axis=-1, keepdims=True)
        out[probs < threshold] = -np.inf
    return out


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def choose_tokens(
    logits: np.ndarray, params: SamplingParams, rng: np.random.Generator, seen: list[np.ndarray]
) -> np.ndarray:
    """One token id per row of `logits` (batch, vocab); `seen` is each row's context."""
    scores = np.asarray(logits, dtype=np.float64).copy()
    apply_repetition_penalty(scores, seen, params.repetition_penalty)
    if not params.do_sample:
        return scores.argmax(axis=-1)
    scores = _filter(scores / params.temperature, params)
    probs = _softmax(scores)
    # inverse-CDF draws: one uniform per row, reproducible from the seed
    u = np.asarray(rng.random(probs.shape[0]))[:, None]
    cdf = np.cumsum(probs, axis=-1)
    picks = (cdf < u * cdf[:, -1:]).sum(axis=-1)
    return np.minimum(picks, probs.shape[-1] - 1)
