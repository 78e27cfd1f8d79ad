"""The llm family's peer: a hand-written PyTorch Llama decoder with a static KV cache,
one token per row per step, captured in a torch CUDA graph (the issue's anchor).

It takes the same weights as ours (shared through DLPack, no copy) as a dict of
(out, in) bf16 tensors, and keeps its token, position and cache buffers static so the
graph replays every step: the step reads the position from a device tensor, writes k/v
at that slot with index_copy_, masks the cache beyond it, and feeds its argmax back.
"""

from __future__ import annotations

import math
from typing import Any


class TorchLlama:
    """Batch rows decode in lockstep (the same position in every row)."""

    def __init__(self, t: Any, w: dict[str, Any], shape: dict[str, int], max_len: int,
                 batch: int = 1, theta: float = 10000.0) -> None:  # fmt: skip
        self.t, self.w, self.s = t, w, shape
        dev, bf = "cuda", t.bfloat16
        hkv, d = shape["kv"], shape["head_dim"]
        self.batch, self.max_len = batch, max_len
        cache = (batch, hkv, max_len, d)
        self.k = [t.zeros(cache, device=dev, dtype=bf) for _ in range(shape["layers"])]
        self.v = [t.zeros(cache, device=dev, dtype=bf) for _ in range(shape["layers"])]
        inv = 1.0 / theta ** (t.arange(0, d, 2, device=dev, dtype=t.float32) / d)
        angles = t.arange(max_len, device=dev, dtype=t.float32)[:, None] * inv[None]
        self.cos, self.sin = angles.cos().to(bf), angles.sin().to(bf)
        self.slots = t.arange(max_len, device=dev)
        self.tokens = t.zeros(batch, device=dev, dtype=t.long)
        self.pos = t.zeros(1, device=dev, dtype=t.long)
        self.graph: Any = None
        self.logits: Any = None
        # torch >= 2.5 reads grouped kv heads in place; older ones need the heads repeated
        major, minor = (int(p) for p in t.__version__.split(".")[:2])
        self.gqa = (major, minor) >= (2, 5)

    def _rms(self, x: Any, g: Any) -> Any:
        xf = x.float()
        return (xf * self.t.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * g

    def _rope(self, x: Any) -> Any:
        half = x.shape[-1] // 2
        c, s = self.cos[self.pos][:, None, :], self.sin[self.pos][:, None, :]  # (1, 1, D/2)
        a, b = x[..., :half], x[..., half:]
        return self.t.cat((a * c - b * s, b * c + a * s), -1)

    def forward(self) -> Any:
        """One step from self.tokens at self.pos: logits; advances tokens and pos."""
        t, w, s = self.t, self.w, self.s
        f = t.nn.functional
        b, hq, hkv, d = self.batch, s["heads"], s["kv"], s["head_dim"]
        x = f.embedding(self.tokens, w["embed"])  # (B, hidden)
        hidden = self.slots[None, None, None, :] > self.pos  # keys past this slot
        mask = t.zeros(hidden.shape, device="cuda", dtype=t.bfloat16).masked_fill(
            hidden, float("-inf")
        )
        for i in range(s["layers"]):
            h = self._rms(x, w[f"n1.{i}"])
            q = self._rope(f.linear(h, w[f"q.{i}"]).view(b, hq, d))
            k = self._rope(f.linear(h, w[f"k.{i}"]).view(b, hkv, d))
            v = f.linear(h, w[f"v.{i}"]).view(b, hkv, d)
            self.k[i].index_copy_(2, self.pos, k[:, :, None, :])
            self.v[i].index_copy_(2, self.pos, v[:, :, None, :])
            keys, values = self.k[i], self.v[i]
            extra = {"enable_gqa": True} if self.gqa else {}
            if not self.gqa:
                keys = keys.repeat_interleave(hq // hkv, dim=1)
                values = values.repeat_interleave(hq // hkv, dim=1)
            a = f.scaled_dot_product_attention(q[:, :, None, :], keys, values, attn_mask=mask,
                                               scale=1 / math.sqrt(d), **extra)  # fmt: skip
            x = x + f.linear(a.reshape(b, hq * d), w[f"o.{i}"])
            h = self._rms(x, w[f"n2.{i}"])
            x = x + f.linear(f.silu(f.linear(h, w[f"g.{i}"])) * f.linear(h, w[f"u.{i}"]),
                             w[f"d.{i}"])  # fmt: skip
        logits = f.linear(self._rms(x, w["norm"]), w["head"])
        self.tokens.copy_(logits.argmax(-1))
        self.pos.add_(1)
        return logits

    def capture(self) -> None:
        """Warm up on a side stream (as torch asks), then capture one step."""
        t = self.t
        pos0 = self.pos.clone()
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):
            for _ in range(2):
                self.forward()
        t.cuda.current_stream().wait_stream(side)
        self.graph = t.cuda.CUDAGraph()
        with t.cuda.graph(self.graph):
            self.logits = self.forward()
        self.pos.copy_(pos0)

    def start(self, token: int, position: int) -> None:
        self.tokens.fill_(token)
        self.pos.fill_(position)
