"""Property-based checks: stft/istft against librosa and the streaming STFT against the
offline one, over random sizes, hops, centring and chunkings (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from audio_signals import assert_close_scaled
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")

# short signals with centring: librosa and we both warn that n_fft exceeds the signal
pytestmark = pytest.mark.filterwarnings("ignore:.*too large for input signal:UserWarning")

FEW = settings(max_examples=25, deadline=None, derandomize=True)  # the same cases every run


@st.composite
def stft_setups(draw: st.DrawFn) -> tuple[np.ndarray, int, int, bool, str]:
    n_fft = draw(st.integers(8, 300))
    hop = draw(st.integers(1, n_fft))
    center = draw(st.booleans())
    length = draw(st.integers(1 if center else n_fft, 1500))
    mode = draw(st.sampled_from(["constant", "reflect", "edge"])) if center else "constant"
    seed = draw(st.integers(0, 2**31))
    y = np.random.default_rng(seed).standard_normal((2, length)).astype(np.float32)
    return y, n_fft, hop, center, mode


@FEW
@given(stft_setups())
def test_stft_matches_librosa(setup: tuple[np.ndarray, int, int, bool, str]) -> None:
    y, n_fft, hop, center, mode = setup
    kwargs = dict(n_fft=n_fft, hop_length=hop, center=center, pad_mode=mode)
    with np.errstate(all="ignore"):
        want = librosa.stft(y, **kwargs)  # type: ignore[arg-type]
    assert_close_scaled(audio.stft(y, **kwargs), want)  # type: ignore[arg-type]


@FEW
@given(stft_setups(), st.integers(0, 2**31))
def test_streaming_equals_offline(setup: tuple[np.ndarray, int, int, bool, str], seed: int) -> None:
    y, n_fft, hop, center, _ = setup
    stream = audio.StreamingSTFT(n_fft=n_fft, hop_length=hop, center=center)
    cuts = np.sort(np.random.default_rng(seed).integers(0, y.shape[-1] + 1, size=5))
    pieces = np.split(y, cuts, axis=-1)
    got = np.concatenate([stream.push(p) for p in pieces] + [stream.flush()], axis=-1)
    np.testing.assert_array_equal(got, audio.stft(y, n_fft=n_fft, hop_length=hop, center=center))


@FEW
@given(st.integers(16, 256), st.integers(2, 8), st.integers(0, 2**31))
def test_istft_inverts_stft(n_fft: int, overlap: int, seed: int) -> None:
    hop = max(1, n_fft // overlap)
    y = np.random.default_rng(seed).standard_normal(3000).astype(np.float32)
    spec = audio.stft(y, n_fft=n_fft, hop_length=hop)
    back = audio.istft(spec, hop_length=hop, n_fft=n_fft, length=y.size)
    want = librosa.istft(spec, hop_length=hop, n_fft=n_fft, length=y.size)
    np.testing.assert_allclose(back, want, rtol=1e-4, atol=1e-4)
