"""CUDA C of the decode-step ops: embedding rows, RoPE at device positions, KV-cache
writes at device slots, and split-key attention over a cache (flash-decoding).

Index arrays are read with ``pgk_load_i64`` (int32 or int64 by dtype code). No kernel
here can raise: an out-of-range index leaves its elements alone (a NaN row for an
embedding id), because these kernels run inside captured CUDA graphs.

Attention over the cache: one warp per query row and key chunk (``CHUNK`` slots). The 32
lanes take 32 keys at a time (each lane one key's full dot product against the query row
in shared memory), the warp keeps an online softmax (running max and sum), then the lanes
switch to the value dims for P @ V. Each (row, chunk) writes an unnormalised partial
(output, max, sum); a second kernel merges the chunks of each row. Chunks past a row's
valid range exit at once, so one launch shape serves every step of a growing cache.
The chunk length is a launch argument (a multiple of 32, at most ``CHUNK``): a decode step
at batch 1 has only Hq query rows, so the host shortens the chunks until there are enough
warps to cover the GPU. With 16-bit keys in 16-byte aligned rows (``vec``), each lane reads
its key row in 16-byte pieces, all in flight at once, instead of one element at a time (a
chain of D dependent-latency loads was most of the kernel's time at decode).
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .ctypes_table import ctype, load_any
from .preamble import PREAMBLE

#: the most cache slots per (row, chunk) warp, the most head_dim / v_dim, rows per block
CHUNK = 128
MAX_DIM = 256
ROWS_PER_BLOCK = 4
#: add_rmsnorm: row elements each thread holds in registers
NORM_PER_THREAD = 4

_EMBED = r"""
extern "C" __global__ void %(name)s(char* out, const char* w, const char* ids, long long n,
    long long H, long long V, long long wr, long long wc, int icode) {
  PGK_GRID_LOOP(i, n * H) {
    long long r = i / H, c = i %% H;
    long long id = pgk_load_i64(ids + r * %(isize)s, icode);
    char* o = out + i * %(size)d;
    if (id < 0 || id >= V) { pgk_st_%(T)s(o, (%(M)s)__int_as_float(0x7fc00000)); continue; }
    pgk_st_%(T)s(o, pgk_ld_%(T)s(w + id * wr + c * wc));
  }
}
"""

_ROPE_AT = r"""
// q and k in one launch: heads [0, H0) are x0's (q), heads [H0, H0 + H1) x1's (k)
extern "C" __global__ void %(name)s(char* x0, char* x1, const char* cs, const char* sn,
    const char* pos, long long B, long long S, long long H0, long long H1, long long half,
    long long P, long long ab, long long as, long long ah, long long ad,
    long long bb, long long bs, long long bh, long long bd,
    long long cr, long long cc, long long sr, long long sc, long long pb, long long ps,
    int ccode, int scode, int pcode) {
  typedef %(C)s T;
  const long long H = H0 + H1;
  PGK_GRID_LOOP(i, B * S * H * half) {
    long long d = i %% half, rest = i / half;
    long long h = rest %% H; rest /= H;
    long long s = rest %% S, b = rest / S;
    long long p = pgk_load_i64(pos + b * pb + s * ps, pcode);
    if (p < 0 || p >= P) continue;
    char* p1 = h < H0 ? x0 + b * ab + s * as + h * ah + d * ad
                      : x1 + b * bb + s * bs + (h - H0) * bh + d * bd;
    char* p2 = p1 + half * (h < H0 ? ad : bd);
    T x1v = (T)pgk_ld_%(X)s(p1), x2v = (T)pgk_ld_%(X)s(p2);
    T c = pgk_fast(cs + p * cr + d * cc, ccode);
    T sn_ = pgk_fast(sn + p * sr + d * sc, scode);
    pgk_st_%(X)s(p1, (%(XM)s)(x1v * c - x2v * sn_));
    pgk_st_%(X)s(p2, (%(XM)s)(x2v * c + x1v * sn_));
  }
}
"""

_KV_WRITE = r"""
// one or two (cache, new) pairs of one shape: elements [n, 2n) belong to the second pair
extern "C" __global__ void %(name)s(char* cache0, char* cache1, const char* src0,
    const char* src1, const char* slots, long long pairs, long long B, long long H,
    long long S, long long D, long long L,
    long long cb0, long long ch0, long long cl0, long long cd0,
    long long cb1, long long ch1, long long cl1, long long cd1,
    long long nb0, long long nh0, long long ns0, long long nd0,
    long long nb1, long long nh1, long long ns1, long long nd1, long long sb, int ncode0,
    int ncode1, int scode) {
  const long long n = B * H * S * D;
  PGK_GRID_LOOP(j, pairs * n) {
    const bool second = j >= n;
    const long long i = second ? j - n : j;
    long long d = i %% D, rest = i / D;
    long long s = rest %% S; rest /= S;
    long long h = rest %% H, b = rest / H;
    long long t = pgk_load_i64(slots + b * sb, scode) + s;
    if (t < 0 || t >= L) continue;
    const char* src = second ? src1 + b * nb1 + h * nh1 + s * ns1 + d * nd1
                             : src0 + b * nb0 + h * nh0 + s * ns0 + d * nd0;
    char* dst = second ? cache1 + b * cb1 + h * ch1 + t * cl1 + d * cd1
                       : cache0 + b * cb0 + h * ch0 + t * cl0 + d * cd0;
    pgk_st_%(T)s(dst, pgk_load_as_%(T)s(src, second ? ncode1 : ncode0));
  }
}
"""

_ATTEND = r"""
extern "C" __global__ void __launch_bounds__(128, 1) %(name)s(
    const char* q, const char* k, const char* v, const char* starts, const char* ends,
    %(C)s* part, %(C)s* stats, int cq, int ck, int cv, int cst, int cen,
    long long rows, long long Hq, long long G, long long Sq, long long L, long long D,
    long long Dv, long long qb, long long qh, long long qs, long long qd,
    long long kb, long long kh, long long ks, long long kd,
    long long vb, long long vh, long long vs, long long vd,
    long long stb, long long enb, double scale_d, long long window, long long nsplit,
    long long chunk, int vec) {
  typedef %(C)s T;
  const T NEG_INF = -(T)__int_as_float(0x7f800000);
  __shared__ T qsh[%(R)d][%(MAXD)d];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long r = (long long)blockIdx.y * %(R)d + warp, split = blockIdx.x;
  if (r >= rows) return;  // warps are independent: no block barrier below
  const long long i = r %% Sq, bh = r / Sq, h = bh %% Hq, b = bh / Hq, hk = h / G;
  const long long end = pgk_load_i64(ends + b * enb, cen);
  const long long start = pgk_load_i64(starts + b * stb, cst);
  const long long slot = end - Sq + i;  // this query's own slot
  long long lo = split * chunk, hi = lo + chunk;
  if (start > lo) lo = start;
  if (window > 0 && slot - window + 1 > lo) lo = slot - window + 1;
  if (slot + 1 < hi) hi = slot + 1;
  if (L < hi) hi = L;
  const T scale = (T)scale_d;
  const char* qp = q + b * qb + h * qh + i * qs;
  for (long long d = lane; d < D; d += 32)
    qsh[warp][d] = pgk_fast(qp + d * qd, cq) * scale;
  __syncwarp();
  T m = NEG_INF, l = (T)0, acc[%(MAXD)d / 32];
  #pragma unroll
  for (int t = 0; t < %(MAXD)d / 32; ++t) acc[t] = (T)0;
  const char* kp = k + b * kb + hk * kh;
  const char* vp = v + b * vb + hk * vh;
  for (long long j0 = lo; j0 < hi; j0 += 32) {
    const long long j = j0 + lane;
    T s = NEG_INF;
    if (j < hi) {
      const char* kr = kp + j * ks;
      T dot = (T)0;
%(kdot)s
      s = dot;
    }
    T mt = s;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      T other = __shfl_xor_sync(0xffffffffu, mt, o);
      mt = other > mt ? other : mt;
    }
    const T m_new = m > mt ? m : mt;  // finite: lane 0's key is in range
    const T p = j < hi ? %(exp)s(s - m_new) : (T)0;
    const T alpha = m == NEG_INF ? (T)0 : %(exp)s(m - m_new);
    T ps = p;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) ps += __shfl_xor_sync(0xffffffffu, ps, o);
    l = l * alpha + ps;
    m = m_new;
    #pragma unroll
    for (int t = 0; t < %(MAXD)d / 32; ++t) acc[t] *= alpha;
    const int n = (int)(hi - j0 < 32 ? hi - j0 : 32);
