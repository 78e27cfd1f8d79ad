"""CUDA C of the data-movement kernels: index gather/scatter, sorting, scans and searches.

One translation unit holds every kernel of the family (each launched by name), so a
device compiles it once per kernel name and the disk cache keeps the CUBINs. Elements
are moved as raw bytes of their itemsize; values are compared through 64-bit "order
keys" (unsigned integers whose order is the sort order: NaN after +inf, -0.0 equal to
0.0), so one instance serves every dtype.

Kernels (all grid-stride loops unless said otherwise):

- ``pgk_mv_index``: the general indexed copy. Iterating over an N-d index space, each
  element's source offset is a strided part plus, per index array, ``idx * axis_stride``
  (negative indices wrap; an index out of range sets the error flag instead of moving
  data). Mode 0 gathers (``a[i] = x[off]``), 1 scatters (``x[off] = a[i]``), 2 only checks.
  take, take_along_axis, gather, scatter, roll and repeat are all this kernel.
- ``pgk_mv_flags``: int64 flags (element != 0) of a strided array in C order.
- ``pgk_mv_scan``: one block: exclusive prefix sum of the flags, total at ``out[n]``.
- ``pgk_mv_mask_select`` / ``pgk_mv_mask_assign`` / ``pgk_mv_nonzero``: the compactions.
- ``pgk_mv_sort_keys``, ``pgk_mv_bitonic_block`` (whole rows in shared memory),
  ``pgk_mv_bitonic_step`` (one global step for long rows), ``pgk_mv_sort_out``.
- ``pgk_mv_searchsorted``: one binary search per element of ``x2``.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .ctypes_table import CTYPES, load
from .preamble import PREAMBLE

MAXD = 8  # dimensions of an iteration space, and index arrays of one gather
#: struct format of PgkIndex (native alignment), see the C definition below
INDEX_FORMAT = "q" + f"{MAXD}q" * 4 + f"{MAXD * MAXD}q" + f"{MAXD}q" * 2 + "4i" + f"{MAXD}i"
#: struct format of PgkNd: n, ndim, shape[8], strides[2][8]
ND_FORMAT = "qq" + f"{MAXD}q" + f"{2 * MAXD}q"

BITONIC_BLOCK_MAX = 2048  # rows up to this (padded) length sort in shared memory

_BODY = r"""
#define MAXD 8
struct PgkIndex {
  long long n;
  long long shape[MAXD];
  long long a_st[MAXD];      // the plain operand (gather: out, scatter: values)
  long long x_st[MAXD];      // the indexed array's direct strides (0 on indexed dims)
  long long idx_ptr[MAXD];
  long long idx_st[MAXD][MAXD];
  long long ax_st[MAXD];     // x's stride along each index array's axis
  long long ax_n[MAXD];      // and that axis' length
  int ndim, nidx, itemsize, mode;
  int idx_code[MAXD];
};

struct PgkNd {
  long long n, ndim;
  long long shape[MAXD];
  long long st[2][MAXD];
};

__device__ __forceinline__ void pgk_copy_item(char* dst, const char* src, int itemsize) {
  switch (itemsize) {
    case 1: *(unsigned char*)dst = *(const unsigned char*)src; break;
    case 2: *(unsigned short*)dst = *(const unsigned short*)src; break;
    case 4: *(unsigned int*)dst = *(const unsigned int*)src; break;
    case 16:  // complex128: two 8-byte halves (its alignment is 8, not 16)
      ((unsigned long long*)dst)[1] = ((const unsigned long long*)src)[1];
      *(unsigned long long*)dst = *(const unsigned long long*)src;
      break;
    default: *(unsigned long long*)dst = *(const unsigned long long*)src; break;
  }
}

__device__ __forceinline__ long long pgk_nd_offset(const PgkNd& L, long long i, int k) {
  long long off = 0, rem = i;
  for (int d = (int)L.ndim - 1; d >= 0; --d) {
    long long c = rem % L.shape[d];
    rem /= L.shape[d];
    off += c * L.st[k][d];
  }
  return off;
}

// Report a bad index once: flag[0] = which index array + 1, flag[1] = the value.
__device__ __forceinline__ void pgk_bad_index(long long* flag, int k, long long v) {
  if (atomicCAS((unsigned long long*)flag, 0ull, (unsigned long long)(k + 1)) == 0ull)
    flag[1] = v;
}

