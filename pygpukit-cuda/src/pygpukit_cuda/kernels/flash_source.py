"""CUDA C of the tensor-core attention kernel (float16/bfloat16, head_dim 64 or 128), causal
or not (the launch passes the mask's shift).

One 4-warp block takes 64 queries of one (batch, head); each warp owns 16 of them and keeps
their query fragments in registers for the whole pass. Key and value tiles of 64 rows are
copied into shared memory with cp.async (the value copy overlaps the score product), the
scores come from mma.sync m16n8k16 with float accumulation, the running softmax (max and sum
per row, in the log2 domain) rescales the output accumulators, and the probabilities go
straight from the score registers into the A fragments of the P @ V product (rounded to the
input type, as flash attention does). Nothing of size seq x seq reaches device memory.

Register layouts (PTX ISA, mma.m16n8k16 with 16-bit A/B): lane = 4 * g + t; A holds rows
g and g + 8, columns 2t, 2t + 1 (+ 8); B holds k rows 2t, 2t + 1 (+ 8) of column g; C holds
rows g and g + 8, columns 2t, 2t + 1. ldmatrix gives B from K rows as stored, and from V
rows with .trans.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

#: queries per block (4 warps of 16), keys per tile, threads per block. 128-query blocks
#: (8 warps sharing each tile) measured slower at head_dim 128 on the H100 (0.27x torch
#: against 0.36x): one such block fits an SM, so its barriers stall all 8 warps at once.
#: Letting a warp skip the math of a tile none of its queries can see measured 15% slower
#: at head_dim 128 (183 against 156 us) and no faster at 64, so every warp does every tile.
BLOCK_Q = 64
BLOCK_K = 64
THREADS = 128
HEAD_DIMS = (64, 128)
DTYPES = (dt.float16, dt.bfloat16)
#: shared-memory row pitch in elements: 8 extra halves keep ldmatrix rows on distinct banks
_PAD = 8

_KERNEL = r"""
#define PGK_FA_D %(D)d
#define PGK_FA_P (PGK_FA_D + %(pad)d)

