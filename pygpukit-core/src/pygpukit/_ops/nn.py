"""Neural-network ops of the seed API: softmax, norms, attention, RoPE, fused linear.

Dtype rule: every array input must be floating point (float16, bfloat16, float32,
float64); the result dtype is the Array API promotion of the inputs (float16 ``x`` with
float32 ``gamma`` gives float32). Kernels evaluate half types in float32. The in-place
ops keep their targets' dtypes instead: ``rope_inplace`` writes q and k in their own
dtypes, and ``bias_add_inplace`` takes any numeric ``x`` whose promotion with ``bias``
is ``x``'s own dtype (the Array API rule for ``x += bias``).

Kernel calling conventions (what a provider's kernel receives). Outputs are new,
contiguous arrays of the shape and dtype the op layer computed; kernels are called only
when there is at least one element to write:

- ``softmax``, ``log_softmax``: ``kernel(x, out, axis)``: same shape; ``axis`` is a
  non-negative int. Subtract the max along ``axis`` before ``exp`` (numerically stable).
- ``layernorm``: ``kernel(x, gamma, beta, out, eps)``: ``x`` is ``(..., n)``, ``gamma``
  and ``beta`` are ``(n,)``; normalise over the last axis with the biased variance:
  ``(x - mean) / sqrt(var + eps) * gamma + beta``.
- ``rmsnorm``: ``kernel(x, gamma, out, eps)``: ``x * gamma / sqrt(mean(x**2) + eps)``
  over the last axis.
- ``sdpa_causal``: ``kernel(q, k, v, out, scale)`` with the layout
  ``q (*B, Hq, Sq, D)``, ``k (*B, Hkv, Skv, D)``, ``v (*B, Hkv, Skv, Dv)``,
  ``out (*B, Hq, Sq, Dv)``; ``*B`` are the same leading (batch) dims on all four, or
  none. Grouped-query attention: ``Hq`` is a multiple of ``Hkv`` and query head ``h``
  reads key/value head ``h // (Hq // Hkv)`` (consecutive query heads share one).
  The causal mask is aligned bottom-right, so it also serves decoding with a KV cache:
  query ``i`` sees keys ``j <= i + (Skv - Sq)``; ``Skv >= Sq`` so every query sees at
  least one key. ``scale`` is a float (``1/sqrt(D)`` unless the caller gave one).
- ``sdpa``: ``kernel(q, k, v, out, scale)``: ``sdpa_causal`` without the mask (every
  query sees every key; any ``Skv >= 1``).
- ``rope_inplace``: ``kernel(q, k, cos, sin)``: rotates ``q (*B, S, Hq, D)`` and
  ``k (*B, S, Hk, D)`` in place; ``cos`` and ``sin`` are ``(S, D // 2)``. Half-split
  (GPT-NeoX) pairing: element ``i`` of the first half pairs with element ``i + D // 2``:
  ``x1, x2 = x[..., :D//2], x[..., D//2:]``;
  ``x[..., :D//2] = x1 * cos - x2 * sin``; ``x[..., D//2:] = x2 * cos + x1 * sin``.
  Evaluated in float32, or float64 when any operand is float64. ``q`` or ``k`` may be
  empty (then it is left alone); ``cos``/``sin`` never share memory with them (the op
  layer copies a table that does).
- ``bias_add_inplace``: ``kernel(x, bias)``: ``x (..., n) += bias (n,)`` in place, in
  ``x``'s dtype; ``bias`` does not share memory with ``x`` (the op layer copies it).
- ``linear_bias_gelu``: ``kernel(x, weight, bias, out, approximate)``:
  ``out = gelu(x @ weight.T + bias)`` with ``x (..., in)``, ``weight (out, in)`` as in
  PyTorch's ``Linear``, ``bias (out,)``, ``out (..., out)``; ``approximate`` is
  ``"none"`` (erf) or ``"tanh"``, as in ``pygpukit.gelu``.

In-place ops (``rope_inplace``, ``bias_add_inplace``) write into the memory of the arrays
they are given, views included (kernels receive them with their strides), and return
None. They refuse broadcast views (a zero stride on an axis longer than 1), whose
elements share memory.
"""

from __future__ import annotations

import math
from typing import Any

from .. import _dtypes as dt
from .._array import GPUArray
from .._promotion import promote_types
from .._views import normalize_axis
from ._core import device_of, empty, kernel_on
from .copying import copy

__all__ = [
    "bias_add_inplace",
    "layernorm",
    "linear_bias_gelu",
    "log_softmax",
    "rmsnorm",
    "rope_inplace",
    "sdpa",
    "sdpa_causal",
    "softmax",
]


