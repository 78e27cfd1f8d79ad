"""CUDA C of the NVRTC matrix-product kernels: the fallback when cuBLASLt is absent, and the
only path for integer dtypes.

Two families, both reading strided operands through byte strides (transposed and broadcast
views need no copy) and writing a contiguous (batch, M, N) output:

- ``simt_kernel(dtype)``: a 64x64 tile per 256-thread block, 16-deep K steps through
  shared memory, 4x4 outputs per thread. Floats accumulate in their math type (float for
  the half types and float32: exact float32; double for float64); integers accumulate in
  64-bit unsigned arithmetic, which is exact modulo the dtype's wrap-around.
- ``mma_kernel(dtype)``: tensor cores through ``mma.sync`` inline PTX (sm_80+), float32
  accumulation: m16n8k16 for float16 and bfloat16, m16n8k8 TF32 for float32 with
  ``allow_tf32``. A 64x64 tile per 4-warp block, each warp 32x32.

Batches: grid z walks the batch index, split into at most ``MAX_BATCH_DIMS`` dimensions
with their own strides per operand (zero where broadcast).
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .ctypes_table import ctype
from .preamble import PREAMBLE

MAX_BATCH_DIMS = 4
#: struct format of the kernel arguments: A, B, C, M, N, K, sam, sak, sbk, sbn, PgkGemmBatch
ARG_FORMAT = "@QQQ" + "q" * 7 + "qq" + f"{3 * MAX_BATCH_DIMS}q"

_BATCH = r"""
struct PgkGemmBatch {
  long long count;
  long long ndim;
  long long shape[4];
  long long sa[4];
  long long sb[4];
};
__device__ __forceinline__ void pgk_batch_offsets(const PgkGemmBatch& bt, long long z,
                                                  long long* oa, long long* ob) {
  long long a = 0, b = 0;
  #pragma unroll 1
  for (int d = (int)bt.ndim - 1; d >= 0; --d) {
    long long c = z % bt.shape[d];
    z /= bt.shape[d];
    a += c * bt.sa[d];
    b += c * bt.sb[d];
  }
  *oa = a; *ob = b;
}
#define PGK_GEMM_ARGS const char* A, const char* B, char* C, long long M, long long N, \
  long long K, long long sam, long long sak, long long sbk, long long sbn, PgkGemmBatch bt
