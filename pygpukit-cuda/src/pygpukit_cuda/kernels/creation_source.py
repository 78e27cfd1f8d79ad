"""CUDA C of the creation kernels: arange, linspace and eye per output dtype (one source
holds the three), tril/triu per element size (they copy bits or write zero bits)."""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .ctypes_table import convert
from .preamble import PREAMBLE

#: (out, n, out stride, int start, int step, float start, float step, is_float)
ARANGE_FORMAT = "@QqqqqddQ"
#: (out, n, out stride, start, stop, step, endpoint)
LINSPACE_FORMAT = "@QqqdddQ"
#: (out, rows, cols, row stride, col stride, k)
EYE_FORMAT = "@Qqqqqq"
#: (out, x, PgkTri (n, ndim, shape[8], x strides[8], out strides[8]), k, upper)
TRI_FORMAT = "@QQqq24qqq"

_FILL = r"""
extern "C" __global__ void pgk_arange_NAME(char* out, long long n, long long os,
    long long istart, long long istep, double fstart, double fstep, unsigned long long is_float) {
  PGK_GRID_LOOP(i, n) {
    char* p = out + i * os;
    if (is_float) {
      double v = fstart + (double)i * fstep;
      STORE_F(p, v);
    } else {
      long long v = (long long)((unsigned long long)istart + (unsigned long long)i * istep);
      STORE_I(p, v);
    }
  }
}
extern "C" __global__ void pgk_linspace_NAME(char* out, long long n, long long os,
    double start, double stop, double step, unsigned long long endpoint) {
  PGK_GRID_LOOP(i, n) {
    double v = (endpoint && n > 1 && i == n - 1) ? stop : start + (double)i * step;
    STORE_F(out + i * os, v);
  }
}
extern "C" __global__ void pgk_eye_NAME(char* out, long long rows, long long cols,
    long long rs, long long cs, long long k) {
  PGK_GRID_LOOP(i, rows * cols) {
    long long r = i / cols, c = i - r * cols;
    double v = (c - r == k) ? 1.0 : 0.0;
    STORE_F(out + r * rs + c * cs, v);
  }
}
"""

_TRI = r"""
struct PgkTri { long long n, ndim; long long shape[8], xs[8], os[8]; };
extern "C" __global__ void pgk_tri_BYTES(char* out, const char* x, PgkTri L, long long k,
                                         long long upper) {
  PGK_GRID_LOOP(i, L.n) {
    long long rem = i, xo = 0, oo = 0, row = 0, col = 0;
    #pragma unroll 1
    for (int d = (int)L.ndim - 1; d >= 0; --d) {
      long long c = rem % L.shape[d];
      rem /= L.shape[d];
      xo += c * L.xs[d]; oo += c * L.os[d];
      if (d == L.ndim - 1) col = c;
      if (d == L.ndim - 2) row = c;
    }
    bool keep = upper ? (col - row >= k) : (col - row <= k);
    *(T*)(out + oo) = keep ? *(const T*)(x + xo) : (T)0;
  }
}
"""

_UINT = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


@functools.cache
def fill_source(out: dt.DataType) -> str:
    """The source of pgk_arange_/pgk_linspace_/pgk_eye_<dtype>."""
    head = (
        f"#define STORE_F(p, v) pgk_st_{out.name}(p, {convert('(v)', dt.float64, out)})\n"
        f"#define STORE_I(p, v) pgk_st_{out.name}(p, {convert('(v)', dt.int64, out)})\n"
    )
    return PREAMBLE + head + _FILL.replace("NAME", out.name)


@functools.cache
def tri_source(itemsize: int) -> str:
    head = (
        f"typedef {_UINT[itemsize]} T;\n"
        "#define PGK_GRID_LOOP(i, n) \\\n"
        "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \\\n"
        "       i += (long long)gridDim.x * blockDim.x)\n"
    )
    return head + _TRI.replace("BYTES", str(itemsize))


def representative_sources() -> list[tuple[str, str]]:
    """For the compile test: the fill kernels for three dtypes, tril/triu for two sizes."""
    out = [(f"pgk_eye_{d.name}", fill_source(d)) for d in (dt.float16, dt.float64, dt.int32)]
    return out + [(f"pgk_tri_{s}", tri_source(s)) for s in (2, 8)]