extern "C" __global__ void pgk_mv_index(char* a, char* x, long long* flag, PgkIndex P) {
  PGK_GRID_LOOP(i, P.n) {
    long long c[MAXD];
    long long rem = i, a_off = 0, x_off = 0;
    for (int d = P.ndim - 1; d >= 0; --d) {
      c[d] = rem % P.shape[d];
      rem /= P.shape[d];
      a_off += c[d] * P.a_st[d];
      x_off += c[d] * P.x_st[d];
    }
    bool ok = true;
    for (int k = 0; k < P.nidx; ++k) {
      long long io = 0;
      for (int d = 0; d < P.ndim; ++d) io += c[d] * P.idx_st[k][d];
      long long v = pgk_load_i64((const char*)P.idx_ptr[k] + io, P.idx_code[k]);
      long long w = v < 0 ? v + P.ax_n[k] : v;
      if (w < 0 || w >= P.ax_n[k]) { pgk_bad_index(flag, k, v); ok = false; break; }
      x_off += w * P.ax_st[k];
    }
    if (!ok || P.mode == 2) continue;
    if (P.mode == 0) pgk_copy_item(a + a_off, x + x_off, P.itemsize);
    else pgk_copy_item(x + x_off, a + a_off, P.itemsize);
  }
}

extern "C" __global__ void pgk_mv_flags(long long* flags, const char* x, int code, PgkNd L) {
  PGK_GRID_LOOP(i, L.n) {
    const char* p = x + pgk_nd_offset(L, i, 0);
    double v = pgk_load_f64(p, code);
    flags[i] = (v != 0.0) ? 1 : 0;  // NaN is nonzero, -0.0 is zero
  }
}

// One block of 1024 threads: exclusive prefix sum of flags[0..n) into pos, total at pos[n].
extern "C" __global__ void pgk_mv_scan(long long* pos, const long long* flags, long long n) {
  __shared__ long long buf[1024];
  __shared__ long long carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (long long base = 0; base < n; base += 1024) {
    long long i = base + threadIdx.x;
    long long v = i < n ? flags[i] : 0;
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = 1; s < 1024; s <<= 1) {
      long long t = threadIdx.x >= s ? buf[threadIdx.x - s] : 0;
      __syncthreads();
      buf[threadIdx.x] += t;
      __syncthreads();
    }
    if (i < n) pos[i] = carry + buf[threadIdx.x] - v;
    __syncthreads();
    if (threadIdx.x == 1023) carry += buf[1023];
    __syncthreads();
  }
  if (threadIdx.x == 0) pos[n] = carry;
}

// x viewed as (m, inner) over L (x's own strides in st[0]); out is contiguous (count, inner).
extern "C" __global__ void pgk_mv_mask_select(char* out, const char* x, const long long* flags,
                                              const long long* pos, long long inner,
                                              int itemsize, PgkNd L) {
  PGK_GRID_LOOP(i, L.n) {
    long long m = i / inner, j = i - m * inner;
    if (!flags[m]) continue;
    pgk_copy_item(out + (pos[m] * inner + j) * itemsize, x + pgk_nd_offset(L, i, 0), itemsize);
  }
}

// x as above; the value is `scalar` (bits of x's dtype) when vals is null, else vals laid
// out over (count, inner) by V (its strides in V.st[0], shape (count, inner dims...)).
extern "C" __global__ void pgk_mv_mask_assign(char* x, const long long* flags,
                                              const long long* pos, long long inner,
                                              int itemsize, unsigned long long scalar,
                                              const char* vals, PgkNd L, PgkNd V) {
  PGK_GRID_LOOP(i, L.n) {
    long long m = i / inner, j = i - m * inner;
    if (!flags[m]) continue;
    char* dst = x + pgk_nd_offset(L, i, 0);
    if (vals) pgk_copy_item(dst, vals + pgk_nd_offset(V, pos[m] * inner + j, 0), itemsize);
    else pgk_copy_item(dst, (const char*)&scalar, itemsize);
  }
}

