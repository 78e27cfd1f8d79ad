"""pyin (and its Beta CDF, transition matrices, Viterbi) against librosa and scipy."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import SR, chirp, noise, silence, sine
from pygpukit import audio
from pygpukit.audio import pitch_hmm as pyin_module

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")
scipy = pytest.importorskip("scipy")
pytest.importorskip("scipy.stats")  # binds scipy.stats


def _melody() -> np.ndarray:
    return np.stack([
        np.concatenate([sine(220.0, 0.25), silence(0.1), sine(330.0, 0.25)]),
        np.concatenate([chirp(150.0, 600.0, 0.5), 0.05 * noise(1, 0.1)]),
    ])  # fmt: skip


@pytest.mark.parametrize("kwargs", [
    {"frame_length": 1024}, {"frame_length": 1024, "fill_na": None, "hop_length": 160},
    {"frame_length": 2048, "beta_parameters": (1.5, 12.0), "switch_prob": 0.05},
], ids=str)  # fmt: skip
def test_pyin_matches_librosa(kwargs: dict[str, object]) -> None:
    y = _melody()
    f0, voiced, prob = audio.pyin(y, fmin=65.0, fmax=1000.0, sr=SR, **kwargs)  # type: ignore[arg-type]
    want_f0, want_voiced, want_prob = librosa.pyin(y, fmin=65.0, fmax=1000.0, sr=SR, **kwargs)
    np.testing.assert_array_equal(voiced, want_voiced)
    np.testing.assert_allclose(f0, want_f0, rtol=1e-6, equal_nan=True)  # float32 of the same bins
    np.testing.assert_allclose(prob, want_prob, rtol=1e-5, atol=1e-6)
    if kwargs == {"frame_length": 1024}:  # hop 256: the tone's frames, then the silent gap's
        assert voiced[0, 3:12].all() and not voiced[0, 18:20].any()


def test_pyin_on_gpuarray() -> None:
    f0, voiced, prob = audio.pyin(gp.from_numpy(_melody()[0]), fmin=65.0, fmax=1000.0, sr=SR,
                                  frame_length=1024)  # fmt: skip
    assert all(isinstance(r, gp.GPUArray) for r in (f0, voiced, prob))


def test_beta_cdf_and_transitions() -> None:
    x = np.linspace(0, 1, 101)
    for a, b in [(2, 18), (2.5, 10.0), (0.5, 0.5), (7.3, 2.2)]:
        np.testing.assert_allclose(pyin_module._beta_cdf(x, a, b), scipy.stats.beta.cdf(x, a, b),
                                   rtol=1e-12, atol=1e-13)  # fmt: skip
    want = librosa.sequence.transition_local(40, 7, window="triangle", wrap=False)
    np.testing.assert_allclose(pyin_module.transition_local(40, 7), want, rtol=1e-12)
    np.testing.assert_array_equal(pyin_module.transition_loop(2, 0.99),
                                  librosa.sequence.transition_loop(2, 0.99))  # fmt: skip


def test_viterbi() -> None:
    rng = np.random.default_rng(5)
    prob = rng.random((3, 6, 40))
    transition = librosa.sequence.transition_local(6, 3)
    np.testing.assert_array_equal(pyin_module.viterbi(prob, transition),
                                  librosa.sequence.viterbi(prob, transition))  # fmt: skip
