"""CUDA C of the fused row ops: softmax, log_softmax, layernorm and rmsnorm, one instance
per (op, x dtype, output dtype).

A group of threads (a warp, or a block of 256 or 1024) owns one row. Rows of up to
16 elements per thread are read once into registers, reduced (max and sum of exp, or the
mean and then the centred squares, or the sum of squares) with warp shuffles and one
shared-memory step, and written once: one read and one write per element. Longer rows
stream from memory in two or three passes. gamma/beta are read in their own float dtype
(a runtime switch), computing in float32, or float64 when the output is float64.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .ctypes_table import convert, ctype
from .preamble import PREAMBLE

#: elements per thread kept in registers
CACHE = 16
#: out, x, gamma, beta, PgkRows (nrows, n, kdim, pad, three arrays of 8), xs, os, gs, bs,
#: gcode, bcode, group, eps
ROWS_FORMAT = "@QQQQ" + "4q24q" + "qqqqqqqd"
NN_OPS = ("softmax", "log_softmax", "layernorm", "rmsnorm")

_COMMON = r"""
struct PgkRows { long long nrows, n, kdim, pad; long long kshape[8], kin[8], kout[8]; };
__device__ __forceinline__ C pgk_maxnan(C a, C b) { return (b != b || b > a) ? b : a; }
// Sum (MAX = 0) or NaN-propagating max (MAX = 1) over a group of `group` threads (a warp,
// or the whole block); every thread of the group gets the result.
template <int MAX> __device__ __forceinline__ C pgk_gred(C v, long long group) {
  #pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    C u = __shfl_xor_sync(0xffffffffu, v, d);
    v = MAX ? pgk_maxnan(v, u) : v + u;
  }
  if (group <= 32) return v;
  __shared__ C sh[32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  C t = lane < (int)(blockDim.x >> 5) ? sh[lane] : (MAX ? PGK_NEG_INF : (C)0);
  #pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    C u = __shfl_xor_sync(0xffffffffu, t, d);
    t = MAX ? pgk_maxnan(t, u) : t + u;
  }
  __syncthreads();
  return t;
}
// gamma/beta in any float dtype, by code
__device__ __forceinline__ C pgk_param(const char* p, long long code) {
  switch (code) {
    case F16_CODE: return (C)pgk_h2f(*(const unsigned short*)p);
    case BF16_CODE: return (C)pgk_b2f(*(const unsigned short*)p);
    case F32_CODE: return (C)*(const float*)p;
    default: return (C)*(const double*)p;
  }
}
// STMT for each element of the row this thread owns, `val` the element as C: from the
// register cache (val is then a reference into it) or loaded from memory.
#define PGK_EACH(STMT)                                                           \
  if (cached) {                                                                 \
    _Pragma("unroll") for (int k = 0; k < PGK_CACHE; ++k) {                     \
      const long long idx = lane + k * group;                                   \
      if (idx < n) { C& val = v[k]; STMT }                                      \
    }                                                                           \
  } else {                                                                      \
    for (long long idx = lane; idx < n; idx += group) {                         \
      C val = PGK_LOADX(xr + idx * xs); STMT                                    \
    }                                                                           \
  }
"""

_KERNEL = r"""
extern "C" __global__ void __launch_bounds__(1024) PGK_NAME(
    char* out, const char* x, const char* gamma, const char* beta, PgkRows L, long long xs,
    long long os, long long gs, long long bs, long long gcode, long long bcode,
    long long group, double eps) {
  const long long row = (long long)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
  const long long lane = threadIdx.x % group;
  if (row >= L.nrows) return;  // uniform over the group
  long long xin = 0, xout = 0, o = row;
  #pragma unroll 1
  for (int d = (int)L.kdim - 1; d >= 0; --d) {
    long long c = o % L.kshape[d];
    o /= L.kshape[d];
    xin += c * L.kin[d]; xout += c * L.kout[d];
  }
  const char* xr = x + xin;
  char* orow = out + xout;
  const long long n = L.n;
  const bool cached = n <= group * PGK_CACHE;
  C v[PGK_CACHE];
  if (cached) {
    #pragma unroll
    for (int k = 0; k < PGK_CACHE; ++k) {
      const long long idx = lane + k * group;
      v[k] = idx < n ? PGK_LOADX(xr + idx * xs) : (C)0;
    }
  }
PGK_BODY
}
"""

_BODIES = {
    "softmax": r"""
  C m = PGK_NEG_INF;
  PGK_EACH(m = pgk_maxnan(m, val);)
  m = pgk_gred<1>(m, group);
  C s = 0;
  PGK_EACH(C e = exp(val - m); s += e; val = e;)
  s = pgk_gred<0>(s, group);
  PGK_EACH(C e = cached ? val : exp(val - m); PGK_STORE(orow + idx * os, e / s);)