%(pv)s
  }
  T* pr = part + (r * nsplit + split) * Dv;
%(store)s
  if (lane == 0) {
    stats[(r * nsplit + split) * 2] = m;
    stats[(r * nsplit + split) * 2 + 1] = l;
  }
}

// one block per row; every warp reads the chunk statistics lane-parallel (a chunk a lane)
// and reduces them with shuffles, so the cost does not grow as a chain over the chunks
extern "C" __global__ void %(name)s_merge(const %(C)s* part, const %(C)s* stats, char* out,
                                          long long nsplit, long long Dv) {
  typedef %(C)s T;
  const T NEG_INF = -(T)__int_as_float(0x7f800000);
  const long long r = blockIdx.x;
  const int lane = threadIdx.x & 31;
  const T* st = stats + r * nsplit * 2;
  T top = NEG_INF;
  for (long long s = lane; s < nsplit; s += 32)
    if (st[2 * s + 1] > (T)0 && st[2 * s] > top) top = st[2 * s];
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const T other = __shfl_xor_sync(0xffffffffu, top, o);
    top = other > top ? other : top;
  }
  T total = (T)0;
  for (long long s = lane; s < nsplit; s += 32)
    if (st[2 * s + 1] > (T)0) total += st[2 * s + 1] * %(exp)s(st[2 * s] - top);
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
  for (long long d = threadIdx.x; d < Dv; d += blockDim.x) {
    T a = (T)0;
    #pragma unroll 4
    for (long long s = 0; s < nsplit; ++s)
      if (st[2 * s + 1] > (T)0) a += part[(r * nsplit + s) * Dv + d] * %(exp)s(st[2 * s] - top);
    pgk_st_%(O)s(out + (r * Dv + d) * %(osize)d, (%(OM)s)(total > (T)0 ? a / total : (T)0));
  }
}
"""


# one lane's key dot product, element by element (any dtype and stride)
_KDOT_GENERIC = r"""
      for (long long d = 0; d < D; ++d) dot += qsh[warp][d] * pgk_fast(kr + d * kd, ck);
