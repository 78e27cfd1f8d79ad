"""Onset strength (spectral flux of the log-mel spectrogram) and onset detection (peak picking)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, check_audio, positive_int, positive_rate, to_device
from ._framing import frame
from .convert import power_to_db
from .spectral import melspectrogram

__all__ = ["onset_backtrack", "onset_detect", "onset_strength"]

#: NumPy reducers accepted as `aggregate`, answered by the array op of that name
_AGGREGATES: dict[Any, Callable[..., GPUArray]] = {
    np.mean: gp.mean,
    np.max: gp.max,
    np.amax: gp.max,
    np.min: gp.min,
    np.amin: gp.min,
    np.sum: gp.sum,
}


def _max_over_bins(S: GPUArray, size: int) -> GPUArray:
    """scipy.ndimage.maximum_filter1d(S, size, axis=-2) (its default "reflect" edges)."""
    bins = int(S.shape[-2])
    along = gp.matrix_transpose(S)  # (..., t, bins): frame along the bins
    windows = frame(along, "onset_strength", frame_length=size, hop_length=1, pad=size // 2,
                    pad_mode="symmetric")  # fmt: skip
    peaks = gp.max(windows[..., :bins, :], axis=-1)  # even sizes give one extra window
    return gp.matrix_transpose(peaks)


def _detrend(env: GPUArray) -> GPUArray:
    """lfilter([1, -1], [1, -0.99]): a leaky differentiator.

    The recursion y[n] = x[n] - x[n-1] + 0.99 y[n-1] has no array-op form; it runs on the
    host over the (short) envelope and goes back to env's device.
    """
    x = env.to_numpy().astype(np.float64)
    out = np.empty_like(x)
    previous_x = np.zeros(x.shape[:-1])
    previous_y = np.zeros(x.shape[:-1])
    for n in range(x.shape[-1]):
        previous_y = x[..., n] - previous_x + 0.99 * previous_y
        previous_x = x[..., n]
        out[..., n] = previous_y
    return gp.asarray(out.astype(env.dtype.name), device=env.device)


def onset_strength(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    lag: int = 1,
    max_size: int = 1,
    ref: Any = None,
    detrend: bool = False,
    center: bool = True,
    feature: Callable[..., Any] | None = None,
    aggregate: Callable[..., Any] | None = None,
    n_fft: int = 2048,
    hop_length: int = 512,
    **kwargs: Any,
) -> Any:
    """Spectral flux onset envelope (..., n_frames), as librosa.onset.onset_strength.

    From y: the log-power mel spectrogram (fmax = sr / 2 unless given); each frame's
    positive change over `lag` frames, averaged over the bands (`aggregate`), shifted so
    that envelope frame t lines up with STFT frame t when `center`.
    """
    rate = positive_rate(sr, "onset_strength")
    steps = positive_int(lag, "onset_strength", "lag")
    width = positive_int(max_size, "onset_strength", "max_size")
    if S is None:
        if y is None:
            raise ValueError("onset_strength: give an audio signal y or a spectrogram S")
        host = isinstance(y, np.ndarray)
        kwargs.setdefault("fmax", 0.5 * rate)
        make = melspectrogram if feature is None else feature
        made = make(y=y, sr=rate, n_fft=n_fft, hop_length=hop_length, **kwargs)
        spec, _ = to_device(made if isinstance(made, GPUArray) else np.asarray(made),
                            "onset_strength", "S")  # fmt: skip
        spec = power_to_db(gp.abs(spec))
    else:
        spec, host = to_device(S, "onset_strength", "S")
    if spec.ndim == 1:
        spec = gp.reshape(spec, (1, spec.shape[0]))
    if spec.shape[-1] <= steps:
        raise ValueError(f"onset_strength: lag={steps} needs more than {spec.shape[-1]} frames")
    if ref is None:
        reference = spec if width == 1 else _max_over_bins(spec, width)
    else:
        reference, _ = to_device(ref, "onset_strength", "ref")
        if tuple(reference.shape) != tuple(spec.shape):
            raise ValueError(
                f"onset_strength: ref has shape {tuple(reference.shape)}, S {tuple(spec.shape)}"
            )
    flux = gp.maximum(spec[..., steps:] - reference[..., :-steps], 0.0)
    reduce = _AGGREGATES.get(np.mean if aggregate is None else aggregate)
    if reduce is None:
        raise TypeError("onset_strength: aggregate must be one of np.mean, np.max, np.min, np.sum")
    env = reduce(flux, axis=-2)
    shift = steps + (n_fft // (2 * hop_length) if center else 0)
    env = gp.concat([gp.zeros((*env.shape[:-1], shift), dtype=env.dtype, device=env.device),
                     env], axis=-1)  # fmt: skip
    if detrend:
        env = _detrend(env)
    if center:
        env = env[..., : spec.shape[-1]]
    return back(env, host)


def _peaks(x: np.ndarray, pre_max: int, post_max: int, pre_avg: int, post_avg: int,
           delta: float, wait: int) -> np.ndarray:  # fmt: skip
    """librosa.util.peak_pick on one envelope: local maxima above the local mean + delta,
    at least `wait` frames apart (a sequential rule, so run on the host)."""
    n = x.size
    padded = np.concatenate([np.full(pre_max, -np.inf), x, np.full(post_max, -np.inf)])
    local_max = np.lib.stride_tricks.sliding_window_view(padded, pre_max + post_max)[:n]
    is_max = x == local_max.max(axis=-1)
    sums = np.concatenate([[0.0], np.cumsum(x, dtype=np.float64)])
    lo = np.maximum(0, np.arange(n) - pre_avg)
    hi = np.minimum(n, np.arange(n) + post_avg)
    local_mean = (sums[hi] - sums[lo]) / (hi - lo)
    candidates = np.flatnonzero(is_max & (x >= local_mean + delta))
    picked = []
    next_allowed = 0
    for i in candidates:
        if i >= next_allowed:
            picked.append(i)
            next_allowed = int(i) + wait + 1
    return np.asarray(picked, dtype=np.int64)


def onset_backtrack(events: Any, energy: Any) -> np.ndarray:
    """Each onset moved back to the nearest preceding local minimum of `energy`."""
    e = energy.to_numpy() if isinstance(energy, GPUArray) else np.asarray(energy)
    minima = np.flatnonzero((e[1:-1] <= e[:-2]) & (e[1:-1] < e[2:])) + 1
    minima = np.union1d(minima, [0])
    found = np.searchsorted(minima, np.asarray(events), side="right") - 1
    return minima[found]


def onset_detect(
    *,
    y: Any = None,
    sr: float = 22050,
    onset_envelope: Any = None,
    hop_length: int = 512,
    backtrack: bool = False,
    energy: Any = None,
    units: str = "frames",
    normalize: bool = True,
    sparse: bool = True,
    **kwargs: Any,
) -> Any:
    """Onset positions from the onset envelope's peaks, as librosa.onset.onset_detect.

    `units` is "frames", "samples" or "time"; sparse=False gives a boolean (..., n_frames)
    mask instead (for a batch). Peak picking is sequential and runs on the host; the
    result goes back to the input's kind (NumPy or a GPUArray on its device).
    """
    rate = positive_rate(sr, "onset_detect")
    hop = positive_int(hop_length, "onset_detect", "hop_length")
    if units not in ("frames", "samples", "time"):
        raise ValueError(f"onset_detect: units must be frames, samples or time, got {units!r}")
    if onset_envelope is None:
        if y is None:
            raise ValueError("onset_detect: give an audio signal y or an onset_envelope")
        if sparse:  # a list of onset positions describes one signal
            signal, _ = to_device(y, "onset_detect")
            check_audio(signal, "onset_detect", mono=True)
        onset_envelope = onset_strength(y=y, sr=rate, hop_length=hop)
    device = onset_envelope.device if isinstance(onset_envelope, GPUArray) else None
    env = onset_envelope.to_numpy() if device is not None else np.asarray(onset_envelope)
    if sparse and env.ndim != 1:
        raise ValueError(
            f"onset_detect: sparse output needs a mono signal (one 1-D envelope), got shape "
            f"{env.shape}; pass sparse=False for a batch"
        )
    if normalize:
        env = env - np.min(env, axis=-1, keepdims=True)
        env = env / (np.max(env, axis=-1, keepdims=True) + np.finfo(env.dtype).tiny)
    settings = {
        "pre_max": 0.03 * rate // hop, "post_max": 0.00 * rate // hop + 1,
        "pre_avg": 0.10 * rate // hop, "post_avg": 0.10 * rate // hop + 1,
        "wait": 0.03 * rate // hop, "delta": 0.07,
    }  # fmt: skip
    settings.update(kwargs)
    sizes = {k: int(np.ceil(v)) for k, v in settings.items() if k != "delta"}
    rows = env.reshape(-1, env.shape[-1])
    mask = np.zeros(rows.shape, dtype=bool)
    if env.any() and np.all(np.isfinite(env)):
        for r, row in enumerate(rows):
            mask[r, _peaks(row, delta=float(settings["delta"]), **sizes)] = True
    if not sparse:
        result: np.ndarray = mask.reshape(env.shape)
    else:
        result = np.flatnonzero(mask[0])
        if backtrack:
            result = onset_backtrack(result, env if energy is None else energy)
        if units == "samples":
            result = result * hop
        elif units == "time":
            result = result * hop / rate
    return result if device is None else gp.asarray(result, device=device)