""",
    "log_softmax": r"""
  C m = PGK_NEG_INF;
  PGK_EACH(m = pgk_maxnan(m, val);)
  m = pgk_gred<1>(m, group);
  C s = 0;
  PGK_EACH(s += exp(val - m);)
  s = pgk_gred<0>(s, group);
  const C ls = log(s);
  PGK_EACH(PGK_STORE(orow + idx * os, (val - m) - ls);)
""",
    "layernorm": r"""
  C s = 0;
  PGK_EACH(s += val;)
  const C mean = pgk_gred<0>(s, group) / (C)n;
  C d = 0;
  PGK_EACH(C t = val - mean; d += t * t;)
  d = pgk_gred<0>(d, group);
  const C inv = (C)1 / sqrt(d / (C)n + (C)eps);
  PGK_EACH(PGK_STORE(orow + idx * os, (val - mean) * inv * pgk_param(gamma + idx * gs, gcode)
                                      + pgk_param(beta + idx * bs, bcode));)
""",
    "rmsnorm": r"""
  C ss = 0;
  PGK_EACH(ss += val * val;)
  ss = pgk_gred<0>(ss, group);
  const C inv = (C)1 / sqrt(ss / (C)n + (C)eps);
  PGK_EACH(PGK_STORE(orow + idx * os, val * inv * pgk_param(gamma + idx * gs, gcode));)
""",
}


# -- the vector path: contiguous rows, one dtype, whole rows in registers ----------------
#: 16-byte vectors of the row each thread keeps in registers on the vector path
VEC_PER_THREAD = 4
#: most threads per row on the vector path (its launch bound)
VEC_MAX_GROUP = 512

_VKERNEL = r"""
struct alignas(16) PgkVec { PGK_TS e[PGK_V]; };
// STMT for each element this thread holds: vector j = lane + k * group of the row is its
// k-th (k < PGK_NV); `val` is a reference into the register copy.
#define PGK_VEACH(STMT)                                                             \
  _Pragma("unroll") for (int k = 0; k < PGK_NV; ++k) {                              \
    if (lane + k * group < nv) {                                                    \
      _Pragma("unroll") for (int e = 0; e < PGK_V; ++e) { C& val = v[k][e]; STMT }  \
    }                                                                               \
  }
// Write EXPR of each element (`val`, and `g`/`b` the gamma/beta element) as 16-byte
// vectors, from the gamma/beta vectors loaded beside the row (gw, bw).
#define PGK_VOUT(EXPR)                                                              \
  _Pragma("unroll") for (int k = 0; k < PGK_NV; ++k) {                              \
    const int j = lane + k * group;                                                 \
    if (j < nv) {                                                                   \
      PgkVec r;                                                                     \
      _Pragma("unroll") for (int e = 0; e < PGK_V; ++e) {                           \
        const C val = v[k][e];                                                      \
        const C g = PGK_HAS_G ? (C)PGK_FROM(gw[k].e[e]) : (C)0;                     \
        const C b = PGK_HAS_B ? (C)PGK_FROM(bw[k].e[e]) : (C)0;                     \
        PGK_STORE((char*)&r.e[e], EXPR);                                            \
      }                                                                             \
      orow[j] = r;                                                                  \
    }                                                                               \
  }

extern "C" __global__ void __launch_bounds__(512) PGK_NAME_vec(
    char* out, const char* x, const char* gamma, const char* beta, PgkRows L, long long xs,
    long long os, long long gs, long long bs, long long gcode, long long bcode,
    long long group_, double eps) {
  pgk_pdl_wait();
  const int group = (int)group_;
  const long long row = (long long)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
  const int lane = (int)(threadIdx.x % group);
  if (row >= L.nrows) return;  // uniform over the group
  long long xin = 0, xout = 0, o = row;
  #pragma unroll 1
  for (int d = (int)L.kdim - 1; d >= 0; --d) {
    long long c = o % L.kshape[d];
    o /= L.kshape[d];
    xin += c * L.kin[d]; xout += c * L.kout[d];
  }
  const PgkVec* xr = (const PgkVec*)(x + xin);
  PgkVec* orow = (PgkVec*)(out + xout);
  const long long n = L.n;
  const int nv = (int)(n / PGK_V);
  C v[PGK_NV][PGK_V];
  // gamma and beta are loaded with the row, not after its reduction: a decode step's
  // single row would otherwise wait for a second round trip to memory (~1 us of a 3 us
  // kernel); the vectors are few registers, and across rows they stay in L1/L2
  PgkVec gw[PGK_NV], bw[PGK_NV];
  #pragma unroll
  for (int k = 0; k < PGK_NV; ++k) {
    const int j = lane + k * group;
    if (j < nv) {
      if (PGK_HAS_G) gw[k] = ((const PgkVec*)gamma)[j];
      if (PGK_HAS_B) bw[k] = ((const PgkVec*)beta)[j];
      const PgkVec w = xr[j];
      #pragma unroll
      for (int e = 0; e < PGK_V; ++e) v[k][e] = (C)PGK_FROM(w.e[e]);
    }
  }
PGK_BODY
}
"""

_VBODIES = {
    "softmax": r"""
  C m = PGK_NEG_INF;
  PGK_VEACH(m = pgk_maxnan(m, val);)
  m = pgk_gred<1>(m, group);
  C s = 0;
  PGK_VEACH(val = exp(val - m); s += val;)
  s = pgk_gred<0>(s, group);
  PGK_VOUT(val / s)
