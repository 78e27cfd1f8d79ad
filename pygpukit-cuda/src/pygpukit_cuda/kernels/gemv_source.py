"""CUDA C of the one-row product (sm_90+ thread-block clusters): out (1, N) = x (1, K) @
w (K, N) for 16-bit dtypes, w's rows contiguous and 16-byte aligned.

At decode shapes a product reads w once and does little else, and cuBLASLt's own host time
per call (10-15 us on the lent H100, see benchmarks/h100-2026-11-25e-launch-floor.md) is
most of the call. This kernel is one plain launch:

1. A cluster of ``CLUSTER`` blocks per strip of output columns (128, 64 or 32: the widest
   that still gives each SM 1.5 blocks); block `rank` of a cluster takes the rank-th of
   CLUSTER even chunks of K.
2. In a block, strip / 8 threads side by side cover the strip (8 columns, one 16-byte load
   of a w row, each) and the block's row groups of them take every G-th row of the chunk.
   Each thread issues the loads of ``UNROLL`` rows (and their x elements) before any sum,
   so a tile costs one trip to memory, not one per row (a strip alone has too few threads
   to keep enough of HBM's latency covered otherwise).
3. The groups' sums meet in shared memory and are added in group order; after a cluster
   barrier each block adds one slice of the strip across the cluster's blocks in rank
   order, reading their shared memory, and writes it; a second barrier keeps each block's
   shared memory alive until every read is done.

It begins with ``PDL_WAIT``: in a captured graph it is launched programmatically, so it
starts while the kernel ahead of it finishes and waits for it before its first load.

Every sum runs in a fixed order with no atomics, so a product is bit-identical from call
to call, eager or replayed in a CUDA graph.

Measured on the lent H100 (scripts/probe_gemv.py --variants): 8 rows in flight per thread
with the programmatic launch gave the decoder graph's replay cuBLASLt's time (914 us both);
16 rows, or no programmatic launch, made it 7-20% slower, and a bulk L2 prefetch of each
block's rows before the wait slowed every shape. Products of several rows stay with
cuBLASLt: a first version that took up to 8 rows (x through shared memory) needed 2-3x
cuBLASLt's GPU time at 4096 x 4096 for 2 to 8 rows.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .cluster_helpers import CLUSTER_HELPERS
from .decode_source import _HALVES
from .preamble import PDL_WAIT, PREAMBLE

#: blocks per cluster (the portable maximum), threads per block, w rows' loads in flight
#: per thread
CLUSTER = 8
THREADS = 256
UNROLL = 8
#: output columns per cluster, widest first (a block's threads: strip / 8 side by side, the
#: rest in row groups)
STRIPS: tuple[int, ...] = (128, 64, 32)
DTYPES = (dt.float16, dt.bfloat16)
ARG_FORMAT = "@QQQ" + "q" * 4

# @NAME@, @CL@, @SW@ (strip), @UNROLL@, @LO@, @HI@, @T@ (dtype name), @PDL_WAIT@
_KERNEL = r"""
extern "C" __global__ void __cluster_dims__(@CL@, 1, 1) __launch_bounds__(256)
@NAME@(char* __restrict__ out, const char* __restrict__ x, const char* __restrict__ w,
       long long N, long long K, long long xc, long long wr) {
  constexpr int CL = @CL@, U = @UNROLL@, SW = @SW@, TW = SW / 8, G = 256 / TW;
  constexpr int PER = SW / CL;
  __shared__ __align__(16) float red[G][SW];
  __shared__ float part[SW];
  @PDL_WAIT@
  const int t = threadIdx.x, c = t % TW, g = t / TW;
  const unsigned rank = pgk_cluster_rank();
  const long long s0 = (long long)blockIdx.y * SW, col = s0 + c * 8;
  const long long chunk = (K + CL - 1) / CL;
  const long long k0 = rank * chunk, k1 = min(K, k0 + chunk);
  float acc[8];
  #pragma unroll
  for (int j = 0; j < 8; ++j) acc[j] = 0.f;
  if (col < N) {
    const char* wp = w + col * 2;
    for (long long kt = k0 + g; kt < k1; kt += U * G) {
      uint4 v[U];
      float xv[U];
      #pragma unroll
      for (int u = 0; u < U; ++u) {
        const long long k = kt + u * G;
        v[u] = k < k1 ? __ldg((const uint4*)(wp + k * wr)) : make_uint4(0, 0, 0, 0);
        xv[u] = k < k1 ? pgk_ld_@T@(x + k * xc) : 0.f;
      }
      #pragma unroll
      for (int u = 0; u < U; ++u) {
        const unsigned ww[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
          acc[2 * j] += xv[u] * @LO@(ww[j]);
          acc[2 * j + 1] += xv[u] * @HI@(ww[j]);
        }
      }
    }
  }
  // the groups' sums, added in group order
  float4* r = (float4*)&red[g][c * 8];
  r[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  r[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  __syncthreads();
  if (t < SW) {
    float s = 0.f;
    #pragma unroll 8
    for (int q = 0; q < G; ++q) s += red[q][t];
    part[t] = s;
  }
  pgk_cluster_sync();
  // this block's slice of the strip: the cluster's blocks added in rank order
  if (t < PER) {
    const int cc = (int)rank * PER + t;
    const unsigned addr = pgk_smem_addr(&part[cc]);
    float s = 0.f;
    #pragma unroll
    for (int q = 0; q < CL; ++q) s += pgk_ld_cluster(addr, q);
    if (s0 + cc < N) pgk_st_@T@(out + (s0 + cc) * 2, s);
  }
  pgk_cluster_sync();
}
"""


def strip_for(n: int, sms: int) -> int:
    """The widest strip that still gives the SMs 1.5 blocks each, else the narrowest: one
    block per SM keeps too few loads in flight to cover HBM's latency."""
    for strip in STRIPS:
        if -(-n // strip) * CLUSTER >= 3 * sms // 2:
            return strip
    return STRIPS[-1]


@functools.cache
def gemv_kernel(dtype: dt.DataType, strip: int = STRIPS[0]) -> tuple[str, str]:
    """(name, source) of the one-row product of 16-bit `dtype`, a cluster per `strip`
    output columns."""
    lo, hi, extra = _HALVES[dtype.name]
    name = f"pgk_gemv_{dtype.name}_s{strip}"
    text = _KERNEL
    for key, value in (("NAME", name), ("CL", CLUSTER), ("SW", strip),
                       ("UNROLL", UNROLL), ("LO", lo), ("HI", hi), ("T", dtype.name),
                       ("PDL_WAIT", PDL_WAIT)):  # fmt: skip
        text = text.replace(f"@{key}@", str(value))
    return name, PREAMBLE + extra + CLUSTER_HELPERS + text


def all_sources() -> list[tuple[str, str]]:
    """Every instance (the compile test builds each for sm_90)."""
    return [gemv_kernel(d, s) for d in DTYPES for s in STRIPS]
