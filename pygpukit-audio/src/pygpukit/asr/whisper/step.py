"""WhisperStep: the decoder's one-token steps on device counters, replayed from a CUDA graph.

`WhisperModel.decode` sends every one-token step here. The step reads the token ids, the
position and the cache slot from small device arrays, so its work is the same every step:
on a CUDA device the second step over the same cache and encoder output is captured as a
graph and later steps replay it (one launch instead of ~250, whose host time was most of a
step's wall time: ~38 us per kernel against ~4 us of GPU work on an H100). The layers'
ops are chosen for one query row: q, k and v in one product, the cache written at the
device slot and both attentions through `gp.sdpa_causal_cache` (the decode kernel; the
encoder output is a "cache" whose every slot is visible). The CPU runs the same step
eagerly. Beam search reorders the cache rows with `select_rows_in_place`, which keeps the
arrays a graph was captured on.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray
from pygpukit.llm import KVCache
from pygpukit.llm.layers import Attention, Linear

if TYPE_CHECKING:
    from .model import CrossCache, WhisperModel

__all__ = ["WhisperStep", "fuse_self_attention", "graphs_enabled", "select_rows_in_place"]


def graphs_enabled() -> bool:
    """Whether CUDA devices capture the step (PYGPUKIT_WHISPER_GRAPH=0 turns it off)."""
    return os.environ.get("PYGPUKIT_WHISPER_GRAPH", "1") != "0"


def fuse_self_attention(model: WhisperModel) -> list[Linear]:
    """Each decoder layer's q, k, v projections as one (d, 3d) product (kept on the model).

    The layer's own Linear objects are rebound to column views of the fused weight, so the
    prompt path reads the same memory and the originals are freed. Whisper's keys have no
    bias: their third of the fused bias is zeros.
    """
    done: list[Linear] | None = getattr(model, "_fused_qkv", None)
    if done is not None:
        return done
    fused = []
    for layer in model.decoder_layers:
        a = layer.self_attn
        parts = (a.q, a.k, a.v)
        storage = gp.concat([p.weight.mT for p in parts], axis=0)  # (3d, d): (out, in)
        weight = storage.mT
        biases = [p.bias if p.bias is not None
                  else gp.zeros((p.weight.shape[1],), dtype=weight.dtype, device=weight.device)
                  for p in parts]  # fmt: skip
        bias = gp.concat(biases)
        bounds, start = [], 0
        for p in parts:
            bounds.append((start, start + p.weight.shape[1]))
            start += p.weight.shape[1]
        rebound = [Linear(weight[:, s:e], bias[s:e] if p.bias is not None else None)
                   for p, (s, e) in zip(parts, bounds, strict=True)]  # fmt: skip
        a.q, a.k, a.v = rebound
        fused.append(Linear(weight, bias))
    model._fused_qkv = fused  # type: ignore[attr-defined]
    return fused


def select_rows_in_place(cache: KVCache, rows: Any) -> None:
    """`cache.select_rows(rows)` that keeps the cache's arrays (the reordered rows are
    copied back into them), so a step bound to them, and its graph, stays valid: beam
    search then replays its step instead of running ~250 launches eagerly each time."""
    keys, values = cache.keys, cache.values
    cache.select_rows(rows)  # checks rows, reorders the host bookkeeping, gathers anew
    if cache.keys is keys:  # every row stayed where it was
        return
    for old, new in zip(keys + values, cache.keys + cache.values, strict=True):
        old[...] = new
    cache.keys, cache.values = keys, values


def _counter(values: np.ndarray, device: Any) -> GPUArray:
    return gp.asarray(np.ascontiguousarray(values), device=device)


def _split_heads(x: GPUArray, batch: int, attn: Attention) -> GPUArray:
    """(batch, heads * dim) -> (batch, heads, 1, dim), a view."""
    c = attn.cfg
    return x.reshape((batch, 1, c.num_heads, c.head_dim)).transpose(0, 2, 1, 3)


class WhisperStep:
    """One-token decode steps of `model` bound to one `cache` and one `cross` cache.

    ``run(ids)`` feeds one token per row (host ints (batch, 1)) at the cache's next slot
    and returns the step's logits (batch, vocab) as a new array. ``bound_to`` says whether
    this binding still serves a call (the same arrays: `KVCache.select_rows` makes new
    ones, `select_rows_in_place` does not); a new binding runs its first step eagerly
    (compiling and loading every kernel, which a capture should not do) and captures its
    graph on the second, or on the first with `capture_first`.
    """

    def __init__(self, model: WhisperModel, cache: KVCache, cross: CrossCache,
                 use_graph: bool | None = None, capture_first: bool = False) -> None:  # fmt: skip
        self.model, self.cache, self.cross = model, cache, cross
        #: capture on the first step (its kernels ran before, in another binding of this
        #: batch size) rather than the second
        self.capture_first = capture_first
        self.qkv = fuse_self_attention(model)
        # the arrays the step (and its graph) reads: held, so they stay what was captured
        self._bound = (cache.keys, cache.values, cross.keys, cross.values,
                       tuple(cache.keys), tuple(cache.values), tuple(cross.keys),
                       tuple(cross.values))  # fmt: skip
        want = graphs_enabled() if use_graph is None else use_graph
        self.use_graph = want and model.device.type == "cuda"
        #: why no graph is captured (None while one may be)
        self.refusal: str | None = None if self.use_graph else "off, or not a CUDA device"
        batch, device = cache.batch, model.device
        self.tokens = gp.zeros((batch, 1), dtype=gp.int64, device=device)
        self.positions = gp.zeros((batch,), dtype=gp.int64, device=device)
        self.slots = gp.zeros((batch,), dtype=gp.int32, device=device)
        self.ends = gp.zeros((batch,), dtype=gp.int32, device=device)
        self.zeros = gp.zeros((batch,), dtype=gp.int32, device=device)
        length = int(cross.keys[0].shape[2])
        self.cross_ends = _counter(np.full(batch, length, np.int32), device)
        self._slot = -1  # the slot the device counters point at (-1: not yet set)
        self._graph: Any = None
        self._logits: GPUArray | None = None
        self._steps = 0

    def bound_to(self, cache: KVCache, cross: CrossCache) -> bool:
        keys, values, ckeys, cvalues, *held = self._bound
        if cache is not self.cache or cross is not self.cross:
            return False
        if cache.keys is not keys or cache.values is not values:
            return False
        if cross.keys is not ckeys or cross.values is not cvalues:
            return False
        now = (cache.keys, cache.values, cross.keys, cross.values)
        return all(a is b for got, was in zip(now, held, strict=True)
                   for a, b in zip(got, was, strict=True))  # fmt: skip

    @property
    def graph_captured(self) -> bool:
        return self._graph is not None

    def run(self, ids: np.ndarray, slot: int) -> GPUArray:
        """Logits (batch, vocab) of `ids` (batch, 1) written at cache `slot` (reserved)."""
        device = self.model.device
        if slot != self._slot:  # the first step, or the cache moved under us (a prompt)
            row = np.full(self.cache.batch, slot)
            self.positions[...] = _counter(row.astype(np.int64), device)
            self.slots[...] = _counter(row.astype(np.int32), device)
            self.ends[...] = _counter(row.astype(np.int32) + 1, device)
        self.tokens[...] = _counter(ids.astype(np.int64, copy=False), device)
        if self._graph is not None:
            self._graph.replay()
        elif self.use_graph and (self._steps >= 1 or self.capture_first):
            g = gp.cuda.Graph(device.index)
            try:
                with gp.cuda.graph(g):
                    logits = self._forward()
            except Exception as exc:  # the step cannot be captured here: stay eager
                if self._steps >= 1:  # a first step may fail for a cold kernel: retry next
                    self.use_graph, self.refusal = False, f"capture failed: {exc!r}"
                self.capture_first = False
                self._logits = self._forward()  # a real bug in the step raises again here
            else:
                self._graph, self._logits = g, logits
                g.replay()
        else:
            self._logits = self._forward()
        self._steps += 1
        self._slot = slot + 1  # the step advanced the device counters
        assert self._logits is not None
        # a new array per call (a replay overwrites the graph's own output)
        return self._logits.copy() if self._graph is not None else self._logits

    def _forward(self) -> GPUArray:
        """The captured work: one token per row through every layer, then the counters."""
        m, cache, cross = self.model, self.cache, self.cross
        batch = cache.batch
        x = gp.embedding(m.embed, self.tokens.reshape((batch,)))
        if m.embed_scale != 1.0:
            x = x * m.embed_scale
        x = x + gp.embedding(m.decoder_positions, self.positions)
        for i, layer in enumerate(m.decoder_layers):
            a = layer.self_attn
            d = a.q.weight.shape[1]
            y = self.qkv[i](layer.self_norm(x))
            q = _split_heads(y[:, :d], batch, a)
            k = _split_heads(y[:, d : 2 * d], batch, a)
            v = _split_heads(y[:, 2 * d :], batch, a)
            keys, values = cache.keys[i], cache.values[i]
            gp.kv_cache_write_pair(keys, values, k, v, self.slots)
            attn = gp.sdpa_causal_cache(q, keys, values, self.zeros, self.ends)
            x = x + a.output(attn, batch, 1)
            c = layer.cross_attn
            q = _split_heads(c.q(layer.cross_norm(x)), batch, c)
            # the one query sits at the encoder output's last slot, so it sees every slot
            attn = gp.sdpa_causal_cache(q, cross.keys[i], cross.values[i], self.zeros,
                                        self.cross_ends)  # fmt: skip
            x = x + c.output(attn, batch, 1)
            x = x + layer.mlp(layer.mlp_norm(x))
        logits = m.decoder_norm(x) @ m.lm_head
        # positions, slots and ends + 1; the tokens row is fed back to itself (the host
        # uploads the next ids before each step)
        gp.decode_advance(self.tokens, self.tokens.reshape((batch,)), self.positions,
                          self.slots, self.ends)  # fmt: skip
        return logits
