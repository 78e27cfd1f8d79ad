"""CUDA C of the skinny matmul: out (M, N) = x (M, K) @ W for M <= 8 rows of float16 or
bfloat16, streaming W with 16-byte loads, float32 sums, split-K over blocks in one launch.

Two weight layouts, one kernel each:

- ``kn``: W stored K x N with contiguous columns (``gp.matmul(x, W)`` on a plain array).
  A block owns 64 output columns; each thread reads 8 of them (16 bytes) from one row of
  W, 32 rows at a time per block (8 threads per row: 128 contiguous bytes), UNROLL rows
  in flight per thread. The 32 row groups are summed in a fixed tree (shuffles, then the
  8 warps in order through shared memory).
- ``nk``: W stored N x K with contiguous K (an (out, in) checkpoint weight seen through
  ``.mT``, and ``gp.linear_rows``). A warp owns R output columns (rows of the storage);
  each lane reads 16 bytes of each, 256 K-elements per warp step; a fixed shuffle tree
  sums the lanes.

Split-K: the grid is (column tiles, splits); block (t, s) sums rows [s*kc, (s+1)*kc) of
K. With one split the block writes `out` itself. Otherwise it writes its float32 sums to
its own slice of a workspace, and the last block of the tile to arrive (a counter per
tile, incremented once per block) adds the S slices in split order 0..S-1 and writes
`out`, then sets the counter back to 0 for the next launch on the stream. No float
atomics: the result does not depend on which block arrives last, so replays are
bit-identical to eager calls. The x slice a block needs is staged in shared memory once.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

#: threads per block (8 warps) for both layouts
THREADS = 256
#: output columns per block of the kn kernel (8 threads x 8 columns)
KN_TILE = 64
#: dynamic shared memory a block may take for its x slice (bytes; static use is <= 16 KB,
#: so the total stays under the 48 KB every device gives without opting in)
X_SLICE_BYTES = 24 * 1024
#: most rows of x the kernels are built for
MAX_ROWS = 8
DTYPES = (dt.float16, dt.bfloat16)


def kn_unroll(rows: int) -> int:
    """Rows of W a kn thread keeps in flight: 8 loads of 16 B while the float32 sums fit
    the registers easily (M <= 2), 4 above (the M x 8 sums grow; 2 blocks of 256 still
    fit an SM: 2 x 256 x 4 x 16 B = 32 KB in flight, what ~1 us of latency at ~25 GB/s
    per SM needs)."""
    return 8 if rows <= 2 else 4


def resident_blocks(layout: str, rows: int) -> int:
    """Blocks of 256 threads per SM each instance is built for (``__launch_bounds__``
    caps its registers to fit, and ptxas fits them without spilling: 4 blocks is 64
    registers a thread, 3 is 80, 2 is 128)."""
    if layout == "kn":
        return 4 if rows <= 3 else 3 if rows <= 5 else 2
    return 4 if rows <= 2 else 2


def nk_shape(rows: int) -> tuple[int, int]:
    """(R, UNROLL) of the nk kernel: storage rows per warp and 256-element steps in
    flight; R * UNROLL = 8 loads of 16 B per lane either way, more rows per warp for
    more x rows so each x value read from shared memory serves more weights."""
    return (2, 4) if rows <= 2 else (4, 2)


_COMMON = r"""
#define THREADS 256
#define ROWS %(rows)d
typedef unsigned short u16;
typedef long long i64;
__device__ __forceinline__ float sk_f(u16 s) { %(to_f)s }
__device__ __forceinline__ u16 sk_h(float f) { %(from_f)s }
__device__ __forceinline__ float sk_lo(unsigned v) { return sk_f((u16)(v & 0xffffu)); }
__device__ __forceinline__ float sk_hi(unsigned v) { return sk_f((u16)(v >> 16)); }
// 16 bytes of the weight through the read-only path (nothing in the launch writes W);
// volatile: issued where written, before the x staging and its barrier
__device__ __forceinline__ uint4 sk_load16(const u16* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%%0, %%1, %%2, %%3}, [%%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 sk_zero16() {
  uint4 v; v.x = 0u; v.y = 0u; v.z = 0u; v.w = 0u; return v;
}
// another block's partial sums: from L2, never a stale L1 line
__device__ __forceinline__ float sk_load_cg(const float* p) {
  float v; asm volatile("ld.global.cg.f32 %%0, [%%1];" : "=f"(v) : "l"(p)); return v;
}
__device__ __forceinline__ void sk_unpack(uint4 v, float* f) {
  f[0] = sk_lo(v.x); f[1] = sk_hi(v.x); f[2] = sk_lo(v.y); f[3] = sk_hi(v.y);
  f[4] = sk_lo(v.z); f[5] = sk_hi(v.z); f[6] = sk_lo(v.w); f[7] = sk_hi(v.w);
}

// res: this block's sums, [ROWS][tile] in shared memory, for columns col0.. of out.
// One split: write out. Several: publish to ws[split][m][n]; the last block of the tile
// adds the splits in order 0..S-1 and resets the tile's counter.
__device__ void sk_finish(const float* res, int tile, i64 col0, i64 n, float* ws,
                          unsigned* counters, u16* out, i64 ldo) {
  const int tid = threadIdx.x;
  const int splits = gridDim.y;
  __shared__ unsigned last;
  if (splits == 1) {
    for (int i = tid; i < ROWS * tile; i += THREADS) {
      const int m = i / tile; const i64 col = col0 + i %% tile;
      if (col < n) out[m * ldo + col] = sk_h(res[i]);
    }
    return;
  }
  for (int i = tid; i < ROWS * tile; i += THREADS) {
    const int m = i / tile; const i64 col = col0 + i %% tile;
    if (col < n) ws[((i64)blockIdx.y * ROWS + m) * n + col] = res[i];
  }
  __threadfence();  // the sums are visible device-wide before the counter says so
  __syncthreads();
  if (tid == 0) last = atomicAdd(&counters[blockIdx.x], 1u) == (unsigned)(splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = tid; i < ROWS * tile; i += THREADS) {
    const int m = i / tile; const i64 col = col0 + i %% tile;
    if (col >= n) continue;
    float acc = 0.0f;
    for (int s = 0; s < splits; ++s) acc += sk_load_cg(&ws[((i64)s * ROWS + m) * n + col]);
    out[m * ldo + col] = sk_h(acc);
  }
  if (tid == 0) counters[blockIdx.x] = 0u;  // ready for the next launch on this stream
}
"""

_KN = r"""
#define UNROLL %(unroll)d
extern "C" __global__ void __launch_bounds__(THREADS, %(blocks)d) %(name)s(
    u16* __restrict__ out, const u16* __restrict__ x, const u16* __restrict__ w,
    float* ws, unsigned* counters, i64 n, i64 k, i64 kc, i64 sxm, i64 sxk, i64 ldw, i64 ldo) {
  extern __shared__ float sx[];                 // [kc][ROWS]: this block's x, as float
  __shared__ float red[THREADS / 32][ROWS][64];  // per-warp sums of the tile
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int c8 = lane & 7, rg = tid >> 3;       // 8 threads per row, 32 rows per step
  const i64 kb = (i64)blockIdx.y * kc;
  const i64 nk = (k - kb < kc) ? k - kb : kc;
  const i64 col = (i64)blockIdx.x * 64 + c8 * 8;
  const bool active = col < n;  // n %% 8 == 0: a thread's 8 columns are all in or all out
  const u16* wp = w + kb * ldw + col;
  uint4 v[UNROLL];
  // the first step's weights are requested before x is staged: the two waits overlap
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const i64 kk = rg + 32 * u;
    v[u] = (active && kk < nk) ? sk_load16(wp + kk * ldw) : sk_zero16();
  }
#pragma unroll 4
  for (i64 i = tid; i < nk * ROWS; i += THREADS) {
    const i64 kk = i / ROWS; const int m = (int)(i - kk * ROWS);
    sx[i] = sk_f(x[m * sxm + (kb + kk) * sxk]);
  }
  __syncthreads();
  float acc[ROWS][8];
#pragma unroll
  for (int m = 0; m < ROWS; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[m][j] = 0.0f;
  if (active) {
    for (i64 k0 = rg; k0 < nk; k0 += 32 * UNROLL) {
      if (k0 != rg) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const i64 kk = k0 + 32 * u;
          v[u] = kk < nk ? sk_load16(wp + kk * ldw) : sk_zero16();
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const i64 kk = k0 + 32 * u;
        if (kk < nk) {
          float f[8];
          sk_unpack(v[u], f);
#pragma unroll
          for (int m = 0; m < ROWS; ++m) {
            const float xm = sx[kk * ROWS + m];
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[m][j] = fmaf(xm, f[j], acc[m][j]);
          }
        }
      }
    }
  }
  // the 4 row groups of a warp (lanes c8, c8+8, c8+16, c8+24), then the 8 warps in order
#pragma unroll
  for (int m = 0; m < ROWS; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float a = acc[m][j];
      a += __shfl_xor_sync(0xffffffffu, a, 8);
      a += __shfl_xor_sync(0xffffffffu, a, 16);
      acc[m][j] = a;
    }
  if (lane < 8) {
#pragma unroll
    for (int m = 0; m < ROWS; ++m)
#pragma unroll
      for (int j = 0; j < 8; ++j) red[warp][m][c8 * 8 + j] = acc[m][j];
  }
  __syncthreads();
  for (int i = tid; i < ROWS * 64; i += THREADS) {
    const int m = i / 64, c = i %% 64;
    float s = red[0][m][c];
#pragma unroll
    for (int q = 1; q < THREADS / 32; ++q) s += red[q][m][c];
    red[0][m][c] = s;  // only this thread reads or writes (m, c)
  }
  __syncthreads();
  sk_finish(&red[0][0][0], 64, (i64)blockIdx.x * 64, n, ws, counters, out, ldo);
}
"""

_NK = r"""
#define R %(r)d
#define UNROLL %(unroll)d
extern "C" __global__ void __launch_bounds__(THREADS, %(blocks)d) %(name)s(
    u16* __restrict__ out, const u16* __restrict__ x, const u16* __restrict__ w,
    float* ws, unsigned* counters, i64 n, i64 k, i64 kc, i64 sxm, i64 sxk, i64 ldw, i64 ldo) {
  extern __shared__ __align__(16) u16 sxh[];   // [ROWS][kc]: this block's x, raw 16-bit
  __shared__ float res[ROWS][8 * R];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const i64 kb = (i64)blockIdx.y * kc;
  const i64 nk = (k - kb < kc) ? k - kb : kc;    // a multiple of 8 (k and kc are)
  const i64 row0 = (i64)blockIdx.x * (8 * R) + warp * R;
  const i64 first = lane * 8;
  uint4 v[UNROLL][R];
  // the first step's weights are requested before x is staged: the two waits overlap
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const i64 kk = first + 256 * u;
      v[u][r] = (kk < nk && row0 + r < n) ? sk_load16(w + (row0 + r) * ldw + kb + kk)
                                          : sk_zero16();
    }
