"""preemphasis, split, trim and the energy VAD against librosa."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import chirp, noise, silence
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")


def _speechlike() -> np.ndarray:
    """Silence, a chirp, a gap, noise, silence."""
    return np.concatenate([silence(0.3), chirp(seconds=0.4), silence(0.2), noise(1, 0.3),
                           silence(0.3)])  # fmt: skip


@pytest.mark.parametrize("coef", [0.97, 0.5])
def test_preemphasis(coef: float) -> None:
    y = np.stack([chirp(), noise(2)])
    want = librosa.effects.preemphasis(y, coef=coef)
    np.testing.assert_allclose(audio.effects.preemphasis(y, coef=coef), want, rtol=1e-5, atol=1e-6)
    got, state = audio.effects.preemphasis(y[0], coef=coef, zi=0.25, return_zf=True)
    want, want_state = librosa.effects.preemphasis(y[0], coef=coef, zi=0.25, return_zf=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state, want_state, rtol=1e-6)


def test_preemphasis_streams_in_blocks() -> None:
    y = noise(3)
    whole = audio.effects.preemphasis(y, zi=0.0)
    first, state = audio.effects.preemphasis(y[:1000], zi=0.0, return_zf=True)
    second = audio.effects.preemphasis(y[1000:], zi=state)
    np.testing.assert_allclose(np.concatenate([first, second]), whole, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("top_db", [20, 40, 60])
@pytest.mark.parametrize(("frame_length", "hop"), [(2048, 512), (400, 160)])
def test_split_and_trim(top_db: int, frame_length: int, hop: int) -> None:
    y = _speechlike()
    kwargs = dict(top_db=top_db, frame_length=frame_length, hop_length=hop)
    np.testing.assert_array_equal(audio.effects.split(y, **kwargs),  # type: ignore[arg-type]
                                  librosa.effects.split(y, **kwargs))  # type: ignore[arg-type]  # fmt: skip
    got, span = audio.effects.trim(y, **kwargs)  # type: ignore[arg-type]
    want, want_span = librosa.effects.trim(y, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_array_equal(span, want_span)
    np.testing.assert_array_equal(got, want)
    stereo = np.stack([y, 0.5 * y])
    np.testing.assert_array_equal(audio.effects.split(stereo, **kwargs),  # type: ignore[arg-type]
                                  librosa.effects.split(stereo, **kwargs))  # type: ignore[arg-type]  # fmt: skip


def test_energy_vad_marks_the_sound() -> None:
    y = _speechlike()
    active = audio.effects.energy_vad(y, top_db=40, frame_length=400, hop_length=160)
    rms = librosa.feature.rms(y=y, frame_length=400, hop_length=160)[0]
    want = librosa.amplitude_to_db(rms, ref=np.max, top_db=None) > -40
    np.testing.assert_array_equal(active, want & (rms > 1e-5))
    # each signal of a batch is judged against its own loudest frame
    batch = audio.effects.energy_vad(gp.from_numpy(np.stack([y, 0.01 * y, silence(1.5)])),
                                     top_db=40, frame_length=400, hop_length=160)  # fmt: skip
    assert isinstance(batch, gp.GPUArray)
    rows = batch.to_numpy()
    np.testing.assert_array_equal(rows[0], rows[1])
    assert not rows[2].any()


def test_split_of_a_gpuarray_is_a_gpuarray() -> None:
    y = _speechlike()
    spans = audio.effects.split(gp.from_numpy(y), top_db=30)
    assert isinstance(spans, gp.GPUArray)
    np.testing.assert_array_equal(spans.to_numpy(), librosa.effects.split(y, top_db=30))
