"""StaticDecoder: one-token decode steps whose inputs live in device buffers, replayed
from a CUDA graph on GPUs.

Every step reads the token ids, position ids and cache slots from small device arrays
and writes its keys and values into the preallocated KVCache at those slots, so one
captured graph serves every step up to the cache's length. The step ends by choosing
the greedy token on the device (argmax), feeding it back as the next step's input and
advancing the counters: a greedy run needs no host work between steps except fetching
the chosen ids. Sampling and penalties use the logits (the host draws, reproducibly
from the seed) and upload the chosen ids before the next replay.

Mixtral's experts run as two `gp.gather_matmul` calls over stacked expert weights, with
the top-k routing done by argmax on the device. Graphs need a CUDA device and a step with
no host reads; dynamic RoPE (tables that change with the length) uses the eager path,
and the CPU runs the same step eagerly.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .fusion import FusedLayer, fuse_projections
from .kv_cache import KVCache
from .layers import Linear, MoEMLP, Norm, _activate

if TYPE_CHECKING:
    from .model import Block, CausalTransformerModel

__all__ = ["StaticDecoder", "graph_refusal"]


def graph_refusal(model: CausalTransformerModel) -> str | None:
    """Why this model's decode step cannot be captured as a CUDA graph, or None if it can."""
    if model.device.type != "cuda":
        return f"CUDA graphs need a CUDA device; the model is on {model.device}"
    fused = getattr(model, "fused_layers", None)
    for i, b in enumerate(model.blocks):
        if isinstance(b.mlp, MoEMLP) and (fused is None or fused[i].experts_down is None):
            return "the MoE experts are not stacked (the router would group tokens on the host)"
    scaling = model.config.rope_scaling or {}
    if scaling.get("rope_type", scaling.get("type")) == "dynamic":
        return "dynamic RoPE scaling changes its tables with the sequence length"
    return None


def _gated(gate: GPUArray, up: GPUArray, activation: str) -> GPUArray:
    """act(gate) * up: one fused pass for SiLU (SwiGLU), two for the others."""
    if activation == "silu":
        return gp.silu_mul(gate, up)
    return _activate(gate, activation) * up


def _residual(x: GPUArray, y: GPUArray, norm: Norm) -> tuple[GPUArray, GPUArray]:
    """(x + y, norm(x + y)): one fused pass for RMSNorm, two for LayerNorm."""
    if norm.beta is None:
        return gp.add_rmsnorm(x, y, norm.gamma, norm.eps)
    total = x + y
    return total, norm(total)


def _device_array(values: np.ndarray, device: Any) -> GPUArray:
    return gp.asarray(np.ascontiguousarray(values), device=device)


