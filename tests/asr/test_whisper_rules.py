"""Whisper's logit rules as properties: whatever the logits, greedy choices under the rules
form a valid timestamped sequence (hypothesis draws the logits)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit.asr.whisper import DecodeOptions, WhisperTokens
from pygpukit.asr.whisper.decoding import _Rules

TB = 20  # timestamp_begin: ids 0..9 text, 10 eot, 11..18 specials, 19 notimestamps
VOCAB = TB + 30
TOKENS = WhisperTokens(
    eot=10, sot=11, no_timestamps=19, transcribe=12, translate=13, sot_prev=14, sot_lm=15,
    no_speech=16, languages={"en": 17, "de": 18}, suppress=(11, 12, 13, 14, 15, 16),
    begin_suppress=(3, 10), max_initial_timestamp_index=5,
)  # fmt: skip


def _greedy(logits: np.ndarray, options: DecodeOptions) -> list[int]:
    rules = _Rules(TOKENS, options, VOCAB)
    seq: list[int] = []
    for step in logits:
        token = int(rules.apply(step[None], [seq])[0].argmax())
        if token == TOKENS.eot:
            break
        seq.append(token)
    return seq


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(0.1, 20.0))
def test_timestamped_sequences_follow_the_grammar(seed: int, scale: float) -> None:
    logits = np.random.default_rng(seed).standard_normal((24, VOCAB)) * scale
    seq = _greedy(logits, DecodeOptions(max_initial_timestamp=0.1))
    assert not set(seq) & {*TOKENS.suppress, TOKENS.no_timestamps, TOKENS.eot}
    if not seq:
        return
    assert TB <= seq[0] <= TB + 5, "the first token is an early timestamp"
    stamps = [t for t in seq if t >= TB]
    assert stamps == sorted(stamps), "time never goes back"
    runs, run = [], 0
    for t in seq:
        run = run + 1 if t >= TB else 0
        runs.append(run)
    assert max(runs) <= 2, "timestamps come one or two at a time"
    for i in range(2, len(seq)):  # after an opened pair (text, timestamp) comes no text
        if seq[i - 1] >= TB and seq[i - 2] < TB:
            assert seq[i] >= TOKENS.eot  # (openai-whisper leaves language tokens allowed)
    pairs = [i for i in range(1, len(seq)) if seq[i] >= TB and seq[i - 1] >= TB]
    for i in pairs:  # a new pair starts strictly after the previous one ended
        later = [t for t in seq[i + 1 :] if t >= TB]
        assert not later or later[0] > seq[i]


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_text_mode_suppresses_blank_start_and_special_tokens(seed: int) -> None:
    logits = np.random.default_rng(seed).standard_normal((12, VOCAB)) * 5
    logits[0, 3] = 100.0  # the blank token would win the first step
    seq = _greedy(logits, DecodeOptions(without_timestamps=True))
    assert seq and seq[0] != 3
    assert not set(seq) & set(TOKENS.suppress)
