"""Cutting a batch of signals into overlapping frames: one gather (take), or a strided view."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

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


def _checked_length(y: GPUArray, fn: str, frame_length: int, pad: int, pad_mode: str) -> int:
    """y's length, after checking that the pad mode exists and a frame fits the padded signal."""
    if pad_mode not in PAD_MODES:
        raise ValueError(f"{fn}: pad_mode must be one of {', '.join(PAD_MODES)}, got {pad_mode!r}")
    n = int(y.shape[-1])
    if frame_length > n + 2 * pad:
        raise ValueError(
            f"{fn}: the frame length {frame_length} is longer than the signal ({n} samples"
            + (f" + {2 * pad} padding" if pad else "")
            + "); use a shorter frame (n_fft), a longer signal or center=True"
        )
    return n


def frame(
    y: GPUArray, fn: str, *, frame_length: int, hop_length: int, pad: int, pad_mode: str
) -> GPUArray:
    """(..., n_frames, frame_length) frames of y every hop_length, after padding each end."""
    n = _checked_length(y, fn, frame_length, pad, pad_mode)
    if pad and pad_mode == "constant":
        zero = gp.zeros((*y.shape[:-1], 1), dtype=y.dtype, device=y.device)
        y = gp.concat([y, zero], axis=-1)
    key = (n, frame_length, hop_length, pad, pad_mode)
    index = _device_index(key, y)
    n_frames = index.shape[0] // frame_length
    frames = gp.take(y, index, axis=-1)
    return gp.reshape(frames, (*y.shape[:-1], n_frames, frame_length))


def frame_view(
    y: GPUArray, fn: str, *, frame_length: int, hop_length: int, pad: int, pad_mode: str
) -> GPUArray:
    """The frames of `frame`, as a read-only overlapping view of the padded signal.

    Only the padded signal is copied (n + 2 * pad samples); the (..., n_frames,
    frame_length) frames share its buffer with strides (hop, 1), as torch.stft's
    as_strided frames do. For consumers that read the frames once into a new array (the
    STFT's window product), this skips the gather's index read and frame-sized write.
    The core has no public as_strided, so the view is made with GPUArray._view.
    """
    n = _checked_length(y, fn, frame_length, pad, pad_mode)
    padded = _padded(y, pad, pad_mode)
    if not padded.is_contiguous:  # e.g. a strided slice given with pad == 0
        padded = padded.contiguous()
    size = padded.itemsize
    total = n + 2 * pad
    n_frames = 1 + (total - frame_length) // hop_length
    lead = tuple(padded.shape[:-1])
    return padded._view(
        (*lead, n_frames, frame_length),
        (*padded.strides[:-1], hop_length * size, size),
        padded.offset,
        readonly=True,  # the frames overlap: writing one would change its neighbours
    )


def _padded(y: GPUArray, pad: int, pad_mode: str) -> GPUArray:
    """y with `pad` samples added at each end of its last axis, as np.pad would."""
    if not pad:
        return y
    n = int(y.shape[-1])
    if pad_mode == "constant":
        zeros = gp.zeros((*y.shape[:-1], pad), dtype=y.dtype, device=y.device)
        return gp.concat([zeros, y, zeros], axis=-1)
    # the padding samples are copies of signal samples: gather just the two ends
    positions = np.pad(np.arange(n), pad, mode=pad_mode)  # type: ignore[call-overload]
    left = gp.take(y, on_device(positions[:pad].astype(np.int64), y), axis=-1)
    right = gp.take(y, on_device(positions[-pad:].astype(np.int64), y), axis=-1)
    return gp.concat([left, y, right], axis=-1)


#: frame indices already on a device: a long signal's index is large (10 minutes at
#: 16 kHz, n_fft 400, hop 160: 96 MB), so repeated calls must not copy it again
_ON_DEVICE: dict[tuple[object, ...], GPUArray] = {}
_ON_DEVICE_LIMIT = 8


#: small host-side setup arrays (windows, mel bases) already on a device, so a repeated
#: call on a GPU skips a synchronous host-to-device copy; keyed by their bytes
_SETUP_ON_DEVICE: dict[tuple[Any, ...], GPUArray] = {}
_SETUP_LIMIT = 16


def device_setup(values: np.ndarray, like: GPUArray) -> GPUArray:
    """`values` on like's device, cached (callers only read it; oldest dropped first)."""
    key = (values.dtype.str, values.shape, values.tobytes(), str(like.device))
    found = _SETUP_ON_DEVICE.pop(key, None)
    if found is None:
        found = on_device(values, like)
        while len(_SETUP_ON_DEVICE) >= _SETUP_LIMIT:
            _SETUP_ON_DEVICE.pop(next(iter(_SETUP_ON_DEVICE)))
    _SETUP_ON_DEVICE[key] = found  # re-inserted: most recently used last
    return found


def device_constant(key: tuple[Any, ...], make: Callable[[], np.ndarray],
                    like: GPUArray) -> GPUArray:  # fmt: skip
    """make()'s array on like's device, cached under `key`, which must name everything
    make() depends on: a repeated call skips building the array and hashing its bytes
    (device_setup's key; ~13 us of host time per call for a 400-point window)."""
    full = ("keyed", key, like.device)
    found = _SETUP_ON_DEVICE.get(full)
    if found is None:
        found = device_setup(make(), like)
        while len(_SETUP_ON_DEVICE) >= _SETUP_LIMIT:
            _SETUP_ON_DEVICE.pop(next(iter(_SETUP_ON_DEVICE)))
        _SETUP_ON_DEVICE[full] = found
    return found


def clear_cache() -> None:
    """Free the frame indices, windows and mel bases kept on devices (and host-side ones),
    and this thread's NaN flags."""
    from . import _nan_flag

    _ON_DEVICE.clear()
    _SETUP_ON_DEVICE.clear()
    frame_index.cache_clear()
    _nan_flag.forget()


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
