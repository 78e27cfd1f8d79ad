"""The `cuda` provider's linear-algebra-backed nn kernels: sdpa_causal, rope_inplace,
bias_add_inplace and linear_bias_gelu (conventions in ``pygpukit._ops.nn``).

- ``sdpa_causal``: float16/bfloat16 with head_dim 64 or 128 and aligned rows take the
  tensor-core kernel of ``kernels/flash_source.py``; everything else this general one:
  one 4-warp block per (batch, head, 16 queries); key/value tiles go
  through shared memory and each warp keeps an online softmax (running max and sum) for its
  4 queries, so the score matrix never reaches device memory. Float32 math for the half
  types and float32, float64 for float64; GQA by head index; any strides.
- ``rope_inplace``: a grid-stride loop over (..., seq, heads, head_dim / 2) pairs, strided.
- ``bias_add_inplace``: the provider's strided ``add`` kernel writing x in place.
- ``linear_bias_gelu``: the matmul kernel (weight transposed through the layout, no copy)
  and one fused bias + GELU pass over the output.
"""

from __future__ import annotations

import functools
import math

from pygpukit import GPUArray, KernelProvider
from pygpukit import config as _config
from pygpukit.backend import astype
from pygpukit.core import dtypes as dt

from . import launcher
from . import provider as _provider
from .device_facts import BLOCK
from .device_facts import data_ptr as _ptr
from .kernels import flash_source, source
from .kernels.ctypes_table import ctype, load_any
from .kernels.ops import unary_expr
from .kernels.preamble import PREAMBLE
from .matmul import matmul

FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
_SMEM_LIMIT = 48 * 1024
#: queries per block (4 warps x 4 queries) and the most value dims one lane holds x 32
SDPA_QUERIES = 16
SDPA_MAX_DV = 256

