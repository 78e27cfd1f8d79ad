"""The static decode step (device-side positions and slots, a CUDA graph on GPUs): 64
greedy steps against the float64 reference on the CPU, and graph replay against the same
step run eagerly on a GPU (those skip without one)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.llm import load_model_from_safetensors
from pygpukit.llm.static_decode import StaticDecoder, graph_refusal
from tiny_models import CONFIGS, VOCAB, make_checkpoint, reference_greedy

STEPS = 64
no_gpu = pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)")


def _prompt(seed: int, n: int = 5) -> list[int]:
    return np.random.default_rng(seed).integers(3, VOCAB, size=n).tolist()


def _checkpoint(tmp_path: Path, family: str, seed: int) -> tuple[dict, dict]:  # type: ignore[type-arg]
    # room for prompt + 64 new tokens in every family's positions
    extra = {"n_positions": 96} if family == "gpt2" else {"max_position_embeddings": 96}
    return make_checkpoint(tmp_path, family, seed=seed, **extra)


def static_greedy(model: object, prompt: list[int], steps: int, use_graph: bool) -> list[int]:
    """Greedy ids through a StaticDecoder driven directly (prefill, then `steps` steps)."""
    cache = model.new_cache(1, len(prompt) + steps)  # type: ignore[attr-defined]
    logits = model(prompt, cache, last_only=True).to_numpy()  # type: ignore[operator]
    token = int(logits[0].argmax())
    out = [token]
    decoder = StaticDecoder(model, cache, use_graph=use_graph)  # type: ignore[arg-type]
    chosen = decoder.step(np.array([token]))[1]
    for _ in range(steps - 1):
        out.append(int(chosen.to_numpy()[0]))
        chosen = decoder.step()[1]
    assert decoder.graph_captured == (use_graph and decoder.refusal is None)
    return prompt + out


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_static_decode_64_steps_equal_reference_on_cpu(family: str, tmp_path: Path) -> None:
    cfg, weights = _checkpoint(tmp_path, family, seed=31)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cpu", progress=False)
    prompt = _prompt(32)
    want = reference_greedy(cfg, weights, prompt, STEPS)
    # generate's static path (use_graph=True: no graphs on the CPU, the same step eagerly)
    assert model.generate(prompt, max_new_tokens=STEPS, stop_token_ids=[], use_graph=True) == want
    assert static_greedy(model, prompt, STEPS, use_graph=True) == want


def test_static_decode_batch_sampling_and_window_on_cpu(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "mistral", seed=33)  # sliding window 5: the window matters
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cpu", progress=False)
    prompts = [_prompt(34, 7), _prompt(35, 2)]
    opts = dict(max_new_tokens=12, stop_token_ids=[])
    assert model.generate(prompts, use_graph=True, **opts) == model.generate(
        prompts, use_graph=False, **opts
    )
    sample = dict(opts, temperature=0.8, top_p=0.9, seed=4, repetition_penalty=1.2)
    assert model.generate(prompts, use_graph=True, **sample) == model.generate(
        prompts, use_graph=False, **sample
    )


def test_static_decoder_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "gpt2", seed=36)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cpu", progress=False)
    assert "CUDA device" in (graph_refusal(model) or "")
    cache = model.new_cache(1, 4)
    with pytest.raises(ValueError, match="prefill"):
        StaticDecoder(model, cache)
    model([1, 2, 3], cache)
    decoder = StaticDecoder(model, cache)
    with pytest.raises(ValueError, match="first step needs"):
        decoder.step()
    with pytest.raises(IndexError, match="outside the vocabulary"):
        decoder.step(np.array([VOCAB]))
    decoder.step(np.array([4]))
    with pytest.raises(ValueError, match="slots are all used"):
        decoder.step()


@pytest.mark.gpu
@no_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_graph_decode_equals_eager_decode_on_cuda(family: str, dtype: str, tmp_path: Path) -> None:
    _checkpoint(tmp_path, family, seed=37)
    model = load_model_from_safetensors(tmp_path, dtype=dtype, device="cuda", progress=False)
    prompt = _prompt(38)
    graph = static_greedy(model, prompt, STEPS, use_graph=True)
    assert graph == static_greedy(model, prompt, STEPS, use_graph=False)
    if dtype == "float32":  # the eager path (other attention kernels) agrees too
        assert graph == model.generate(prompt, max_new_tokens=STEPS, stop_token_ids=[],
                                       use_graph=False)  # fmt: skip


@pytest.mark.gpu
@no_gpu
@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_graph_decode_equals_reference_on_cuda(family: str, tmp_path: Path) -> None:
    cfg, weights = _checkpoint(tmp_path, family, seed=39)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cuda", progress=False)
    prompt = _prompt(40)
    got = model.generate(prompt, max_new_tokens=STEPS, stop_token_ids=[])  # graph by default
    assert got == reference_greedy(cfg, weights, prompt, STEPS)
    prompts = [_prompt(41, 6), _prompt(42, 3)]
    batch = model.generate(prompts, max_new_tokens=10, stop_token_ids=[])
    assert batch == model.generate(prompts, max_new_tokens=10, stop_token_ids=[], use_graph=False)


def test_device_sampling_draws_as_the_host_path() -> None:
    from pygpukit.llm.device_sampling import sample_on_device
    from pygpukit.llm.sampling import SamplingParams, choose_tokens

    rng = np.random.default_rng(50)
    logits = rng.standard_normal((6, 300)).astype(np.float32) * 3
    device_logits = gp.asarray(logits)
    for params in (SamplingParams(True, 0.7), SamplingParams(True, 1.3, top_k=20),
                   SamplingParams(True, 1.0, top_p=0.8), SamplingParams(True, 0.9, min_p=0.05),
                   SamplingParams(True, 0.8, top_k=50, top_p=0.9, min_p=0.02)):  # fmt: skip
        host_rng, device_rng = np.random.default_rng(7), np.random.default_rng(7)
        same = 0
        for _ in range(40):
            want = choose_tokens(logits, params, host_rng, [np.array([], np.int64)] * 6)
            got = sample_on_device(device_logits, params, device_rng).to_numpy()
            same += int((got == want).sum())
        assert same >= 238, (params, same)  # of 240: float32 may move a boundary draw


def test_generate_samples_on_the_device_path(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama", seed=51)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cpu", progress=False)
    opts = dict(max_new_tokens=10, stop_token_ids=[], temperature=0.9, top_k=8, seed=3)
    host = model.generate(_prompt(52), use_graph=False, **opts)
    device = model.generate(_prompt(52), use_graph=True, sample_on_device=True, **opts)
    assert device == host


@pytest.mark.gpu
@no_gpu
def test_device_sampling_on_cuda_matches_the_host_draws(tmp_path: Path) -> None:
    _checkpoint(tmp_path, "qwen2", seed=53)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cuda", progress=False)
    opts = dict(max_new_tokens=24, stop_token_ids=[], temperature=0.8, top_p=0.9, seed=5)
    device = model.generate(_prompt(54), sample_on_device=True, **opts)
    assert device == model.generate(_prompt(54), sample_on_device=False, **opts)


@pytest.mark.gpu
@no_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_linear_rows_decode_agrees_with_matmul_decode(dtype: str, tmp_path: Path) -> None:
    _checkpoint(tmp_path, "llama", seed=55)
    model = load_model_from_safetensors(tmp_path, dtype=dtype, device="cuda", progress=False)
    prompt = _prompt(56)
    logits = []
    for gemv in (False, True):
        cache = model.new_cache(1, len(prompt) + 4)
        first = model(prompt, cache, last_only=True).astype("float32").to_numpy().argmax(-1)
        decoder = StaticDecoder(model, cache, gemv=gemv)
        decoder.step(first)
        logits.append(decoder.step()[0].astype("float32").to_numpy())  # the graph's step
        assert decoder.graph_captured and decoder.gemv == gemv
    tol = 1e-5 if dtype == "float32" else 3e-2
    assert np.linalg.norm(logits[1] - logits[0]) <= tol * np.linalg.norm(logits[0])


def test_linear_rows_decode_on_cpu(tmp_path: Path) -> None:
    cfg, weights = _checkpoint(tmp_path, "qwen2", seed=57)
    model = load_model_from_safetensors(tmp_path, dtype="float32", device="cpu", progress=False)
    prompt = _prompt(58)
    cache = model.new_cache(1, len(prompt) + 8)
    token = int(model(prompt, cache, last_only=True).to_numpy()[0].argmax())
    decoder, out = StaticDecoder(model, cache, gemv=True), [token]
    chosen = decoder.step(np.array([token]))[1]
    for _ in range(7):
        out.append(int(chosen.to_numpy()[0]))
        chosen = decoder.step()[1]
    assert prompt + out == reference_greedy(cfg, weights, prompt, 8)
