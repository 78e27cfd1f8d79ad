"""CUDA C of our batched real-to-complex FFT for short power-of-two rows (``rfft_kernel.py``).

A row of N float32 samples is read as M = N/2 complex values z[n] = x[2n] + i x[2n+1]; one
M-point complex FFT Z of them, then X[k] = E[k] + W_N^k O[k] for k = 0..M, where the
transforms of the even and odd samples are E[k] = (Z[k] + conj Z[M-k]) / 2 and
O[k] = (Z[k] - conj Z[M-k]) / 2i. The M-point FFT is radix 8 in Stockham order (each pass
reads its input in natural order and writes its output in natural order, no bit reversal):
M/8 threads per row hold 8 values each, the first pass straight from global memory, the
later ones through shared memory. The twiddles W_N^m come from a table rounded once from
double precision (the build embeds it), as accurate as float32 allows.

One kernel per N (M a power of 8: N = 128, 1024) and rows per block; the input is read
once, the output written once, so the kernel runs at memory speed.
"""

from __future__ import annotations

import math

from .preamble import PDL_HELPER, PDL_WAIT


def rows_per_block(n: int) -> int:
    """Rows one block transforms: 256 threads a block."""
    return max(1, 256 // (n // 16))


def supported(n: int) -> bool:
    """Whether `n` real points fit this kernel: n/2 a power of 8, from 64 on (n = 128, 1024)."""
    m = n // 2
    if n % 2 or m < 64:
        return False
    while m % 8 == 0:
        m //= 8
    return m == 1 and n <= 1024


def kernel_name(n: int) -> str:
    return f"pgk_rfft_r2c_f32_{n}"


def _table(n: int) -> str:
    """W_N^m = exp(-2 pi i m / N) for m < N, as float2 literals rounded from doubles."""
    items = []
    for m in range(n):
        a = -2.0 * math.pi * m / n
        items.append(f"{{{math.cos(a):.17e}f,{math.sin(a):.17e}f}}")
    rows = [",".join(items[i : i + 4]) for i in range(0, n, 4)]
    return ",\n  ".join(rows)


_BODY = r"""
#define M @M@
#define T (M / 8)
#define ROWS @ROWS@
// shared index with one pad value every 8: the strided writes of the early passes would
// otherwise hit the same banks
#define SIDX(p) ((p) + ((p) >> 3))

__device__ const float2 pgk_rfft_tw_@N@[@N@] = {
  @TABLE@
};

__device__ __forceinline__ float2 cadd(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ float2 csub(float2 a, float2 b) {
  return make_float2(a.x - b.x, a.y - b.y);
}
__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(fmaf(a.x, b.x, -a.y * b.y), fmaf(a.x, b.y, a.y * b.x));
}
// times -i
__device__ __forceinline__ float2 cmi(float2 a) { return make_float2(a.y, -a.x); }

// 8-point DFT in registers, natural order in and out (radix 2, decimation in frequency)
__device__ __forceinline__ void dft8(float2* v) {
  const float c = 0.70710678118654752f;
  float2 a, b;
#pragma unroll
  for (int i = 0; i < 4; ++i) { a = v[i]; b = v[i + 4]; v[i] = cadd(a, b); v[i + 4] = csub(a, b); }
  // twiddles W8^1..3 on the odd half
  a = v[5]; v[5] = make_float2(c * (a.x + a.y), c * (a.y - a.x));
  v[6] = cmi(v[6]);
  a = v[7]; v[7] = make_float2(c * (a.y - a.x), -c * (a.x + a.y));
#pragma unroll
  for (int h = 0; h < 8; h += 4) {
    a = v[h]; b = v[h + 2]; v[h] = cadd(a, b); v[h + 2] = csub(a, b);
    a = v[h + 1]; b = v[h + 3]; v[h + 1] = cadd(a, b); v[h + 3] = cmi(csub(a, b));
  }
#pragma unroll
  for (int h = 0; h < 8; h += 2) {
    a = v[h]; b = v[h + 1]; v[h] = cadd(a, b); v[h + 1] = csub(a, b);
  }
  // position p holds bin bitreverse3(p): swap 1<->4 and 3<->6
  a = v[1]; v[1] = v[4]; v[4] = a;
  a = v[3]; v[3] = v[6]; v[6] = a;
}

extern "C" __global__ void __launch_bounds__(T * ROWS) @NAME@(
    const float2* __restrict__ x, float2* __restrict__ y, long long rows, float scale) {
  __shared__ float2 buf[ROWS][SIDX(M)];
  const int t = threadIdx.x % T;
  const int r = threadIdx.x / T;
  float2* s = buf[r];
  const float h = 0.5f * scale;
  const long long stride = (long long)gridDim.x * ROWS;
  float2 v[8], nxt[8];
  @PDL_WAIT@
  // A block walks rows (its first, then every gridDim.x * ROWS-th): the next row's global
  // loads are issued once this row sits in shared memory, so they fly during its passes
  // and its stores (a grid of one row per block would leave DRAM idle while all blocks
  // compute in step).
  long long row = (long long)blockIdx.x * ROWS + r;
#pragma unroll
  for (int k = 0; k < 8; ++k)
    v[k] = row < rows ? __ldg(x + row * M + t + k * T) : make_float2(0.f, 0.f);
  for (long long base = (long long)blockIdx.x * ROWS; base < rows; base += stride, row += stride) {
    // pass 1 (stride 1: no twiddles) on the values loaded from global memory
    dft8(v);
#pragma unroll
    for (int k = 0; k < 8; ++k) s[SIDX(t * 8 + k)] = v[k];
    const long long next = row + stride;
#pragma unroll
    for (int k = 0; k < 8; ++k)
      nxt[k] = next < rows ? __ldg(x + next * M + t + k * T) : make_float2(0.f, 0.f);
    __syncthreads();
#pragma unroll
    for (int ns = 8; ns < M; ns *= 8) {
      const int j = t % ns;
      const int step = 2 * (M / (8 * ns)) * j;  // W_M^(k j M/(8 ns)) = W_N^(2 k j M/(8 ns))
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = s[SIDX(t + k * T)];
#pragma unroll
      for (int k = 1; k < 8; ++k) v[k] = cmul(v[k], __ldg(&pgk_rfft_tw_@N@[step * k]));
      dft8(v);
      const int dst = (t / ns) * ns * 8 + j;
      __syncthreads();  // every thread has read this pass' input
#pragma unroll
      for (int k = 0; k < 8; ++k) s[SIDX(dst + k * ns)] = v[k];
      __syncthreads();
    }
    if (row < rows) {
      // the real transform's bins from Z: X[k] = E[k] + W_N^k O[k], k = 0..M
      float2* out = y + row * (M + 1);
#pragma unroll
      for (int i = 0; i <= 8; ++i) {
        const int k = t + i * T;
        if (i == 8 && t != 0) break;  // bin M: one thread
        const float2 z = s[SIDX(k & (M - 1))];
        const float2 w = s[SIDX((M - k) & (M - 1))];
        // (Z[k] + conj Z[M-k]) / 2 and (Z[k] - conj Z[M-k]) / 2i, times the norm's scale
        const float2 e = make_float2(h * (z.x + w.x), h * (z.y - w.y));
        const float2 o = make_float2(h * (z.y + w.y), h * (w.x - z.x));
        out[k] = cadd(e, cmul(__ldg(&pgk_rfft_tw_@N@[k]), o));
      }
    }
    __syncthreads();  // this row's bins are read before the next row's pass 1 writes
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = nxt[k];
  }
}
"""


def source(n: int) -> str:
    """The kernel for rows of `n` real points (`supported(n)`)."""
    if not supported(n):
        raise ValueError(f"our rfft kernel takes n = 128 or 1024, not {n}")
    text = _BODY
    for key, value in (("@M@", str(n // 2)), ("@ROWS@", str(rows_per_block(n))),
                       ("@N@", str(n)), ("@TABLE@", _table(n)), ("@NAME@", kernel_name(n)),
                       ("@PDL_WAIT@", PDL_WAIT)):  # fmt: skip
        text = text.replace(key, value)
    return PDL_HELPER + text