_SDPA = r"""
extern "C" __global__ void __launch_bounds__(128) %(name)s(
    const char* q, const char* k, const char* v, char* out, int cq, int ck, int cv,
    long long H, long long G, long long Sq, long long Skv, long long D, long long Dv,
    long long qb, long long qh, long long qs, long long qd,
    long long kb, long long kh, long long ks, long long kd,
    long long vb, long long vh, long long vs, long long vd, double scale_d, int KT,
    long long shift) {
  typedef %(T)s T;
  const T PGK_NEG_INF = -(T)__int_as_float(0x7f800000);
  extern __shared__ __align__(16) unsigned char pgk_smem[];
  T* Qs = (T*)pgk_smem;                 // [16][D]
  T* Ks = Qs + 16 * D;                  // [KT][D + 1]
  T* Vs = Ks + KT * (D + 1);            // [KT][Dv]
  const T scale = (T)scale_d;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long bh = blockIdx.y, b = bh / H, h = bh %% H, hk = h / G;
  const long long q0 = (long long)blockIdx.x * 16;
  const char* qp = q + b * qb + h * qh;
  const char* kp = k + b * kb + hk * kh;
  const char* vp = v + b * vb + hk * vh;
  for (long long i = tid; i < 16 * D; i += 128) {
    long long r = i / D, d = i %% D;
    Qs[i] = (q0 + r < Sq) ? pgk_load_as_%(Tname)s(qp + (q0 + r) * qs + d * qd, cq) : (T)0;
  }
  // query i sees keys j <= i + shift (Skv - Sq: causal, bottom-right; Skv: no mask)
  long long q_last = q0 + 15 < Sq - 1 ? q0 + 15 : Sq - 1;
  long long kend = q_last + shift + 1;
  if (kend > Skv) kend = Skv;
  T m_run[4], l_run[4], acc[4][8];
  #pragma unroll
  for (int r = 0; r < 4; ++r) {
    m_run[r] = PGK_NEG_INF; l_run[r] = (T)0;
    #pragma unroll
    for (int i = 0; i < 8; ++i) acc[r][i] = (T)0;
  }
  for (long long j0 = 0; j0 < kend; j0 += KT) {
    __syncthreads();  // the previous tile is no longer read (and Qs is written)
    for (long long i = tid; i < (long long)KT * D; i += 128) {
      long long j = i / D, d = i %% D;
      Ks[j * (D + 1) + d] = (j0 + j < Skv) ? pgk_load_as_%(Tname)s(kp + (j0 + j) * ks + d * kd, ck)
                                           : (T)0;
    }
    for (long long i = tid; i < (long long)KT * Dv; i += 128) {
      long long j = i / Dv, d = i %% Dv;
      Vs[i] = (j0 + j < Skv) ? pgk_load_as_%(Tname)s(vp + (j0 + j) * vs + d * vd, cv) : (T)0;
    }
    __syncthreads();
    T s[4];
    #pragma unroll
    for (int r = 0; r < 4; ++r) s[r] = (T)0;
    if (lane < KT) {
      const T* kr = Ks + lane * (D + 1);
      for (long long d = 0; d < D; ++d) {
        T kv = kr[d];
        #pragma unroll
        for (int r = 0; r < 4; ++r) s[r] += Qs[(warp * 4 + r) * D + d] * kv;
      }
    }
    T p[4];
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
      long long qi = q0 + warp * 4 + r, j = j0 + lane;
      bool visible = lane < KT && qi < Sq && j < Skv && j <= qi + shift;
      T sc = visible ? s[r] * scale : PGK_NEG_INF;
      T mt = sc;
      #pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        T other = __shfl_xor_sync(0xffffffffu, mt, o);
        mt = other > mt ? other : mt;
      }
      T m_new = m_run[r] > mt ? m_run[r] : mt;
      p[r] = (visible && m_new != PGK_NEG_INF) ? %(exp)s(sc - m_new) : (T)0;
      T alpha = (m_run[r] == PGK_NEG_INF) ? (T)0 : %(exp)s(m_run[r] - m_new);
      T ps = p[r];
      #pragma unroll
      for (int o = 16; o > 0; o >>= 1) ps += __shfl_xor_sync(0xffffffffu, ps, o);
      l_run[r] = l_run[r] * alpha + ps;
      m_run[r] = m_new;
      #pragma unroll
      for (int i = 0; i < 8; ++i) acc[r][i] *= alpha;
    }
    // P @ V: each value row is read once from shared memory for the warp's 4 queries
    for (int jj = 0; jj < KT; ++jj) {
      T pj[4];
      #pragma unroll
      for (int r = 0; r < 4; ++r) pj[r] = __shfl_sync(0xffffffffu, p[r], jj);
      const T* vr = Vs + jj * Dv;
      #pragma unroll
      for (int i = 0; i < 8; ++i) {
        long long d = lane + 32 * i;
        if (d < Dv) {
          T vv = vr[d];
          #pragma unroll
          for (int r = 0; r < 4; ++r) acc[r][i] += pj[r] * vv;
        }
      }
    }
  }
  #pragma unroll
  for (int r = 0; r < 4; ++r) {
    long long qi = q0 + warp * 4 + r;
    if (qi >= Sq) continue;
    T inv = (T)1 / l_run[r];
    char* orow = out + ((bh * Sq) + qi) * Dv * %(size)d;
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
      long long d = lane + 32 * i;
      if (d < Dv) pgk_st_%(out)s(orow + d * %(size)d, (%(out_math)s)(acc[r][i] * inv));
    }
  }
}
"""

_ROPE = r"""
extern "C" __global__ void %(name)s(char* x, const char* cs, const char* sn, PgkLayout L,
                                   int ccode, int scode, long long half) {
  pgk_pdl_wait();
  typedef %(T)s T;
  PGK_GRID_LOOP(i, L.n) {
    long long o[3];
    pgk_offsets<3>(L, i, o);
    char* p1 = x + o[0];
    char* p2 = p1 + half;
    T x1 = (T)pgk_ld_%(x)s(p1), x2 = (T)pgk_ld_%(x)s(p2);
    T c = pgk_load_as_%(Tname)s(cs + o[1], ccode), s = pgk_load_as_%(Tname)s(sn + o[2], scode);
    pgk_st_%(x)s(p1, (%(x_math)s)(x1 * c - x2 * s));
    pgk_st_%(x)s(p2, (%(x_math)s)(x2 * c + x1 * s));
  }
}
"""