__device__ __forceinline__ unsigned pgk_fa_pack(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.%(ab)sx2.f32 %%0, %%1, %%2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ void pgk_fa_mma(float* c, const unsigned* a, unsigned b0,
                                           unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.%(ab)s.%(ab)s.f32 "
      "{%%0,%%1,%%2,%%3}, {%%4,%%5,%%6,%%7}, {%%8,%%9}, {%%0,%%1,%%2,%%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void pgk_fa_ldsm4(unsigned* r, const void* p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%%0,%%1,%%2,%%3}, [%%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void pgk_fa_ldsm4_t(unsigned* r, const void* p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%%0,%%1,%%2,%%3}, [%%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// 64 rows of D elements into shared memory, 16 bytes per copy; rows past `rows` are zeros.
__device__ __forceinline__ void pgk_fa_tile(unsigned short* dst, const char* src,
                                            long long stride, long long rows) {
  #pragma unroll
  for (int c = threadIdx.x; c < %(BK)d * (PGK_FA_D / 8); c += %(T)d) {
    const int r = c / (PGK_FA_D / 8), col = (c %% (PGK_FA_D / 8)) * 8;
    const bool in = r < rows;
    const char* g = in ? src + r * stride + col * 2 : src;
    unsigned s = (unsigned)__cvta_generic_to_shared(dst + r * PGK_FA_P + col);
    asm volatile("cp.async.cg.shared.global [%%0], [%%1], 16, %%2;"
                 :: "r"(s), "l"(g), "r"(in ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;");
}

extern "C" __global__ void __launch_bounds__(%(T)d) %(name)s(
    const char* q, const char* k, const char* v, char* out, long long H, long long G,
    long long Sq, long long Skv, long long qb, long long qh, long long qs, long long kb,
    long long kh, long long ks, long long vb, long long vh, long long vs, long long shift,
    float scale_log2) {
  extern __shared__ __align__(16) unsigned char pgk_smem[];
  unsigned short* Ks = (unsigned short*)pgk_smem;
  unsigned short* Vs = Ks + %(BK)d * PGK_FA_P;
  const float NEG_INF = -__int_as_float(0x7f800000);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  // the longest query tiles (most keys to see) start first
  const long long q0 = (long long)(gridDim.x - 1 - blockIdx.x) * %(BQ)d;
  const long long bh = blockIdx.y, b = bh / H, h = bh %% H, hk = h / G;
  const char* qp = q + b * qb + h * qh;
  const char* kp = k + b * kb + hk * kh;
  const char* vp = v + b * vb + hk * vh;
  const long long r0 = q0 + w * 16 + g, r1 = r0 + 8;

  unsigned qa[PGK_FA_D / 16][4];
  #pragma unroll
  for (int kk = 0; kk < PGK_FA_D / 16; ++kk) {
    const int c = kk * 16 + 2 * t;
    qa[kk][0] = r0 < Sq ? *(const unsigned*)(qp + r0 * qs + c * 2) : 0u;
    qa[kk][1] = r1 < Sq ? *(const unsigned*)(qp + r1 * qs + c * 2) : 0u;
    qa[kk][2] = r0 < Sq ? *(const unsigned*)(qp + r0 * qs + (c + 8) * 2) : 0u;
    qa[kk][3] = r1 < Sq ? *(const unsigned*)(qp + r1 * qs + (c + 8) * 2) : 0u;
  }
  float o[PGK_FA_D / 8][4];
  #pragma unroll
  for (int i = 0; i < PGK_FA_D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m0 = NEG_INF, m1 = NEG_INF, l0 = 0.f, l1 = 0.f;

  // query i sees keys j <= i + shift: Skv - Sq for the causal mask aligned bottom-right,
  // Skv (or more) for none
  long long q_hi = q0 + %(BQ)d - 1 < Sq - 1 ? q0 + %(BQ)d - 1 : Sq - 1;
  long long kend = q_hi + shift + 1 < Skv ? q_hi + shift + 1 : Skv;
  const long long warp_lo = q0 + w * 16;  // the warp's first query

  for (long long j0 = 0; j0 < kend; j0 += %(BK)d) {
    __syncthreads();  // every warp is done with the previous tiles
    pgk_fa_tile(Ks, kp + j0 * ks, ks, Skv - j0);
    pgk_fa_tile(Vs, vp + j0 * vs, vs, Skv - j0);
    asm volatile("cp.async.wait_group 1;");
    __syncthreads();

    float s[%(BK)d / 8][4];
    #pragma unroll
    for (int i = 0; i < %(BK)d / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
    const int mi = lane >> 3, mr = lane & 7;
    #pragma unroll
    for (int kk = 0; kk < PGK_FA_D / 16; ++kk) {
      #pragma unroll
      for (int np = 0; np < %(BK)d / 16; ++np) {
        unsigned bf[4];
        pgk_fa_ldsm4(bf, Ks + (np * 16 + mr + (mi >> 1) * 8) * PGK_FA_P + kk * 16 + (mi & 1) * 8);
        pgk_fa_mma(s[2 * np], qa[kk], bf[0], bf[1]);
        pgk_fa_mma(s[2 * np + 1], qa[kk], bf[2], bf[3]);
      }
    }
    const bool masked = j0 + %(BK)d - 1 > warp_lo + shift || j0 + %(BK)d > Skv;
    float mx0 = NEG_INF, mx1 = NEG_INF;
    #pragma unroll
    for (int nt = 0; nt < %(BK)d / 8; ++nt) {
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[nt][e] * scale_log2;
        if (masked) {
          const long long j = j0 + nt * 8 + 2 * t + (e & 1);
          const long long row = e < 2 ? r0 : r1;
          if (j > row + shift || j >= Skv) x = NEG_INF;
        }
        s[nt][e] = x;
      }
      mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
      mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
    }
    #pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    // a row that has seen no visible key yet keeps probabilities and rescale at zero
    const float base0 = n0 == NEG_INF ? 0.f : n0, base1 = n1 == NEG_INF ? 0.f : n1;
    const float a0 = exp2f(m0 - base0), a1 = exp2f(m1 - base1);
    float ps0 = 0.f, ps1 = 0.f;
    #pragma unroll
    for (int nt = 0; nt < %(BK)d / 8; ++nt) {
      s[nt][0] = exp2f(s[nt][0] - base0); s[nt][1] = exp2f(s[nt][1] - base0);
      s[nt][2] = exp2f(s[nt][2] - base1); s[nt][3] = exp2f(s[nt][3] - base1);
      ps0 += s[nt][0] + s[nt][1];
      ps1 += s[nt][2] + s[nt][3];
    }
    l0 = l0 * a0 + ps0;  // per-lane partial sums: the group's lanes share each row's scale
    l1 = l1 * a1 + ps1;
    m0 = n0; m1 = n1;
    #pragma unroll
    for (int i = 0; i < PGK_FA_D / 8; ++i) {
      o[i][0] *= a0; o[i][1] *= a0; o[i][2] *= a1; o[i][3] *= a1;
    }

    asm volatile("cp.async.wait_group 0;");
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < %(BK)d / 16; ++kk) {
      unsigned pa[4];
      pa[0] = pgk_fa_pack(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = pgk_fa_pack(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = pgk_fa_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = pgk_fa_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      #pragma unroll
      for (int dp = 0; dp < PGK_FA_D / 16; ++dp) {
        unsigned bf[4];
        pgk_fa_ldsm4_t(bf, Vs + (kk * 16 + mr + (mi & 1) * 8) * PGK_FA_P + dp * 16 + (mi >> 1) * 8);
        pgk_fa_mma(o[2 * dp], pa, bf[0], bf[1]);
        pgk_fa_mma(o[2 * dp + 1], pa, bf[2], bf[3]);
      }
    }
  }
  #pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const float i0 = 1.f / l0, i1 = 1.f / l1;  // no visible key: 0 * inf, NaN as the reference
  #pragma unroll
  for (int i = 0; i < PGK_FA_D / 8; ++i) {
    const int c = i * 8 + 2 * t;
    if (r0 < Sq) *(unsigned*)(out + ((bh * Sq + r0) * PGK_FA_D + c) * 2) =
        pgk_fa_pack(o[i][0] * i0, o[i][1] * i0);
    if (r1 < Sq) *(unsigned*)(out + ((bh * Sq + r1) * PGK_FA_D + c) * 2) =
        pgk_fa_pack(o[i][2] * i1, o[i][3] * i1);
  }
}
"""


def shared_bytes(head_dim: int) -> int:
    """Dynamic shared memory of one block: a key and a value tile."""
    return 2 * BLOCK_K * (head_dim + _PAD) * 2


@functools.cache
def flash_kernel(dtype: dt.DataType, head_dim: int) -> tuple[str, str]:
    """(name, source) of the instance for `dtype` and `head_dim`."""
    if dtype not in DTYPES or head_dim not in HEAD_DIMS:
        raise ValueError(f"no flash attention instance for {dtype.name}, head_dim {head_dim}")
    name = f"pgk_flash_causal_{dtype.name}_d{head_dim}"
    ab = "f16" if dtype is dt.float16 else "bf16"
    src = _KERNEL % {"name": name, "D": head_dim, "pad": _PAD, "ab": ab,
                     "BQ": BLOCK_Q, "BK": BLOCK_K, "T": THREADS}  # fmt: skip
    return name, src


def all_sources() -> list[tuple[str, str]]:
    return [flash_kernel(d, hd) for d in DTYPES for hd in HEAD_DIMS]
