"""cumulative_prod of complex arrays on cuda: the real scan's launch with a complex kernel.

The product mixes the parts, so it cannot run on the real planes as cumulative_sum does
(`complex_planes.scan`). The kernel keeps the real scan's shape (one warp per row, a
shuffle scan per 32 elements carried across chunks, ``kernels/reduction_source.py``) and
its launch arguments, so `reductions` arranges the rows for both alike; a complex value
crosses lanes as two part shuffles.
"""

from __future__ import annotations

import functools
from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from .kernels.preamble import PREAMBLE
from .kernels.reduction_source import COMMON

_SOURCE = r"""
struct CX { R re, im; };
__device__ __forceinline__ CX pgk_cx_mul(CX a, CX b) {
  CX r; r.re = a.re * b.re - a.im * b.im; r.im = a.re * b.im + a.im * b.re; return r;
}
// pgk_group_reduce of the shared helpers (unused here) needs these names
struct PgkS { CX v; };
__device__ __forceinline__ void pgk_init(PgkS& s) { s.v.re = (R)1; s.v.im = (R)0; }
__device__ __forceinline__ void pgk_merge(PgkS& a, const PgkS& b) { a.v = pgk_cx_mul(a.v, b.v); }
extern "C" __global__ void __launch_bounds__(256) NAME(
    char* out, const char* x, PgkRLayout L, long long n, long long xs, long long os,
    long long include) {
  const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (row >= L.nout) return;
  long long xin, xout;
  pgk_kept(L, row, xin, xout);
  CX one; one.re = (R)1; one.im = (R)0;
  if (include) {
    if (lane == 0) *(CX*)(out + xout) = one;
    xout += os;
  }
  CX carry = one;
  for (long long b = 0; b < n; b += 32) {
    const long long r = b + lane;
    CX v = r < n ? *(const CX*)(x + xin + r * xs) : one;
    #pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      CX u;
      u.re = __shfl_up_sync(0xffffffffu, v.re, d);
      u.im = __shfl_up_sync(0xffffffffu, v.im, d);
      if (lane >= d) v = pgk_cx_mul(u, v);
    }
    v = pgk_cx_mul(carry, v);
    if (r < n) *(CX*)(out + xout + r * os) = v;
    carry.re = __shfl_sync(0xffffffffu, v.re, 31);
    carry.im = __shfl_sync(0xffffffffu, v.im, 31);
  }
}
"""


@functools.cache
def scan_kernel(op: str, x: dt.DataType, out: dt.DataType) -> tuple[str, str]:
    """(name, source) of the complex cumulative product (x already of out's dtype)."""
    if op != "cumulative_prod" or x is not out or not out.is_complex:
        raise TypeError(f"the cuda backend has no complex {op} kernel from {x.name} to {out.name}")
    name = f"pgk_cx_cumprod_{out.name}"
    r = "double" if out is dt.complex128 else "float"
    body = _SOURCE.replace("NAME", name).replace("CX", f"pgk_cx_{r}")
    body = body.replace("(R)", f"({r})").replace("R ", f"{r} ")
    return name, PREAMBLE + COMMON + body


def cumulative_prod(real_kernel: Any, complex_kernel: Any) -> Any:
    """The cuda cumulative_prod: `real_kernel` for real data, `complex_kernel` (the real
    scan's launch over `scan_kernel`) once a complex input is in the result's dtype."""

    def kernel(x: GPUArray, out: GPUArray, axis: int, include_initial: bool) -> None:
        if x._dtype.kind != "c" and out._dtype.kind != "c":
            real_kernel(x, out, axis, include_initial)
            return
        if not out.dtype.is_complex:
            raise TypeError(f"cuda cumulative_prod: complex input needs a complex output, got "
                            f"{out.dtype}")  # fmt: skip
        if x.dtype is not out.dtype:  # the standard: the product is taken in the result dtype
            from . import complex_planes

            converted = GPUArray.empty(x.shape, out.dtype, x.device)
            complex_planes.copy(x, converted)
            x = converted
        complex_kernel(x, out, axis, include_initial)

    kernel.__name__ = "cuda_cumulative_prod"
    return kernel
