"""CUDA C of our batched real-to-complex FFT of 1024-point float32 rows (``rfft_kernel.py``).

A row of N = 1024 samples is read as M = 512 complex values z[n] = x[2n] + i x[2n+1]; one
M-point complex FFT Z of them, then X[k] = E[k] + W_N^k O[k] for k = 0..M, where the
transforms of the even and odd samples are E[k] = (Z[k] + conj Z[M-k]) / 2 and
O[k] = (Z[k] - conj Z[M-k]) / 2i.

One warp transforms one row at a time, with no block-wide barrier after the start, and
walks rows: the next row's loads are issued before the current row's transform, so DRAM
stays busy while warps compute (a grid of one row per warp, all in one wave, loads, then
computes, then stores in step: 16.6 us against cuFFT's 13.7 for 4096 rows on the H100,
against 13.8 this way). M = 16 x 32 (Cooley-Tukey, n = 32 n1 + n2, k = k1 + 16 k2):

1. lane l loads z[32 j + l], j < 16 (each load a coalesced 256 bytes of the row), does a
   16-point DFT in registers over j and multiplies bin k1 by W_M^(l k1);
2. the 16 x 32 values cross the warp once through shared memory (rows padded to 34 so
   the strided reads hit distinct banks); lane pair (2 k1, 2 k1 + 1) then holds the 32
   values of bin k1, even and odd ones: a 16-point DFT each, the odd lane's result times
   W_32^c, and a radix-2 step with the partner lane through a shuffle: Z[k1 + 16 k2];
3. Z goes to shared memory in natural order (one pad of 8 after 256 values: the two
   halves of a warp write to distinct banks); each lane reads Z[k] and Z[M - k] for
   k = l + 32 j and writes X[k] (coalesced), lane 0 also X[M].

Twiddles W_N^m come from a table rounded once from double precision (the build embeds it;
each block copies the ones it needs to shared memory once), the fixed ones of the 16- and
32-point steps are literals: as accurate as float32 allows.
"""

from __future__ import annotations

import functools
import math

from .preamble import PDL_HELPER, PDL_WAIT

#: the one row length this kernel takes
N = 1024
#: rows (warps) a block transforms unless `source` is told otherwise
ROWS_PER_BLOCK = 8
#: at most 8: each row takes 4352 bytes of static shared memory (and the twiddles 8 KiB),
#: and a block has 48 KiB
MAX_ROWS_PER_BLOCK = 8


def supported(n: int) -> bool:
    """Whether rows of `n` real points fit this kernel (n = 1024 only)."""
    return n == N


def kernel_name(n: int, rows_per_block: int = ROWS_PER_BLOCK) -> str:
    return f"pgk_rfft_r2c_f32_{n}_w{rows_per_block}"


def _w(n: int, m: int) -> str:
    """exp(-2 pi i m / n) as a float2 literal rounded from double precision."""
    a = -2.0 * math.pi * m / n
    return f"make_float2({math.cos(a):.17e}f, {math.sin(a):.17e}f)"


def _table(n: int) -> str:
    """W_n^m for m < n, as float2 initializers rounded from doubles."""
    items = []
    for m in range(n):
        a = -2.0 * math.pi * m / n
        items.append(f"{{{math.cos(a):.17e}f,{math.sin(a):.17e}f}}")
    rows = [",".join(items[i : i + 4]) for i in range(0, n, 4)]
    return ",\n  ".join(rows)


def _dft16_twiddles() -> str:
    """The 16-point DFT's inner twiddles: position n2 + 4 k1 times W_16^(n2 k1)."""
    lines = []
    for n2 in range(1, 4):
        for k1 in range(1, 4):
            lines.append(f"  v[{n2 + 4 * k1}] = cmul(v[{n2 + 4 * k1}], {_w(16, n2 * k1)});")
    return "\n".join(lines)


def _w32_table() -> str:
    """W_32^c for c < 16, the odd lane's twiddles in step 2."""
    return ",\n    ".join(_w(32, c) for c in range(16))