# q and k in one launch (a decode step's rope was two launches of a few hundred elements,
# each ~2 us of latency): index i < Lq.n rotates q, the rest k. Each branch reads its own
# layout struct whole, so neither is copied to local memory by a run-time choice.
_ROPE_PAIR = r"""
#define PGK_ROPE_ONE(X, L, J, HALF)                                                       \
  {                                                                                       \
    long long o[3];                                                                       \
    pgk_offsets<3>(L, J, o);                                                              \
    char* p1 = X + o[0];                                                                  \
    char* p2 = p1 + HALF;                                                                 \
    T x1 = (T)pgk_ld_%(x)s(p1), x2 = (T)pgk_ld_%(x)s(p2);                                 \
    T c = pgk_load_as_%(Tname)s(cs + o[1], ccode), s = pgk_load_as_%(Tname)s(sn + o[2], scode); \
    pgk_st_%(x)s(p1, (%(x_math)s)(x1 * c - x2 * s));                                       \
    pgk_st_%(x)s(p2, (%(x_math)s)(x2 * c + x1 * s));                                       \
  }
extern "C" __global__ void %(name)s(char* xq, char* xk, const char* cs, const char* sn,
                                   PgkLayout Lq, PgkLayout Lk, int ccode, int scode,
                                   long long hq, long long hk) {
  pgk_pdl_wait();
  typedef %(T)s T;
  PGK_GRID_LOOP(i, Lq.n + Lk.n) {
    if (i < Lq.n) PGK_ROPE_ONE(xq, Lq, i, hq)
    else PGK_ROPE_ONE(xk, Lk, i - Lq.n, hk)
  }
}
#undef PGK_ROPE_ONE
"""


def _compute(d: dt.DataType) -> dt.DataType:
    return dt.float64 if d is dt.float64 else dt.float32


@functools.cache
def sdpa_kernel(out: dt.DataType) -> tuple[str, str]:
    comp = _compute(out)
    t = ctype(comp).math
    name = f"pgk_sdpa_causal_{out.name}"
    body = _SDPA % {"name": name, "T": t, "Tname": comp.name, "size": out.itemsize,
                    "out": out.name, "out_math": ctype(out).math,
                    "exp": "exp" if comp is dt.float64 else "expf"}  # fmt: skip
    return name, PREAMBLE + load_any(comp) + body


@functools.cache
def rope_kernel(x: dt.DataType, comp: dt.DataType) -> tuple[str, str]:
    name = f"pgk_rope_{x.name}_{comp.name}"
    body = _ROPE % {"name": name, "T": ctype(comp).math, "Tname": comp.name, "x": x.name,
                    "x_math": ctype(x).math}  # fmt: skip
    return name, PREAMBLE + load_any(comp) + body


@functools.cache
def rope_pair_kernel(x: dt.DataType, comp: dt.DataType) -> tuple[str, str]:
    """RoPE of q and k (both of dtype x) in one launch."""
    name = f"pgk_rope_pair_{x.name}_{comp.name}"
    body = _ROPE_PAIR % {"name": name, "T": ctype(comp).math, "Tname": comp.name,
                         "x": x.name, "x_math": ctype(x).math}  # fmt: skip
    return name, PREAMBLE + load_any(comp) + body


@functools.cache
def bias_gelu_kernel(d: dt.DataType, approximate: str) -> source.KernelSpec:
    """out = gelu(a + b) in d's math type (a the product, b the broadcast bias)."""
    m = ctype(d).math
    expr = f"([]({m} a) {{ return {unary_expr('gelu', ctype(d), approximate)}; }})(a + b)"
    return source.elementwise(f"pgk_bias_gelu_{approximate}_{d.name}", (d, d), d, expr, d)


def all_sources() -> list[tuple[str, str]]:
    """Every built-in instance of this module (compile test, precompile)."""
    out = [sdpa_kernel(d) for d in FLOATS]
    out += [rope_kernel(x, c) for x in FLOATS for c in (dt.float32, dt.float64)]
    out += [rope_pair_kernel(x, c) for x in FLOATS for c in (dt.float32, dt.float64)]
    out += [(s.name, s.source) for s in
            (bias_gelu_kernel(d, a) for d in FLOATS for a in ("none", "tanh"))]  # fmt: skip
    return out


def batch_source() -> str:
    """Every instance in one translation unit (what the compile test builds)."""
    helpers = [load_any(d) for d in FLOATS]
    bodies = []
    for _, src in all_sources():
        body = src[len(PREAMBLE) :]
        for h in helpers:
            body = body.replace(h, "")
        bodies.append(body)
    return PREAMBLE + "".join(helpers) + "".join(bodies)


def _batch_stride(x: GPUArray) -> int | None:
    """The one byte stride of x's leading (*B) dims, or None when they do not merge."""
    stride, expected = 0, None
    for size, s in zip(reversed(x.shape[:-3]), reversed(x.strides[:-3]), strict=True):
        if size == 1:
            continue
        if expected is not None and s != expected:
            return None
        if expected is None:
            stride = s
        expected = s * size
    return stride


