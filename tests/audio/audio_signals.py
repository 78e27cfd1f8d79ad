"""Test signals the audio tests synthesize (sines, chirps, noise, clicks, silence)."""

from __future__ import annotations

import numpy as np

SR = 16000


def sine(freq: float = 440.0, seconds: float = 0.5, sr: int = SR) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def chirp(f0: float = 100.0, f1: float = 4000.0, seconds: float = 0.5, sr: int = SR) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t**2 / (2 * seconds))
    return (0.5 * np.sin(phase)).astype(np.float32)


def noise(seed: int, seconds: float = 0.5, sr: int = SR) -> np.ndarray:
    return (0.3 * np.random.default_rng(seed).standard_normal(int(seconds * sr))).astype(np.float32)


def clicks(seconds: float = 0.5, every: float = 0.1, sr: int = SR) -> np.ndarray:
    y = np.zeros(int(seconds * sr), np.float32)
    y[:: int(every * sr)] = 1.0
    return y


def silence(seconds: float = 0.5, sr: int = SR) -> np.ndarray:
    return np.zeros(int(seconds * sr), np.float32)


def all_signals(seed: int = 0) -> dict[str, np.ndarray]:
    """One of each kind, the same length, so they also stack into a batch."""
    return {
        "sine": sine(),
        "chirp": chirp(),
        "noise": noise(seed),
        "clicks": clicks(),
        "silence": silence(),
    }


def assert_close_scaled(
    actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5, floor: float = 1e-6
) -> None:
    """rtol 1e-5 with atol `floor` (1e-6) times the largest |expected| (at least `floor`).

    FFT-based outputs carry float32 roundoff relative to the whole frame's energy, not
    to each bin (librosa computes in float64 and rounds once), so the absolute floor
    scales with the output's range; values are otherwise held to rtol 1e-5.
    """
    expected = np.asarray(expected)
    scale = max(float(np.max(np.abs(expected))) if expected.size else 0.0, 1.0)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=floor * scale)
