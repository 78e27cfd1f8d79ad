"""The mel power spectrogram of a complex64 STFT in one kernel: |X|^2 and the mel product.

The array path writes |X|^2 (one pass over the spectrum, then its float32 copy read again
by a dense SGEMM: 78 + 87 us for the 600 s benchmark's 60001 x 201 frames on the H100).
A mel filter is a triangle: each row of the basis is zero outside a few bins, so the dense
product multiplies mostly zeros. Here a block takes 32 frames, squares their spectrum into
shared memory (one read of X), and each warp sums its mels over their nonzero bins only,
one frame per lane, storing 32 consecutive frames of a mel at once. Bins outside a band
are exact zeros in the basis, so only the order of the float32 sums differs from the
product's.
"""

from __future__ import annotations

import math
import os
import struct
from typing import Any

import numpy as np
from pygpukit import GPUArray

#: whether this kernel serves (PYGPUKIT_AUDIO_MEL_KERNEL=0 takes |X|^2 and the product)
ENABLED = os.environ.get("PYGPUKIT_AUDIO_MEL_KERNEL", "1") != "0"
#: frames per block (one per lane) and warps per block (each takes mels in turn)
TILE = 32
WARPS = 8
#: most shared memory a block asks for without the opt-in attribute
_SHARED_LIMIT = 48 * 1024
#: most signals one launch takes (gridDim.y)
_MAX_SIGNALS = 65535

_SOURCE = r"""
extern "C" __global__ void pgk_audio_mel_power(
    const float2* __restrict__ z, const float* __restrict__ w, const int2* __restrict__ bands,
    float* __restrict__ out, long long frames, int nfreq, int nmels, int stride) {
  extern __shared__ float power[];  // 32 frames x stride (nfreq rounded up to odd: no bank
                                    // conflicts when each lane reads its own frame's row)
  const long long b = blockIdx.y;
  const long long t0 = (long long)blockIdx.x * 32;
  const long long left = frames - t0;
  const int rows = left < 32 ? (int)left : 32;
  const float2* src = z + (b * frames + t0) * nfreq;  // the tile's frames are contiguous
  const int count = rows * nfreq;
  const int tid = threadIdx.y * 32 + threadIdx.x;
#pragma unroll 4
  for (int i = tid; i < count; i += 32 * blockDim.y) {  // unrolled: loads in flight together
    const float2 v = src[i];
    const int r = i / nfreq;
    power[r * stride + (i - r * nfreq)] = v.x * v.x + v.y * v.y;
  }
  __syncthreads();
  const int lane = threadIdx.x;
  if (lane >= rows) return;
  const float* row = power + lane * stride;
  float* dst = out + b * (long long)nmels * frames + t0 + lane;
  for (int m = threadIdx.y; m < nmels; m += blockDim.y) {
    const int2 band = bands[m];  // [first, last + 1) of the mel's nonzero bins
    const float* wm = w + (long long)m * nfreq;
    float acc = 0.0f;
    for (int f = band.x; f < band.y; ++f) acc = fmaf(wm[f], row[f], acc);
    dst[(long long)m * frames] = acc;
  }
}
"""

NAME = "pgk_audio_mel_power"
ARG_FORMAT = "@QQQQqiii"

#: launch plans by (device, signals, frames, nfreq, nmels)
_plans: dict[tuple[int, ...], Any] = {}
_PLANS_LIMIT = 32


def bands(basis: np.ndarray) -> np.ndarray:
    """Each mel row's [first, last + 1) nonzero bins as an (n_mels, 2) int32 array ((0, 0)
    for a row of zeros)."""
    out = np.zeros((basis.shape[0], 2), np.int32)
    for m, row in enumerate(basis):
        nonzero = np.flatnonzero(row)
        if nonzero.size:
            out[m] = nonzero[0], nonzero[-1] + 1
    return out


def takes(spectrum: GPUArray, weights: GPUArray) -> bool:
    """Whether the kernel serves this (..., frames, nfreq) spectrum and (n_mels, nfreq)
    basis: complex64 and float32, contiguous, a tile's power rows within shared memory."""
    if not ENABLED or spectrum.dtype.name != "complex64" or weights.dtype.name != "float32":
        return False
    if spectrum.ndim < 2 or weights.ndim != 2 or weights.shape[1] != spectrum.shape[-1]:
        return False
    signals = math.prod(spectrum.shape[:-2])
    shared = TILE * (spectrum.shape[-1] | 1) * 4
    return (spectrum.is_contiguous and weights.is_contiguous and shared <= _SHARED_LIMIT
            and 1 <= signals <= _MAX_SIGNALS and spectrum.shape[-2] >= 1)  # fmt: skip


def mel_power(spectrum: GPUArray, weights: GPUArray, band_table: GPUArray) -> GPUArray | None:
    """weights @ |spectrum|^2 laid out (..., n_mels, frames) for a (..., frames, nfreq)
    complex64 spectrum on a CUDA device, or None (nothing launched) where the kernel does
    not serve (see `takes`); `band_table` is `bands(basis)` on the same device."""
    if not takes(spectrum, weights):
        return None
    *lead, frames, nfreq = spectrum.shape
    nmels = int(weights.shape[0])
    out = GPUArray.empty((*lead, nmels, frames), weights.dtype, spectrum.device)
    index = spectrum.device.index
    signals = math.prod(lead)
    key = (index, signals, frames, nfreq, nmels)
    plan = _plans.get(key)
    if plan is None:
        plan = _plan(index, signals, frames, nfreq, nmels)
        while len(_plans) >= _PLANS_LIMIT:
            _plans.pop(next(iter(_plans)))
        _plans[key] = plan
    from pygpukit_cuda import streams

    plan(streams.current_handle(index), _ptr(spectrum), _ptr(weights), _ptr(band_table),
         _ptr(out))  # fmt: skip
    return out


def _ptr(x: GPUArray) -> int:
    return int(x.buffer.ptr + x.offset)


def _plan(index: int, signals: int, frames: int, nfreq: int, nmels: int) -> Any:
    from pygpukit_cuda import launch_plan, launcher

    fn = launcher.function(index, NAME, _SOURCE, ARG_FORMAT)
    stride = nfreq | 1
    params = struct.pack(ARG_FORMAT, 0, 0, 0, 0, frames, nfreq, nmels, stride)
    grid = (-(-frames // TILE), signals, 1)
    return launch_plan.make(fn.context, fn.handle, grid, (32, WARPS, 1), TILE * stride * 4,
                            params, [(0, "P"), (8, "P"), (16, "P"), (24, "P")])  # fmt: skip