# -- validation helpers ---------------------------------------------------------------
def _arrays(op: str, **named: Any) -> dict[str, GPUArray]:
    """TypeError naming the first argument that is not a GPUArray; ValueError on mixed devices."""
    for name, x in named.items():
        if not isinstance(x, GPUArray):
            raise TypeError(f"{op}: {name} must be a GPUArray, got {type(x).__name__}")
    device_of(*named.values())
    return named


def _float_result(op: str, arrays: dict[str, GPUArray]) -> dt.DataType:
    """The promoted dtype of `arrays`, all of which must be (non-float8) floating point."""
    result: dt.DataType | None = None
    for name, x in arrays.items():
        if not x.dtype.is_floating or x.dtype.is_float8:
            raise TypeError(
                f"{op}: {name} has dtype {x.dtype.name} but {op} wants float16, bfloat16, "
                "float32 or float64 arrays; cast with .astype() first"
            )
        result = x.dtype if result is None else promote_types(result, x.dtype)
    assert result is not None
    return result


def _last_axis_param(op: str, name: str, p: GPUArray, x: GPUArray) -> None:
    n = x.shape[-1]
    if p.shape != (n,):
        raise ValueError(
            f"{op}: {name} has shape {p.shape} but must have shape ({n},) to match the "
            f"last axis of x {x.shape}"
        )


def _eps(op: str, eps: Any) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"{op}: eps must be a float, got {type(eps).__name__}")
    if not eps >= 0:  # also refuses NaN
        raise ValueError(f"{op}: eps must be >= 0, got {eps}")
    return float(eps)


def _writable(op: str, name: str, x: GPUArray) -> None:
    """In-place targets need one memory location per element."""
    for axis, (n, stride) in enumerate(zip(x.shape, x.strides, strict=True)):
        if n > 1 and stride == 0:
            raise ValueError(
                f"{op}: {name} is a broadcast view (stride 0 on axis {axis}), so its elements "
                "share memory and cannot be updated in place; pass a real array or a copy"
            )
    x.check_writable(f"{op}: {name}")


def _at_least(op: str, name: str, x: GPUArray, ndim: int, layout: str) -> None:
    if x.ndim < ndim:
        raise ValueError(f"{op}: {name} must have shape {layout}, got {x.ndim}-D shape {x.shape}")


# -- softmax ---------------------------------------------------------------------------
def _softmax_like(op: str, x: Any, axis: Any, backend: str | None) -> GPUArray:
    _arrays(op, x=x)
    out_dtype = _float_result(op, {"x": x})
    if x.ndim == 0:
        raise ValueError(f"{op}: x must have at least 1 dimension, got a 0-d array")
    ax = normalize_axis(axis, x.ndim)
    fn = kernel_on(op, x.device, (x.dtype,), backend)
    out = empty(x.shape, out_dtype, x.device)
    if out.size:
        fn(x, out, ax)
    return out


def softmax(x: GPUArray, /, axis: int = -1, *, backend: str | None = None) -> GPUArray:
    """exp(x) / sum(exp(x)) along `axis`, computed stably (the max is subtracted first)."""
    return _softmax_like("softmax", x, axis, backend)


def log_softmax(x: GPUArray, /, axis: int = -1, *, backend: str | None = None) -> GPUArray:
    """log(softmax(x)) along `axis`, computed without forming softmax(x) (no log(0))."""
    return _softmax_like("log_softmax", x, axis, backend)


# -- normalisation ---------------------------------------------------------------------
def layernorm(
    x: GPUArray,
    gamma: GPUArray,
    beta: GPUArray,
    /,
    eps: float = 1e-5,
    *,
    backend: str | None = None,
) -> GPUArray:
    """Layer normalisation over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta."""
    arrays = _arrays("layernorm", x=x, gamma=gamma, beta=beta)
    out_dtype = _float_result("layernorm", arrays)
    _at_least("layernorm", "x", x, 1, "(..., n)")
    _last_axis_param("layernorm", "gamma", gamma, x)
    _last_axis_param("layernorm", "beta", beta, x)
    e = _eps("layernorm", eps)
    fn = kernel_on("layernorm", x.device, (x.dtype, gamma.dtype, beta.dtype), backend)
    out = empty(x.shape, out_dtype, x.device)
    if out.size:
        fn(x, gamma, beta, out, e)
    return out