"""

# 16-bit keys: 16-byte pieces of the lane's key row, unrolled so every piece is in flight
# together (the host sets vec only for unit-stride, 16-byte aligned rows with D % 8 == 0)
_KDOT_VECTOR = r"""
      if (vec) {
        #pragma unroll
        for (int t = 0; t < %(MAXD)d / 8; ++t) {
          if (t * 8 < D) {
            const uint4 w4 = *(const uint4*)(kr + t * 16);
            const unsigned ww[4] = {w4.x, w4.y, w4.z, w4.w};
            #pragma unroll
            for (int e = 0; e < 4; ++e)
              dot += qsh[warp][t * 8 + 2 * e] * %(lo)s(ww[e]) +
                     qsh[warp][t * 8 + 2 * e + 1] * %(hi)s(ww[e]);
          }
        }
      } else {
        for (long long d = 0; d < D; ++d) dot += qsh[warp][d] * pgk_fast(kr + d * kd, ck);
      }
"""

# P @ V, one key at a time, lanes over the value dims (acc[t]: dim lane + 32 t)
_PV_GENERIC = r"""
    for (int jj = 0; jj < n; ++jj) {
      const T pj = __shfl_sync(0xffffffffu, p, jj);
      const char* vr = vp + (j0 + jj) * vs;
      #pragma unroll
      for (int t = 0; t < %(MAXD)d / 32; ++t) {
        const long long d = lane + 32 * t;
        if (d < Dv) acc[t] += pj * pgk_fast(vr + d * vd, cv);
      }
    }