""",
    "log_softmax": r"""
  C m = PGK_NEG_INF;
  PGK_VEACH(m = pgk_maxnan(m, val);)
  m = pgk_gred<1>(m, group);
  C s = 0;
  PGK_VEACH(s += exp(val - m);)
  s = pgk_gred<0>(s, group);
  const C ls = log(s);
  PGK_VOUT((val - m) - ls)
""",
    "layernorm": r"""
  C s = 0;
  PGK_VEACH(s += val;)
  const C mean = pgk_gred<0>(s, group) / (C)n;
  C d = 0;
  PGK_VEACH(C t = val - mean; d += t * t;)
  d = pgk_gred<0>(d, group);
  const C inv = (C)1 / sqrt(d / (C)n + (C)eps);
  PGK_VOUT((val - mean) * inv * g + b)
""",
    "rmsnorm": r"""
  C ss = 0;
  PGK_VEACH(ss += val * val;)
  ss = pgk_gred<0>(ss, group);
  const C inv = (C)1 / sqrt(ss / (C)n + (C)eps);
  PGK_VOUT(val * inv * g)
""",
}


def vec_width(x: dt.DataType) -> int:
    """Elements per 16-byte vector of x on the vector path."""
    return 16 // x.itemsize


@functools.cache
def nn_vector_kernel(op: str, x: dt.DataType) -> tuple[str, str]:
    """(name, source) of `op`'s vector path: x, gamma, beta and out all of x's dtype, rows
    contiguous and 16-byte aligned, n a multiple of `vec_width(x)` and at most
    VEC_MAX_GROUP * VEC_PER_THREAD vectors (nn.py checks)."""
    name = f"pgk_{op}_{x.name}_vec"
    c = compute_dtype(x)
    lines = [
        f"typedef {ctype(c).math} C;",
        f"#define PGK_TS {ctype(x).storage}",
        f"#define PGK_V {vec_width(x)}",
        f"#define PGK_NV {VEC_PER_THREAD}",
        f"#define PGK_HAS_G {int(op in ('layernorm', 'rmsnorm'))}",
        f"#define PGK_HAS_B {int(op == 'layernorm')}",
        f"#define PGK_FROM(s) pgk_ld_{x.name}((const char*)&(s))",
        "#define PGK_NEG_INF ((C)__longlong_as_double(0xfff0000000000000ll))",
        f"#define PGK_STORE(p, w) pgk_st_{x.name}(p, {convert('(w)', c, x)})",
    ]
    head = _COMMON.split("// gamma/beta in any float dtype")[0]
    kernel = _VKERNEL.replace("PGK_NAME", f"pgk_{op}_{x.name}").replace("PGK_BODY", _VBODIES[op])
    return name, PREAMBLE + "\n".join(lines) + head + kernel


def compute_dtype(out: dt.DataType) -> dt.DataType:
    return dt.float64 if out is dt.float64 else dt.float32


def nn_body(op: str, x: dt.DataType, out: dt.DataType, name: str) -> str:
    c = compute_dtype(out)
    cm = ctype(c).math
    lines = [
        f"typedef {cm} C;",
        f"#define PGK_CACHE {CACHE}",
        "#define PGK_NEG_INF ((C)__longlong_as_double(0xfff0000000000000ll))",
        f"#define PGK_LOADX(p) ((C)pgk_ld_{x.name}(p))",
        f"#define PGK_STORE(p, w) pgk_st_{out.name}(p, {convert('(w)', c, out)})",
        f"#define F16_CODE {ctype(dt.float16).code}",
        f"#define BF16_CODE {ctype(dt.bfloat16).code}",
        f"#define F32_CODE {ctype(dt.float32).code}",
    ]
    kernel = _KERNEL.replace("PGK_NAME", name).replace("PGK_BODY", _BODIES[op])
    return "\n".join(lines) + _COMMON + kernel


@functools.cache
def nn_kernel(op: str, x: dt.DataType, out: dt.DataType) -> tuple[str, str]:
    """(name, source) of `op` reading x's dtype and writing out's."""
    name = f"pgk_{op}_{x.name}_{out.name}"
    return name, PREAMBLE + nn_body(op, x, out, name)


def representative_sources() -> list[tuple[str, str]]:
    """One instance per op, each in another float dtype (for the compile test)."""
    picks = (dt.bfloat16, dt.float32, dt.float64, dt.float16)
    out = [nn_kernel(op, picks[i], picks[i]) for i, op in enumerate(NN_OPS)]
    return out + [nn_vector_kernel(op, picks[i - 1]) for i, op in enumerate(NN_OPS)]