"""

_SIMT = r"""
extern "C" __global__ void __launch_bounds__(256) %(name)s(PGK_GEMM_ARGS) {
  typedef %(acc)s acc_t;
  __shared__ acc_t As[16][64 + 1];
  __shared__ acc_t Bs[16][64 + 1];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const long long m0 = (long long)blockIdx.y * 64, n0 = (long long)blockIdx.x * 64;
  for (long long z = blockIdx.z; z < bt.count; z += gridDim.z) {
    long long oa, ob;
    pgk_batch_offsets(bt, z, &oa, &ob);
    const char* Ab = A + oa;
    const char* Bb = B + ob;
    acc_t acc[4][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
      #pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = (acc_t)0;
    for (long long k0 = 0; k0 < K; k0 += 16) {
      #pragma unroll
      for (int r = 0; r < 4; ++r) {
        int idx = tid + 256 * r;
        int row = idx >> 4, kk = idx & 15;  // A: consecutive threads walk k
        long long m = m0 + row, k = k0 + kk;
        As[kk][row] = (m < M && k < K) ? (acc_t)(%(load_a)s) : (acc_t)0;
        int kb = idx >> 6, col = idx & 63;  // B: consecutive threads walk n
        long long n = n0 + col, k2 = k0 + kb;
        Bs[kb][col] = (n < N && k2 < K) ? (acc_t)(%(load_b)s) : (acc_t)0;
      }
      __syncthreads();
      #pragma unroll
      for (int kk = 0; kk < 16; ++kk) {
        acc_t a[4], b[4];
        #pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
        #pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
        #pragma unroll
        for (int i = 0; i < 4; ++i)
          #pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
      }
      __syncthreads();
    }
    char* Cb = C + z * M * N * %(size)d;
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
      long long m = m0 + ty + 16 * i;
      if (m >= M) continue;
      #pragma unroll
      for (int j = 0; j < 4; ++j) {
        long long n = n0 + tx + 16 * j;
        if (n < N) pgk_st_%(dtype)s(Cb + (m * N + n) * %(size)d, %(store)s);
      }
    }
  }
}
"""

# Tensor-core tile: smem rows padded so the fragment reads of a warp hit 32 distinct banks.
_MMA = r"""
extern "C" __global__ void __launch_bounds__(128) %(name)s(PGK_GEMM_ARGS) {
  typedef %(word)s word_t;            // one smem element: 16-bit half/bf16 or 32-bit tf32
  __shared__ __align__(16) word_t As[64][16 + %(pad)d];
  __shared__ __align__(16) word_t Bs[64][16 + %(pad)d];  // stored n-major: Bs[n][k]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
  const long long m0 = (long long)blockIdx.y * 64, n0 = (long long)blockIdx.x * 64;
  for (long long z = blockIdx.z; z < bt.count; z += gridDim.z) {
    long long oa, ob;
    pgk_batch_offsets(bt, z, &oa, &ob);
    const char* Ab = A + oa;
    const char* Bb = B + ob;
    float acc[2][4][4];
    #pragma unroll
    for (int i = 0; i < 2; ++i)
      #pragma unroll
      for (int j = 0; j < 4; ++j)
        #pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;
    for (long long k0 = 0; k0 < K; k0 += 16) {
      #pragma unroll
      for (int r = 0; r < 8; ++r) {
        int idx = tid + 128 * r;
        int row = idx >> 4, kk = idx & 15;
        long long m = m0 + row, k = k0 + kk;
        As[row][kk] = (m < M && k < K) ? %(cvt_a)s : (word_t)0;
        int kb = idx >> 6, col = idx & 63;
        long long n = n0 + col, k2 = k0 + kb;
        Bs[col][kb] = (n < N && k2 < K) ? %(cvt_b)s : (word_t)0;
      }
      __syncthreads();
%(mma_body)s
      __syncthreads();
    }
    char* Cb = C + z * M * N * %(size)d;
    #pragma unroll
    for (int i = 0; i < 2; ++i)
      #pragma unroll
      for (int j = 0; j < 4; ++j)
        #pragma unroll
        for (int c = 0; c < 4; ++c) {
          long long m = m0 + wm + i * 16 + g + (c >= 2 ? 8 : 0);
          long long n = n0 + wn + j * 8 + 2 * t + (c & 1);
          if (m < M && n < N) pgk_st_%(dtype)s(Cb + (m * N + n) * %(size)d, acc[i][j][c]);
        }
  }
}
"""

# m16n8k16 (half, bfloat16): 32-bit fragment words hold two consecutive k values.
_MMA_K16 = r"""
      {
        unsigned a[2][4], b[4][2];
        #pragma unroll
        for (int i = 0; i < 2; ++i) {
          int r = wm + i * 16 + g;
          a[i][0] = *(const unsigned*)&As[r][2 * t];
          a[i][1] = *(const unsigned*)&As[r + 8][2 * t];
          a[i][2] = *(const unsigned*)&As[r][2 * t + 8];
          a[i][3] = *(const unsigned*)&As[r + 8][2 * t + 8];
        }
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
          int c = wn + j * 8 + g;
          b[j][0] = *(const unsigned*)&Bs[c][2 * t];
          b[j][1] = *(const unsigned*)&Bs[c][2 * t + 8];
        }
        #pragma unroll
        for (int i = 0; i < 2; ++i)
          #pragma unroll
          for (int j = 0; j < 4; ++j)
            asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.%(ptx)s.%(ptx)s.f32 "
              "{%%0,%%1,%%2,%%3}, {%%4,%%5,%%6,%%7}, {%%8,%%9}, {%%0,%%1,%%2,%%3};\n"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]),
                "r"(b[j][0]), "r"(b[j][1]));
      }
"""

# m16n8k8 TF32, twice per 16-deep step: one 32-bit word per k value.
_MMA_TF32 = r"""
      #pragma unroll
      for (int ks = 0; ks < 16; ks += 8) {
        unsigned a[2][4], b[4][2];
        #pragma unroll
        for (int i = 0; i < 2; ++i) {
          int r = wm + i * 16 + g;
          a[i][0] = As[r][ks + t];
          a[i][1] = As[r + 8][ks + t];
          a[i][2] = As[r][ks + t + 4];
          a[i][3] = As[r + 8][ks + t + 4];
        }
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
          int c = wn + j * 8 + g;
          b[j][0] = Bs[c][ks + t];
          b[j][1] = Bs[c][ks + t + 4];
        }
        #pragma unroll
        for (int i = 0; i < 2; ++i)
          #pragma unroll
          for (int j = 0; j < 4; ++j)
            asm volatile(
              "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
              "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]),
                "r"(b[j][0]), "r"(b[j][1]));
      }
