"""CUDA C of the short-context decode attention (RoPE, cache write and cache attention in one
sm_90 cluster launch, or the cache attention alone; built for latency: two dependent global
reads, one merge).

The cluster kernel of ``attend_cluster_source.py`` spends ~10 us on a few hundred KB of
keys (H100, Llama-3-8B and TinyLlama decode shapes). Read from its SASS, the time is the
chain of dependent steps, not the work: the start and end, the slot and every position come
through an out-of-line dtype switch (a call that waits for its load), the RoPE of q, the
RoPE of the new keys and the copy of the new values are three loops run one after the
other, each waiting for its own loads; the cos/sin reads wait for the positions; the cluster
merge pulls every partial through distributed shared memory between two cluster barriers;
the code is ~92 KB (16 query rows unrolled whatever the shape), much of it fetched once per
launch. This variant keeps its layout (one cluster of CL blocks per batch row and KV head,
the valid keys split evenly over the blocks) and cuts the chain:

1. Round one: every global read that needs nothing else (start, end, slot, positions, the
   16-byte pieces of q and of the new keys and values, one piece pair per thread) is issued
   at once; int32/int64 indices are read inline (a flags word says which), never a call.
2. Round two: the first key/value tile (it needs start and end) and the cos/sin entries (they
   need the positions; tables of the cache's dtype, 16 bytes at a time), together. The new
   tokens' keys and values stay in shared memory for the tile that holds their slots;
   block 0 writes them into the caches meanwhile.
3. One tile of scores, softmax and P @ V per 64 keys, as before, for at most ``ROWS`` query
   rows compiled as 4, 8 or 16 (the smallest that holds G * Sq).
4. The merge pushes instead of pulling: block c writes its (max, sum) per row into every
   block and its unnormalised P @ V slice s into block s (st.shared::cluster), then ONE
   cluster barrier, after which each block merges its output slice from its own shared
   memory. The barrier arrive at the start (relaxed) and its wait just before the pushes
   make sure every block is running before it is written to, at no cost on the way.
5. Block 0 writes the rotated q and new keys back in place after that barrier, when every
   block of the cluster has read them.
6. Where the preamble has programmatic dependent launch (``PDL_WAIT``), the kernel starts
   with it (after the cluster arrive, before any read): the launch and the clusters'
   start overlap the kernel ahead; ``PYGPUKIT_PDL=0`` launches it plainly.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from . import preamble
from .decode_fused_source import _CONVERT
from .decode_source import _HALVES
from .preamble import PREAMBLE

#: the statement that marks a kernel for programmatic dependent launch, where this build's
#: preamble has it: every read of the kernel follows it (any of them may be what the kernel
#: ahead of it writes), so only the launch and the cluster's start overlap that kernel
_PDL_WAIT: str = getattr(preamble, "PDL_WAIT", "")

#: blocks per cluster, threads per block, keys per tile, new tokens per row at most
CLUSTER = 8
THREADS = 256
TILE = 64
NEW_TOKENS = 4
#: head dims compiled (D == Dv), and the query-row bounds (G * Sq) compiled
DIMS = (64, 128)
ROWS = (4, 8, 16)

_HELPERS = r"""
__device__ __forceinline__ unsigned pgk_smem_addr(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ unsigned pgk_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// the address `addr` of this block's shared memory as seen in block `rank`'s
__device__ __forceinline__ unsigned pgk_mapa(unsigned addr, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  return remote;
}
__device__ __forceinline__ void pgk_st_cluster(unsigned remote, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(v) : "memory");
}
__device__ __forceinline__ void pgk_st_cluster4(unsigned remote, float a, float b, float c,
                                                float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};"
               :: "r"(remote), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ void pgk_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void pgk_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void pgk_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// an int32 or int64 index (the op takes no other), inline