def rmsnorm(
    x: GPUArray, gamma: GPUArray, /, eps: float = 1e-5, *, backend: str | None = None
) -> GPUArray:
    """RMS normalisation over the last axis: x / sqrt(mean(x**2) + eps) * gamma."""
    arrays = _arrays("rmsnorm", x=x, gamma=gamma)
    out_dtype = _float_result("rmsnorm", arrays)
    _at_least("rmsnorm", "x", x, 1, "(..., n)")
    _last_axis_param("rmsnorm", "gamma", gamma, x)
    e = _eps("rmsnorm", eps)
    fn = kernel_on("rmsnorm", x.device, (x.dtype, gamma.dtype), backend)
    out = empty(x.shape, out_dtype, x.device)
    if out.size:
        fn(x, gamma, out, e)
    return out


# -- attention -------------------------------------------------------------------------
def _check_sdpa_shapes(q: GPUArray, k: GPUArray, v: GPUArray, op: str = "sdpa_causal") -> None:
    layout = {"q": "(..., heads, seq, head_dim)", "k": "(..., kv_heads, kv_seq, head_dim)",
              "v": "(..., kv_heads, kv_seq, v_dim)"}  # fmt: skip
    for name, a in (("q", q), ("k", k), ("v", v)):
        _at_least(op, name, a, 3, layout[name])
    if not q.ndim == k.ndim == v.ndim or not q.shape[:-3] == k.shape[:-3] == v.shape[:-3]:
        raise ValueError(
            f"{op}: q, k and v must have the same leading (batch) dimensions, got shapes "
            f"{q.shape}, {k.shape} and {v.shape}"
        )
    if k.shape[-3:-1] != v.shape[-3:-1]:
        raise ValueError(
            f"{op}: k and v must have the same kv_heads and kv_seq, got k {k.shape} and v {v.shape}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{op}: q and k must have the same head_dim, got {q.shape[-1]} and {k.shape[-1]}"
        )
    if q.shape[-1] == 0:
        raise ValueError(f"{op}: head_dim must be at least 1, got shape {q.shape}")
    hq, hkv = q.shape[-3], k.shape[-3]
    if (hkv == 0 and hq != 0) or (hkv and hq % hkv):
        raise ValueError(
            f"{op}: q has {hq} heads, which must be a multiple of k/v's {hkv} heads "
            "(grouped-query attention)"
        )
    sq, skv = q.shape[-2], k.shape[-2]
    if skv < sq and op == "sdpa_causal":
        raise ValueError(
            f"{op}: k/v have {skv} positions but q has {sq}; with the causal mask aligned "
            "to the end, kv_seq must be >= seq"
        )


def _attention(op: str, q: GPUArray, k: GPUArray, v: GPUArray, scale: float | None,
               backend: str | None) -> GPUArray:  # fmt: skip
    arrays = _arrays(op, q=q, k=k, v=v)
    out_dtype = _float_result(op, arrays)
    _check_sdpa_shapes(q, k, v, op)
    if scale is None:
        s = 1.0 / math.sqrt(q.shape[-1])
    elif isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"{op}: scale must be a float or None, got {type(scale).__name__}")
    else:
        s = float(scale)
    fn = kernel_on(op, q.device, (q.dtype, k.dtype, v.dtype), backend)
    out = empty((*q.shape[:-1], v.shape[-1]), out_dtype, q.device)
    if out.size:
        fn(q, k, v, out, s)
    return out


def sdpa_causal(
    q: GPUArray,
    k: GPUArray,
    v: GPUArray,
    /,
    scale: float | None = None,
    *,
    backend: str | None = None,
) -> GPUArray:
    """Causal scaled dot-product attention, softmax(q @ k^T * scale + mask) @ v (GQA aware)."""
    return _attention("sdpa_causal", q, k, v, scale, backend)


def sdpa(
    q: GPUArray,
    k: GPUArray,
    v: GPUArray,
    /,
    scale: float | None = None,
    *,
    backend: str | None = None,
) -> GPUArray:
    """Scaled dot-product attention without a mask, softmax(q @ k^T * scale) @ v: every query
    sees every key (an encoder's self-attention, cross-attention); GQA aware, shapes as
    `sdpa_causal` but kv_seq may be shorter than seq."""
    return _attention("sdpa", q, k, v, scale, backend)


# -- in-place ops ----------------------------------------------------------------------
def _same_elements(a: GPUArray, b: GPUArray) -> bool:
    return (a.buffer is b.buffer and a.offset == b.offset and a.shape == b.shape
            and a.strides == b.strides)  # fmt: skip


