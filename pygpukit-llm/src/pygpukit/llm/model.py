"""CausalTransformerModel: one decoder for GPT-2, Llama, Mistral, Qwen2, Qwen3 and Mixtral."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .config import TransformerConfig
from .kv_cache import KVCache
from .layers import Attention, DenseMLP, MoEMLP, Norm, apply_rope
from .rope import RopeTables
from .spec import ModelSpec

if TYPE_CHECKING:
    from .generation import GenerationConfig, StreamEvent

__all__ = ["Block", "CausalTransformerModel"]

#: additive bias for keys a query must not see (finite: a row never becomes NaN)
MASKED = -1e30


@dataclass
class Block:
    """One decoder layer: pre-norm attention and pre-norm MLP, each with a residual."""

    attn_norm: Norm
    attn: Attention
    mlp_norm: Norm
    mlp: DenseMLP | MoEMLP


class CausalTransformerModel:
    """A decoder-only transformer whose every step runs through pygpukit ops.

    ``model(input_ids)`` gives logits; ``model.generate(input_ids, max_new_tokens=32)``
    decodes. Build one with :func:`pygpukit.llm.load_model_from_safetensors`.
    """

    def __init__(
        self,
        config: TransformerConfig,
        spec: ModelSpec,
        embed: GPUArray,
        blocks: list[Block],
        final_norm: Norm,
        lm_head: GPUArray,
        position_embed: GPUArray | None = None,
    ) -> None:
        self.config, self.spec = config, spec
        self.embed, self.position_embed = embed, position_embed
        self.blocks, self.final_norm = blocks, final_norm
        self.lm_head = lm_head  # (hidden, vocab): a transposed view when it is the embedding
        self.dtype, self.device = embed.dtype, embed.device
        self.rope = RopeTables(config) if config.positions == "rope" else None

    def __repr__(self) -> str:
        c = self.config
        return (
            f"CausalTransformerModel({c.model_type}, layers={c.num_layers}, "
            f"hidden={c.hidden_size}, vocab={c.vocab_size}, dtype={self.dtype.name}, "
            f"device={self.device})"
        )

    def new_cache(self, batch: int, max_length: int) -> KVCache:
        """An empty preallocated KV cache for `batch` rows of up to `max_length` tokens."""
        return KVCache(self.config, batch, max_length, self.dtype, self.device)

    # -- one forward pass ----------------------------------------------------------------
    def __call__(
        self,
        input_ids: Any,
        cache: KVCache | None = None,
        attention_mask: Any = None,
        last_only: bool = False,
    ) -> GPUArray:
        return self.forward(input_ids, cache, attention_mask, last_only)

    def forward(
        self,
        input_ids: Any,
        cache: KVCache | None = None,
        attention_mask: Any = None,
        last_only: bool = False,
    ) -> GPUArray:
        """Logits (batch, seq, vocab) for token ids (batch, seq) or (seq,); (batch, vocab)
        with `last_only`. With a `cache`, the tokens continue what the cache holds and
        their keys and values are stored in it. `attention_mask` (batch, seq) is 0 on
        padding tokens (left padding for batches of different lengths)."""
        ids = self._check_ids(input_ids)
        batch, seq = ids.shape
        mask = np.ones(ids.shape, bool) if attention_mask is None else np.asarray(attention_mask)
        if mask.shape != ids.shape:
            raise ValueError(f"attention_mask has shape {mask.shape}, input_ids {ids.shape}")
        mask = mask.astype(bool)
        if cache is None:
            cache = self.new_cache(batch, seq)
        start, positions = cache.reserve(mask)
        end = start + seq
        bias = self._attention_bias(cache, start, seq)
        x = gp.take(self.embed, self._upload(ids.reshape(-1)), axis=0)
        cos = sin = None
        if self.position_embed is not None:
            if int(positions.max()) >= self.config.max_position_embeddings:
                raise ValueError(
                    f"position {int(positions.max())} is past the model's "
                    f"{self.config.max_position_embeddings} learned positions"
                )
            x = x + gp.take(self.position_embed, self._upload(positions.reshape(-1)), axis=0)
        elif self.rope is not None:
            same = bool((positions == positions[:1]).all())
            table_pos = positions[0] if same else positions
            c, s = self.rope.table(table_pos, int(cache.next_position.max()))
            cos, sin = gp.from_numpy(c, self.device), gp.from_numpy(s, self.device)
            if self.dtype != gp.float32 and self.dtype != gp.float64:
                cos, sin = cos.astype(self.dtype), sin.astype(self.dtype)
        for i, block in enumerate(self.blocks):
            h = block.attn_norm(x)
            q, k, v = block.attn.project(h, batch, seq)
            if cos is not None and sin is not None:
                apply_rope(q, k, cos, sin)
            cache.keys[i][:, :, start:end, :] = k.transpose(0, 2, 1, 3)
            cache.values[i][:, :, start:end, :] = v.transpose(0, 2, 1, 3)
            keys, values = cache.keys[i][:, :, :end, :], cache.values[i][:, :, :end, :]
            attn = block.attn.attend(q.transpose(0, 2, 1, 3), keys, values, bias)
            x = x + block.attn.output(attn, batch, seq)
            x = x + block.mlp(block.mlp_norm(x))
        if last_only:
            x = x.reshape((batch, seq, -1))[:, -1, :]
        logits = self.final_norm(x) @ self.lm_head
        return logits if last_only else logits.reshape((batch, seq, -1))

    def _check_ids(self, input_ids: Any) -> np.ndarray:
        ids = input_ids.to_numpy() if isinstance(input_ids, GPUArray) else np.asarray(input_ids)
        if ids.ndim == 1:
            ids = ids[None, :]
        if ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(
                f"input_ids must be (batch, seq) or (seq,) with seq >= 1, got {ids.shape}"
            )
        if ids.dtype.kind not in "iu":
            raise TypeError(f"input_ids must be integers, got dtype {ids.dtype}")
        bad = (ids < 0) | (ids >= self.config.vocab_size)
        if bad.any():
            raise IndexError(
                f"token id {int(ids[bad][0])} is outside the vocabulary "
                f"[0, {self.config.vocab_size})"
            )
        return ids.astype(np.int64)

    def _upload(self, values: np.ndarray) -> GPUArray:
        return gp.from_numpy(np.ascontiguousarray(values, dtype=np.int64), self.device)

    def _attention_bias(self, cache: KVCache, start: int, seq: int) -> GPUArray | None:
        """None when plain causal attention is right; else (B, 1, 1, seq, end) additive bias."""
        end = start + seq
        window = self.config.sliding_window
        padded = not cache.valid[:, :end].all()
        if not padded and (window is None or end <= window):
            return None
        query = np.arange(start, end)[:, None]
        key = np.arange(end)[None, :]
        allowed = (key <= query)[None] & cache.valid[:, None, :end]
        if window is not None:
            allowed &= (query - key < window)[None]
        allowed |= (key == query)[None]  # a padding query sees itself, so no row is empty
        bias = np.where(allowed, 0.0, MASKED).astype(np.float32)
        return gp.from_numpy(bias[:, None, None], self.device)

    # -- generation ----------------------------------------------------------------------
    def generate(
        self,
        input_ids: Sequence[int] | Sequence[Sequence[int]] | np.ndarray,
        max_new_tokens: int = 32,
        **options: Any,
    ) -> Any:
        """Continue the prompt(s): a list of ids for one prompt, a list of lists for a batch.

        Options are those of :class:`pygpukit.llm.GenerationConfig` (temperature, top_k,
        top_p, min_p, repetition_penalty, seed, stop_token_ids, ...). Returns prompt plus
        new tokens, in the input's form (a list, or a list of lists).
        """
        from .generation import generate

        return generate(self, input_ids, max_new_tokens=max_new_tokens, **options)

    def stream(
        self, input_ids: Sequence[int], config: GenerationConfig | None = None, **options: Any
    ) -> Iterator[StreamEvent]:
        """Yield each new token of one prompt as soon as it is chosen."""
        from .generation import stream

        return stream(self, input_ids, config, **options)
