"""phase_vocoder, time_stretch, pitch_shift and griffinlim against librosa."""

from __future__ import annotations

import numpy as np
import pytest
from audio_signals import SR, assert_close_scaled, chirp, noise, sine
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")


@pytest.mark.parametrize("rate", [0.5, 0.8, 1.25, 2.0])
def test_phase_vocoder(rate: float) -> None:
    spec = librosa.stft(np.stack([chirp(), noise(1)]), n_fft=512)
    got = audio.phase_vocoder(spec, rate=rate)
    want = librosa.phase_vocoder(spec, rate=rate)
    assert got.shape == want.shape and got.dtype == np.complex64
    # magnitudes are interpolated the same way: rtol 1e-5
    assert_close_scaled(np.abs(got), np.abs(want))
    # phases: librosa sums the unreduced advance (up to pi * hop) in a float32 accumulator,
    # whose roundoff grows with the frame index (1e-2 of max |D| here); its float64 run is
    # the reference, met to 1e-4 of max |D| (float32 angles, float64 running sum)
    exact = librosa.phase_vocoder(spec.astype(np.complex128), rate=rate)
    assert np.abs(got - exact).max() <= 1e-4 * np.abs(exact).max()


@pytest.mark.parametrize("rate", [0.7, 1.5])
def test_time_stretch(rate: float) -> None:
    y = np.stack([sine(), noise(5)])
    got = audio.effects.time_stretch(y, rate=rate)
    want = librosa.effects.time_stretch(y.astype(np.float64), rate=rate)  # its precise path
    assert got.shape == want.shape
    # the last n_fft samples lie past the last full frame, where istft divides by a
    # window overlap that falls towards 0 and so magnifies any roundoff: compared before
    inner = slice(0, -2048)
    assert np.abs(got[..., inner] - want[..., inner]).max() <= 2e-4 * np.abs(want).max()


def test_time_stretch_chirp_spectrum() -> None:
    # A chirp reaches bins that were near-silent before: their phase there is roundoff
    # (float32 FFTs round relative to the frame, librosa's float64 FFT relative to the bin),
    # and the vocoder carries it into the loud part, so samples differ; spectra agree.
    y = chirp()
    got = audio.effects.time_stretch(y, rate=0.8)
    want = librosa.effects.time_stretch(y.astype(np.float64), rate=0.8)
    mags = [np.abs(librosa.stft(v[:-2048], n_fft=512)) for v in (got, want)]
    assert np.linalg.norm(mags[0] - mags[1]) <= 0.05 * np.linalg.norm(mags[1])


@pytest.mark.parametrize("n_steps", [12, -12])
def test_pitch_shift_octaves_match_librosa_polyphase(n_steps: int) -> None:
    y = sine(440.0, 1.0)
    got = audio.effects.pitch_shift(y, sr=SR, n_steps=n_steps)
    want = librosa.effects.pitch_shift(y.astype(np.float64), sr=SR, n_steps=n_steps,
                                       res_type="polyphase")  # fmt: skip
    assert got.shape == want.shape == y.shape
    inner = slice(0, -4096)  # as in test_time_stretch (the tail, here up to 2x longer)
    assert np.abs(got[inner] - want[inner]).max() <= 2e-4 * np.abs(want).max()


@pytest.mark.parametrize("n_steps", [3, -5, 0.5])
def test_pitch_shift_moves_the_peak(n_steps: float) -> None:
    y = sine(440.0, 1.0)
    got = audio.effects.pitch_shift(y, sr=SR, n_steps=n_steps)
    spectrum = np.abs(np.fft.rfft(got[2000:-2000] * np.hanning(got.size - 4000)))
    peak = np.argmax(spectrum) * SR / (got.size - 4000)
    assert peak == pytest.approx(440.0 * 2 ** (n_steps / 12), rel=0.01)


def test_griffinlim_random_start_matches_librosa() -> None:
    y = np.stack([chirp(), sine()])
    mag = np.abs(librosa.stft(y, n_fft=512))
    got = audio.griffinlim(mag, n_iter=32, random_state=0)
    want = librosa.griffinlim(mag, n_iter=32, random_state=0)
    # 32 iterations feed float32 roundoff back each time: 1e-3 of the peak
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max()


def test_griffinlim_zero_phase_start_converges() -> None:
    # From zero phase, bins whose value is ~0 take their sign from roundoff, and the
    # iterations amplify that, so samples are not compared: the spectral fit is.
    y = chirp()
    mag = np.abs(librosa.stft(y, n_fft=512))

    def misfit(signal: np.ndarray) -> float:
        return float(
            np.linalg.norm(np.abs(librosa.stft(signal, n_fft=512)) - mag) / np.linalg.norm(mag)
        )

    got = misfit(audio.griffinlim(mag, n_iter=64, init=None))
    assert got <= 1.05 * misfit(librosa.griffinlim(mag, n_iter=64, init=None)) + 0.01


def test_bad_arguments() -> None:
    spec = librosa.stft(chirp(), n_fft=256)
    with pytest.raises(ValueError, match="rate must be positive"):
        audio.phase_vocoder(spec, rate=0)
    with pytest.raises(TypeError, match="must be a real"):
        audio.griffinlim(spec)
    with pytest.raises(ValueError, match="momentum must be >= 0"):
        audio.griffinlim(np.abs(spec), momentum=-1)
    with pytest.raises(ValueError, match="res_type='soxr_hq' is not available"):
        audio.effects.pitch_shift(chirp(), sr=SR, n_steps=2, res_type="soxr_hq")
