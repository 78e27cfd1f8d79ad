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

from .cluster_helpers import CLUSTER_HELPERS
from .ctypes_table import load_any
from .decode_fused_source import _CONVERT
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


# @NAME@, @MAXD@, @CL@, @ROWS@, @TILE@, @LO@, @HI@, @T@ (storage dtype name), @OSIZE@
_KERNEL = r"""
extern "C" __global__ void __cluster_dims__(@CL@, 1, 1) __launch_bounds__(256, 1) @NAME@(
    char* q, char* __restrict__ k, char* __restrict__ v,
    const char* __restrict__ starts, const char* __restrict__ ends, char* __restrict__ out,
    int cq, int cst, int cen, long long Hq, long long G, long long Sq, long long Hkv,
    long long L, long long D, long long Dv, long long qb, long long qh, long long qs,
    long long qd, long long kb, long long kh, long long ks, long long vb, long long vh,
    long long vs, long long stb, long long enb, double scale_d, long long window@FUSE_PARAMS@) {
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
#if @FUSE@
@PROLOGUE@
#else
  for (int e = tid; e < R * Di; e += 256) {
    const int r = e / Di, d = e % Di, g = r / (int)Sq, i = r % (int)Sq;
    qsh[r][d] = pgk_fast(q + b * qb + (hk * G + g) * qh + i * qs + d * qd, cq) * scale;
  }
#endif

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
#if @FUSE@
    {  // the new tokens' keys and values come from shared memory, not the cache being written
      const long long jn = t0 + kk - slot0;
      if (jn >= 0 && jn < Sq && t0 + kk < my_hi) {
        #pragma unroll
        for (int i = 0; i < U; ++i) {
          const int u = part + 4 * i;
          if (u * 8 < Di) kr[i] = *(const uint4*)&knew[jn][u * 8];
          if (u * 8 < Dvi) vr[i] = *(const uint4*)&vnew[jn][u * 8];
        }
      }
    }
#endif
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
#if @FUSE@
  if (rank == 0) {  // every block has read q and the new keys: rotate them in place now
    for (int e = tid; e < R * Di; e += 256) {
      const int r = e / Di, d = e % Di, g = r / (int)Sq, i = r % (int)Sq;
      *(unsigned short*)(q + b * qb + (hk * G + g) * qh + i * qs + d * qd) = qrot[r][d];
    }
    for (int e = tid; e < (int)Sq * Di; e += 256) {
      const int i = e / Di, d = e % Di;
      *(unsigned short*)(knp + b * nkb + i * nks + hk * nkh + d * nkd) = knew[i][d];
    }
  }
#endif
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


#: new tokens per row the fused variant takes (its shared rows for the new keys and values)
NEW_TOKENS = 4

_FUSE_PARAMS = """, char* knp, const char* vnp, const char* cs, const char* sn,
    const char* pos, const char* slots, long long P, long long nkb, long long nks,
    long long nkh, long long nkd, long long nvb, long long nvs, long long nvh, long long nvd,
    long long cr, long long cc, long long sr, long long sc, long long pb, long long ps,
    long long slb, int ccode, int scode, int pcode, int slcode"""

# the fused variant's start: q and the new keys rotated (rounded as stored, as the separate
# RoPE kernel stores them), q staged, the new keys and values kept in shared memory for the
# tiles that hold their slots, and block 0 writing them into the caches (other blocks may
# read those slots meanwhile; they use the shared copies instead)
_PROLOGUE = r"""
  __shared__ __align__(16) unsigned short qrot[RMAX][MAXD];
  __shared__ __align__(16) unsigned short knew[@SNEW@][MAXD], vnew[@SNEW@][MAXD];
  const long long slot0 = pgk_load_i64(slots + b * slb, slcode);
  const int half = Di / 2;
  for (int e = tid; e < R * half; e += 256) {
    const int r = e / half, d = e % half, g = r / (int)Sq, i = r % (int)Sq;
    const char* p1 = q + b * qb + (hk * G + g) * qh + i * qs + d * qd;
    float x1 = pgk_ld_@T@(p1), x2 = pgk_ld_@T@(p1 + half * qd);
    const long long p = pgk_load_i64(pos + b * pb + i * ps, pcode);
    if (p >= 0 && p < P) {  // a bad position leaves the pair as it was (rope_at's rule)
      const float c = pgk_fast(cs + p * cr + d * cc, ccode);
      const float sv = pgk_fast(sn + p * sr + d * sc, scode);
      const float y1 = x1 * c - x2 * sv, y2 = x2 * c + x1 * sv;
      x1 = @S2F@(@F2S@(y1));
      x2 = @S2F@(@F2S@(y2));
    }
    qrot[r][d] = @F2S@(x1);
    qrot[r][d + half] = @F2S@(x2);
    qsh[r][d] = x1 * scale;
    qsh[r][d + half] = x2 * scale;
  }
  for (int e = tid; e < (int)Sq * half; e += 256) {
    const int i = e / half, d = e % half;
    const char* p1 = knp + b * nkb + i * nks + hk * nkh + d * nkd;
    float x1 = pgk_ld_@T@(p1), x2 = pgk_ld_@T@(p1 + half * nkd);
    const long long p = pgk_load_i64(pos + b * pb + i * ps, pcode);
    if (p >= 0 && p < P) {
      const float c = pgk_fast(cs + p * cr + d * cc, ccode);
      const float sv = pgk_fast(sn + p * sr + d * sc, scode);
      const float y1 = x1 * c - x2 * sv, y2 = x2 * c + x1 * sv;
      x1 = @S2F@(@F2S@(y1));
      x2 = @S2F@(@F2S@(y2));
    }
    const unsigned short h1 = @F2S@(x1), h2 = @F2S@(x2);
    knew[i][d] = h1;
    knew[i][d + half] = h2;
    const long long t = slot0 + i;
    if (rank == 0 && t >= 0 && t < L) {
      char* dst = k + b * kb + hk * kh + t * ks + d * 2;
      *(unsigned short*)dst = h1;
      *(unsigned short*)(dst + half * 2) = h2;
    }
  }
  for (int e = tid; e < (int)Sq * Dvi; e += 256) {
    const int i = e / Dvi, d = e % Dvi;
    const unsigned short h =
        *(const unsigned short*)(vnp + b * nvb + i * nvs + hk * nvh + d * nvd);
    vnew[i][d] = h;
    const long long t = slot0 + i;
    if (rank == 0 && t >= 0 && t < L) *(unsigned short*)(v + b * vb + hk * vh + t * vs + d * 2) = h;
  }