_BODY = r"""
#define TS 34
// Z's shared index: 8 pad values after the first 256
#define ZI(k) ((k) + (((k) >> 8) << 3))

__device__ const float2 pgk_rfft_tw_1024[1024] = {
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

// 4-point DFT in place, natural order
__device__ __forceinline__ void dft4(float2& a0, float2& a1, float2& a2, float2& a3) {
  const float2 s02 = cadd(a0, a2), d02 = csub(a0, a2);
  const float2 s13 = cadd(a1, a3), d13 = cmi(csub(a1, a3));
  a0 = cadd(s02, s13); a1 = cadd(d02, d13); a2 = csub(s02, s13); a3 = csub(d02, d13);
}

// 16-point DFT in registers, natural order in and out: 4 x 4 (n = 4 n1 + n2, k = k1 + 4 k2)
__device__ __forceinline__ void dft16(float2* v) {
#pragma unroll
  for (int n2 = 0; n2 < 4; ++n2) dft4(v[n2], v[n2 + 4], v[n2 + 8], v[n2 + 12]);
@DFT16_TW@
#pragma unroll
  for (int k1 = 0; k1 < 4; ++k1) dft4(v[4 * k1], v[4 * k1 + 1], v[4 * k1 + 2], v[4 * k1 + 3]);
  // position 4 k1 + k2 holds bin k1 + 4 k2: transpose the 4 x 4 register block
  float2 t;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = i + 1; j < 4; ++j) {
      t = v[4 * i + j]; v[4 * i + j] = v[4 * j + i]; v[4 * j + i] = t;
    }
  }
}

extern "C" __global__ void __launch_bounds__(32 * @ROWS@) @NAME@(
    const float2* __restrict__ x, float2* __restrict__ y, long long rows, float scale) {
  __shared__ float2 buf[@ROWS@][16 * TS];
  // the block's twiddles, row-independent: W_512^(l k1) of step 1 as [k1][l], and W_1024^k
  // of step 3 (shared reads, where the table's strided gathers cost many L1 passes)
  __shared__ float2 tw1[16 * 32], tw3[512];
  for (int i = threadIdx.x; i < 512; i += blockDim.x) {
    tw1[i] = pgk_rfft_tw_1024[(2 * (i & 31) * (i >> 5)) & 1023];
    tw3[i] = pgk_rfft_tw_1024[i];
  }
  __syncthreads();
  const int l = threadIdx.x & 31;
  const int p = l >> 1, a = l & 1;
  float2* s = buf[threadIdx.x >> 5];
  const float h = 0.5f * scale;
  const float2 w32[16] = {
    @W32@
  };
  // A warp walks rows (its first, then every gridDim.x * ROWS-th), the next row's loads
  // issued before this row's transform: they are in flight while it computes and stores.
  const long long stride = (long long)gridDim.x * @ROWS@;
  long long row = (long long)blockIdx.x * @ROWS@ + (threadIdx.x >> 5);
  @PDL_WAIT@
  float2 v[16], nx[16];
#pragma unroll
  for (int j = 0; j < 16; ++j)
    nx[j] = row < rows ? __ldg(x + row * 512 + 32 * j + l) : make_float2(0.f, 0.f);
  for (; row < rows; row += stride) {
#pragma unroll
    for (int j = 0; j < 16; ++j) v[j] = nx[j];
    const long long next = row + stride;
    if (next < rows) {
#pragma unroll
      for (int j = 0; j < 16; ++j) nx[j] = __ldg(x + next * 512 + 32 * j + l);
    }
    // step 1: 16-point DFTs over j, then W_512^(l k1)
    dft16(v);
#pragma unroll
    for (int k1 = 1; k1 < 16; ++k1) v[k1] = cmul(v[k1], tw1[k1 * 32 + l]);
#pragma unroll
    for (int k1 = 0; k1 < 16; ++k1) s[k1 * TS + l] = v[k1];
    __syncwarp();
    // step 2: lane pair p = k1 holds bin k1's even (a = 0) and odd (a = 1) values
#pragma unroll
    for (int b = 0; b < 16; ++b) v[b] = s[p * TS + 2 * b + a];
    dft16(v);
#pragma unroll
    for (int c = 1; c < 16; ++c) v[c] = a ? cmul(v[c], w32[c]) : v[c];
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      const float2 o = make_float2(__shfl_xor_sync(0xffffffffu, v[c].x, 1),
                                   __shfl_xor_sync(0xffffffffu, v[c].y, 1));
      v[c] = a ? csub(o, v[c]) : cadd(v[c], o);  // Z[k1 + 16 (c + 16 a)]
    }
    __syncwarp();  // every lane has read step 2's input before Z overwrites it
#pragma unroll
    for (int c = 0; c < 16; ++c) s[ZI(p + 16 * c + 256 * a)] = v[c];
    __syncwarp();
    // step 3: the real transform's bins, times the norm's scale
    float2* out = y + row * 513;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int k = l + 32 * j;
      const float2 z = s[ZI(k)];
      const float2 w = s[ZI((512 - k) & 511)];
      const float2 e = make_float2(h * (z.x + w.x), h * (z.y - w.y));
      const float2 o = make_float2(h * (z.y + w.y), h * (w.x - z.x));
      out[k] = cadd(e, cmul(tw3[k], o));
    }
    if (l == 0) out[512] = make_float2(scale * (s[0].x - s[0].y), 0.f);
    __syncwarp();  // Z is read before the next row's step 1 overwrites it
  }
}
"""


@functools.cache  # the table is 1024 literals: built once, not on every launch
def source(n: int, rows_per_block: int = ROWS_PER_BLOCK) -> str:
    """The kernel for rows of `n` real points (`supported(n)`), `rows_per_block` warps a block."""
    if not supported(n):
        raise ValueError(f"our rfft kernel takes n = {N} only, not {n}")
    if not 1 <= rows_per_block <= MAX_ROWS_PER_BLOCK:
        raise ValueError(f"rows_per_block must be 1 to {MAX_ROWS_PER_BLOCK}, not {rows_per_block}")
    text = _BODY
    for key, value in (("@ROWS@", str(rows_per_block)), ("@TABLE@", _table(N)),
                       ("@NAME@", kernel_name(n, rows_per_block)), ("@PDL_WAIT@", PDL_WAIT),
                       ("@DFT16_TW@", _dft16_twiddles()), ("@W32@", _w32_table())):  # fmt: skip
        text = text.replace(key, value)
    return PDL_HELPER + text
