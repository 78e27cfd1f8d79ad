"""Sampling filters, seeds, stop conditions and the streaming iterator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pygpukit.llm import GenerationConfig, SamplingParams, load_model_from_safetensors
from pygpukit.llm.sampling import choose_tokens
from tiny_models import VOCAB, make_checkpoint


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    make_checkpoint(tmp_path, "llama", seed=11)
    return tmp_path


def _model(path: Path) -> Any:
    return load_model_from_safetensors(path, progress=False)


def _draw(logits: np.ndarray, params: SamplingParams, n: int = 4000) -> np.ndarray:
    rng = np.random.default_rng(0)
    batch = np.repeat(logits[None], n, axis=0)
    return choose_tokens(batch, params, rng, [np.array([], np.int64)] * n)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


LOGITS = np.array([2.0, 1.5, 1.0, 0.2, -1.0, -3.0])


def test_temperature_draws_follow_the_distribution() -> None:
    for t in (0.5, 1.0, 2.0):
        picks = _draw(LOGITS, SamplingParams(do_sample=True, temperature=t))
        freq = np.bincount(picks, minlength=6) / picks.size
        assert np.abs(freq - _softmax(LOGITS / t)).max() < 0.03


def test_top_k_top_p_min_p_keep_only_their_tokens() -> None:
    assert set(_draw(LOGITS, SamplingParams(do_sample=True, top_k=2)).tolist()) == {0, 1}
    probs = _softmax(LOGITS)  # 0.41, 0.25, 0.15, ...: the nucleus of 0.6 is tokens 0 and 1
    assert probs[0] < 0.6 < probs[0] + probs[1]
    assert set(_draw(LOGITS, SamplingParams(do_sample=True, top_p=0.6)).tolist()) == {0, 1}
    keep = set(np.nonzero(probs >= 0.3 * probs.max())[0].tolist())
    assert set(_draw(LOGITS, SamplingParams(do_sample=True, min_p=0.3)).tolist()) == keep
    freq = np.bincount(_draw(LOGITS, SamplingParams(do_sample=True, top_k=3)), minlength=6)
    assert np.abs(freq[:3] / freq.sum() - _softmax(LOGITS[:3])).max() < 0.03


def test_repetition_penalty() -> None:
    rng = np.random.default_rng(0)
    logits = np.array([[5.0, 4.0, -1.0, -0.5]])
    seen = [np.array([0, 3])]
    assert choose_tokens(logits, SamplingParams(), rng, seen)[0] == 0
    # 5 / 2 = 2.5 < 4; -0.5 * 2 = -1: token 1 wins and 3 loses to 2 only if 2 were bigger
    picked = choose_tokens(logits, SamplingParams(repetition_penalty=2.0), rng, seen)
    assert picked[0] == 1


def test_bad_sampling_parameters() -> None:
    for bad in (
        dict(temperature=0.0),
        dict(top_k=-1),
        dict(top_p=0.0),
        dict(min_p=2.0),
        dict(repetition_penalty=0.0),
    ):
        with pytest.raises(ValueError):
            SamplingParams(**bad)  # type: ignore[arg-type]


def test_seed_reproduces_and_top_k_one_is_greedy(model_dir: Path) -> None:
    model = _model(model_dir)
    prompt = [5, 9, 14]
    opts = dict(max_new_tokens=8, temperature=1.3, top_p=0.95, stop_token_ids=[])
    a = model.generate(prompt, seed=1, **opts)
    assert a == model.generate(prompt, seed=1, **opts)
    others = {tuple(model.generate(prompt, seed=s, **opts)) for s in range(2, 6)}
    assert len(others | {tuple(a)}) > 1
    greedy = model.generate(prompt, max_new_tokens=8, stop_token_ids=[])
    assert model.generate(prompt, max_new_tokens=8, top_k=1, seed=3, stop_token_ids=[]) == greedy


def test_stop_token_ends_the_row(model_dir: Path) -> None:
    model = _model(model_dir)
    full = model.generate([7, 8], max_new_tokens=10, stop_token_ids=[])
    stop = full[5]  # the 4th new token
    first = full.index(stop, 2)
    out = model.generate([7, 8], max_new_tokens=10, stop_token_ids=[stop])
    assert out == full[: first + 1]


def test_batch_rows_stop_independently(model_dir: Path) -> None:
    model = _model(model_dir)
    prompts = [[3, 4, 5, 6], [10, 11]]
    free = model.generate(prompts, max_new_tokens=6, stop_token_ids=[])
    stop = free[0][5]
    out = model.generate(prompts, max_new_tokens=6, stop_token_ids=[stop])
    for row_free, row in zip(free, out, strict=True):
        if stop in row_free[len(row_free) - 6 :]:
            cut = row_free.index(stop, len(row_free) - 6)
            assert row == row_free[: cut + 1]
        else:
            assert row == row_free


def test_stream_yields_the_generated_tokens(model_dir: Path) -> None:
    model = _model(model_dir)
    events = list(model.stream([1, 2, 3], max_new_tokens=5, stop_token_ids=[]))
    assert [e.token_id for e in events] == model.generate(
        [1, 2, 3], max_new_tokens=5, stop_token_ids=[]
    )[3:]
    assert [e.finish_reason for e in events] == [None] * 4 + ["length"]


def test_options_are_checked(model_dir: Path) -> None:
    model = _model(model_dir)
    with pytest.raises(TypeError, match=r"unknown option.*top_q"):
        model.generate([1], top_q=0.5)
    with pytest.raises(ValueError, match=r"stop_strings need tokenizer"):
        model.generate([1], stop_strings=["x"])
    with pytest.raises(ValueError, match=r"at least one token"):
        model.generate([])
    assert model.generate([4], max_new_tokens=0) == [4]
    cfg = GenerationConfig(max_new_tokens=3, stop_token_ids=[])
    assert len(list(model.stream([4], cfg))) == 3
    with pytest.raises(ValueError, match=r"one prompt"):
        list(model.stream([[4], [5]], cfg))
    assert all(0 <= t < VOCAB for t in model.generate([4, 5], max_new_tokens=3))