"""
_STORE_GENERIC = r"""
  #pragma unroll
  for (int t = 0; t < %(MAXD)d / 32; ++t) {
    const long long d = lane + 32 * t;
    if (d < Dv) pr[d] = acc[t];
  }
"""

# 16-bit values (vec): a lane reads dims (2 lane, 2 lane + 1) + 64 t as one 4-byte word, with
# no out-of-line reader in the loop, so the unrolled keys' loads are all in flight together
# (acc[2 t], acc[2 t + 1]: dims 64 t + 2 lane and 64 t + 2 lane + 1)
_PV_VECTOR = r"""
    if (vec) {
      #pragma unroll 8
      for (int jj = 0; jj < n; ++jj) {
        const T pj = __shfl_sync(0xffffffffu, p, jj);
        const char* vr = vp + (j0 + jj) * vs;
        #pragma unroll
        for (int t = 0; t < %(MAXD)d / 64; ++t) {
          const long long d = 64 * t + 2 * lane;
          if (d < Dv) {
            const unsigned w2 = *(const unsigned*)(vr + d * 2);
            acc[2 * t] += pj * %(lo)s(w2);
            acc[2 * t + 1] += pj * %(hi)s(w2);
          }
        }
      }
    } else {
%(generic)s
    }
"""
_STORE_VECTOR = r"""
  if (vec) {
    #pragma unroll
    for (int t = 0; t < %(MAXD)d / 64; ++t) {
      const long long d = 64 * t + 2 * lane;
      if (d < Dv) { pr[d] = acc[2 * t]; pr[d + 1] = acc[2 * t + 1]; }
    }
  } else {
%(generic)s
  }