"""

_TF32_CVT = r"""
__device__ __forceinline__ unsigned pgk_f2tf32(float f) {
  unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f)); return r;
}
"""

#: dtypes with a tensor-core instance (float32 means TF32, used only with allow_tf32)
MMA_DTYPES = (dt.float16, dt.bfloat16, dt.float32)
SIMT_DTYPES = tuple(d for d in dt.NUMERIC_DTYPES if not d.is_float8 and d.kind != "b")


def _ptr(base: str, i: str, j: str, si: str, sj: str) -> str:
    return f"{base} + {i} * {si} + {j} * {sj}"


@functools.cache
def simt_kernel(dtype: dt.DataType) -> tuple[str, str]:
    """(name, source) of the SIMT kernel for `dtype`."""
    name = f"pgk_gemm_simt_{dtype.name}"
    return name, PREAMBLE + _BATCH + _simt_body(dtype, name)


def _simt_body(dtype: dt.DataType, name: str) -> str:
    c = ctype(dtype)
    if c.is_float_math:
        acc = c.math
        load_a = f"pgk_ld_{dtype.name}({_ptr('Ab', 'm', 'k', 'sam', 'sak')})"
        load_b = f"pgk_ld_{dtype.name}({_ptr('Bb', 'k2', 'n', 'sbk', 'sbn')})"
        store = "acc[i][j]"
    else:  # integers: sign- or zero-extend to 64 bits, wrap on the final store
        acc = "unsigned long long"
        load_a = f"(long long)pgk_ld_{dtype.name}({_ptr('Ab', 'm', 'k', 'sam', 'sak')})"
        load_b = f"(long long)pgk_ld_{dtype.name}({_ptr('Bb', 'k2', 'n', 'sbk', 'sbn')})"
        store = f"({c.math})acc[i][j]"
    return _SIMT % {"name": name, "acc": acc, "load_a": load_a, "load_b": load_b,
                    "size": dtype.itemsize, "dtype": dtype.name, "store": store}  # fmt: skip


@functools.cache
def mma_kernel(dtype: dt.DataType) -> tuple[str, str]:
    """(name, source) of the tensor-core kernel (float32 here means TF32 inputs)."""
    name = f"pgk_gemm_mma_{dtype.name}"
    pa = _ptr("Ab", "m", "k", "sam", "sak")
    pb = _ptr("Bb", "k2", "n", "sbk", "sbn")
    if dtype is dt.float32:
        params = {"word": "unsigned", "pad": 4, "mma_body": _MMA_TF32,
                  "cvt_a": f"pgk_f2tf32(*(const float*)({pa}))",
                  "cvt_b": f"pgk_f2tf32(*(const float*)({pb}))"}  # fmt: skip
        extra = _TF32_CVT
    else:
        ptx = "f16" if dtype is dt.float16 else "bf16"
        params = {"word": "unsigned short", "pad": 8, "mma_body": _MMA_K16 % {"ptx": ptx},
                  "cvt_a": f"*(const unsigned short*)({pa})",
                  "cvt_b": f"*(const unsigned short*)({pb})"}  # fmt: skip
        extra = ""
    body = _MMA % {"name": name, "size": dtype.itemsize, "dtype": dtype.name, **params}
    return name, PREAMBLE + _BATCH + extra + body


def batch_source() -> str:
    """Every instance in one translation unit (what the compile test builds)."""
    parts = [src.split(_BATCH, 1)[1].replace(_TF32_CVT, "") for _, src in all_sources()]
    return PREAMBLE + _BATCH + _TF32_CVT + "".join(parts)


def all_sources() -> list[tuple[str, str]]:
    """Every built-in GEMM instance (for the compile test and precompiling)."""
    return [simt_kernel(d) for d in SIMT_DTYPES] + [mma_kernel(d) for d in MMA_DTYPES]