def _flash_strides(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray) -> list[int] | None:
    """The byte strides (batch, head, row per operand) when the tensor-core kernel serves
    these operands: one half dtype, head_dim 64 or 128 for both q/k and v, unit element
    stride along head_dim, 16-byte aligned addresses and strides; else None."""
    d = q.shape[-1]
    if out.dtype not in flash_source.DTYPES or d not in flash_source.HEAD_DIMS:
        return None
    if any(x.dtype is not out.dtype for x in (q, k, v)) or v.shape[-1] != d:
        return None
    strides: list[int] = []
    for x in (q, k, v):
        batch = _batch_stride(x)
        if batch is None or x.strides[-1] != x.dtype.itemsize:
            return None
        st = [batch, x.strides[-3], x.strides[-2]]
        if (_ptr(x) % 16) or any(s % 16 for s in st):
            return None
        strides += st
    return strides


def _sdpa_flash(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float,
                strides: list[int], shift: int) -> None:  # fmt: skip
    *_, hq, sq, d = q.shape
    hkv, skv = k.shape[-3], k.shape[-2]
    batch = math.prod(q.shape[:-3]) if q.ndim > 3 else 1
    grid = (-(-sq // flash_source.BLOCK_Q), batch * hq, 1)
    if grid[1] > 65535:
        raise NotImplementedError("cuda sdpa_causal: batch * heads over 65535")
    name, src = flash_source.flash_kernel(out.dtype, d)
    fn = launcher.function(out.device.index, name, src, "@QQQQ" + "q" * 14 + "f")
    fn.launch(grid, (flash_source.THREADS,),
              (_ptr(q), _ptr(k), _ptr(v), _ptr(out), hq, hq // hkv, sq, skv, *strides, shift,
               float(scale) * math.log2(math.e)),
              shared=flash_source.shared_bytes(d))  # fmt: skip


def sdpa_causal(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float) -> None:
    _attend("sdpa_causal", q, k, v, out, scale, k.shape[-2] - q.shape[-2])


def sdpa(q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float) -> None:
    _attend("sdpa", q, k, v, out, scale, k.shape[-2])  # j <= i + Skv: every key


def _attend(op: str, q: GPUArray, k: GPUArray, v: GPUArray, out: GPUArray, scale: float,
            shift: int) -> None:  # fmt: skip
    """Attention where query i sees keys j <= i + shift."""
    flash = _flash_strides(q, k, v, out)
    if flash is not None:
        _sdpa_flash(q, k, v, out, scale, flash, shift)
        return
    *_, hq, sq, d = q.shape
    hkv, skv, dv = k.shape[-3], k.shape[-2], v.shape[-1]
    if dv > SDPA_MAX_DV:
        raise NotImplementedError(f"cuda {op}: v's head_dim {dv} is over {SDPA_MAX_DV}")
    comp = _compute(out.dtype)
    size = comp.itemsize
    kt = 32
    while kt > 1 and (16 * d + kt * (d + 1) + kt * dv) * size > _SMEM_LIMIT:
        kt //= 2
    smem = (16 * d + kt * (d + 1) + kt * dv) * size
    if smem > _SMEM_LIMIT:
        raise NotImplementedError(f"cuda {op}: head_dim {d} does not fit shared memory")
    ops = []
    for x in (q, k, v):
        if _batch_stride(x) is None:
            x = x.contiguous()
        ops.append(x)
    q, k, v = ops
    batch = math.prod(q.shape[:-3]) if q.ndim > 3 else 1
    strides = []
    for x in (q, k, v):
        strides += [_batch_stride(x) or 0, *x.strides[-3:]]
    name, src = sdpa_kernel(out.dtype)
    index = out.device.index
    fn = launcher.function(index, name, src, "@QQQQiii" + "q" * 18 + "diq")
    grid = (-(-sq // SDPA_QUERIES), batch * hq, 1)
    if grid[1] > 65535:
        raise NotImplementedError("cuda sdpa_causal: batch * heads over 65535")
    codes = [ctype(x.dtype).code for x in (q, k, v)]
    fn.launch(grid, (128,), (_ptr(q), _ptr(k), _ptr(v), _ptr(out), *codes, hq, hq // hkv, sq,
                             skv, d, dv, *strides, float(scale), kt, shift),
              shared=smem)  # fmt: skip


def rope_inplace(q: GPUArray, k: GPUArray, cos: GPUArray, sin: GPUArray) -> None:
    comp = dt.float64 if dt.float64 in (q.dtype, k.dtype, cos.dtype, sin.dtype) else dt.float32
    parts = [(x, _rope_layout(x, cos, sin)) for x in (q, k) if x.size]
    index = q.device.index
    # one launch where q's and k's bytes are apart (two views of one fused qkv buffer are)
    if len(parts) == 2 and q.dtype is k.dtype and _apart(q, k):
        (_, (nq, lq, hq)), (_, (nk, lk, hk)) = parts
        name, src = rope_pair_kernel(q.dtype, comp)
        fmt = "@QQQQ" + 2 * source.LAYOUT_FORMAT + "iiqq"
        fn = launcher.function(index, name, src, fmt)
        fn.launch((_provider._grid(index, nq + nk),), (BLOCK,),
                  (_ptr(q), _ptr(k), _ptr(cos), _ptr(sin), *lq, *lk, ctype(cos.dtype).code,
                   ctype(sin.dtype).code, hq, hk))  # fmt: skip
        return
    for x, (n, lay, half) in parts:
        name, src = rope_kernel(x.dtype, comp)
        fmt = "@QQQ" + source.LAYOUT_FORMAT + "iiq"
        fn = launcher.function(index, name, src, fmt)
        fn.launch((_provider._grid(index, n),), (BLOCK,),
                  (_ptr(x), _ptr(cos), _ptr(sin), *lay, ctype(cos.dtype).code,
                   ctype(sin.dtype).code, half))  # fmt: skip


def _apart(a: GPUArray, b: GPUArray) -> bool:
    """Whether a's and b's byte extents cannot touch (a launch may write both at once)."""
    if a._buffer is not b._buffer:
        return True

    def extent(x: GPUArray) -> tuple[int, int]:
        lo = hi = _ptr(x)
        for size, stride in zip(x.shape, x.strides, strict=True):
            reach = (size - 1) * stride
            lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
        return lo, hi + x.dtype.itemsize

    (alo, ahi), (blo, bhi) = extent(a), extent(b)
    return ahi <= blo or bhi <= alo


def _rope_layout(x: GPUArray, cos: GPUArray, sin: GPUArray) -> tuple[int, list[int], int]:
    """(pairs, the PgkLayout values over (*B, S, H, D/2) for x, cos and sin, the byte
    distance from a pair's first element to its second)."""
    half = x.shape[-1] // 2
    shape = (*x.shape[:-1], half)
    lead = x.ndim - 3  # (*B, S, H, D/2): the tables vary along S and the pair index
    cs = (0,) * lead + (cos.strides[0], 0, cos.strides[1])
    ss = (0,) * lead + (sin.strides[0], 0, sin.strides[1])
    n, lay = _provider.layout(shape, [x.strides, cs, ss])
    return n, lay, half * x.strides[-1]


def bias_add_inplace(x: GPUArray, bias: GPUArray) -> None:
    _provider.run(source.binary_kernel("add", x.dtype, x.dtype), x,
                  [x, bias.broadcast_to(x.shape)])  # fmt: skip


def linear_bias_gelu(x: GPUArray, weight: GPUArray, bias: GPUArray, out: GPUArray,
                     approximate: str) -> None:  # fmt: skip
    d = out.dtype
    x = x if x.dtype is d else astype(x, d)
    weight = weight if weight.dtype is d else astype(weight, d)
    bias = bias if bias.dtype is d else astype(bias, d)
    n_in, n_out = weight.shape[1], weight.shape[0]
    x2 = x.reshape((1, n_in)) if x.ndim == 1 else x
    o = out.reshape((1, n_out)) if x.ndim == 1 else out
    batch = x2.shape[:-2]
    w = weight.mT.broadcast_to((*batch, n_in, n_out))
    matmul(x2, w, o, bool(_config.current().get("allow_tf32")))
    _provider.run(bias_gelu_kernel(d, approximate), o, [o, bias.broadcast_to(o.shape)])


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the cuda provider."""
    provider.add("sdpa_causal", sdpa_causal, FLOATS)
    provider.add("sdpa", sdpa, FLOATS)
    provider.add("rope_inplace", rope_inplace, FLOATS)
    provider.add("linear_bias_gelu", linear_bias_gelu, FLOATS)
    numeric = [d for d in dt.NUMERIC_DTYPES if not d.is_float8 and d.kind != "b"]
    provider.add("bias_add_inplace", bias_add_inplace, numeric)