"""

_GATHER_MM = r"""
// one warp per output element (t, n): lanes stride over K, then a warp sum; 8 warps a block
extern "C" __global__ void __launch_bounds__(256) %(name)s(char* out, const char* x,
    const char* w, const char* ids, long long T, long long N, long long K, long long E,
    long long xr, long long xc, long long we, long long wn, long long wk, long long ir,
    int xcode, int wcode, int icode) {
  typedef %(C)s T_;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long n = (long long)blockIdx.x * 8 + warp, t = blockIdx.y;
  if (n >= N) return;
  const long long e = pgk_load_i64(ids + t * ir, icode);
  char* o = out + (t * N + n) * %(osize)d;
  if (e < 0 || e >= E) {
    if (lane == 0) pgk_st_%(O)s(o, (%(OM)s)__int_as_float(0x7fc00000));
    return;
  }
  const char* xp = x + t * xr;
  const char* wp = w + e * we + n * wn;
  T_ acc = (T_)0;
  for (long long k = lane; k < K; k += 32)
    acc += pgk_fast(xp + k * xc, xcode) * pgk_fast(wp + k * wk, wcode);
  #pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) pgk_st_%(O)s(o, (%(OM)s)acc);
}
"""


_ADD_RMSNORM = r"""
// one block per row: total = x + y (stored, rounded), then out = total * rsqrt(mean + eps) * g.
// When x, y and g have total's dtype (the usual case), each thread keeps its first %(PER)d
// rounded sums in registers (a row of up to %(PER)d x blockDim elements never reads `total`
// back), with every load issued before the first store: a row costs a few memory latencies
// instead of one per element. Other dtypes and longer rows take the element loops.
extern "C" __global__ void __launch_bounds__(1024, 1) %(name)s(char* __restrict__ total,
    char* __restrict__ out, const char* __restrict__ x, const char* __restrict__ y,
    const char* __restrict__ g, long long H, long long xr, long long xc,
    long long yr, long long yc, long long gc, int xcode, int ycode, int gcode, double eps) {
  typedef %(C)s T;
  __shared__ T red[32];
  const long long r = blockIdx.x, step = blockDim.x;
  char* trow = total + r * H * %(tsize)d;
  const bool fast = xcode == %(E)d && ycode == %(E)d && gcode == %(E)d;
  const long long tail = threadIdx.x + (fast ? %(PER)d : 0) * step;
  T ss = (T)0, keep[%(PER)d];
  if (fast) {
    #pragma unroll
    for (int t = 0; t < %(PER)d; ++t) {
      const long long i = threadIdx.x + t * step;
      keep[t] = i < H ? (T)pgk_ld_%(S)s(x + r * xr + i * xc) + (T)pgk_ld_%(S)s(y + r * yr + i * yc)
                      : (T)0;
    }
    #pragma unroll
    for (int t = 0; t < %(PER)d; ++t) {
      const long long i = threadIdx.x + t * step;
      if (i < H) {
        keep[t] = (T)(%(round)s);  // the sum rounded as stored, as the norm reads it
        pgk_st_%(S)s(trow + i * %(tsize)d, (%(SM)s)keep[t]);
        ss += keep[t] * keep[t];
      }
    }
  }
  for (long long i = tail; i < H; i += step) {
    T v = pgk_fast(x + r * xr + i * xc, xcode) + pgk_fast(y + r * yr + i * yc, ycode);
    pgk_st_%(S)s(trow + i * %(tsize)d, (%(SM)s)v);
    T rv = (T)pgk_ld_%(S)s(trow + i * %(tsize)d);
    ss += rv * rv;
  }
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    T v = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : (T)0;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  const T inv = (T)1 / sqrt(red[0] / (T)H + (T)eps);
  if (fast) {
    #pragma unroll
    for (int t = 0; t < %(PER)d; ++t) {
      const long long i = threadIdx.x + t * step;
      if (i < H) {
        const T gv = (T)pgk_ld_%(S)s(g + i * gc);
        pgk_st_%(O)s(out + (r * H + i) * %(osize)d, (%(OM)s)(keep[t] * inv * gv));
      }
    }
  }
  for (long long i = tail; i < H; i += step) {
    T rv = (T)pgk_ld_%(S)s(trow + i * %(tsize)d);
    T gv = pgk_fast(g + i * gc, gcode);
    pgk_st_%(O)s(out + (r * H + i) * %(osize)d, (%(OM)s)(rv * inv * gv));
  }
}
"""


_LINEAR_ROWS = r"""
// out (M, N) = x (M, K) @ w (N, K)^T for M <= 8: one warp per output column n reads w's
// row n once (the whole cost at decode) and applies it to every row of x.
extern "C" __global__ void __launch_bounds__(256) %(name)s(char* out, const char* x,
    const char* w, long long M, long long N, long long K, long long xr, long long xc,
    long long wr, long long wc, int xcode, int wcode) {
  typedef %(C)s T;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long n = (long long)blockIdx.x * 8 + warp;
  if (n >= N) return;
  const char* wrow = w + n * wr;
  T acc[8];
  #pragma unroll
  for (int m = 0; m < 8; ++m) acc[m] = (T)0;
%(body)s
  #pragma unroll
  for (int m = 0; m < 8; ++m) {
    T v = acc[m];
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0 && m < M) pgk_st_%(O)s(out + (m * N + n) * %(osize)d, (%(OM)s)v);
  }
}
"""

# any dtypes and strides: lanes stride over k
_ROWS_GENERIC = r"""
  for (long long k = lane; k < K; k += 32) {
    const T wv = pgk_fast(wrow + k * wc, wcode);
    #pragma unroll
    for (int m = 0; m < 8; ++m)
      if (m < M) acc[m] += wv * pgk_fast(x + m * xr + k * xc, xcode);
  }
"""

# 16-bit x and w with unit stride along k, 16-byte aligned rows, K % 8 == 0: each lane
# reads 8 elements of w (16 bytes) per step, a warp 512 contiguous bytes; unrolled so
# several loads are in flight per warp (a decode step has too few warps to hide HBM latency)
_ROWS_VECTOR = r"""
  #pragma unroll 4
  for (long long k = (long long)lane * 8; k < K; k += 256) {
    const uint4 wv = *(const uint4*)(wrow + k * 2);
    const unsigned ww[4] = {wv.x, wv.y, wv.z, wv.w};
    float wf[8];
    #pragma unroll
    for (int j = 0; j < 4; ++j) { wf[2 * j] = %(lo)s(ww[j]); wf[2 * j + 1] = %(hi)s(ww[j]); }
    #pragma unroll
    for (int m = 0; m < 8; ++m) {
      if (m < M) {
        const uint4 xv = *(const uint4*)(x + m * xr + k * 2);
        const unsigned xx[4] = {xv.x, xv.y, xv.z, xv.w};
        #pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[m] += wf[2 * j] * %(lo)s(xx[j]) + wf[2 * j + 1] * %(hi)s(xx[j]);
      }
    }
  }