#pragma unroll 4
  for (i64 i = tid; i < nk * ROWS; i += THREADS) {
    const int m = (int)(i / nk); const i64 kk = i - m * nk;
    sxh[m * kc + kk] = x[m * sxm + (kb + kk) * sxk];
  }
  __syncthreads();
  float acc[R][ROWS];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < ROWS; ++m) acc[r][m] = 0.0f;
  for (i64 k0 = first; k0 < nk; k0 += 256 * UNROLL) {
    if (k0 != first) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const i64 kk = k0 + 256 * u;
          v[u][r] = (kk < nk && row0 + r < n) ? sk_load16(w + (row0 + r) * ldw + kb + kk)
                                              : sk_zero16();
        }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const i64 kk = k0 + 256 * u;
      if (kk < nk) {
        float f[R][8];
#pragma unroll
        for (int r = 0; r < R; ++r) sk_unpack(v[u][r], f[r]);
#pragma unroll
        for (int m = 0; m < ROWS; ++m) {
          float xf[8];
          sk_unpack(*reinterpret_cast<const uint4*>(&sxh[m * kc + kk]), xf);
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[r][m] = fmaf(xf[j], f[r][j], acc[r][m]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < ROWS; ++m) {
      float a = acc[r][m];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) a += __shfl_xor_sync(0xffffffffu, a, off);
      acc[r][m] = a;
    }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int m = 0; m < ROWS; ++m) res[m][warp * R + r] = acc[r][m];
  }
  __syncthreads();
  sk_finish(&res[0][0], 8 * R, (i64)blockIdx.x * (8 * R), n, ws, counters, out, ldo);
}
"""

_CONVERT = {
    "bfloat16": ("return __uint_as_float(((unsigned)s) << 16);",
                 'u16 b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f)); return b;'),
    "float16": ('float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(s)); return f;',
                'u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;'),
}  # fmt: skip

#: argument layout shared by both kernels: out, x, w, ws, counters; n, k, kc, x's two
#: strides, W's row stride, out's row stride (strides in elements)
ARG_FORMAT = "@QQQQQ" + "q" * 7


@functools.cache
def kernel(layout: str, dtype: dt.DataType, rows: int) -> tuple[str, str]:
    """(name, source) of the `layout` ("kn" or "nk") kernel for `rows` rows of `dtype`."""
    if layout not in ("kn", "nk"):
        raise ValueError(f"skinny matmul layout must be 'kn' or 'nk', got {layout!r}")
    if dtype not in DTYPES:
        raise TypeError(f"skinny matmul takes float16 or bfloat16, got {dtype.name}")
    if not 1 <= rows <= MAX_ROWS:
        raise ValueError(f"skinny matmul takes 1..{MAX_ROWS} rows, got {rows}")
    to_f, from_f = _CONVERT[dtype.name]
    name = f"pgk_skinny_{layout}_{dtype.name}_m{rows}"
    common = _COMMON % {"rows": rows, "to_f": to_f, "from_f": from_f}
    if layout == "kn":
        body = _KN % {"name": name, "unroll": kn_unroll(rows),
                      "blocks": resident_blocks("kn", rows)}  # fmt: skip
    else:
        r, unroll = nk_shape(rows)
        body = _NK % {"name": name, "r": r, "unroll": unroll,
                      "blocks": resident_blocks("nk", rows)}  # fmt: skip
    return name, common + body


def all_sources() -> list[tuple[str, str]]:
    """Every instance (the compile test builds each)."""
    return [kernel(lay, d, m) for lay in ("kn", "nk") for d in DTYPES
            for m in range(1, MAX_ROWS + 1)]  # fmt: skip
