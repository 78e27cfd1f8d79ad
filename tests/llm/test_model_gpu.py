"""Every family on the GPU against the float64 NumPy reference (skips without a CUDA GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.llm import load_model_from_safetensors
from tiny_models import CONFIGS, VOCAB, make_checkpoint, reference_greedy, reference_logits

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)"),
]


def _prompt(seed: int, n: int) -> list[int]:
    return np.random.default_rng(seed).integers(3, VOCAB, size=n).tolist()


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_float32_logits_and_greedy_on_cuda(family: str, tmp_path: Path) -> None:
    cfg, weights = make_checkpoint(tmp_path, family, seed=21)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cuda", progress=False)
    ids = _prompt(22, 13)
    want = reference_logits(cfg, weights, ids)
    got = model(ids).to_numpy()[0]
    # the float32 bar (allow_tf32 is off by default, so matmuls stay float32)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    prompt = _prompt(23, 5)
    assert model.generate(prompt, max_new_tokens=8, stop_token_ids=[]) == reference_greedy(
        cfg, weights, prompt, 8
    )


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_bfloat16_top5_contains_reference_token(family: str, tmp_path: Path) -> None:
    cfg, weights = make_checkpoint(tmp_path, family, seed=24)
    model = load_model_from_safetensors(tmp_path, dtype="bfloat16", device="cuda", progress=False)
    ids = _prompt(25, 12)
    want = reference_logits(cfg, weights, ids)
    got = model(ids).to_numpy()[0].astype(np.float64)
    top5 = np.argsort(-got, axis=-1)[:, :5]
    assert all(want[t].argmax() in top5[t] for t in range(len(ids)))


def test_batched_generation_on_cuda(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "mixtral", seed=26)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cuda", progress=False)
    prompts = [_prompt(27, 7), _prompt(28, 3)]
    batch = model.generate(prompts, max_new_tokens=6, stop_token_ids=[])
    assert batch == [model.generate(p, max_new_tokens=6, stop_token_ids=[]) for p in prompts]
