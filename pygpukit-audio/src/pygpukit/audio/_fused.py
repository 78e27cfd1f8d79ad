"""Fused CUDA kernels for the spectral hot path: padded, windowed frames; |X|^2; Whisper's log.

Each function returns None where it does not apply (a CPU array, no CUDA plugin, a padding
the kernel does not model), and the caller then takes its array-op path. On a GPU they
replace chains of whole-array passes, each of which reads and writes the full frames:

- `windowed_frames`: the signal padded (constant, reflect, edge, symmetric), cut into
  overlapping frames and multiplied by the window, in one kernel. The array ops took a
  padding copy (two fills and a concat, or two gathers that each wait for the device to
  check their indices), then the window product.
- `power`: |X|^2 of a complex array in one kernel (gp.real, gp.imag, two squares and a
  sum took five passes with four frame-sized temporaries).
- `whisper_log`: log10(max(x, 1e-10)) floored at the clip's max - 8, then (x + 4) / 4, as
  one kernel after one max reduction (log10 is increasing, so the max of the logs is the
  log of the max); the array ops took seven passes.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import pygpukit as gp
from pygpukit import GPUArray

from . import _frames, _power

#: np.pad modes the framing kernel models, by the code the kernel switches on
_PAD_CODES = {"constant": 0, "reflect": 1, "edge": 2, "symmetric": 3}

# One output element is sample k of frame t of signal b: the padded signal's sample
# t * hop + k, i.e. the signal's sample p = t * hop + k - pad, mapped back inside by the
# pad mode (one reflection suffices: the caller checks pad against the length).
# The divisions by nfft and nframes are float reciprocals corrected by one step: a 64-bit
# integer division is a long software routine on the GPU, several per element would make
# this memory-bound kernel compute-bound. The caller keeps the quotients under 2**22, where
# the float estimate is off by at most one.
_FRAMES_OP = """
long long row = (long long)((float)i * inv_nfft);
long long k = i - row * nfft;
if (k < 0) { row -= 1; k += nfft; } else if (k >= nfft) { row += 1; k -= nfft; }
long long b = (long long)((float)row * inv_nframes);
long long t = row - b * nframes;
if (t < 0) { b -= 1; t += nframes; } else if (t >= nframes) { b += 1; t -= nframes; }
long long p = t * hop + k - pad;
bool inside = true;
if (p < 0 || p >= sig_len) {
  if (mode == 0) inside = false;
  else if (mode == 1) p = p < 0 ? -p : 2 * (sig_len - 1) - p;
  else if (mode == 2) p = p < 0 ? 0 : sig_len - 1;
  else p = p < 0 ? -p - 1 : 2 * sig_len - 1 - p;
}
const T v = inside ? y[b * sig_len + p] : (T)0;
out = v * w[k];
if (check) {
  // the NaN/inf test of the input, on the samples the frames read anyway (every sample
  // before tail_from, as hop <= nfft); the signal's last thread tests the rest
  if (!isfinite(v)) *(int*)bad = 1;
  if (t == nframes - 1 && k == nfft - 1) {
    for (long long q = tail_from; q < sig_len; ++q)
      if (!isfinite(y[b * sig_len + q])) *(int*)bad = 1;
  }
}
"""


def kernels_here(x: GPUArray) -> bool:
    """Whether x is on a CUDA device with the plugin's ElementwiseKernel at hand."""
    global _plugin_seen
    if x.device.type != "cuda":
        return False
    if not _plugin_seen:  # asked of pygpukit's module __getattr__ (~2 us) until it is there
        _plugin_seen = hasattr(gp, "ElementwiseKernel")
    return _plugin_seen


#: whether the CUDA plugin's ElementwiseKernel was found (plugins stay once loaded)
_plugin_seen = False


@cache
def _frames_kernel() -> Any:
    return gp.ElementwiseKernel(
        "raw T y, raw T w, int64 sig_len, int64 pad, int64 hop, int64 nfft, int64 nframes, "
        "int32 mode, float32 inv_nfft, float32 inv_nframes, raw int32 bad, int32 check, "
        "int64 tail_from",
        "T out",
        _FRAMES_OP,
        "pgk_audio_frames",
    )


