"""Probabilistic YIN (librosa.pyin): f0 candidates with probabilities, decoded by Viterbi.

The difference function and its parabolic refinement are the YIN array ops; the Viterbi
recursion runs as array ops, one step per frame, on the signal's device. Turning each
frame's troughs into pitch-bin probabilities (variable-length trough lists, a scatter
where the last write wins) is done on the host in NumPy, per frame as librosa does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import to_device
from .pitch import analyse_periods
from .windows import get_window, pad_center

__all__ = ["pyin", "transition_local", "transition_loop", "viterbi"]


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the regularised incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for numerator in (even, odd):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def _beta_cdf(x: np.ndarray, a: float, b: float) -> np.ndarray:
    """The Beta(a, b) CDF at each x (the regularised incomplete beta function I_x(a, b))."""
    out = np.empty(len(x))
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    for i, v in enumerate(np.asarray(x, dtype=np.float64)):
        if v <= 0.0 or v >= 1.0:
            out[i] = 0.0 if v <= 0.0 else 1.0
            continue
        front = math.exp(log_norm + a * math.log(v) + b * math.log1p(-v))
        if v < (a + 1.0) / (a + b + 2.0):  # the fraction converges fast on this side
            out[i] = front * _beta_fraction(v, a, b) / a
        else:
            out[i] = 1.0 - front * _beta_fraction(1.0 - v, b, a) / b
    return out


def _boltzmann_pmf(k: np.ndarray, lam: float, n: np.ndarray) -> np.ndarray:
    """scipy.stats.boltzmann.pmf: a geometric law truncated to 0..n-1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        pmf = (1 - np.exp(-lam)) * np.exp(-lam * k) / (1 - np.exp(-lam * n))
    return np.where((k >= 0) & (k < n), pmf, 0.0)


