"""The framing kernel for float32/float64 signals: one warp per frame, no index division.

`_fused.windowed_frames` first ran only as a `gp.ElementwiseKernel` over the flat output:
every element recovered its (signal, frame, sample) from the flat index with two
float-reciprocal quotients and 64-bit conversions inside the generic strided loop, and each
call went through ElementwiseKernel's Python argument checks. When it replaced the array
ops the 600 s stft went from 354 us to 986 us on the H100 (the rfft alone is 156 us there),
with the same launches otherwise; so the framing is laid out here the way it is indexed:
blockIdx.y is the signal, each warp (threadIdx.y) takes frames in turn and its lanes walk
the frame's samples, 32 consecutive outputs per store, and one packed launch per call.
The NaN/inf test is kept per thread in a register and written once; the tail past the last
frame (center=False) is tested by the last frame's warp."""

from __future__ import annotations

import os
import struct
from typing import Any

from pygpukit import GPUArray

#: whether this kernel serves (PYGPUKIT_AUDIO_FRAMES_KERNEL=0 times the ElementwiseKernel
#: version against it; read at import)
ENABLED = os.environ.get("PYGPUKIT_AUDIO_FRAMES_KERNEL", "1") != "0"
#: warps per block; each warp owns whole frames
WARPS = 8
#: most signals one launch takes (gridDim.y)
MAX_SIGNALS = 65535

_SOURCE = r"""
template <typename T>
__device__ __forceinline__ void pgk_frames(
    const T* __restrict__ y, const T* __restrict__ w, T* __restrict__ out, int* bad,
    long long sig_len, long long pad, long long hop, int nfft, long long nframes, int mode,
    int check, long long tail_from) {
  const long long b = blockIdx.y;
  const T* ys = y + b * sig_len;
  T* outs = out + b * nframes * (long long)nfft;
  int found = 0;
  for (long long t = (long long)blockIdx.x * blockDim.y + threadIdx.y; t < nframes;
       t += (long long)gridDim.x * blockDim.y) {
    const long long base = t * hop - pad;
    T* o = outs + t * nfft;
    for (int k = threadIdx.x; k < nfft; k += 32) {
      long long p = base + k;
      bool inside = true;
      if (p < 0 || p >= sig_len) {
        if (mode == 0) inside = false;
        else if (mode == 1) p = p < 0 ? -p : 2 * (sig_len - 1) - p;
        else if (mode == 2) p = p < 0 ? 0 : sig_len - 1;
        else p = p < 0 ? -p - 1 : 2 * sig_len - 1 - p;
      }
      const T v = inside ? ys[p] : (T)0;
      if (check && !isfinite(v)) found = 1;
      o[k] = v * w[k];
    }
    if (check && t == nframes - 1) {
      // samples no frame reads (past the last frame): this warp tests them
      for (long long q = tail_from + threadIdx.x; q < sig_len; q += 32)
        if (!isfinite(ys[q])) found = 1;
    }
  }
  if (found) *bad = 1;
}

extern "C" __global__ void pgk_audio_frames_f32(
    const float* y, const float* w, float* out, int* bad, long long sig_len, long long pad,
    long long hop, int nfft, long long nframes, int mode, int check, long long tail_from) {
  pgk_frames<float>(y, w, out, bad, sig_len, pad, hop, nfft, nframes, mode, check, tail_from);
}

extern "C" __global__ void pgk_audio_frames_f64(
    const double* y, const double* w, double* out, int* bad, long long sig_len,
    long long pad, long long hop, int nfft, long long nframes, int mode, int check,
    long long tail_from) {
  pgk_frames<double>(y, w, out, bad, sig_len, pad, hop, nfft, nframes, mode, check,
                     tail_from);
}
"""

#: kernel name by dtype name
NAMES = {"float32": "pgk_audio_frames_f32", "float64": "pgk_audio_frames_f64"}


#: the kernels' argument struct (native alignment, as the driver reads it)
ARG_FORMAT = "@QQQQqqqiqiiq"


def takes(dtype: Any, signals: int) -> bool:
    """Whether this kernel serves signals of `dtype`, `signals` of them in one launch."""
    return ENABLED and dtype.name in NAMES and 1 <= signals <= MAX_SIGNALS


def launch(y: GPUArray, window: GPUArray, out: GPUArray, flag: GPUArray, *, pad: int,
           hop: int, mode: int, check: bool, tail_from: int) -> bool:  # fmt: skip
    """Fill `out` (..., n_frames, nfft), contiguous, from contiguous `y` (..., n); False
    (nothing launched) where this kernel does not take the call."""
    index = out._device.index
    key = (index, y._dtype, out._shape, y._shape[-1], window._strides, pad, hop, mode, check,
           tail_from)  # fmt: skip
    plan = _plans.get(key)
    if plan is None:
        if window.ndim != 1 or not window.is_contiguous:
            return False
        plan = _plan(y, out, pad=pad, hop=hop, mode=mode, check=check, tail_from=tail_from)
        if plan is None:
            return False
        while len(_plans) >= _PLANS_LIMIT:
            _plans.pop(next(iter(_plans)))
        _plans[key] = plan
    # the CUDA plugin's stream (kernels_here checked it is installed)
    plan(_current_handle(index), y._buffer.ptr + y._offset, window._buffer.ptr + window._offset,
         out._buffer.ptr + out._offset, flag._buffer.ptr + flag._offset)  # fmt: skip
    return True


#: launch plans by (device, dtype, frames shape, signal length, pad, hop, mode, check, tail):
#: a repeated call costs a dict lookup and one launch with its four pointers patched in
_plans: dict[tuple[Any, ...], Any] = {}
_PLANS_LIMIT = 64


def _current_handle(index: int) -> int:
    from pygpukit_cuda import streams

    return int(streams.current_handle(index))


def _plan(y: GPUArray, out: GPUArray, *, pad: int, hop: int, mode: int, check: bool,
          tail_from: int) -> Any:  # fmt: skip
    """The launch plan of this framing (only the four pointers left open), or None."""
    signals = out.size // (out.shape[-1] * out.shape[-2]) if out.size else 0
    if not takes(y.dtype, signals):
        return None
    nframes, nfft = int(out.shape[-2]), int(out.shape[-1])
    # compiled and loaded once by the CUDA plugin's launcher, then packed once here
    from pygpukit_cuda import launch_plan, launcher

    index = out.device.index
    fn = launcher.function(index, NAMES[y.dtype.name], _SOURCE, ARG_FORMAT)
    blocks = min(-(-nframes // WARPS), 1 << 20)
    params = struct.pack(ARG_FORMAT, 0, 0, 0, 0, int(y.shape[-1]), pad, hop, nfft, nframes,
                         mode, int(check), tail_from)  # fmt: skip
    slots = [(offset, "P") for offset in range(0, 32, 8)]  # y, window, out, flag
    return launch_plan.make(fn.context, fn.handle, (blocks, signals, 1), (32, WARPS, 1), 0,
                            params, slots)  # fmt: skip