def windowed_frames(y: GPUArray, window: GPUArray, *, hop: int, pad: int, pad_mode: str,
                    n_frames: int, bad: GPUArray | None = None) -> GPUArray | None:  # fmt: skip
    """(..., n_frames, len(window)) frames of y's last axis padded by `pad` at each end,
    every `hop` samples, times `window`; None where the array ops must do it.

    With `bad` (a zeroed int32 device array) the kernel also sets bad[0] to 1 if any sample
    of y is NaN or infinite; None is returned where it cannot see every sample that way."""
    n = int(y.shape[-1])
    mode = _PAD_CODES.get(pad_mode)
    if mode is None or not kernels_here(y) or n < 1 or y.dtype != window.dtype:
        return None
    # one reflection must reach back inside (np.pad reflects again for longer pads)
    if pad and ((mode == 1 and pad > n - 1) or (mode == 3 and pad > n)):
        return None
    nfft = int(window.shape[-1])
    signals = math.prod(y.shape[:-1])
    rows = signals * n_frames
    direct = _frames.takes(y.dtype, signals)  # the warp-per-frame kernel (float32/64)
    if not direct and (rows >= _EXACT_QUOTIENT or rows * nfft >= 2**31):  # see _FRAMES_OP
        return None
    # the frames read the padded signal's [0, end) directly: every sample when hop <= nfft
    end = (n_frames - 1) * hop + nfft - pad
    if bad is not None and (hop > nfft or n_frames < 1 or y.size == 0):
        return None
    if not y.is_contiguous:
        y = y.contiguous()
    out = GPUArray.empty((*y.shape[:-1], n_frames, nfft), y.dtype, y.device)
    if out.size:
        flag = bad if bad is not None else gp.empty((1,), dtype=gp.int32, device=y.device)
        if direct and _frames.launch(y, window, out, flag, pad=pad, hop=hop, mode=mode,
                                     check=bad is not None,
                                     tail_from=max(0, end)):  # fmt: skip
            return out
        _frames_kernel()(y, window, n, pad, hop, nfft, n_frames, mode, 1.0 / nfft,
                         1.0 / n_frames, flag, int(bad is not None), max(0, end),
                         out)  # fmt: skip
    return out


#: quotients below this are found exactly by a float reciprocal and one correction step
_EXACT_QUOTIENT = 2**22


@cache
def _power_kernel() -> Any:
    return gp.ElementwiseKernel("T re, T im", "T out", "out = re * re + im * im",
                                "pgk_audio_power")  # fmt: skip


def power(z: GPUArray) -> GPUArray | None:
    """|z|^2 of a complex array (real result of its precision), or None off the GPU."""
    if not z.dtype.is_complex or not kernels_here(z):
        return None
    real = gp.float32 if z.dtype == gp.complex64 else gp.float64
    packed = _power.power(z, real)  # a contiguous spectrum: two values per thread
    if packed is not None:
        return packed
    # the real and imaginary parts as views of z's own memory: no copies
    half = real.itemsize
    re = GPUArray(z.buffer, z.shape, real, z.device, z.strides, z.offset, readonly=True)
    im = GPUArray(z.buffer, z.shape, real, z.device, z.strides, z.offset + half, readonly=True)
    return _power_kernel()(re, im)


@cache
def _log_kernel() -> Any:
    return gp.ElementwiseKernel(
        "float32 x, float32 peak",
        "float32 out",
        "const float lowest = log10f(fmaxf(peak, 1e-10f)) - 8.0f;"
        "out = (fmaxf(log10f(fmaxf(x, 1e-10f)), lowest) + 4.0f) / 4.0f",
        "pgk_audio_whisper_log",
    )


def whisper_log(mel: GPUArray) -> GPUArray | None:
    """Whisper's log scaling of float32 mel power (..., n_mels, frames), each clip floored
    at its own max - 8; None off the GPU."""
    if mel.dtype != gp.float32 or not kernels_here(mel):
        return None
    peak = gp.max(mel, axis=(-2, -1), keepdims=True)
    return _log_kernel()(mel, peak)
