"""CUDA C of fused decode-step kernels: RoPE with the KV-cache write (one launch for what
rope_at_inplace and kv_cache_write_pair do), the 16-byte add_rmsnorm for 16-bit rows, and the
step's counter advance (token feedback, positions, slots and ends in one launch).

Like the kernels of ``decode_source.py`` these run inside captured graphs and never raise:
a position outside the tables leaves its pair unrotated, a slot outside the cache drops the
write, exactly as the two separate kernels do.
"""

from __future__ import annotations

import functools

from pygpukit.core import dtypes as dt

from .ctypes_table import ctype, load_any
from .decode_source import _HALVES, _ROUND, _fast_load
from .preamble import PREAMBLE

_ROPE_KV = r"""
// one thread per rotated pair of q, then of k (rotated in place and written, rotated, into
// the key cache at slot slots[b] + s), then one per element of v (written into the value
// cache): q (B, S, Hq, D), k and v (B, S, Hk, D), caches (B, Hk, L, D), all of dtype X
extern "C" __global__ void @NAME@(char* q, char* k, const char* v, char* keys, char* values,
    const char* cs, const char* sn, const char* pos, const char* slots,
    long long B, long long S, long long Hq, long long Hk, long long half, long long P,
    long long L, long long qb, long long qs, long long qh, long long qd,
    long long kb, long long ks, long long kh, long long kd,
    long long vb, long long vs, long long vh, long long vd,
    long long cb, long long ch, long long cl, long long cd,
    long long wb, long long wh, long long wl, long long wd,
    long long cr, long long cc, long long sr, long long sc, long long pb, long long ps,
    long long slb, int ccode, int scode, int pcode, int slcode) {
  pgk_pdl_wait();
  typedef @C@ T;
  const long long nq = B * S * Hq * half, nk = B * S * Hk * half, D = 2 * half;
  PGK_GRID_LOOP(i, nq + nk + B * S * Hk * D) {
    if (i < nq + nk) {
      const bool is_k = i >= nq;
      const long long H = is_k ? Hk : Hq, j = is_k ? i - nq : i;
      long long d = j % half, rest = j / half;
      const long long h = rest % H; rest /= H;
      const long long s = rest % S, b = rest / S;
      char* p1 = is_k ? k + b * kb + s * ks + h * kh + d * kd
                      : q + b * qb + s * qs + h * qh + d * qd;
      char* p2 = p1 + half * (is_k ? kd : qd);
      T x1 = (T)pgk_ld_@X@(p1), x2 = (T)pgk_ld_@X@(p2);
      const long long p = pgk_load_i64(pos + b * pb + s * ps, pcode);
      @XM@ r1 = (@XM@)x1, r2 = (@XM@)x2;
      if (p >= 0 && p < P) {  // a bad position leaves the pair as it was (rope_at's rule)
        const T c = pgk_fast(cs + p * cr + d * cc, ccode);
        const T sv = pgk_fast(sn + p * sr + d * sc, scode);
        r1 = @ROUND1@;  // rounded to X as stored, so the cache gets what k holds
        r2 = @ROUND2@;
        pgk_st_@X@(p1, r1);
        pgk_st_@X@(p2, r2);
      }
      if (is_k) {
        const long long t = pgk_load_i64(slots + b * slb, slcode) + s;
        if (t >= 0 && t < L) {
          char* dst = keys + b * cb + h * ch + t * cl + d * cd;
          pgk_st_@X@(dst, r1);
          pgk_st_@X@(dst + half * cd, r2);
        }
      }
    } else {
      const long long j = i - nq - nk;
      long long d = j % D, rest = j / D;
      const long long h = rest % Hk; rest /= Hk;
      const long long s = rest % S, b = rest / S;
      const long long t = pgk_load_i64(slots + b * slb, slcode) + s;
      if (t >= 0 && t < L)
        pgk_st_@X@(values + b * wb + h * wh + t * wl + d * wd,
                   pgk_ld_@X@(v + b * vb + s * vs + h * vh + d * vd));
    }
  }
}
"""

