"""Every family's logits and greedy decode against the float64 NumPy reference in tiny_models."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from pygpukit.llm import CausalTransformerModel, load_model_from_safetensors
from tiny_models import CONFIGS, VOCAB, make_checkpoint, reference_greedy, reference_logits

FAMILIES = sorted(CONFIGS)


def _prompt(seed: int, n: int = 11) -> list[int]:
    return np.random.default_rng(seed).integers(3, VOCAB, size=n).tolist()


def _assert_close(got: np.ndarray, want: np.ndarray, rel: float) -> None:
    scale = float(np.abs(want).max())
    err = float(np.abs(got - want).max())
    assert err <= rel * scale, f"max abs error {err:.3g} over logit scale {scale:.3g}"


@pytest.mark.parametrize("family", FAMILIES)
def test_logits_equal_reference(family: str, tmp_path: Path) -> None:
    cfg, weights = make_checkpoint(tmp_path, family, seed=len(family))
    model = load_model_from_safetensors(tmp_path, progress=False)
    assert isinstance(model, CausalTransformerModel)
    ids = _prompt(1, 13)  # longer than mistral's window of 5
    got = model(ids).to_numpy()[0]
    _assert_close(got, reference_logits(cfg, weights, ids), 2e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_decode_equals_reference(family: str, tmp_path: Path) -> None:
    cfg, weights = make_checkpoint(tmp_path, family, seed=3)
    model = load_model_from_safetensors(tmp_path, progress=False)
    prompt = _prompt(2, 5)
    got = model.generate(prompt, max_new_tokens=6, stop_token_ids=[])
    assert got == reference_greedy(cfg, weights, prompt, 6)


@pytest.mark.parametrize("family", FAMILIES)
def test_cached_decode_equals_full_recompute(family: str, tmp_path: Path) -> None:
    make_checkpoint(tmp_path, family, seed=4)
    model = load_model_from_safetensors(tmp_path, progress=False)
    ids = _prompt(3, 12)
    full = model(ids).to_numpy()[0]
    cache = model.new_cache(1, 16)
    steps = [model(ids[:7], cache).to_numpy()[0]]
    steps += [model([t], cache, last_only=True).to_numpy() for t in ids[7:]]
    stepped = np.concatenate(steps, axis=0)
    _assert_close(stepped, full, 1e-5)
    assert cache.length == 12


def test_left_padded_batch_equals_single_rows(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "qwen3", seed=5)
    model = load_model_from_safetensors(tmp_path, progress=False)
    prompts = [_prompt(4, 9), _prompt(5, 3), _prompt(6, 6)]
    batch = model.generate(prompts, max_new_tokens=5, stop_token_ids=[])
    singles = [model.generate(p, max_new_tokens=5, stop_token_ids=[]) for p in prompts]
    assert batch == singles


@pytest.mark.parametrize("family", ["llama", "gpt2"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_stays_close(family: str, dtype: str, tmp_path: Path) -> None:
    cfg, weights = make_checkpoint(tmp_path, family, seed=6)
    model = load_model_from_safetensors(tmp_path, dtype=dtype, progress=False)
    assert model.dtype.name == dtype
    ids = _prompt(7, 8)
    got = model(ids).to_numpy()[0].astype(np.float64)
    _assert_close(got, reference_logits(cfg, weights, ids), 0.05 if dtype == "bfloat16" else 0.01)


@pytest.mark.parametrize("stored", [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
def test_stored_dtypes_load(stored: type, tmp_path: Path) -> None:
    # the reference uses the rounded weights, so float32 compute must match it closely
    cfg, weights = make_checkpoint(tmp_path, "llama", seed=7, dtype=stored)
    model = load_model_from_safetensors(tmp_path, dtype="float32", progress=False)
    ids = _prompt(8, 6)
    _assert_close(model(ids).to_numpy()[0], reference_logits(cfg, weights, ids), 2e-5)


def test_default_dtype_is_the_stored_one(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "qwen2", dtype=np.float16)
    assert load_model_from_safetensors(tmp_path, progress=False).dtype.name == "float16"


def test_sharded_checkpoint_loads(tmp_path: Path) -> None:
    cfg, weights = make_checkpoint(tmp_path, "mixtral", seed=8, shards=3)
    assert len(list(tmp_path.glob("*.safetensors"))) == 3
    model = load_model_from_safetensors(tmp_path, progress=False)
    ids = _prompt(9, 7)
    _assert_close(model(ids).to_numpy()[0], reference_logits(cfg, weights, ids), 2e-5)


def test_tied_embeddings(tmp_path: Path) -> None:
    cfg, weights = make_checkpoint(tmp_path, "llama", seed=9, tie_word_embeddings=True)
    assert "lm_head.weight" not in weights
    model = load_model_from_safetensors(tmp_path, progress=False)
    ids = _prompt(10, 5)
    _assert_close(model(ids).to_numpy()[0], reference_logits(cfg, weights, ids), 2e-5)


def test_seed_api_with_a_file_path(tmp_path: Path) -> None:
    from pygpukit.llm import SafeTensorsFile, detect_model_spec

    make_checkpoint(tmp_path, "qwen3")
    st = SafeTensorsFile(tmp_path / "model.safetensors")
    assert st.num_tensors == len(st.tensor_names) > 0 and st.file_size > 0
    spec = detect_model_spec(st.tensor_names)
    assert spec.name == "qwen3"
    model = load_model_from_safetensors(
        str(tmp_path / "model.safetensors"), dtype="float16", spec=spec, progress=False
    )
    out = model.generate([1, 2, 3, 4], max_new_tokens=32, stop_token_ids=[])
    assert out[:4] == [1, 2, 3, 4] and len(out) == 36
    assert all(0 <= t < VOCAB for t in out)


def test_bad_input_ids_are_refused(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama")
    model = load_model_from_safetensors(tmp_path, progress=False)
    with pytest.raises(IndexError, match=r"outside the vocabulary"):
        model([1, VOCAB])
    with pytest.raises(TypeError, match=r"integers"):
        model(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"seq >= 1"):
        model(np.zeros((1, 0), dtype=np.int64))
    cache = model.new_cache(1, 4)
    model([1, 2, 3], cache)
    with pytest.raises(ValueError, match=r"max_length 4"):
        model([1, 2], cache)
