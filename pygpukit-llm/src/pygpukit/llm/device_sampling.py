"""Sampling on the device: temperature, top-k, top-p and min-p over the logits where they
are, one uniform number per row from the host's seeded generator.

The host path (``sampling.choose_tokens``) copies the logits out and filters them in
float64: exact and the same on every device, but a 128k-token vocabulary costs a copy
and a host sort every step. Here the same rules run in float32 with pygpukit ops and only
the chosen ids come back. Ties at a top-p boundary keep every tied token (the host keeps
them in sort order), and float32 cumulative sums may move a draw that lands within about
1e-7 of a boundary: the same seed gives the same tokens as the host path in all but such
rare draws. Repetition penalties stay on the host path.
"""

from __future__ import annotations

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .sampling import SamplingParams

__all__ = ["filtered_scores", "sample_on_device"]

_NEG_INF = float("-inf")


def filtered_scores(logits: GPUArray, p: SamplingParams) -> GPUArray:
    """float32 scores / temperature with -inf where top-k, top-p or min-p rule a token out."""
    scores = logits.astype(gp.float32) / p.temperature
    vocab = scores.shape[-1]
    if p.top_k and p.top_k < vocab:
        kth = gp.sort(scores, axis=-1, descending=True)[:, p.top_k - 1 : p.top_k]
        scores = gp.where(scores < kth, _NEG_INF, scores)
    if p.top_p < 1.0:
        ascending = gp.sort(scores, axis=-1)
        cumulative = gp.cumulative_sum(gp.softmax(ascending, axis=-1), axis=-1)
        # the tokens whose ascending cumulative mass stays <= 1 - top_p go; at least one stays
        dropped = gp.sum((cumulative <= 1 - p.top_p).astype(gp.int64), axis=-1, keepdims=True)
        dropped = gp.minimum(dropped, vocab - 1)
        threshold = gp.take_along_axis(ascending, dropped, axis=-1)
        scores = gp.where(scores < threshold, _NEG_INF, scores)
    if p.min_p > 0.0:
        probs = gp.softmax(scores, axis=-1)
        floor = gp.max(probs, axis=-1, keepdims=True) * p.min_p
        scores = gp.where(probs < floor, _NEG_INF, scores)
    return scores


def sample_on_device(logits: GPUArray, p: SamplingParams, rng: np.random.Generator) -> GPUArray:
    """One int64 token id per row of `logits` (batch, vocab), drawn on the device."""
    if p.repetition_penalty != 1.0:
        raise ValueError("sample_on_device: repetition penalties need the host path")
    if not p.do_sample:
        return gp.argmax(logits, axis=-1)
    probs = gp.softmax(filtered_scores(logits, p), axis=-1)
    cdf = gp.cumulative_sum(probs, axis=-1)
    # inverse-CDF draws, one uniform per row from the seed (as the host path draws them)
    u = gp.asarray(np.asarray(rng.random(probs.shape[0]), np.float32)[:, None],
                   device=logits.device)  # fmt: skip
    picks = gp.sum((cdf < u * cdf[:, -1:]).astype(gp.int64), axis=-1)
    return gp.minimum(picks, probs.shape[-1] - 1)