_NORM_VEC = r"""
// add_rmsnorm for rows of 16-bit x, y, gamma, total and out with H % 8 == 0 and H <= 8 x
// blockDim: a block per row, a thread per 16-byte piece (x, y and gamma loaded together),
// one warp-shuffle reduction and one barrier. The math is the element kernel's: the sum
// rounded as stored, rsqrt as 1 / sqrt(mean + eps), then (sum * inv) * gamma.
extern "C" __global__ void __launch_bounds__(1024) @NAME@(char* __restrict__ total,
    char* __restrict__ out, const char* __restrict__ x, const char* __restrict__ y,
    const char* __restrict__ g, long long H, long long xr, long long yr, double eps) {
  pgk_pdl_wait();
  __shared__ float red[32];
  const long long r = blockIdx.x;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const bool in = (long long)tid * 8 < H;
  uint4 xv, yv, gv;
  xv.x = xv.y = xv.z = xv.w = 0u;
  yv = xv;
  gv = xv;
  if (in) {
    xv = *(const uint4*)(x + r * xr + tid * 16);
    yv = *(const uint4*)(y + r * yr + tid * 16);
    gv = *(const uint4*)(g + tid * 16);
  }
  const unsigned xw[4] = {xv.x, xv.y, xv.z, xv.w}, yw[4] = {yv.x, yv.y, yv.z, yv.w};
  const unsigned gw[4] = {gv.x, gv.y, gv.z, gv.w};
  float keep[8], ss = 0.f;
  unsigned tw[4];
  #pragma unroll
  for (int e = 0; e < 4; ++e) {
    const unsigned short a = @F2S@(@LO@(xw[e]) + @LO@(yw[e]));
    const unsigned short c = @F2S@(@HI@(xw[e]) + @HI@(yw[e]));
    keep[2 * e] = @S2F@(a);
    keep[2 * e + 1] = @S2F@(c);
    tw[e] = (unsigned)a | ((unsigned)c << 16);
    ss += keep[2 * e] * keep[2 * e];
    ss += keep[2 * e + 1] * keep[2 * e + 1];
  }
  if (in) {
    uint4 t4; t4.x = tw[0]; t4.y = tw[1]; t4.z = tw[2]; t4.w = tw[3];
    *(uint4*)(total + (r * H + tid * 8) * 2) = t4;
  }
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (lane == 0) red[warp] = ss;
  __syncthreads();
  float sum = 0.f;  // every thread adds the warps' sums in one order: one answer, no 2nd barrier
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) sum += red[w];
  const float inv = 1.f / sqrtf(sum / (float)H + (float)eps);
  if (in) {
    unsigned ow[4];
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
      const unsigned short a = @F2S@(keep[2 * e] * inv * @LO@(gw[e]));
      const unsigned short c = @F2S@(keep[2 * e + 1] * inv * @HI@(gw[e]));
      ow[e] = (unsigned)a | ((unsigned)c << 16);
    }
    uint4 o4; o4.x = ow[0]; o4.y = ow[1]; o4.z = ow[2]; o4.w = ow[3];
    *(uint4*)(out + (r * H + tid * 8) * 2) = o4;
  }
}
"""

_ADVANCE = r"""
// the end of a decode step: tokens[b] = chosen[b]; positions, slots and ends += 1 (each
// array's own dtype, int32 or int64, by code)
extern "C" __global__ void @NAME@(char* tokens, const char* chosen, char* positions,
    char* slots, char* ends, long long B, long long tb, long long cb, long long pb,
    long long sb, long long eb, int tcode, int ccode, int pcode, int scode, int ecode) {
  pgk_pdl_wait();
  PGK_GRID_LOOP(b, B) {
    pgk_store_index(tokens + b * tb, tcode, pgk_load_i64(chosen + b * cb, ccode));
    pgk_store_index(positions + b * pb, pcode, pgk_load_i64(positions + b * pb, pcode) + 1);
    pgk_store_index(slots + b * sb, scode, pgk_load_i64(slots + b * sb, scode) + 1);
    pgk_store_index(ends + b * eb, ecode, pgk_load_i64(ends + b * eb, ecode) + 1);
  }
}
"""

_STORE_INDEX = (
    "__device__ __forceinline__ void pgk_store_index(char* p, int code, long long v) {\n"
    f"  if (code == {ctype(dt.int32).code}) pgk_st_int32(p, (int)v); else pgk_st_int64(p, v);\n"
    "}\n"
)

#: 16-bit storage conversions: (float -> bits, bits -> float)
_CONVERT = {"bfloat16": ("pgk_f2b", "pgk_b2f"), "float16": ("pgk_f2h", "pgk_h2f")}


def _fill(template: str, **values: object) -> str:
    for key, value in values.items():
        template = template.replace(f"@{key}@", str(value))
    return template


def _compute(*dtypes: dt.DataType) -> dt.DataType:
    return dt.float64 if dt.float64 in dtypes else dt.float32


@functools.cache
def rope_kv_kernel(x: dt.DataType, comp: dt.DataType) -> tuple[str, str]:
    """q, k, v and both caches of dtype `x`; RoPE math in `comp`."""
    name = f"pgk_rope_kv_{x.name}_{comp.name}"
    rnd = _ROUND[x.name]
    body = _fill(_ROPE_KV, NAME=name, C=ctype(comp).math, X=x.name, XM=ctype(x).math,
                 ROUND1=rnd % "x1 * c - x2 * sv", ROUND2=rnd % "x2 * c + x1 * sv")  # fmt: skip
    return name, PREAMBLE + load_any(comp) + _fast_load(comp, x) + body


@functools.cache
def add_rmsnorm_vec_kernel(d: dt.DataType) -> tuple[str, str]:
    """add_rmsnorm with every operand of the 16-bit dtype `d`, 16-byte pieces."""
    lo, hi, extra = _HALVES[d.name]
    f2s, s2f = _CONVERT[d.name]
    name = f"pgk_add_rmsnorm_vec_{d.name}"
    return name, PREAMBLE + extra + _fill(_NORM_VEC, NAME=name, LO=lo, HI=hi, F2S=f2s, S2F=s2f)


@functools.cache
def advance_kernel() -> tuple[str, str]:
    name = "pgk_decode_advance"
    return name, PREAMBLE + _STORE_INDEX + _fill(_ADVANCE, NAME=name)


FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def all_sources() -> list[tuple[str, str]]:
    """Every built-in instance (the compile test builds each)."""
    out = [rope_kv_kernel(x, c) for x in FLOATS for c in (dt.float32, dt.float64)]
    out += [add_rmsnorm_vec_kernel(d) for d in (dt.float16, dt.bfloat16)]
    out.append(advance_kernel())
    return out