// out[k] (k < ndim) are int64 arrays of the count; L holds x's shape (strides unused).
struct PgkOuts { long long p[MAXD]; };
extern "C" __global__ void pgk_mv_nonzero(const long long* flags, const long long* pos,
                                          PgkOuts outs, PgkNd L) {
  PGK_GRID_LOOP(i, L.n) {
    if (!flags[i]) continue;
    long long rem = i, at = pos[i];
    for (int d = (int)L.ndim - 1; d >= 0; --d) {
      ((long long*)outs.p[d])[at] = rem % L.shape[d];
      rem /= L.shape[d];
    }
  }
}

// ---- order keys ------------------------------------------------------------------------
__device__ __forceinline__ unsigned long long pgk_key_f(double v) {
  if (v != v) return 0xFFFFFFFFFFFFFFF0ull;  // NaN: after +inf
  if (v == 0.0) v = 0.0;                     // -0.0 equals 0.0
  unsigned long long b = (unsigned long long)__double_as_longlong(v);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ unsigned long long pgk_key_i(long long v) {
  return (unsigned long long)v ^ 0x8000000000000000ull;
}
// The order key of the element at p (dtype `code`), compared as float when is_float.
__device__ __forceinline__ unsigned long long pgk_key(const char* p, int code, int is_float) {
  return is_float ? pgk_key_f(pgk_load_f64(p, code)) : pgk_key_i(pgk_load_i64(p, code));
}

// x is contiguous (rows, n); keys/idx are (rows, P), the padding after n sorts last.
extern "C" __global__ void pgk_mv_sort_keys(unsigned long long* keys, long long* idx,
                                            const char* x, int code, int is_float,
                                            int itemsize, int descending, long long rows,
                                            long long n, long long P) {
  PGK_GRID_LOOP(i, rows * P) {
    long long r = i / P, j = i - r * P;
    if (j < n) {
      unsigned long long k = pgk_key(x + (r * n + j) * itemsize, code, is_float);
      keys[i] = descending ? ~k : k;
      idx[i] = j;
    } else {
      keys[i] = 0xFFFFFFFFFFFFFFFFull;
      idx[i] = j;
    }
  }
}

__device__ __forceinline__ bool pgk_pair_gt(unsigned long long ka, long long ia,
                                            unsigned long long kb, long long ib) {
  return ka > kb || (ka == kb && ia > ib);
}

// One block per row, the whole (padded) row in shared memory; P <= 2 * blockDim.x.
extern "C" __global__ void pgk_mv_bitonic_block(unsigned long long* keys, long long* idx,
                                                long long P) {
  extern __shared__ unsigned long long smem[];
  unsigned long long* sk = smem;
  long long* si = (long long*)(smem + P);
  long long row = blockIdx.x;
  for (long long t = threadIdx.x; t < P; t += blockDim.x) {
    sk[t] = keys[row * P + t];
    si[t] = idx[row * P + t];
  }
  __syncthreads();
  for (long long k = 2; k <= P; k <<= 1) {
    for (long long j = k >> 1; j > 0; j >>= 1) {
      for (long long t = threadIdx.x; t < P; t += blockDim.x) {
        long long l = t ^ j;
        if (l > t) {
          bool up = (t & k) == 0;
          bool gt = pgk_pair_gt(sk[t], si[t], sk[l], si[l]);
          if (gt == up) {
            unsigned long long tk = sk[t]; sk[t] = sk[l]; sk[l] = tk;
            long long ti = si[t]; si[t] = si[l]; si[l] = ti;
          }
        }
      }
      __syncthreads();
    }
  }
  for (long long t = threadIdx.x; t < P; t += blockDim.x) {
    keys[row * P + t] = sk[t];
    idx[row * P + t] = si[t];
  }
}

// One compare-exchange step (k, j) of the bitonic network over every row.
extern "C" __global__ void pgk_mv_bitonic_step(unsigned long long* keys, long long* idx,
                                               long long rows, long long P, long long k,
                                               long long j) {
  PGK_GRID_LOOP(i, rows * P) {
    long long r = i / P, t = i - r * P, l = t ^ j;
    if (l <= t) continue;
    long long a = r * P + t, b = r * P + l;
    bool up = (t & k) == 0;
    if (pgk_pair_gt(keys[a], idx[a], keys[b], idx[b]) == up) {
      unsigned long long tk = keys[a]; keys[a] = keys[b]; keys[b] = tk;
      long long ti = idx[a]; idx[a] = idx[b]; idx[b] = ti;
    }
  }
}

// out (rows, n) contiguous: the sorted elements of x (values) or the indices (argsort).
extern "C" __global__ void pgk_mv_sort_out(char* out, const char* x, const long long* idx,
                                           int itemsize, int values, long long rows,
                                           long long n, long long P) {
  PGK_GRID_LOOP(i, rows * n) {
    long long r = i / n, j = i - r * n;
    long long src = idx[r * P + j];
    if (values) pgk_copy_item(out + i * itemsize, x + (r * n + src) * itemsize, itemsize);
    else ((long long*)out)[i] = src;
  }
}

// x1 1-D (stride s1, length m; sorter optional), x2 and out over L (st[0] x2, st[1] out).
// is_float: compare as float keys (values widened to double, then rounded to float when
// round_f32); otherwise as int64.
extern "C" __global__ void pgk_mv_searchsorted(long long* out, const char* x1, long long s1,
                                               int c1, const char* x2, int c2,
                                               const char* sorter, long long ss, int cs,
                                               long long m, int is_float, int round_f32,
                                               int right, PgkNd L) {
  PGK_GRID_LOOP(i, L.n) {
    const char* p2 = x2 + pgk_nd_offset(L, i, 0);
    unsigned long long v;
    if (is_float) {
      double d = pgk_load_f64(p2, c2);
      if (round_f32) d = (double)(float)d;
      v = pgk_key_f(d);
    } else {
      v = pgk_key_i(pgk_load_i64(p2, c2));
    }
    long long lo = 0, hi = m;
    while (lo < hi) {
      long long mid = (lo + hi) >> 1;
      long long at = sorter ? pgk_load_i64(sorter + mid * ss, cs) : mid;
      const char* p1 = x1 + at * s1;
      unsigned long long k;
      if (is_float) {
        double d = pgk_load_f64(p1, c1);
        if (round_f32) d = (double)(float)d;
        k = pgk_key_f(d);
      } else {
        k = pgk_key_i(pgk_load_i64(p1, c1));
      }
      bool go_right = right ? (k <= v) : (k < v);
      if (go_right) lo = mid + 1; else hi = mid;
    }
    *(long long*)((char*)out + pgk_nd_offset(L, i, 1)) = lo;
  }
}
"""

NAMES = (
    "pgk_mv_index", "pgk_mv_flags", "pgk_mv_scan", "pgk_mv_mask_select", "pgk_mv_mask_assign",
    "pgk_mv_nonzero", "pgk_mv_sort_keys", "pgk_mv_bitonic_block", "pgk_mv_bitonic_step",
    "pgk_mv_sort_out", "pgk_mv_searchsorted",
)  # fmt: skip

#: struct formats of each kernel's parameters (native alignment)
ARG_FORMATS = {
    "pgk_mv_index": "@QQQ" + INDEX_FORMAT,
    "pgk_mv_flags": "@QQi" + "4x" + ND_FORMAT,
    "pgk_mv_scan": "@QQq",
    "pgk_mv_mask_select": "@QQQQqi4x" + ND_FORMAT,
    "pgk_mv_mask_assign": "@QQQqi4xQQ" + ND_FORMAT + ND_FORMAT,
    "pgk_mv_nonzero": "@QQ" + f"{MAXD}Q" + ND_FORMAT,
    "pgk_mv_sort_keys": "@QQQiiiiqqq",
    "pgk_mv_bitonic_block": "@QQq",
    "pgk_mv_bitonic_step": "@QQqqqq",
    "pgk_mv_sort_out": "@QQQiiqqq",
    "pgk_mv_searchsorted": "@QQqiQiQqiqiiiQ",  # PgkNd appended below (aligned to 8)
}
ARG_FORMATS["pgk_mv_searchsorted"] = "@QQqi4xQi4xQqi4xqiii4x" + ND_FORMAT


@functools.cache
def source() -> str:
    """The family's translation unit."""
    return PREAMBLE + _BODY


def code_of(dtype: dt.DataType) -> int:
    """A dtype's number in the preamble's runtime dtype switches."""
    return CTYPES[dtype].code


__all__ = ["ARG_FORMATS", "BITONIC_BLOCK_MAX", "MAXD", "NAMES", "code_of", "load", "source"]
