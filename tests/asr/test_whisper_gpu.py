"""Whisper on a CUDA GPU: the front end against the float64 reference, decoding equal to the
CPU's, and float16 close to float32 (skips without a CUDA GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.asr import whisper
from tiny_whisper import N_MELS, SOURCE_POSITIONS, make_checkpoint
from whisper_reference import reference_encode, reference_log_mel

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)"),
]


def _speech(seed: int, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * 16000)) / 16000
    rng = np.random.default_rng(seed)
    tone = np.sin(2 * np.pi * (200 + 80 * np.sin(4 * t)) * t)
    return (0.3 * tone + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


@pytest.mark.parametrize("n_mels", [80, 128])
def test_log_mel_on_the_gpu_matches_the_reference(n_mels: int) -> None:
    clips = np.stack([_speech(1, 2.0), _speech(2, 2.0) * 0.01])
    got = whisper.log_mel_spectrogram(gp.from_numpy(clips, "cuda"), n_mels)
    assert isinstance(got, gp.GPUArray) and got.device.type == "cuda"
    for row, clip in zip(got.to_numpy(), clips, strict=True):
        np.testing.assert_allclose(row, reference_log_mel(clip, n_mels), rtol=0, atol=2e-5)


def test_decoding_on_the_gpu_equals_the_cpu(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, seed=31)
    cpu = whisper.load(tmp_path, progress=False)
    gpu = whisper.load(tmp_path, device="cuda", progress=False)
    clips = np.stack([_speech(3, 0.45), _speech(4, 0.45)])
    for options in ({}, {"beam_size": 3}, {"without_timestamps": True}):
        want = cpu.decode(clips, language="en", **options)
        got = gpu.decode(clips, language="en", **options)
        assert [r.tokens for r in got] == [r.tokens for r in want]
    long_cpu = cpu.transcribe(_speech(5, 1.7), language="de", temperature=0.0)
    long_gpu = gpu.transcribe(_speech(5, 1.7), language="de", temperature=0.0)
    assert [s.tokens for s in long_gpu.segments] == [s.tokens for s in long_cpu.segments]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_encoder_stays_close(tmp_path: Path, dtype: str) -> None:
    weights = make_checkpoint(tmp_path, seed=32)
    model = whisper.load_whisper_model(tmp_path, dtype, device="cuda", progress=False)
    feats = np.random.default_rng(33).standard_normal((1, N_MELS, 2 * SOURCE_POSITIONS))
    got = model.encode(feats.astype(np.float32)).astype(gp.float32).to_numpy()[0]
    want = reference_encode(weights, feats[0])
    # half types keep 8 (bf16) or 11 (f16) bits: a few percent of the range after 2 layers
    assert np.abs(got - want).max() <= 0.05 * np.abs(want).max()