"""

_HALVES = {
    "bfloat16": ("pgk_lo_bf", "pgk_hi_bf",
                 "__device__ __forceinline__ float pgk_lo_bf(unsigned v) "
                 "{ return __uint_as_float(v << 16); }\n"
                 "__device__ __forceinline__ float pgk_hi_bf(unsigned v) "
                 "{ return __uint_as_float(v & 0xffff0000u); }\n"),
    "float16": ("pgk_lo_h", "pgk_hi_h",
                "__device__ __forceinline__ float pgk_lo_h(unsigned v) "
                "{ return pgk_h2f((unsigned short)(v & 0xffffu)); }\n"
                "__device__ __forceinline__ float pgk_hi_h(unsigned v) "
                "{ return pgk_h2f((unsigned short)(v >> 16)); }\n"),
}  # fmt: skip


def _fast_load(comp: dt.DataType, expected: dt.DataType) -> str:
    """``pgk_fast(p, code)``: an operand as comp's math type, read inline when it has the
    `expected` dtype (the common case: one dtype throughout) and through the preamble's
    out-of-line reader otherwise. The code is uniform across a launch, so the branch
    costs nothing; the out-of-line call per element would cost most of the kernel."""
    m = ctype(comp).math
    return (
        f"__device__ __forceinline__ {m} pgk_fast(const char* p, int code) {{\n"
        f"  return code == {ctype(expected).code} ? ({m})pgk_ld_{expected.name}(p)"
        f" : pgk_load_as_{comp.name}(p, code);\n}}\n"
    )


def _compute(*dtypes: dt.DataType) -> dt.DataType:
    return dt.float64 if dt.float64 in dtypes else dt.float32


@functools.cache
def embed_kernel(w: dt.DataType, ids: dt.DataType) -> tuple[str, str]:
    name = f"pgk_embed_{w.name}_{ids.name}"
    body = _EMBED % {"name": name, "T": w.name, "M": ctype(w).math, "size": w.itemsize,
                     "isize": ids.itemsize}  # fmt: skip
    return name, PREAMBLE + body


@functools.cache
def rope_at_kernel(x: dt.DataType, comp: dt.DataType) -> tuple[str, str]:
    name = f"pgk_rope_at_{x.name}_{comp.name}"
    body = _ROPE_AT % {"name": name, "C": ctype(comp).math, "CN": comp.name, "X": x.name,
                       "XM": ctype(x).math}  # fmt: skip
    return name, PREAMBLE + load_any(comp) + _fast_load(comp, x) + body


@functools.cache
def kv_write_kernel(cache: dt.DataType) -> tuple[str, str]:
    name = f"pgk_kv_write_{cache.name}"
    body = _KV_WRITE % {"name": name, "T": cache.name, "M": ctype(cache).math}
    return name, PREAMBLE + load_any(cache) + body


@functools.cache
def attend_kernel(out: dt.DataType) -> tuple[str, str]:
    """(name of the chunk kernel, source); the merge kernel is name + '_merge'."""
    comp = _compute(out)
    name = f"pgk_sdpa_cache_{out.name}"
    extra, kdot = "", _KDOT_GENERIC
    pv, store = _PV_GENERIC % {"MAXD": MAX_DIM}, _STORE_GENERIC % {"MAXD": MAX_DIM}
    if out.name in _HALVES:  # a cache of the output's 16-bit dtype may take vector loads
        lo, hi, extra = _HALVES[out.name]
        fill = {"MAXD": MAX_DIM, "lo": lo, "hi": hi}
        kdot = _KDOT_VECTOR % fill
        pv = _PV_VECTOR % dict(fill, generic=pv)
        store = _STORE_VECTOR % dict(fill, generic=store)
    src = _ATTEND
    for key, text in (("kdot", kdot), ("pv", pv), ("store", store)):
        src = src.replace(f"%({key})s", text.replace("%", "%%"))
    body = src % {"name": name, "C": ctype(comp).math, "CN": comp.name, "O": out.name,
                  "OM": ctype(out).math, "osize": out.itemsize, "R": ROWS_PER_BLOCK,
                  "MAXD": MAX_DIM, "exp": "exp" if comp is dt.float64 else "expf"}  # fmt: skip
    return name, PREAMBLE + load_any(comp) + _fast_load(comp, out) + extra + body


@functools.cache
def gather_matmul_kernel(out: dt.DataType) -> tuple[str, str]:
    comp = _compute(out)
    name = f"pgk_gather_matmul_{out.name}"
    body = _GATHER_MM % {"name": name, "C": ctype(comp).math, "CN": comp.name, "O": out.name,
                         "OM": ctype(out).math, "osize": out.itemsize}  # fmt: skip
    return name, PREAMBLE + load_any(comp) + _fast_load(comp, out) + body


#: a math-type value rounded through a storage dtype, in registers (%s: the value)
_ROUND = {"float16": "pgk_h2f(pgk_f2h((float)(%s)))", "bfloat16": "pgk_b2f(pgk_f2b((float)(%s)))",
          "float32": "(float)(%s)", "float64": "(double)(%s)"}  # fmt: skip


@functools.cache
def add_rmsnorm_kernel(total: dt.DataType, out: dt.DataType) -> tuple[str, str]:
    comp = _compute(total, out)
    name = f"pgk_add_rmsnorm_{total.name}_{out.name}"
    body = _ADD_RMSNORM % {"name": name, "C": ctype(comp).math, "CN": comp.name,
                           "S": total.name, "SM": ctype(total).math, "tsize": total.itemsize,
                           "O": out.name, "OM": ctype(out).math, "osize": out.itemsize,
                           "PER": NORM_PER_THREAD,
                           "round": _ROUND[total.name] % "keep[t]",
                           "E": ctype(total).code}  # fmt: skip
    return name, PREAMBLE + load_any(comp) + _fast_load(comp, total) + body


@functools.cache
def linear_rows_kernel(out: dt.DataType, vector_of: dt.DataType | None) -> tuple[str, str]:
    """The generic instance, or (`vector_of` a 16-bit dtype) the 16-byte-load one."""
    comp = _compute(out)
    fill = {"C": ctype(comp).math, "CN": comp.name, "O": out.name, "OM": ctype(out).math,
            "osize": out.itemsize}  # fmt: skip
    extra = ""
    if vector_of is None:
        name = f"pgk_linear_rows_{out.name}"
        body = _ROWS_GENERIC % fill
    else:
        lo, hi, extra = _HALVES[vector_of.name]
        name = f"pgk_linear_rows_vec_{vector_of.name}_{out.name}"
        body = _ROWS_VECTOR % {"lo": lo, "hi": hi}
    src = _LINEAR_ROWS.replace("%(body)s", body.replace("%", "%%")) % dict(fill, name=name)
    return name, PREAMBLE + load_any(comp) + _fast_load(comp, out) + extra + src


FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def all_sources() -> list[tuple[str, str]]:
    """Every built-in instance (the compile test builds each)."""
    out = [embed_kernel(w, i) for w in FLOATS for i in (dt.int32, dt.int64)]
    out += [rope_at_kernel(x, c) for x in FLOATS for c in (dt.float32, dt.float64)]
    out += [kv_write_kernel(c) for c in FLOATS]
    out += [attend_kernel(o) for o in FLOATS]
    out += [gather_matmul_kernel(o) for o in FLOATS]
    out += [add_rmsnorm_kernel(t, o) for t in FLOATS for o in FLOATS if o.itemsize >= t.itemsize]
    out += [linear_rows_kernel(o, None) for o in FLOATS]
    out += [linear_rows_kernel(d, d) for d in (dt.float16, dt.bfloat16)]
    return out
