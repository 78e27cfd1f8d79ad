"""The blocks of a causal transformer, written only with public pygpukit ops.

Activations are (tokens, features) GPUArrays, tokens = batch * seq flattened, so every
projection is one matmul. Linear weights are kept as (in, out) views (``w.mT`` of the
usual (out, in) storage, no copy), so ``x @ w`` serves both storage orders.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .config import TransformerConfig

__all__ = ["Linear", "Norm", "Attention", "DenseMLP", "MoEMLP", "apply_rope"]


@dataclass
class Linear:
    """y = x @ weight_in_out (+ bias)."""

    weight: GPUArray  # (in, out), often a transposed view
    bias: GPUArray | None = None

    def __call__(self, x: GPUArray) -> GPUArray:
        y = x @ self.weight
        if self.bias is not None:
            gp.bias_add_inplace(y, self.bias)
        return y


@dataclass
class Norm:
    """RMSNorm (gamma only) or LayerNorm (gamma and beta) over the last axis."""

    gamma: GPUArray
    beta: GPUArray | None
    eps: float

    def __call__(self, x: GPUArray) -> GPUArray:
        if self.beta is None:
            return gp.rmsnorm(x, self.gamma, self.eps)
        return gp.layernorm(x, self.gamma, self.beta, self.eps)


def _activate(x: GPUArray, kind: str) -> GPUArray:
    if kind == "silu":
        return gp.silu(x)
    return gp.gelu(x, approximate="tanh" if kind == "gelu_tanh" else "none")


@dataclass
class DenseMLP:
    """A gated MLP (down(act(gate(x)) * up(x))) or, without `gate`, down(act(up(x)))."""

    up: Linear
    down: Linear
    gate: Linear | None
    activation: str

    def __call__(self, x: GPUArray) -> GPUArray:
        if self.gate is not None:
            return self.down(_activate(self.gate(x), self.activation) * self.up(x))
        if self.up.bias is not None and self.activation != "silu":
            # one fused pass: gelu(x @ W^T + b), W given as (out, in)
            approx = "tanh" if self.activation == "gelu_tanh" else "none"
            h = gp.linear_bias_gelu(x, self.up.weight.mT, self.up.bias, approximate=approx)
            return self.down(h)
        return self.down(_activate(self.up(x), self.activation))


@dataclass
class MoEMLP:
    """Mixtral's sparse FFN: softmax router, top-k experts per token, weights renormalised.

    The chosen expert ids come to the host (tokens * k integers) to group tokens by
    expert; each expert then runs one matmul over its tokens, and the results are added
    back in expert order, as transformers does.
    """

    router: GPUArray  # (hidden, experts)
    experts: list[DenseMLP]
    top_k: int

    def __call__(self, x: GPUArray) -> GPUArray:
        probs = gp.softmax((x @ self.router).astype(gp.float32), axis=-1)
        order = gp.argsort(probs, axis=-1, descending=True)[:, : self.top_k]
        weights = gp.take_along_axis(probs, order, axis=-1)
        weights = (weights / gp.sum(weights, axis=-1, keepdims=True)).astype(x.dtype)
        chosen = order.to_numpy()
        out = gp.zeros(x.shape, dtype=x.dtype, device=x.device)
        flat_weights = weights.reshape((-1, 1))
        for e, expert in enumerate(self.experts):
            rows, slots = np.nonzero(chosen == e)
            if rows.size == 0:
                continue
            tokens = gp.from_numpy(rows.astype(np.int64), device=x.device)
            pick = gp.from_numpy((rows * self.top_k + slots).astype(np.int64), device=x.device)
            y = expert(gp.take(x, tokens, axis=0)) * gp.take(flat_weights, pick, axis=0)
            out[tokens] = gp.take(out, tokens, axis=0) + y
        return out


def apply_rope(q: GPUArray, k: GPUArray, cos: GPUArray, sin: GPUArray) -> None:
    """Rotate q (B, S, Hq, D) and k (B, S, Hk, D) in place; cos/sin are (S, D/2) or (B, S, D/2)."""
    if cos.ndim == 2:
        gp.rope_inplace(q, k, cos, sin)
        return
    for b in range(q.shape[0]):  # rows at different positions (a left-padded batch)
        gp.rope_inplace(q[b], k[b], cos[b], sin[b])


@dataclass
class Attention:
    """Multi-head / grouped-query attention with an optional preallocated KV cache."""

    q: Linear
    k: Linear
    v: Linear
    o: Linear
    q_norm: Norm | None
    k_norm: Norm | None
    cfg: TransformerConfig

    def project(self, x: GPUArray, batch: int, seq: int) -> tuple[GPUArray, GPUArray, GPUArray]:
        c = self.cfg
        q = self.q(x).reshape((batch, seq, c.num_heads, c.head_dim))
        k = self.k(x).reshape((batch, seq, c.num_kv_heads, c.head_dim))
        v = self.v(x).reshape((batch, seq, c.num_kv_heads, c.head_dim))
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        return q, k, v

    def attend(
        self,
        q: GPUArray,
        k: GPUArray,
        v: GPUArray,
        bias: GPUArray | None,
        *,
        causal: bool = True,
    ) -> GPUArray:
        """q (B, Hq, S, D) against k, v (B, Hkv, L, D): causal, or with an additive `bias`.

        `bias` (B, 1, 1, S, L), when given, holds 0 where a query may look and a large
        negative number elsewhere (padding, sliding window); it replaces the causal rule.
        With ``causal=False`` and no bias every query sees every key (an encoder's
        self-attention, or cross-attention to an encoder's output).
        """
        if bias is None:  # fused attention (flash on GPUs): no scores in device memory
            return gp.sdpa_causal(q, k, v) if causal else gp.sdpa(q, k, v)
        b, hq, s, d = q.shape
        hkv, length = k.shape[1], k.shape[2]
        group = hq // hkv
        # consecutive query heads share a kv head: fold them into the row axis
        qg = q.astype(gp.float32).reshape((b, hkv, group * s, d))
        scores = (qg @ k.astype(gp.float32).mT) * (1.0 / float(np.sqrt(d)))
        scores = scores.reshape((b, hkv, group, s, length))
        if bias is not None:
            scores = scores + bias
        probs = gp.softmax(scores, axis=-1).reshape((b, hkv, group * s, length))
        out = probs.astype(q.dtype) @ v
        return out.reshape((b, hq, s, v.shape[-1]))

    def output(self, attn: GPUArray, batch: int, seq: int) -> GPUArray:
        """(B, Hq, S, D) -> (B * S, hidden) through o_proj."""
        merged = attn.transpose(0, 2, 1, 3).reshape(
            (batch * seq, self.cfg.num_heads * attn.shape[-1])
        )
        return self.o(merged)