"""


def dim_bound(d: int, dv: int) -> int | None:
    """The compiled head-dim bound serving head_dim `d` and value dim `dv` (None: none)."""
    for bound in DIMS:
        if d <= bound and dv <= bound:
            return bound
    return None


@functools.cache
def attend_cluster_kernel(out: dt.DataType, maxd: int, fused: bool = False) -> tuple[str, str]:
    """(name, source) of the cluster attention for a 16-bit cache of dtype `out`, head dims
    up to `maxd`; `fused`: with RoPE and the cache write of the new tokens first."""
    lo, hi, extra = _HALVES[out.name]
    f2s, s2f = _CONVERT[out.name]
    name = f"pgk_sdpa_cluster_{'rope_' if fused else ''}{out.name}_{maxd}"
    body = _KERNEL.replace("@PROLOGUE@", _PROLOGUE if fused else "")
    body = body.replace("@FUSE_PARAMS@", _FUSE_PARAMS if fused else "")
    for key, value in (("NAME", name), ("MAXD", maxd), ("CL", CLUSTER), ("ROWS", ROWS),
                       ("TILE", TILE), ("LO", lo), ("HI", hi), ("T", out.name),
                       ("OSIZE", out.itemsize), ("FUSE", int(fused)), ("SNEW", NEW_TOKENS),
                       ("F2S", f2s), ("S2F", s2f)):  # fmt: skip
        body = body.replace(f"@{key}@", str(value))
    head = PREAMBLE + load_any(dt.float32) + _fast_load(dt.float32, out) + extra
    return name, head + CLUSTER_HELPERS + body


def all_sources() -> list[tuple[str, str]]:
    """Every instance (the compile test builds each for sm_90)."""
    return [
        attend_cluster_kernel(d, m, f)
        for d in (dt.float16, dt.bfloat16)
        for m in DIMS
        for f in (False, True)
    ]