def rope_inplace(
    q: GPUArray,
    k: GPUArray,
    cos: GPUArray,
    sin: GPUArray,
    /,
    *,
    backend: str | None = None,
) -> None:
    """Rotary position embedding applied in place to q and k (half-split, NeoX pairing)."""
    op = "rope_inplace"
    arrays = _arrays(op, q=q, k=k, cos=cos, sin=sin)
    _float_result(op, arrays)
    _at_least(op, "q", q, 3, "(seq, heads, head_dim)")
    _at_least(op, "k", k, 3, "(seq, kv_heads, head_dim)")
    if q.shape[:-2] != k.shape[:-2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{op}: q {q.shape} and k {k.shape} must agree on seq (and any batch dims) and head_dim"
        )
    seq, head_dim = q.shape[-3], q.shape[-1]
    if head_dim % 2:
        raise ValueError(f"{op}: head_dim must be even to split into halves, got {head_dim}")
    for name, table in (("cos", cos), ("sin", sin)):
        if table.shape != (seq, head_dim // 2):
            raise ValueError(
                f"{op}: {name} has shape {table.shape} but must be (seq, head_dim // 2) = "
                f"{(seq, head_dim // 2)}"
            )
    if _same_elements(q, k) and q.size:
        raise ValueError(f"{op}: q and k are the same array; it would be rotated twice")
    _writable(op, "q", q)
    _writable(op, "k", k)
    fn = kernel_on(op, q.device, (q.dtype, k.dtype, cos.dtype, sin.dtype), backend)
    if q.size == 0 and k.size == 0:
        return None
    # the tables are read while q and k are written: never let them share memory
    if cos.buffer in (q.buffer, k.buffer):
        cos = copy(cos)
    if sin.buffer in (q.buffer, k.buffer):
        sin = copy(sin)
    fn(q, k, cos, sin)
    return None


def bias_add_inplace(x: GPUArray, bias: GPUArray, /, *, backend: str | None = None) -> None:
    """x += bias in place, with bias (n,) broadcast over x's last axis (n)."""
    op = "bias_add_inplace"
    _arrays(op, x=x, bias=bias)
    for name, a in (("x", x), ("bias", bias)):
        if a.dtype.kind == "b" or a.dtype.is_float8:
            raise TypeError(
                f"{op}: {name} has dtype {a.dtype.name}; it wants numeric arrays "
                "(cast with .astype() first)"
            )
    if promote_types(x.dtype, bias.dtype) is not x.dtype:
        raise TypeError(
            f"{op}: adding a {bias.dtype.name} bias would change x's dtype {x.dtype.name}; "
            f"cast bias with .astype({x.dtype.name}) first"
        )
    _at_least(op, "x", x, 1, "(..., n)")
    _last_axis_param(op, "bias", bias, x)
    _writable(op, "x", x)
    fn = kernel_on(op, x.device, (x.dtype, bias.dtype), backend)
    if x.size == 0:
        return None
    if bias.buffer is x.buffer:
        bias = copy(bias)  # the kernel may read bias after writing x
    fn(x, bias)
    return None


# -- fused linear ----------------------------------------------------------------------
def linear_bias_gelu(
    x: GPUArray,
    weight: GPUArray,
    bias: GPUArray,
    /,
    *,
    approximate: str = "none",
    backend: str | None = None,
) -> GPUArray:
    """gelu(x @ weight.T + bias) in one pass; weight is (out_features, in_features)."""
    op = "linear_bias_gelu"
    arrays = _arrays(op, x=x, weight=weight, bias=bias)
    out_dtype = _float_result(op, arrays)
    _at_least(op, "x", x, 1, "(..., in_features)")
    if weight.ndim != 2:
        raise ValueError(
            f"{op}: weight must have shape (out_features, in_features), got {weight.shape}"
        )
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"{op}: x has {x.shape[-1]} input features (shape {x.shape}) but weight "
            f"{weight.shape} expects {weight.shape[1]}"
        )
    if bias.shape != (weight.shape[0],):
        raise ValueError(
            f"{op}: bias has shape {bias.shape} but must be (out_features,) = ({weight.shape[0]},)"
        )
    if approximate not in ("none", "tanh"):
        raise ValueError(f"{op}: approximate must be 'none' or 'tanh', got {approximate!r}")
    fn = kernel_on(op, x.device, (x.dtype, weight.dtype, bias.dtype), backend)
    out = empty((*x.shape[:-1], weight.shape[0]), out_dtype, x.device)
    if out.size:
        fn(x, weight, bias, out, approximate)
    return out
