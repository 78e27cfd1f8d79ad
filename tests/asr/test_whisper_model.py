"""WhisperModel against the float64 NumPy reference: encoder output, decoder logits with and
without the KV cache, cross-cache rows per beam, and the cache's row reordering."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.asr import whisper
from tiny_whisper import N_MELS, SOURCE_POSITIONS, VOCAB, make_checkpoint
from whisper_reference import reference_encode, reference_logits

DEVICES = ["cpu"] + (["cuda"] if gp.is_cuda_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_encoder_and_decoder_match_the_float64_reference(tmp_path: Path, device: str) -> None:
    weights = make_checkpoint(tmp_path, seed=21)
    model = whisper.load_whisper_model(tmp_path, device=device, progress=False)
    rng = np.random.default_rng(22)
    feats = rng.standard_normal((2, N_MELS, 2 * SOURCE_POSITIONS)).astype(np.float32)
    tokens = rng.integers(0, VOCAB, size=(2, 11))
    encoded = model.encode(feats)
    cross = model.cross_cache(encoded)
    whole = model.decode(tokens, model.new_cache(2), cross).to_numpy()
    cache = model.new_cache(2, 11)
    parts = [model.decode(tokens[:, :6], cache, cross).to_numpy()]
    parts += [model.decode(tokens[:, i : i + 1], cache, cross).to_numpy() for i in range(6, 11)]
    for b in range(2):
        want_enc = reference_encode(weights, feats[b])
        got_enc = encoded.to_numpy()[b]
        # float32 against float64: 1e-5 of the output's range (matmuls on GPUs stay float32)
        assert np.abs(got_enc - want_enc).max() <= 1e-5 * np.abs(want_enc).max()
        want = reference_logits(weights, want_enc, tokens[b].tolist())
        scale = np.abs(want).max()
        assert np.abs(whole[b] - want).max() <= 1e-5 * scale
        assert np.abs(np.concatenate(parts, axis=1)[b] - want).max() <= 1e-5 * scale


def test_reordered_cache_rows_continue_their_new_sequences(tmp_path: Path) -> None:
    weights = make_checkpoint(tmp_path, seed=23)
    model = whisper.load_whisper_model(tmp_path, progress=False)
    feats = np.random.default_rng(24).standard_normal((1, N_MELS, 2 * SOURCE_POSITIONS))
    encoded = model.encode(feats.astype(np.float32))
    cross = model.cross_cache(encoded).repeat_rows(3)
    rows = np.array([[5, 6, 7], [8, 9, 10], [11, 12, 13]])
    cache = model.new_cache(3, 8)
    model.decode(rows, cache, cross)
    cache.select_rows([2, 0, 2])  # beam 0 continues row 2, beam 1 row 0, beam 2 row 2
    step = model.decode(np.array([[40], [41], [42]]), cache, cross, last_only=True).to_numpy()
    enc = reference_encode(weights, feats[0].astype(np.float32))
    for beam, (source, token) in enumerate([(2, 40), (0, 41), (2, 42)]):
        want = reference_logits(weights, enc, [*rows[source].tolist(), token])[-1]
        assert np.abs(step[beam] - want).max() <= 1e-5 * np.abs(want).max()
    with pytest.raises(ValueError, match="row indices"):
        cache.select_rows([0, 1, 3])


def test_decode_refuses_bad_tokens(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, seed=25)
    model = whisper.load_whisper_model(tmp_path, progress=False)
    feats = np.zeros((1, N_MELS, 2 * SOURCE_POSITIONS), np.float32)
    cross = model.cross_cache(model.encode(feats))
    with pytest.raises(IndexError, match="outside"):
        model.decode(np.array([[VOCAB]]), model.new_cache(1), cross)
    with pytest.raises(ValueError, match="integers"):
        model.decode(np.array([[0.5]]), model.new_cache(1), cross)
    with pytest.raises(ValueError, match="encoder outputs"):
        model.decode(np.array([[1], [2]]), model.new_cache(2), cross)
    with pytest.raises(ValueError, match="positions"):
        model.decode(np.ones((1, 49), np.int64), model.new_cache(1, 49), cross)
