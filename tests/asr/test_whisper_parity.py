"""Our Whisper against transformers': a random-init WhisperForConditionalGeneration, saved
with save_pretrained and loaded by ours; encoder output, decoder logits and greedy tokens.

Skips when torch or transformers is missing (CI stays lean); ``PYGPUKIT_WHISPER_DEVICE=cuda``
runs our side on the GPU (the reference stays on the CPU in float32).
"""

from __future__ import annotations

import json
import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_whisper import (
    DE,
    EN,
    EOT,
    HF_CONFIG,
    N_MELS,
    NO_TIMESTAMPS,
    SOT,
    SOURCE_POSITIONS,
    VOCAB,
    write_tokenizer,
)

HAVE_REFERENCE = find_spec("torch") is not None and find_spec("transformers") is not None
DEVICE = os.environ.get("PYGPUKIT_WHISPER_DEVICE")  # None: pygpukit's default device
pytestmark = [pytest.mark.skipif(not HAVE_REFERENCE, reason="needs torch and transformers")]
if DEVICE and DEVICE.startswith("cuda"):
    pytestmark.append(pytest.mark.gpu)

#: what both sides never sample: start of transcript, the tasks, start-of-lm/prev, no-speech
SUPPRESS = [SOT, 260, 261, 262, 263, 264]
GENERATION = dict(
    decoder_start_token_id=SOT,
    eos_token_id=EOT,
    pad_token_id=EOT,
    no_timestamps_token_id=NO_TIMESTAMPS,
    begin_suppress_tokens=[220, EOT],
    suppress_tokens=SUPPRESS,
    lang_to_id={"<|en|>": EN, "<|de|>": DE},
    task_to_id={"transcribe": 261, "translate": 260},
    is_multilingual=True,
    max_initial_timestamp_index=50,
)
FRAMES = 2 * SOURCE_POSITIONS


@pytest.fixture(params=[1, 2], ids=["seed1", "seed2"])
def saved(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, Path]:
    """The transformers model (weights scaled up so tokens differ) and its folder."""
    import torch
    import transformers

    config = transformers.WhisperConfig(**HF_CONFIG, attn_implementation="eager")
    torch.manual_seed(request.param)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(4.0)  # the default init is so small that every step picks the same token
    model.save_pretrained(tmp_path)
    write_tokenizer(tmp_path)
    (tmp_path / "generation_config.json").write_text(json.dumps(GENERATION))
    return model, tmp_path


def _features(seed: int, batch: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, N_MELS, FRAMES)).astype(np.float32)


def _ours(path: Path) -> Any:
    from pygpukit.asr import whisper

    return whisper.load(path, dtype="float32", device=DEVICE, progress=False)


def test_encoder_output_matches(saved: tuple[Any, Path]) -> None:
    import torch

    ref, ours = saved[0], _ours(saved[1])
    feats = _features(10)
    with torch.no_grad():
        want = ref.model.encoder(torch.from_numpy(feats)).last_hidden_state.numpy()
    got = ours.model.encode(feats).to_numpy()
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_decoder_logits_match_with_and_without_cache(saved: tuple[Any, Path]) -> None:
    import torch

    ref, ours = saved[0], _ours(saved[1])
    feats = _features(11)
    ids = np.random.default_rng(12).integers(0, VOCAB, size=(2, 9))
    with torch.no_grad():
        want = ref(input_features=torch.from_numpy(feats),
                   decoder_input_ids=torch.from_numpy(ids)).logits.numpy()  # fmt: skip
    m = ours.model
    cross = m.cross_cache(m.encode(feats))
    whole = m.decode(ids, m.new_cache(2), cross).to_numpy()
    cache = m.new_cache(2)
    steps = [m.decode(ids[:, :5], cache, cross).to_numpy()]
    steps += [m.decode(ids[:, t : t + 1], cache, cross).to_numpy() for t in range(5, 9)]
    scale = np.abs(want).max()
    assert np.abs(whole - want).max() <= 1e-5 * scale
    assert np.abs(np.concatenate(steps, axis=1) - want).max() <= 1e-5 * scale


def _reference_greedy(ref: Any, feats: np.ndarray, prefix: list[int], steps: int,
                      timestamps: bool) -> list[int]:  # fmt: skip
    """transformers' model, stepped greedily with transformers' own Whisper logit rules."""
    import torch
    import transformers
    from transformers.generation import logits_process as lp

    gen = transformers.GenerationConfig(**GENERATION)
    begin = len(prefix)
    rules: list[Any] = [
        lp.SuppressTokensLogitsProcessor(SUPPRESS),
        lp.SuppressTokensAtBeginLogitsProcessor([220, EOT], begin),
    ]
    if timestamps:
        rules.append(lp.WhisperTimeStampLogitsProcessor(gen, begin))
    ids = torch.tensor([prefix])
    with torch.no_grad():
        for _ in range(steps):
            logits = ref(input_features=torch.from_numpy(feats),
                         decoder_input_ids=ids).logits[:, -1].double()  # fmt: skip
            for rule in rules:
                logits = rule(ids, logits)
            token = int(logits.argmax(-1))
            if token == EOT:
                break
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    return ids[0, begin:].tolist()


@pytest.mark.parametrize("timestamps", [False, True], ids=["text", "timestamps"])
def test_greedy_tokens_match(saved: tuple[Any, Path], timestamps: bool) -> None:
    from pygpukit.asr import whisper

    ref, ours = saved[0], _ours(saved[1])
    feats = _features(13, batch=1)
    prefix = [SOT, EN, 261] + ([] if timestamps else [NO_TIMESTAMPS])
    want = _reference_greedy(ref, feats, prefix, 24, timestamps)
    cross = ours.model.cross_cache(ours.model.encode(feats))
    options = whisper.DecodeOptions(language="en", without_timestamps=not timestamps,
                                    sample_len=24)  # fmt: skip
    got = whisper.decode_window(ours.model, cross, ours.tokens, options)[0].tokens
    assert got == want


def test_language_detection_matches(saved: tuple[Any, Path]) -> None:
    import torch
    from pygpukit.asr import whisper

    ref, ours = saved[0], _ours(saved[1])
    feats = _features(14, batch=3)
    with torch.no_grad():
        logits = ref(input_features=torch.from_numpy(feats),
                     decoder_input_ids=torch.full((3, 1), SOT)).logits[:, -1]  # fmt: skip
    want = torch.softmax(logits[:, [EN, DE]].double(), -1).numpy()
    cross = ours.model.cross_cache(ours.model.encode(feats))
    got = whisper.detect_language(ours.model, cross, ours.tokens)
    got_arr = np.array([[p["en"], p["de"]] for p in got])
    np.testing.assert_allclose(got_arr, want, atol=1e-5)