__device__ __forceinline__ long long pgk_index(const char* p, int wide) {
  return wide ? *(const long long*)p : (long long)*(const int*)p;
}
"""

# @NAME@, @D@, @RMAX@, @CL@, @TILE@, @SNEW@, @LO@, @HI@ (halves of a 32-bit word as float),
# @F2S@, @S2F@ (float <-> storage bits), @T@ (storage dtype name)
_KERNEL = r"""
extern "C" __global__ void __cluster_dims__(@CL@, 1, 1) __launch_bounds__(256, 1) @NAME@(
    char* q, char* __restrict__ kc, char* __restrict__ vc, char* kn, const char* vn,
    const char* __restrict__ cs, const char* __restrict__ sn, const char* __restrict__ pos,
    const char* __restrict__ slots, const char* __restrict__ starts,
    const char* __restrict__ ends, char* __restrict__ out,
    long long qb, long long qs, long long qh, long long kb, long long kh, long long ks,
    long long vb, long long vh, long long vs, long long nkb, long long nks, long long nkh,
    long long nvb, long long nvs, long long nvh, long long cr, long long sr, long long pb,
    long long ps, long long slb, long long stb, long long enb,
    int G, int Sq, int Hkv, int L, int P, int window, float scale, int flags) {
  constexpr int D = @D@, RMAX = @RMAX@, TK = @TILE@, CL = @CL@;
  constexpr int HALF = D / 2, H8 = D / 16;  // a thread rotates piece u and piece u + H8
  constexpr int P8 = D / 8;                 // 16-byte pieces of a row
  constexpr int U = D / 32;                 // a thread's pieces of a key (4 threads a key)
  constexpr int KQ = 32 / P8;               // keys a warp takes at once in P @ V
  constexpr int SL = D / CL;                // output dims each block merges
  constexpr int RW = RMAX < 8 ? RMAX : 8;   // warps that own query rows
  constexpr int RPW = RMAX / RW;            // rows each of them owns
  constexpr int SP = TK + 8;                // score row stride: a key's 4 lanes 4 banks apart
  __shared__ __align__(16) float qsh[RMAX][D];
  __shared__ __align__(16) float ssh[RMAX][SP];
  __shared__ __align__(16) unsigned short vsh[TK][D];
  __shared__ __align__(16) unsigned short knew[@SNEW@][D], vnew[@SNEW@][D];
  __shared__ __align__(16) float recv_a[CL][RMAX][SL];
  __shared__ float recv_m[CL][RMAX], recv_l[CL][RMAX];

  // phase 0 of the cluster barrier: arrived now, waited for before the first remote write
  // (a block may be written to only once it runs)
  pgk_arrive_relaxed();
  @PDL@
  const float NEG_INF = -__int_as_float(0x7f800000);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned rank = pgk_cluster_rank();
  const int bk = blockIdx.y, b = bk / Hkv, hk = bk - b * Hkv;
  const int R = G * Sq;

  // ---- round one: every read that depends on nothing ---------------------------------
  // flags bit 4: the fused call (RoPE, cache write); without it a plain cache attention, and
  // the new-token pointers (kn, vn, cs, sn, pos, slots) are never read
  const bool fused = (flags & 16) != 0;
  const long long end = pgk_index(ends + b * enb, flags & 8);
  const long long start = pgk_index(starts + b * stb, flags & 4);
  // (no new tokens: a slot so far below every key that no key takes a shared copy)
  const long long slot0 = fused ? pgk_index(slots + b * slb, flags & 2) : -(1LL << 62);
  // roles: q pieces (row r, pair u), then the new keys' (token i, pair u), then the new
  // values' pieces (token i, piece u)
  const int nq = R * H8, nk = fused ? Sq * H8 : 0, nv = fused ? Sq * P8 : 0;
  int role = 0, row = 0, u = 0;
  uint4 xa, xb;
  xa.x = xa.y = xa.z = xa.w = 0u;
  xb = xa;
  long long p = -1;
  if (tid < nq) {
    role = 1; row = tid / H8; u = tid % H8;
    const int g = row / Sq, i = row - g * Sq;
    const char* at = q + b * qb + (hk * G + g) * qh + i * qs + u * 16;
    xa = *(const uint4*)at;
    xb = *(const uint4*)(at + HALF * 2);
    if (fused) p = pgk_index(pos + b * pb + i * ps, flags & 1);
  } else if (tid < nq + nk) {
    role = 2; row = (tid - nq) / H8; u = (tid - nq) % H8;
    const char* at = kn + b * nkb + row * nks + hk * nkh + u * 16;
    xa = *(const uint4*)at;
    xb = *(const uint4*)(at + HALF * 2);
    p = pgk_index(pos + b * pb + row * ps, flags & 1);
  } else if (tid < nq + nk + nv) {
    role = 3; row = (tid - nq - nk) / P8; u = (tid - nq - nk) % P8;
    xa = *(const uint4*)(vn + b * nvb + row * nvs + hk * nvh + u * 16);
  }

  // the union of the query rows' key ranges, split evenly over the cluster's blocks
  long long lo = start, hi = end < L ? end : L;
  if (window > 0 && end - Sq - window + 1 > lo) lo = end - Sq - window + 1;
  if (lo < 0) lo = 0;
  const long long n = hi > lo ? hi - lo : 0, per = (n + CL - 1) / CL;
  long long my_lo = lo + (long long)rank * per, my_hi = my_lo + per;
  if (my_hi > hi) my_hi = hi;
  if (my_lo > my_hi) my_lo = my_hi;

  // ---- round two: the first tile of keys and values, the cos/sin entries --------------
  const int kk = tid >> 2, part = tid & 3;
  const char* kbase = kc + b * kb + hk * kh;
  const char* vbase = vc + b * vb + hk * vh;
  uint4 kr[U], vr[U];
  auto fetch = [&](long long t0) {
    const long long j = t0 + kk;
    const bool in = j < my_hi;
    #pragma unroll
    for (int i = 0; i < U; ++i) {
      uint4 z; z.x = z.y = z.z = z.w = 0u;
      kr[i] = in ? *(const uint4*)(kbase + j * ks + (part + 4 * i) * 16) : z;
      vr[i] = in ? *(const uint4*)(vbase + j * vs + (part + 4 * i) * 16) : z;
    }
  };
  fetch(my_lo);
  const bool rot = role != 0 && role != 3 && p >= 0 && p < P;
  uint4 cw, sw;  // cos and sin of dims [8 u, 8 u + 8) at position p (rows 16-byte aligned)
  cw.x = cw.y = cw.z = cw.w = 0u;
  sw = cw;
  if (rot) {
    cw = *(const uint4*)(cs + p * cr + u * 16);
    sw = *(const uint4*)(sn + p * sr + u * 16);
  }

  // RoPE (rounded to the storage dtype, as the separate kernel stores it) and staging
  if (role == 1 || role == 2) {
    unsigned wa[4] = {xa.x, xa.y, xa.z, xa.w}, wb[4] = {xb.x, xb.y, xb.z, xb.w};
    float a[8], z[8];
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
      a[2 * e] = @LO@(wa[e]); a[2 * e + 1] = @HI@(wa[e]);
      z[2 * e] = @LO@(wb[e]); z[2 * e + 1] = @HI@(wb[e]);
    }
    if (rot) {
      const unsigned cu[4] = {cw.x, cw.y, cw.z, cw.w}, su[4] = {sw.x, sw.y, sw.z, sw.w};
      float c[8], s[8];
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        c[2 * e] = @LO@(cu[e]); c[2 * e + 1] = @HI@(cu[e]);
        s[2 * e] = @LO@(su[e]); s[2 * e + 1] = @HI@(su[e]);
      }
      unsigned short ha[8], hb[8];
      #pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float x1 = a[e], x2 = z[e];
        const float y1 = x1 * c[e] - x2 * s[e], y2 = x2 * c[e] + x1 * s[e];
        ha[e] = @F2S@(y1);
        hb[e] = @F2S@(y2);
        a[e] = @S2F@(ha[e]);
        z[e] = @S2F@(hb[e]);
      }
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        wa[e] = (unsigned)ha[2 * e] | ((unsigned)ha[2 * e + 1] << 16);
        wb[e] = (unsigned)hb[2 * e] | ((unsigned)hb[2 * e + 1] << 16);
      }
      xa.x = wa[0]; xa.y = wa[1]; xa.z = wa[2]; xa.w = wa[3];
      xb.x = wb[0]; xb.y = wb[1]; xb.z = wb[2]; xb.w = wb[3];
    }
    if (role == 1) {
      float* qa = &qsh[row][u * 8];
      float* qz = &qsh[row][HALF + u * 8];
      *(float4*)qa = make_float4(a[0] * scale, a[1] * scale, a[2] * scale, a[3] * scale);
      *(float4*)(qa + 4) = make_float4(a[4] * scale, a[5] * scale, a[6] * scale, a[7] * scale);
      *(float4*)qz = make_float4(z[0] * scale, z[1] * scale, z[2] * scale, z[3] * scale);
      *(float4*)(qz + 4) = make_float4(z[4] * scale, z[5] * scale, z[6] * scale, z[7] * scale);
    } else {
      *(uint4*)&knew[row][u * 8] = xa;
      *(uint4*)&knew[row][HALF + u * 8] = xb;
      const long long t = slot0 + row;
      if (rank == 0 && t >= 0 && t < L) {  // other blocks take this slot from shared memory
        char* dst = kc + b * kb + hk * kh + t * ks + u * 16;
        *(uint4*)dst = xa;
        *(uint4*)(dst + HALF * 2) = xb;
      }
    }
  } else if (role == 3) {
    *(uint4*)&vnew[row][u * 8] = xa;
    const long long t = slot0 + row;
    if (rank == 0 && t >= 0 && t < L) *(uint4*)(vc + b * vb + hk * vh + t * vs + u * 16) = xa;
  }
  __syncthreads();  // q rows and the new tokens are staged

  // ---- the tiles: scores, softmax, P @ V ---------------------------------------------
  float m_row[RPW], l_row[RPW], alpha[RPW], acc[RPW][8];
  #pragma unroll
  for (int x = 0; x < RPW; ++x) {
    m_row[x] = NEG_INF; l_row[x] = 0.f; alpha[x] = 1.f;
    #pragma unroll
    for (int e = 0; e < 8; ++e) acc[x][e] = 0.f;
  }
  const int o = lane % P8, kq = lane / P8;
  for (long long t0 = my_lo; t0 < my_hi; t0 += TK) {
    if (t0 != my_lo) __syncthreads();  // the last tile's scores and values are used
    const int tn = (int)(my_hi - t0 < TK ? my_hi - t0 : TK);
    {  // a new token's key and value: the shared copy, not the cache being written
      const long long jn = t0 + kk - slot0;
      if (kk < tn && jn >= 0 && jn < Sq) {
        #pragma unroll
        for (int i = 0; i < U; ++i) {
          kr[i] = *(const uint4*)&knew[jn][(part + 4 * i) * 8];
          vr[i] = *(const uint4*)&vnew[jn][(part + 4 * i) * 8];
        }
      }
    }
    #pragma unroll
    for (int i = 0; i < U; ++i) *(uint4*)&vsh[kk][(part + 4 * i) * 8] = vr[i];
    float dot[RMAX];
    #pragma unroll
    for (int r = 0; r < RMAX; ++r) dot[r] = 0.f;
    // a short range leaves most keys of the tile empty: their warps skip the shared-memory
    // reads of q (the shuffles below still take every lane)
    if (kk < tn) {
      #pragma unroll
      for (int i = 0; i < U; ++i) {
        const int pc = part + 4 * i;
        const unsigned w[4] = {kr[i].x, kr[i].y, kr[i].z, kr[i].w};
        float kf[8];
        #pragma unroll
        for (int e = 0; e < 4; ++e) { kf[2 * e] = @LO@(w[e]); kf[2 * e + 1] = @HI@(w[e]); }
        #pragma unroll
        for (int r = 0; r < RMAX; ++r) {
          if (r < R) {
            const float4 qa = *(const float4*)&qsh[r][pc * 8];
            const float4 qz = *(const float4*)&qsh[r][pc * 8 + 4];
            dot[r] += qa.x * kf[0] + qa.y * kf[1] + qa.z * kf[2] + qa.w * kf[3] +
                      qz.x * kf[4] + qz.y * kf[5] + qz.z * kf[6] + qz.w * kf[7];
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
          const long long t = end - Sq + r % Sq;  // row r's own slot
          bool ok = kk < tn && j >= start && j <= t;
          if (window > 0) ok = ok && t - j < window;
          ssh[r][kk] = ok ? dot[r] : NEG_INF;
        }
      }
    }
    if (t0 + TK < my_hi) fetch(t0 + TK);  // the next tile's loads overlap this tile's math
    __syncthreads();
    if (warp < RW) {
      #pragma unroll
      for (int x = 0; x < RPW; ++x) {
        const int r = warp + RW * x;
        alpha[x] = 1.f;
        if (r < R) {
          const float s0 = ssh[r][lane], s1 = ssh[r][lane + 32];
          float mt = fmaxf(s0, s1);
          #pragma unroll
          for (int off = 16; off > 0; off >>= 1)
            mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
          const float mn = fmaxf(m_row[x], mt);
          float p0 = 0.f, p1 = 0.f;
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
    }
    __syncthreads();
    if (warp < RW) {
      #pragma unroll
      for (int x = 0; x < RPW; ++x)
        #pragma unroll
        for (int e = 0; e < 8; ++e) acc[x][e] *= alpha[x];
      #pragma unroll 4
      for (int jj = kq; jj < tn; jj += KQ) {
        const uint4 w4 = *(const uint4*)&vsh[jj][o * 8];
        const unsigned w[4] = {w4.x, w4.y, w4.z, w4.w};
        float vf[8];
        #pragma unroll
        for (int e = 0; e < 4; ++e) { vf[2 * e] = @LO@(w[e]); vf[2 * e + 1] = @HI@(w[e]); }
        #pragma unroll
        for (int x = 0; x < RPW; ++x) {
          if (warp + RW * x < R) {
            const float pr = ssh[warp + RW * x][jj];
            #pragma unroll
            for (int e = 0; e < 8; ++e) acc[x][e] += pr * vf[e];
          }
        }
      }
    }
  }
  #pragma unroll
  for (int x = 0; x < RPW; ++x)
    #pragma unroll
    for (int e = 0; e < 8; ++e)
      #pragma unroll
      for (int off = P8; off < 32; off <<= 1)
        acc[x][e] += __shfl_xor_sync(0xffffffffu, acc[x][e], off);

  // ---- the merge: push partials, one cluster barrier, merge this block's slice --------
  pgk_wait_acquire();  // phase 0: every block of the cluster runs
  if (warp < RW) {
    #pragma unroll
    for (int x = 0; x < RPW; ++x) {
      const int r = warp + RW * x;
      if (r < R) {
        if (kq == 0) {  // dims [8 o, 8 o + 8) belong to block 8 o / SL
          const unsigned dst = (unsigned)(o * 8 / SL);
          const unsigned at = pgk_smem_addr(&recv_a[rank][r][(o * 8) % SL]);
          const unsigned remote = pgk_mapa(at, dst);
          pgk_st_cluster4(remote, acc[x][0], acc[x][1], acc[x][2], acc[x][3]);
          pgk_st_cluster4(remote + 16u, acc[x][4], acc[x][5], acc[x][6], acc[x][7]);
        }
        if (lane < CL) {  // every block needs every block's (max, sum) of the row
          pgk_st_cluster(pgk_mapa(pgk_smem_addr(&recv_m[rank][r]), lane), m_row[x]);
          pgk_st_cluster(pgk_mapa(pgk_smem_addr(&recv_l[rank][r]), lane), l_row[x]);
        }
      }
    }
  }
  pgk_arrive_release();  // phase 1: the pushes are done, and every block has read q
  pgk_wait_acquire();
  char* orow = out + (long long)bk * R * D * 2;
  for (int e = tid; e < R * SL; e += 256) {
    const int r = e / SL, d = e % SL;
    float top = NEG_INF;
    #pragma unroll
    for (int cb = 0; cb < CL; ++cb)
      if (recv_l[cb][r] > 0.f && recv_m[cb][r] > top) top = recv_m[cb][r];
    float sum = 0.f, acc_e = 0.f;
    #pragma unroll
    for (int cb = 0; cb < CL; ++cb) {
      if (recv_l[cb][r] > 0.f) {
        const float w = expf(recv_m[cb][r] - top);
        sum += recv_l[cb][r] * w;
        acc_e += recv_a[cb][r][d] * w;
      }
    }
    pgk_st_@T@(orow + ((long long)r * D + (long long)rank * SL + d) * 2,
               sum > 0.f ? acc_e / sum : 0.f);
  }
  if (rank == 0 && rot) {  // the rotated q and new keys, in place, now that all have read them
    char* at = role == 1
        ? q + b * qb + (hk * G + row / Sq) * qh + (row % Sq) * qs + u * 16
        : kn + b * nkb + row * nks + hk * nkh + u * 16;
    *(uint4*)at = xa;
    *(uint4*)(at + HALF * 2) = xb;
  }
}
"""


def rows_bound(rows: int) -> int | None:
    """The compiled query-row bound for `rows` (G * Sq) query rows per KV head (None: none)."""
    return next((r for r in ROWS if rows <= r), None)


@functools.cache
def attend_short_kernel(out: dt.DataType, d: int, rows: int) -> tuple[str, str]:
    """(name, source) of the short-context attention for a 16-bit cache of dtype `out`,
    head dim `d` (one of DIMS, keys and values alike), `rows` (one of ROWS) query rows per
    KV head at most; fused (RoPE and the cache write first) or not by a flag at launch."""
    lo, hi, extra = _HALVES[out.name]
    f2s, s2f = _CONVERT[out.name]
    name = f"pgk_attend_short_{out.name}_{d}_r{rows}"
    body = _KERNEL
    for key, value in (("NAME", name), ("D", d), ("RMAX", rows), ("CL", CLUSTER),
                       ("TILE", TILE), ("SNEW", NEW_TOKENS), ("LO", lo), ("HI", hi),
                       ("F2S", f2s), ("S2F", s2f), ("T", out.name),
                       ("PDL", _PDL_WAIT)):  # fmt: skip
        body = body.replace(f"@{key}@", str(value))
    return name, PREAMBLE + extra + _HELPERS + body


def all_sources() -> list[tuple[str, str]]:
    """Every instance (the compile test builds each for sm_90)."""
    return [
        attend_short_kernel(t, d, r) for t in (dt.float16, dt.bfloat16) for d in DIMS for r in ROWS
    ]