class StaticDecoder:
    """Decode steps of `model` over `cache` (filled by a prefill through `model(...)`).

    ``step(tokens)`` feeds one token per row (host ids, or None to feed the ids the
    previous step chose on the device) and returns the step's (logits, chosen ids) as
    device arrays; they are overwritten by the next step. With ``use_graph`` the second
    step captures a CUDA graph (the first runs eagerly and compiles every kernel) and
    later steps replay it.
    """

    def __init__(self, model: CausalTransformerModel, cache: KVCache,
                 use_graph: bool = True, gemv: bool | None = None) -> None:  # fmt: skip
        self.model, self.cache = model, cache
        # the projections through gp.linear_rows (a weight-streaming kernel for a few rows)
        # instead of matmul; None: the PYGPUKIT_LLM_GEMV environment variable ("1": on)
        self.gemv = os.environ.get("PYGPUKIT_LLM_GEMV") == "1" if gemv is None else gemv
        self.gemv = self.gemv and cache.batch <= 8  # gp.linear_rows takes up to 8 rows
        # one matmul for q/k/v and one for gate/up per layer (the weights are rebound to
        # views of the fused arrays, so the model's eager path reads the same memory)
        self.fused = fuse_projections(model)
        self.refusal = graph_refusal(model) if use_graph else "use_graph=False"
        self.use_graph = self.refusal is None
        scaling = model.config.rope_scaling or {}
        if scaling.get("rope_type", scaling.get("type")) == "dynamic":
            raise ValueError("StaticDecoder: dynamic RoPE scaling needs the eager decode path")
        batch, device = cache.batch, model.device
        self.tokens = gp.zeros((batch, 1), dtype=gp.int64, device=device)
        self.positions = gp.zeros((batch, 1), dtype=gp.int64, device=device)
        self.slots = gp.zeros((batch,), dtype=gp.int32, device=device)
        self.ends = gp.zeros((batch,), dtype=gp.int32, device=device)
        self.starts = gp.zeros((batch,), dtype=gp.int32, device=device)
        self.window = int(model.config.sliding_window or 0)
        self.cos = self.sin = None
        if model.rope is not None:
            # a slot index bounds every position (left padding only lowers positions)
            c, s = model.rope.table(np.arange(cache.max_length), cache.max_length)
            self.cos, self.sin = _device_array(c, device), _device_array(s, device)
            if model.dtype not in (gp.float32, gp.float64):  # as the eager path rounds them
                self.cos, self.sin = self.cos.astype(model.dtype), self.sin.astype(model.dtype)
        self._experts: GPUArray | None = None
        if model.config.num_experts:
            self._experts = gp.arange(model.config.num_experts, dtype=gp.int64, device=device)
        self._graph: Any = None
        self._out: tuple[GPUArray, GPUArray] | None = None
        self._steps = 0
        self.sync_from_cache()

    @property
    def graph_captured(self) -> bool:
        return self._graph is not None

    def sync_from_cache(self) -> None:
        """Point the device counters at the cache's host bookkeeping (after a prefill)."""
        c = self.cache
        if c.length == 0 or not c.valid[:, : c.length].any(axis=1).all():
            raise ValueError("StaticDecoder: prefill the cache (every row needs a token) first")
        first = c.valid[:, : c.length].argmax(axis=1)
        self.starts[...] = _device_array(first.astype(np.int32), self.model.device)
        self.slots[...] = _device_array(np.full(c.batch, c.length, np.int32), self.model.device)
        self.ends[...] = self.slots + 1
        self.positions[...] = _device_array(c.next_position[:, None], self.model.device)

    # -- one step ------------------------------------------------------------------------
    def step(self, tokens: np.ndarray | None = None) -> tuple[GPUArray, GPUArray]:
        """Run one step; returns (logits (batch, vocab), greedy ids (batch,)) on the device."""
        c = self.cache
        if c.length >= c.max_length:
            raise ValueError(f"StaticDecoder: the cache's {c.max_length} slots are all used")
        limit, last = self.model.config.max_position_embeddings, int(c.next_position.max())
        if self.model.position_embed is not None and last >= limit:
            raise ValueError(f"position {last} is past the model's {limit} learned positions")
        if tokens is not None:
            ids = np.asarray(tokens, dtype=np.int64).reshape(c.batch, 1)
            if ((ids < 0) | (ids >= self.model.config.vocab_size)).any():
                raise IndexError(f"token ids {ids.ravel().tolist()} outside the vocabulary")
            self.tokens[...] = _device_array(ids, self.model.device)
        elif self._steps == 0:
            raise ValueError("StaticDecoder: the first step needs the tokens to feed")
        if self._graph is not None:
            self._graph.replay()
        elif self.use_graph and self._steps >= 1:
            g = gp.cuda.Graph(self.model.device.index)
            try:
                with gp.cuda.graph(g):
                    out = self._forward()
            except RuntimeError as exc:  # something in the step reads the host: stay eager
                self.use_graph, self.refusal = False, f"capture failed: {exc}"
                self._out = self._forward()
            else:
                self._graph, self._out = g, out
                g.replay()
        else:
            self._out = self._forward()
        self._steps += 1
        # the host's view of the cache follows the device counters
        c.valid[:, c.length] = True
        c.next_position += 1
        c.length += 1
        assert self._out is not None
        return self._out

    def _project(self, block: Block, h: GPUArray,
                 fused: FusedLayer | None) -> tuple[GPUArray, GPUArray, GPUArray]:  # fmt: skip
        """q (B, 1, Hq, D), k and v (B, 1, Hkv, D): column views of one fused product."""
        attn, batch = block.attn, self.cache.batch
        if fused is None:
            return attn.project(h, batch, 1)
        c = self.model.config
        y = self._linear(fused.qkv, h)
        a, b = fused.qkv_split
        q = y[:, :a].reshape((batch, 1, c.num_heads, -1))
        k = y[:, a:b].reshape((batch, 1, c.num_kv_heads, -1))
        v = y[:, b:].reshape((batch, 1, c.num_kv_heads, -1))
        if attn.q_norm is not None and attn.k_norm is not None:
            q, k = attn.q_norm(q), attn.k_norm(k)
        return q, k, v

    def _linear(self, lin: Linear, x: GPUArray) -> GPUArray:
        """lin(x), through gp.linear_rows when `gemv` is on (the weight's (out, in) view)."""
        if not self.gemv:
            return lin(x)
        y = gp.linear_rows(x, lin.weight.mT)
        if lin.bias is not None:
            gp.bias_add_inplace(y, lin.bias)
        return y

    def _moe(self, mlp: MoEMLP, fused: FusedLayer, h: GPUArray) -> GPUArray:
        """Mixtral's sparse MLP on the device: softmax router, top-k by repeated argmax
        (first index wins ties, as a stable descending sort), weights renormalised, each
        (token, slot) row through its expert with gather_matmul."""
        assert fused.experts_gate_up is not None and fused.experts_down is not None
        assert self._experts is not None
        batch, k = h.shape[0], mlp.top_k
        probs = gp.softmax((h @ mlp.router).astype(gp.float32), axis=-1)  # (B, E)
        left, ids, weights = probs, [], []
        for _ in range(k):
            pick = gp.argmax(left, axis=-1, keepdims=True)  # (B, 1)
            weights.append(gp.max(left, axis=-1, keepdims=True))
            ids.append(pick)
            left = gp.where(self._experts[None, :] == pick, float("-inf"), left)
        chosen = gp.concat(ids, axis=1).reshape((-1,))  # (B * k,): token-major slots
        w = gp.concat(weights, axis=1)
        w = (w / gp.sum(w, axis=-1, keepdims=True)).astype(h.dtype)  # (B, k)
        rows = h[:, None, :].broadcast_to((batch, k, h.shape[1])).reshape((batch * k, -1))
        gu = gp.gather_matmul(rows, fused.experts_gate_up, chosen)
        n = fused.experts_gate_up.shape[1] // 2
        act = _gated(gu[:, :n], gu[:, n:], mlp.experts[0].activation)
        y = gp.gather_matmul(act, fused.experts_down, chosen).reshape((batch, k, -1))
        return gp.sum(y * w[:, :, None], axis=1)

    def _forward(self) -> tuple[GPUArray, GPUArray]:
        """The captured work: one token per row through every layer, argmax, advance."""
        m, cache = self.model, self.cache
        batch = cache.batch
        x = gp.embedding(m.embed, self.tokens.reshape((batch,)))
        if m.position_embed is not None:
            x = x + gp.embedding(m.position_embed, self.positions.reshape((batch,)))
        norms = [n for b in m.blocks for n in (b.attn_norm, b.mlp_norm)] + [m.final_norm]
        h = norms[0](x)
        for i, block in enumerate(m.blocks):
            fused = self.fused[i] if self.fused is not None else None
            q, k, v = self._project(block, h, fused)
            keys, values = cache.keys[i], cache.values[i]
            if self.cos is not None and self.sin is not None:
                # RoPE, the cache write and the attention: one launch on sm_90 GPUs
                attn = gp.rope_cache_attention(q, k, v, self.cos, self.sin, self.positions,
                                               keys, values, self.slots, self.starts,
                                               self.ends, window=self.window)  # fmt: skip
            else:
                gp.kv_cache_write_pair(keys, values, k.transpose(0, 2, 1, 3),
                                       v.transpose(0, 2, 1, 3), self.slots)  # fmt: skip
                attn = gp.sdpa_causal_cache(q.transpose(0, 2, 1, 3), keys, values,
                                            self.starts, self.ends, window=self.window)  # fmt: skip
            merged = attn.transpose(0, 2, 1, 3).reshape((batch, -1))
            x, h = _residual(x, self._linear(block.attn.o, merged), norms[2 * i + 1])
            if fused is not None and fused.experts_down is not None:
                assert isinstance(block.mlp, MoEMLP)
                y = self._moe(block.mlp, fused, h)
            elif fused is not None and fused.gate_up is not None:
                assert not isinstance(block.mlp, MoEMLP)
                gu, n = self._linear(fused.gate_up, h), fused.gate_columns
                y = self._linear(block.mlp.down, _gated(gu[:, :n], gu[:, n:],
                                                        block.mlp.activation))  # fmt: skip
            else:
                y = block.mlp(h)
            x, h = _residual(x, y, norms[2 * i + 2])  # the next layer's (or the final) norm
        logits = self._linear(Linear(m.lm_head), h)
        chosen = gp.argmax(logits, axis=-1)
        # feed the ids back and advance the counters: one launch instead of seven
        gp.decode_advance(self.tokens, chosen, self.positions, self.slots, self.ends)
        return logits, chosen
