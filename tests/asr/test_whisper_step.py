"""WhisperStep (one-token decode steps on device counters, a CUDA graph on GPUs) against the
prompt path's logits, its rebinding when the cache rows are reordered, and on a GPU the
graph's replays against the eager step (skips the GPU part without one)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.asr import whisper
from pygpukit.asr.whisper.step import select_rows_in_place
from tiny_whisper import N_MELS, SOURCE_POSITIONS, VOCAB, make_checkpoint
from whisper_reference import reference_encode, reference_logits


def _steps(model: whisper.WhisperModel, cross: object, prompt: np.ndarray,
           tokens: np.ndarray) -> list[np.ndarray]:  # fmt: skip
    """Logits of each one-token step after `prompt`, feeding `tokens` column by column."""
    cache = model.new_cache(prompt.shape[0], prompt.shape[1] + tokens.shape[1])
    model.decode(prompt, cache, cross)  # type: ignore[arg-type]
    out = []
    for i in range(tokens.shape[1]):
        out.append(model.decode(tokens[:, i : i + 1], cache, cross,  # type: ignore[arg-type]
                                last_only=True).to_numpy())  # fmt: skip
    return out


def test_steps_equal_the_prompt_path_and_the_reference(tmp_path: Path) -> None:
    weights = make_checkpoint(tmp_path, seed=41)
    model = whisper.load_whisper_model(tmp_path, progress=False)
    rng = np.random.default_rng(42)
    feats = rng.standard_normal((2, N_MELS, 2 * SOURCE_POSITIONS)).astype(np.float32)
    cross = model.cross_cache(model.encode(feats))
    prompt, tokens = rng.integers(0, VOCAB, size=(2, 3)), rng.integers(0, VOCAB, size=(2, 6))
    fast = _steps(model, cross, prompt, tokens)
    assert model._step is not None and model._step.qkv  # the steps went through WhisperStep
    model.fast_steps = False
    slow = _steps(model, cross, prompt, tokens)
    for got, want in zip(fast, slow, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    enc = reference_encode(weights, feats[1])
    want = reference_logits(weights, enc, [*prompt[1].tolist(), *tokens[1].tolist()])[-1]
    assert np.abs(fast[-1][1] - want).max() <= 1e-5 * np.abs(want).max()
    model.release_steps()
    assert model._step is None


def test_a_new_cache_or_reordered_rows_get_a_new_binding(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, seed=43)
    model = whisper.load_whisper_model(tmp_path, progress=False)
    feats = np.random.default_rng(44).standard_normal((1, N_MELS, 2 * SOURCE_POSITIONS))
    cross = model.cross_cache(model.encode(feats.astype(np.float32))).repeat_rows(2)
    cache = model.new_cache(2, 6)
    model.decode(np.array([[5, 6], [7, 8]]), cache, cross)
    model.decode(np.array([[9], [10]]), cache, cross)
    first = model._step
    assert first is not None and first.bound_to(cache, cross)
    cache.select_rows([1, 1])  # new arrays: the old binding must not write into the old ones
    assert not first.bound_to(cache, cross)
    got = model.decode(np.array([[11], [12]]), cache, cross, last_only=True).to_numpy()
    again_step = model._step
    assert again_step is not None and again_step is not first
    assert not again_step.capture_first  # the same cache: beam search's case
    again = model.new_cache(2, 6)
    model.decode(np.array([[7, 8], [7, 8]]), again, cross)
    model.decode(np.array([[10], [10]]), again, cross)
    # a new cache of a batch size that stepped before may capture on its first step
    assert model._step is not None and model._step.capture_first
    model.fast_steps = False
    want = model.decode(np.array([[11], [12]]), again, cross, last_only=True).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.gpu
@pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_graph_replays_equal_the_eager_steps_on_cuda(
    tmp_path: Path, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_checkpoint(tmp_path, seed=45)
    model = whisper.load_whisper_model(tmp_path, dtype, device="cuda", progress=False)
    rng = np.random.default_rng(46)
    feats = rng.standard_normal((2, N_MELS, 2 * SOURCE_POSITIONS)).astype(np.float32)
    cross = model.cross_cache(model.encode(feats))
    prompt, tokens = rng.integers(0, VOCAB, size=(2, 4)), rng.integers(0, VOCAB, size=(2, 8))
    graphed = _steps(model, cross, prompt, tokens)
    step = model._step
    assert step is not None and step.graph_captured, step.refusal if step else None
    # a second run (a new cache) captures on its first step
    assert _steps(model, cross, prompt, tokens[:, :1])[0].tolist() == graphed[0].tolist()
    second = model._step
    assert second is not None and second is not step and second.graph_captured
    model.release_steps()
    monkeypatch.setenv("PYGPUKIT_WHISPER_GRAPH", "0")
    eager = _steps(model, cross, prompt, tokens)
    assert model._step is not None and not model._step.graph_captured
    model.release_steps()
    monkeypatch.delenv("PYGPUKIT_WHISPER_GRAPH")
    for got, want in zip(graphed, eager, strict=True):  # the same kernels on the same inputs
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())
    model.fast_steps = False
    slow = _steps(model, cross, prompt, tokens)
    tol = 1e-4 if dtype == "float32" else 2e-2
    for got, want in zip(graphed, slow, strict=True):
        scale = np.abs(want.astype(np.float64)).max()
        assert np.abs(got.astype(np.float64) - want).max() <= tol * scale
    # a short prompt whose last logits are wanted runs as steps on a GPU
    whole = model.decode(prompt, model.new_cache(2, 8), cross, last_only=True).to_numpy()
    model.fast_steps = True
    short = model.decode(prompt, model.new_cache(2, 8), cross, last_only=True).to_numpy()
    scale = np.abs(whole.astype(np.float64)).max()
    assert np.abs(short.astype(np.float64) - whole).max() <= tol * scale


def test_rows_reordered_in_place_keep_the_binding(tmp_path: Path) -> None:
    weights = make_checkpoint(tmp_path, seed=47)
    model = whisper.load_whisper_model(tmp_path, progress=False)
    feats = np.random.default_rng(48).standard_normal((1, N_MELS, 2 * SOURCE_POSITIONS))
    cross = model.cross_cache(model.encode(feats.astype(np.float32))).repeat_rows(3)
    rows = np.array([[5, 6, 7], [8, 9, 10], [11, 12, 13]])
    cache = model.new_cache(3, 8)
    model.decode(rows[:, :2], cache, cross)
    model.decode(rows[:, 2:], cache, cross)
    bound, keys = model._step, cache.keys[0]
    select_rows_in_place(cache, [2, 0, 2])
    assert cache.keys[0] is keys and bound is not None and bound.bound_to(cache, cross)
    select_rows_in_place(cache, [0, 1, 2])  # nothing moves
    step = model.decode(np.array([[40], [41], [42]]), cache, cross, last_only=True).to_numpy()
    assert model._step is bound
    enc = reference_encode(weights, feats[0].astype(np.float32))
    for beam, (source, token) in enumerate([(2, 40), (0, 41), (2, 42)]):
        want = reference_logits(weights, enc, [*rows[source].tolist(), token])[-1]
        assert np.abs(step[beam] - want).max() <= 1e-5 * np.abs(want).max()
    with pytest.raises(ValueError, match="row indices"):
        select_rows_in_place(cache, [0, 1, 3])


@pytest.mark.gpu
@pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)")
def test_encoder_graph_replays_equal_the_eager_encoder_on_cuda(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    make_checkpoint(tmp_path, seed=49)
    model = whisper.load_whisper_model(tmp_path, "float16", device="cuda", progress=False)
    rng = np.random.default_rng(50)
    feats = [rng.standard_normal((2, N_MELS, 2 * SOURCE_POSITIONS)).astype(np.float32)
             for _ in range(3)]  # fmt: skip
    outs = [model.encode(f) for f in feats]  # eager, captured, replayed
    assert model.encoder_graph.captured == [2], model.encoder_graph.refusal
    model.encode(feats[0])  # a replay must not write into an earlier call's result
    got = [o.to_numpy() for o in outs]
    monkeypatch.setenv("PYGPUKIT_WHISPER_GRAPH", "0")
    for f, g in zip(feats, got, strict=True):
        want = model.encode(f).to_numpy()
        np.testing.assert_allclose(g, want, rtol=0, atol=1e-6 * np.abs(want).max())
    model.release_graphs()
    assert model.encoder_graph.captured == []
