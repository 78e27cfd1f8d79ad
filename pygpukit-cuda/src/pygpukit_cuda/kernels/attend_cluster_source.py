"""CUDA C of the one-launch decode attention over a KV cache (sm_90+ thread-block clusters).

One cluster of ``CLUSTER`` blocks per (batch row, KV head). The cluster reads the row's
valid key range [lo, hi) from ``starts``/``ends`` on the device and splits it evenly over
its blocks, so the same launch shape serves a context of 17 keys and one of 512 (the old
kernel split the cache's whole length into fixed chunks, most of them empty). Each block
takes every query row of its KV head (the G query heads of a GQA group times Sq queries,
up to ``ROWS``), so its keys and values are read from memory once for all of them:

1. 256 threads, 4 per key, load a tile of 64 keys and values in 16-byte pieces (the next
   tile's loads are issued before this tile's softmax, so they overlap it); values go to
   shared memory, each thread dots its key quarter with every query row (query rows in
   shared memory, pre-scaled), and 2 shuffles finish the dot.
2. A warp per query row keeps the online softmax (running max and sum) over the tiles.
3. P @ V from the shared value tile: a lane per 8 value dims, the warp's other lanes on
   other keys, one shuffle tree at the end.
4. Each block leaves its unnormalised result and (max, sum) per row in shared memory; after
   a cluster barrier the blocks merge one slice of the output each, reading the other
   blocks' shared memory (distributed shared memory), then a second barrier keeps every
   block's shared memory alive until all reads are done.

No global scratch and no second kernel: the old path's merge launch, its two pool
allocations per call and their round trip through L2 are gone. No thread exits early: the
cluster barriers need every thread of every block.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .ctypes_table import load_any
from .decode_source import _HALVES, _fast_load
from .preamble import PREAMBLE

#: blocks per cluster (the portable maximum), query rows per cluster, threads per block,
#: keys per tile
CLUSTER = 8
ROWS = 16
THREADS = 256
TILE = 64
#: the compiled head-dim bounds (D and Dv at most this, multiples of 8)
DIMS = (64, 128)

_HELPERS = r"""
// a shared-memory address in the 32-bit shared window, as mapa and ld.shared::cluster take it
__device__ __forceinline__ unsigned pgk_smem_addr(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
// the float at shared address `addr` of block `rank` of this cluster
__device__ __forceinline__ float pgk_ld_cluster(unsigned addr, unsigned rank) {
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
// every thread of every block of the cluster: writes before it are seen by reads after it
__device__ __forceinline__ void pgk_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned pgk_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
"""

# @NAME@, @MAXD@, @CL@, @ROWS@, @TILE@, @LO@, @HI@, @T@ (storage dtype name), @OSIZE@
_KERNEL = r"""
extern "C" __global__ void __cluster_dims__(@CL@, 1, 1) __launch_bounds__(256, 1) @NAME@(
    const char* __restrict__ q, const char* __restrict__ k, const char* __restrict__ v,
    const char* __restrict__ starts, const char* __restrict__ ends, char* __restrict__ out,
    int cq, int cst, int cen, long long Hq, long long G, long long Sq, long long Hkv,
    long long L, long long D, long long Dv, long long qb, long long qh, long long qs,
    long long qd, long long kb, long long kh, long long ks, long long vb, long long vh,
    long long vs, long long stb, long long enb, double scale_d, long long window) {
  constexpr int MAXD = @MAXD@, RMAX = @ROWS@, TK = @TILE@, CL = @CL@;
  constexpr int SP = TK + 8;   // score row stride: the 4 lanes of a key write 4 banks apart
  constexpr int U = MAXD / 32;  // 16-byte pieces of a key row per thread (4 threads a key)
  constexpr int O = MAXD / 8;   // 16-byte pieces of a value row (lanes in P @ V)
  constexpr int KQ = 32 / O;    // keys a warp works on at once in P @ V
  __shared__ __align__(16) float qsh[RMAX][MAXD];
  __shared__ __align__(16) float ssh[RMAX][SP];
  __shared__ __align__(16) unsigned short vsh[TK][MAXD];
  __shared__ __align__(16) float ash[RMAX][MAXD];
  __shared__ float msh[RMAX], lsh[RMAX];
  const float NEG_INF = -__int_as_float(0x7f800000);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned rank = pgk_cluster_rank();
  const long long bk = blockIdx.y, b = bk / Hkv, hk = bk % Hkv;
  const int R = (int)(G * Sq), Di = (int)D, Dvi = (int)Dv;
  const long long end = pgk_load_i64(ends + b * enb, cen);
  const long long start = pgk_load_i64(starts + b * stb, cst);
  // the union of the query rows' key ranges, split evenly over the cluster's blocks
  long long lo = start, hi = end < L ? end : L;
  if (window > 0 && end - Sq - window + 1 > lo) lo = end - Sq - window + 1;
  if (lo < 0) lo = 0;
  const long long n = hi > lo ? hi - lo : 0, per = (n + CL - 1) / CL;
  long long my_lo = lo + (long long)rank * per, my_hi = my_lo + per;
  if (my_hi > hi) my_hi = hi;
  if (my_lo > my_hi) my_lo = my_hi;

  // this thread's share of a tile: key tid / 4, 16-byte pieces (tid % 4) + 4 i of its row
  const int kk = tid >> 2, part = tid & 3;
  const char* kbase = k + b * kb + hk * kh;
  const char* vbase = v + b * vb + hk * vh;
  uint4 kr[U], vr[U];
  auto fetch = [&](long long t0) {
    const long long j = t0 + kk;
    const bool in = j < my_hi;
    #pragma unroll
    for (int i = 0; i < U; ++i) {
      const int u = part + 4 * i;
      uint4 z; z.x = z.y = z.z = z.w = 0u;
      kr[i] = in && u * 8 < Di ? *(const uint4*)(kbase + j * ks + u * 16) : z;
      vr[i] = in && u * 8 < Dvi ? *(const uint4*)(vbase + j * vs + u * 16) : z;
    }
  };
  fetch(my_lo);  // in flight while the query rows are staged

  const float scale = (float)scale_d;
  for (int e = tid; e < R * Di; e += 256) {
    const int r = e / Di, d = e % Di, g = r / (int)Sq, i = r % (int)Sq;
    qsh[r][d] = pgk_fast(q + b * qb + (hk * G + g) * qh + i * qs + d * qd, cq) * scale;
  }

  // warp w owns query rows w and w + 8: their softmax state lives in its registers
  float m_row[2] = {NEG_INF, NEG_INF}, l_row[2] = {0.f, 0.f}, alpha[2] = {1.f, 1.f};
  float acc[2][8];
  #pragma unroll
  for (int x = 0; x < 2; ++x)
    #pragma unroll
    for (int e = 0; e < 8; ++e) acc[x][e] = 0.f;
  const int o = lane % O, kq = lane / O;

  for (long long t0 = my_lo; t0 < my_hi; t0 += TK) {
    const int tn = (int)(my_hi - t0 < TK ? my_hi - t0 : TK);
    __syncthreads();  // the query rows are staged; the last tile's scores and values are used
    #pragma unroll
    for (int i = 0; i < U; ++i) *(uint4*)&vsh[kk][(part + 4 * i) * 8] = vr[i];
    float dot[RMAX];
    #pragma unroll
    for (int r = 0; r < RMAX; ++r) dot[r] = 0.f;
    #pragma unroll
    for (int i = 0; i < U; ++i) {
      const int u = part + 4 * i;
      if (u * 8 < Di) {
        const unsigned w[4] = {kr[i].x, kr[i].y, kr[i].z, kr[i].w};
        float kf[8];
        #pragma unroll
        for (int e = 0; e < 4; ++e) { kf[2 * e] = @LO@(w[e]); kf[2 * e + 1] = @HI@(w[e]); }
        #pragma unroll
        for (int r = 0; r < RMAX; ++r) {
          if (r < R) {
            const float4 a = *(const float4*)&qsh[r][u * 8];
            const float4 c = *(const float4*)&qsh[r][u * 8 + 4];
            dot[r] += a.x * kf[0] + a.y * kf[1] + a.z * kf[2] + a.w * kf[3] +
                      c.x * kf[4] + c.y * kf[5] + c.z * kf[6] + c.w * kf[7];
          }
        }
      }
    }
    const long long j = t0 + kk;
    #pragma unroll
    for (int r = 0; r < RMAX; ++r) {
      if (r < R) {
        dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], 1);
        dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], 2);
        if ((r & 3) == part) {
          const long long t = end - Sq + r % (int)Sq;  // row r's own slot
          bool ok = kk < tn && j >= start && j <= t;
          if (window > 0) ok = ok && t - j < window;
          ssh[r][kk] = ok ? dot[r] : NEG_INF;
        }
      }
    }
    if (t0 + TK < my_hi) fetch(t0 + TK);  // the next tile's loads overlap this tile's math
    __syncthreads();
    #pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int r = warp + 8 * x;
      if (r < R) {
        const float s0 = ssh[r][lane], s1 = ssh[r][lane + 32];
        float mt = fmaxf(s0, s1);
        #pragma unroll
        for (int off = 16; off > 0; off >>= 1)
          mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
        const float mn = fmaxf(m_row[x], mt);
        float p0 = 0.f, p1 = 0.f;
        alpha[x] = 1.f;
        if (mn != NEG_INF) {  // exp(-inf - finite) is 0: masked keys drop out
          p0 = expf(s0 - mn);
          p1 = expf(s1 - mn);
          alpha[x] = m_row[x] == NEG_INF ? 0.f : expf(m_row[x] - mn);
        }
        float ps = p0 + p1;
        #pragma unroll
        for (int off = 16; off > 0; off >>= 1) ps += __shfl_xor_sync(0xffffffffu, ps, off);
        l_row[x] = l_row[x] * alpha[x] + ps;
        m_row[x] = mn;
        ssh[r][lane] = p0;
        ssh[r][lane + 32] = p1;
      }
    }
    __syncthreads();
    #pragma unroll
    for (int x = 0; x < 2; ++x)
      #pragma unroll
      for (int e = 0; e < 8; ++e) acc[x][e] *= alpha[x];
    if (o * 8 < Dvi) {
      #pragma unroll 4
      for (int jj = kq; jj < tn; jj += KQ) {
        const uint4 w4 = *(const uint4*)&vsh[jj][o * 8];
        const unsigned w[4] = {w4.x, w4.y, w4.z, w4.w};
        float vf[8];
        #pragma unroll
        for (int e = 0; e < 4; ++e) { vf[2 * e] = @LO@(w[e]); vf[2 * e + 1] = @HI@(w[e]); }
        #pragma unroll
        for (int x = 0; x < 2; ++x) {
          if (warp + 8 * x < R) {
            const float pr = ssh[warp + 8 * x][jj];
            #pragma unroll
            for (int e = 0; e < 8; ++e) acc[x][e] += pr * vf[e];
          }
        }
      }
    }
  }

  // this block's unnormalised rows and their (max, sum) for the cluster merge
  #pragma unroll
  for (int x = 0; x < 2; ++x) {
    #pragma unroll
    for (int e = 0; e < 8; ++e) {
      #pragma unroll
      for (int off = O; off < 32; off <<= 1)
        acc[x][e] += __shfl_xor_sync(0xffffffffu, acc[x][e], off);
    }
    const int r = warp + 8 * x;
    if (r < R) {
      if (kq == 0 && o * 8 < Dvi) {
        #pragma unroll
        for (int e = 0; e < 8; ++e) ash[r][o * 8 + e] = acc[x][e];
      }
      if (lane == 0) { msh[r] = m_row[x]; lsh[r] = l_row[x]; }
    }
  }
  pgk_cluster_sync();
  // block `rank` merges output elements [rank * share, (rank + 1) * share) of the R x Dv rows
  const int total = R * Dvi, share = (total + CL - 1) / CL;
  const unsigned am = pgk_smem_addr(msh), al = pgk_smem_addr(lsh), aa = pgk_smem_addr(ash);
  const int stop = (int)rank * share + share < total ? (int)rank * share + share : total;
  char* orow = out + ((b * Hq + hk * G) * Sq) * Dv * @OSIZE@;
  for (int e = (int)rank * share + tid; e < stop; e += 256) {
    const int r = e / Dvi, d = e % Dvi;
    float mm[CL], ll[CL], av[CL];
    #pragma unroll
    for (int c = 0; c < CL; ++c) {
      mm[c] = pgk_ld_cluster(am + 4u * r, c);
      ll[c] = pgk_ld_cluster(al + 4u * r, c);
      av[c] = pgk_ld_cluster(aa + 4u * (r * MAXD + d), c);
    }
    float top = NEG_INF;
    #pragma unroll
    for (int c = 0; c < CL; ++c) if (ll[c] > 0.f && mm[c] > top) top = mm[c];
    float sum = 0.f, a = 0.f;
    #pragma unroll
    for (int c = 0; c < CL; ++c) {
      if (ll[c] > 0.f) {
        const float w = expf(mm[c] - top);
        sum += ll[c] * w;
        a += av[c] * w;
      }
    }
    pgk_st_@T@(orow + (long long)e * @OSIZE@, sum > 0.f ? a / sum : 0.f);
  }
  pgk_cluster_sync();  // no block leaves while another may still read its shared memory
}
"""


def dim_bound(d: int, dv: int) -> int | None:
    """The compiled head-dim bound serving head_dim `d` and value dim `dv` (None: none)."""
    for bound in DIMS:
        if d <= bound and dv <= bound:
            return bound
    return None


@functools.cache
def attend_cluster_kernel(out: dt.DataType, maxd: int) -> tuple[str, str]:
    """(name, source) of the cluster attention for a 16-bit cache of dtype `out`, head dims
    up to `maxd`."""
    lo, hi, extra = _HALVES[out.name]
    name = f"pgk_sdpa_cluster_{out.name}_{maxd}"
    body = _KERNEL
    for key, value in (("NAME", name), ("MAXD", maxd), ("CL", CLUSTER), ("ROWS", ROWS),
                       ("TILE", TILE), ("LO", lo), ("HI", hi), ("T", out.name),
                       ("OSIZE", out.itemsize)):  # fmt: skip
        body = body.replace(f"@{key}@", str(value))
    head = PREAMBLE + load_any(dt.float32) + _fast_load(dt.float32, out) + extra
    return name, head + _HELPERS + body


def all_sources() -> list[tuple[str, str]]:
    """Every instance (the compile test builds each for sm_90)."""
    return [attend_cluster_kernel(d, m) for d in (dt.float16, dt.bfloat16) for m in DIMS]