def transition_local(n_states: int, width: int, *, window: str = "triangle",
                     wrap: bool = False) -> np.ndarray:  # fmt: skip
    """librosa.sequence.transition_local: moves of at most width // 2 states, windowed."""
    matrix = np.zeros((n_states, n_states))
    for i in range(n_states):
        row = pad_center(get_window(window, width, fftbins=False), size=n_states)
        row = np.roll(row, n_states // 2 + i + 1)
        if not wrap:
            row[min(n_states, i + width // 2 + 1) :] = 0
            row[: max(0, i - width // 2)] = 0
        matrix[i] = row
    return matrix / matrix.sum(axis=1, keepdims=True)


def transition_loop(n_states: int, prob: float) -> np.ndarray:
    """librosa.sequence.transition_loop: stay with `prob`, else any other state evenly."""
    matrix = np.full((n_states, n_states), (1.0 - prob) / (n_states - 1))
    np.fill_diagonal(matrix, prob)
    return matrix


def viterbi(prob: Any, transition: np.ndarray, *, p_init: np.ndarray | None = None) -> Any:
    """Most likely state sequence (..., n_steps) for observation likelihoods
    prob (..., n_states, n_steps) under `transition` (librosa.sequence.viterbi)."""
    likelihood, host = to_device(prob, "viterbi", "prob")
    n_states, n_steps = int(likelihood.shape[-2]), int(likelihood.shape[-1])
    if transition.shape != (n_states, n_states):
        raise ValueError(
            f"viterbi: transition must be ({n_states}, {n_states}), got {transition.shape}"
        )
    init = np.full(n_states, 1.0 / n_states) if p_init is None else np.asarray(p_init)
    tiny = float(np.finfo(likelihood.dtype.name).tiny)
    log_prob = gp.matrix_transpose(gp.log(likelihood + tiny))  # (..., steps, states)
    log_trans = gp.asarray(np.log(transition + tiny), device=likelihood.device)  # [from, to]
    value = log_prob[..., 0, :] + gp.asarray(np.log(init + tiny), device=likelihood.device)
    pointers = []
    for t in range(1, n_steps):
        scores = gp.expand_dims(value, axis=-1) + log_trans  # (..., from, to)
        best = gp.argmax(scores, axis=-2)  # first best predecessor, as librosa
        pointers.append(best)
        value = log_prob[..., t, :] + gp.max(scores, axis=-2)
    # backtracking follows one pointer per step: a short sequential walk on the host
    last = gp.argmax(value, axis=-1).to_numpy()
    steps = [p.to_numpy() for p in pointers]
    states = np.empty((*last.shape, n_steps), dtype=np.int64)
    states[..., -1] = last
    for t in range(n_steps - 2, -1, -1):
        states[..., t] = np.take_along_axis(steps[t], states[..., t + 1 : t + 2], axis=-1)[..., 0]
    return states if host else gp.asarray(states, device=likelihood.device)


def _observations(cmnd: np.ndarray, shifts: np.ndarray, *, sr: float, thresholds: np.ndarray,
                  beta_probs: np.ndarray, boltzmann: float, no_trough_prob: float,
                  min_period: int, fmin: float, n_bins: int, per_semitone: int,
                  ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """librosa's per-frame trough probabilities for one signal: cmnd (lags, frames)."""
    probs = np.zeros_like(cmnd)
    for i, column in enumerate(cmnd.T):
        is_trough = np.zeros(column.size, dtype=bool)
        is_trough[1:-1] = (column[1:-1] < column[:-2]) & (column[1:-1] <= column[2:])
        is_trough[-1] = column[-1] < column[-2]
        is_trough[0] = column[0] < column[1]
        (index,) = np.nonzero(is_trough)
        if index.size == 0:
            continue
        heights = column[index]
        below = np.less.outer(heights, thresholds[1:])
        positions = np.cumsum(below, axis=0) - 1
        prior = _boltzmann_pmf(positions, boltzmann, np.count_nonzero(below, axis=0))
        prior[~below] = 0
        frame_probs = prior.dot(beta_probs)
        lowest = np.argmin(heights)
        frame_probs[lowest] += no_trough_prob * np.sum(
            beta_probs[: np.count_nonzero(~below[lowest])]
        )
        probs[index, i] = frame_probs
    lag, frame_index = np.nonzero(probs)
    f0 = sr / (min_period + lag + shifts[lag, frame_index])
    bins = np.clip(np.round(per_semitone * 12 * np.log2(f0 / fmin)), 0, n_bins).astype(int)
    observation = np.zeros((2 * n_bins, cmnd.shape[1]))
    observation[bins, frame_index] = probs[lag, frame_index]
    voiced = np.clip(np.sum(observation[:n_bins], axis=0, keepdims=True), 0, 1)
    observation[n_bins:] = (1 - voiced) / n_bins
    return observation, voiced[0]


def pyin(
    y: Any,
    *,
    fmin: float,
    fmax: float,
    sr: float = 22050,
    frame_length: int = 2048,
    hop_length: int | None = None,
    n_thresholds: int = 100,
    beta_parameters: tuple[float, float] = (2, 18),
    boltzmann_parameter: float = 2,
    resolution: float = 0.1,
    max_transition_rate: float = 35.92,
    switch_prob: float = 0.01,
    no_trough_prob: float = 0.01,
    fill_na: float | None = np.nan,
    center: bool = True,
    pad_mode: str = "constant",
) -> tuple[Any, Any, Any]:
    """(f0, voiced_flag, voiced_prob), each (..., n_frames), as librosa.pyin.

    Unvoiced frames get f0 = fill_na (NaN by default; None keeps the best pitch guess).
    """
    a = analyse_periods("pyin", y, sr, fmin, fmax, frame_length, hop_length, center, pad_mode)
    rate, hop, signal, host, cmnd, shifts = a.rate, a.hop, a.signal, a.host, a.cmnd, a.shifts
    min_period = a.min_period
    thresholds = np.linspace(0, 1, n_thresholds + 1)
    beta_probs = np.diff(_beta_cdf(thresholds, *beta_parameters))
    per_semitone = int(np.ceil(1.0 / resolution))
    n_bins = int(np.floor(12 * per_semitone * np.log2(fmax / fmin))) + 1
    lead = tuple(int(s) for s in signal.shape[:-1])
    cmnd_host = cmnd.to_numpy().reshape(-1, *cmnd.shape[-2:])
    shifts_host = shifts.to_numpy().reshape(-1, *shifts.shape[-2:])
    observed, voiced_prob = [], []
    for c, s in zip(cmnd_host, shifts_host, strict=True):
        obs, vp = _observations(c.T.astype(np.float64), s.T.astype(np.float64), sr=rate,
                                thresholds=thresholds, beta_probs=beta_probs,
                                boltzmann=boltzmann_parameter, no_trough_prob=no_trough_prob,
                                min_period=min_period, fmin=fmin, n_bins=n_bins,
                                per_semitone=per_semitone)  # fmt: skip
        observed.append(obs)
        voiced_prob.append(vp)
    width = round(max_transition_rate * 12 * hop / rate) * per_semitone + 1
    transition = np.kron(transition_loop(2, 1 - switch_prob), transition_local(n_bins, width))
    likelihood = gp.asarray(np.stack(observed).reshape(*lead, 2 * n_bins, -1), device=signal.device)
    states = viterbi(likelihood, transition, p_init=np.full(2 * n_bins, 1.0 / (2 * n_bins)))
    states = states.to_numpy() if isinstance(states, GPUArray) else states
    freqs = fmin * 2 ** (np.arange(n_bins) / (12 * per_semitone))
    f0 = freqs[states % n_bins]
    voiced = states < n_bins
    if fill_na is not None:
        f0[~voiced] = fill_na
    probability = np.stack(voiced_prob).reshape(*lead, -1)
    results = (f0.astype(signal.dtype.name), voiced, probability.astype(signal.dtype.name))
    if host:
        return results
    return tuple(gp.asarray(r, device=signal.device) for r in results)  # type: ignore[return-value]
