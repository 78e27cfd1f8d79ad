"""Cutting a batch of signals into overlapping frames with one gather (take) on its device."""

from __future__ import annotations

import functools

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import on_device

#: np.pad modes that move samples (so they can be written as an index map); the others
#: compute new values. "wrap" is left out because librosa refuses it for centred frames
PAD_MODES = ("constant", "edge", "reflect", "symmetric")


@functools.lru_cache(maxsize=32)
def frame_index(n: int, frame_length: int, hop: int, pad: int, pad_mode: str) -> np.ndarray:
    """(n_frames, frame_length) positions read by each frame (n: an appended zero).

    Padding is folded into the index map by padding the positions themselves with
    np.pad, so reflect/edge/symmetric follow NumPy's rules exactly and the frames come out
    of one gather; "constant" points the padding at a zero appended to the signal.
    """
    positions = np.arange(n)
    if pad:
        if pad_mode == "constant":
            positions = np.pad(positions, pad, mode="constant", constant_values=n)
        else:
            positions = np.pad(positions, pad, mode=pad_mode)  # type: ignore[call-overload]
    n_frames = 1 + (positions.size - frame_length) // hop
    starts = hop * np.arange(n_frames)[:, np.newaxis]
    index = positions[starts + np.arange(frame_length)[np.newaxis, :]]
    return np.ascontiguousarray(index.astype(np.int64 if n >= 2**31 - 1 else np.int32))


def frame(
    y: GPUArray, fn: str, *, frame_length: int, hop_length: int, pad: int, pad_mode: str
) -> GPUArray:
    """(..., n_frames, frame_length) frames of y every hop_length, after padding each end."""
    if pad_mode not in PAD_MODES:
        raise ValueError(f"{fn}: pad_mode must be one of {', '.join(PAD_MODES)}, got {pad_mode!r}")
    n = int(y.shape[-1])
    if frame_length > n + 2 * pad:
        raise ValueError(
            f"{fn}: the frame length {frame_length} is longer than the signal ({n} samples"
            + (f" + {2 * pad} padding" if pad else "")
            + "); use a shorter frame (n_fft), a longer signal or center=True"
        )
    if pad and pad_mode == "constant":
        zero = gp.zeros((*y.shape[:-1], 1), dtype=y.dtype, device=y.device)
        y = gp.concat([y, zero], axis=-1)
    key = (n, frame_length, hop_length, pad, pad_mode)
    index = _device_index(key, y)
    n_frames = index.shape[0] // frame_length
    frames = gp.take(y, index, axis=-1)
    return gp.reshape(frames, (*y.shape[:-1], n_frames, frame_length))


#: frame indices already on a device: a long signal's index is large (10 minutes at
#: 16 kHz, n_fft 400, hop 160: 96 MB), so repeated calls must not copy it again
_ON_DEVICE: dict[tuple[object, ...], GPUArray] = {}
_ON_DEVICE_LIMIT = 8


def clear_cache() -> None:
    """Free the frame indices kept on devices (and the host-side ones)."""
    _ON_DEVICE.clear()
    frame_index.cache_clear()


def _device_index(key: tuple[int, int, int, int, str], like: GPUArray) -> GPUArray:
    """The flat frame index for `key` on like's device (cached, oldest dropped first)."""
    full = (*key, str(like.device))
    found = _ON_DEVICE.pop(full, None)
    if found is None:
        found = on_device(frame_index(*key).reshape(-1), like)
        while len(_ON_DEVICE) >= _ON_DEVICE_LIMIT:
            _ON_DEVICE.pop(next(iter(_ON_DEVICE)))
    _ON_DEVICE[full] = found  # re-inserted: most recently used last
    return found
