"""A streaming STFT: push chunks of a live signal, get the frames offline stft would give."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from ._arrays import back, complex_dtype_of, on_device, positive_int, real_dtype_of, to_device
from .windows import get_window, pad_center

__all__ = ["StreamingSTFT"]


class StreamingSTFT:
    """Frames of a signal that arrives in chunks, identical to ``stft`` on the whole signal.

    ``push(chunk)`` returns the (..., 1 + n_fft // 2, k) frames the new samples complete
    (k may be 0); ``flush()`` ends the stream and returns the last frames. Concatenated
    along the last axis they equal ``stft(y, n_fft=..., hop_length=..., center=...)``
    with pad_mode="constant". Between calls the object holds a ring of the last
    n_fft - hop_length samples (at most) on the signal's device, so memory stays bounded
    however long the stream runs. Chunks may be any length and carry leading batch dims
    (several channels at once); all chunks must share them, dtype and device.
    """

    def __init__(
        self,
        *,
        n_fft: int = 2048,
        hop_length: int | None = None,
        win_length: int | None = None,
        window: Any = "hann",
        center: bool = True,
        dtype: Any = None,
    ) -> None:
        self.n_fft = positive_int(n_fft, "StreamingSTFT", "n_fft")
        win = (
            self.n_fft
            if win_length is None
            else positive_int(win_length, "StreamingSTFT", "win_length")
        )
        if win > self.n_fft:
            raise ValueError(f"StreamingSTFT: win_length={win} must be <= n_fft={self.n_fft}")
        self.hop_length = (
            win // 4
            if hop_length is None
            else positive_int(hop_length, "StreamingSTFT", "hop_length")
        )
        self.center = bool(center)
        self.dtype = dtype
        self._window = pad_center(get_window(window, win, fftbins=True), size=self.n_fft)
        self._pending: GPUArray | None = None  # samples not yet consumed by a full frame
        self._host = False
        self._started = False
        self._finished = False

    def _frames(self, buffer: GPUArray) -> tuple[GPUArray | None, int]:
        """STFT of every complete frame in `buffer`, and how many samples they consumed."""
        n = int(buffer.shape[-1])
        if n < self.n_fft:
            return None, 0
        count = 1 + (n - self.n_fft) // self.hop_length
        real = real_dtype_of(
            complex_dtype_of(buffer.dtype.name if self.dtype is None else self.dtype)
        )
        starts = self.hop_length * np.arange(count)[:, np.newaxis]
        index = (starts + np.arange(self.n_fft)[np.newaxis, :]).reshape(-1)
        frames = gp.take(buffer, on_device(index.astype(np.int64), buffer), axis=-1)
        frames = gp.reshape(frames, (*buffer.shape[:-1], count, self.n_fft))
        if frames.dtype.name != real.name:
            frames = gp.astype(frames, getattr(gp, real.name))
        spectrum = gp.fft.rfft(frames * on_device(self._window.astype(real), frames), axis=-1)
        return gp.matrix_transpose(spectrum), count * self.hop_length

    def _empty(self, like: GPUArray) -> GPUArray:
        out = complex_dtype_of(like.dtype.name if self.dtype is None else self.dtype)
        shape = (*like.shape[:-1], self.n_fft // 2 + 1, 0)
        return gp.zeros(shape, dtype=getattr(gp, out.name), device=like.device)

    def push(self, chunk: Any) -> Any:
        """Add samples (..., n) and return the frames they complete (..., n_freq, k)."""
        if self._finished:
            raise ValueError("StreamingSTFT.push: the stream was flushed; call reset() first")
        samples, host = to_device(chunk, "StreamingSTFT.push", "chunk")
        if samples.dtype.kind != "f":
            raise TypeError(
                f"StreamingSTFT.push: chunk must be floating point, got {samples.dtype.name}"
            )
        if samples.ndim == 0:
            raise ValueError("StreamingSTFT.push: chunk must have at least one dimension")
        if not bool(gp.all(gp.isfinite(samples))):
            raise ValueError("StreamingSTFT.push: chunk contains NaN or infinite samples")
        if not self._started:
            self._host, self._started = host, True
            if self.center:  # the zeros offline stft puts before the first sample
                lead = gp.zeros((*samples.shape[:-1], self.n_fft // 2), dtype=samples.dtype,
                                device=samples.device)  # fmt: skip
                samples = gp.concat([lead, samples], axis=-1)
        elif self._pending is not None and tuple(samples.shape[:-1]) != tuple(
            self._pending.shape[:-1]
        ):
            raise ValueError(
                f"StreamingSTFT.push: chunk has leading shape {tuple(samples.shape[:-1])}, "
                f"earlier chunks {tuple(self._pending.shape[:-1])}"
            )
        buffer = samples if self._pending is None else gp.concat([self._pending, samples], axis=-1)
        frames, used = self._frames(buffer)
        self._pending = buffer[..., used:]  # the ring: what the next frame still needs
        return back(frames if frames is not None else self._empty(buffer), self._host)

    def flush(self) -> Any:
        """End the stream: the frames that need the trailing padding (center=True)."""
        if self._pending is None:
            raise ValueError("StreamingSTFT.flush: no samples were pushed")
        self._finished = True
        buffer = self._pending
        if self.center:
            tail = gp.zeros((*buffer.shape[:-1], self.n_fft // 2), dtype=buffer.dtype,
                            device=buffer.device)  # fmt: skip
            buffer = gp.concat([buffer, tail], axis=-1)
        frames, _ = self._frames(buffer)
        self._pending = None
        return back(frames if frames is not None else self._empty(buffer), self._host)

    def reset(self) -> None:
        """Forget the stream; the next push starts a new one."""
        self._pending = None
        self._started = self._finished = False
