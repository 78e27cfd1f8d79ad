"""WhisperModel: the encoder-decoder transformer, on pygpukit ops, built from the llm layers.

Activations are time-major, (batch, time, features), so the two input convolutions are
one matmul each (the three taps of a kernel side by side, im2col) and every projection
reuses pygpukit.llm's Linear, LayerNorm, GELU MLP and attention. The decoder's
self-attention keys and values live in the llm KVCache; the cross-attention keys and
values are computed once per encoder output (`CrossCache`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray
from pygpukit.llm import KVCache
from pygpukit.llm.layers import Attention, DenseMLP, Norm

from .config import WhisperConfig
from .encode_graph import EncoderGraph
from .step import WhisperStep

__all__ = ["Conv1d", "CrossCache", "DecoderLayer", "EncoderLayer", "WhisperModel"]

#: prompts up to this long whose last logits are wanted run as one-token steps on a GPU
SHORT_PROMPT = 8


@dataclass
class Conv1d:
    """A kernel-3, padding-1 convolution over time, with GELU, as one fused matmul.

    `weight` is (out, 3 * in): tap k's (out, in) slice sits at columns [k * in, (k+1) * in),
    matching the order in which `__call__` lays the shifted inputs side by side.
    """

    weight: GPUArray
    bias: GPUArray
    stride: int

    def __call__(self, x: GPUArray) -> GPUArray:
        batch, time, channels = x.shape
        edge = gp.zeros((batch, 1, channels), dtype=x.dtype, device=x.device)
        padded = gp.concat([edge, x, edge], axis=1)
        out_time = (time - 1) // self.stride + 1  # (time + 2 - 3) // stride + 1
        span = self.stride * (out_time - 1) + 1
        taps = [padded[:, k : k + span : self.stride, :] for k in range(3)]
        cols = gp.concat(taps, axis=-1).reshape((batch * out_time, 3 * channels))
        y = gp.linear_bias_gelu(cols, self.weight, self.bias)
        return y.reshape((batch, out_time, -1))


@dataclass
class EncoderLayer:
    attn_norm: Norm
    attn: Attention
    mlp_norm: Norm
    mlp: DenseMLP


@dataclass
class DecoderLayer:
    self_norm: Norm
    self_attn: Attention
    cross_norm: Norm
    cross_attn: Attention
    mlp_norm: Norm
    mlp: DenseMLP


@dataclass
class CrossCache:
    """Per decoder layer, the encoder output's keys and values, (batch, heads, positions, dim)."""

    keys: list[GPUArray]
    values: list[GPUArray]

    @property
    def batch(self) -> int:
        return int(self.keys[0].shape[0])

    def repeat_rows(self, times: int) -> CrossCache:
        """Every row `times` times in a row (one copy per beam of that audio)."""
        if times == 1:
            return self
        index = gp.from_numpy(np.repeat(np.arange(self.batch), times), self.keys[0].device)
        return CrossCache(
            [gp.take(k, index, axis=0) for k in self.keys],
            [gp.take(v, index, axis=0) for v in self.values],
        )


def _heads(x: GPUArray, batch: int, seq: int, attn: Attention) -> GPUArray:
    """(batch * seq, heads * dim) -> (batch, heads, seq, dim)."""
    c = attn.cfg
    return x.reshape((batch, seq, c.num_heads, c.head_dim)).transpose(0, 2, 1, 3)


class WhisperModel:
    """Whisper's transformer: `encode(features)` then `decode(tokens, cache, cross)`.

    Build one with :func:`pygpukit.asr.whisper.load`; `transcribe` lives on the
    :class:`~pygpukit.asr.whisper.Whisper` wrapper that adds the tokenizer.
    """

    def __init__(
        self,
        config: WhisperConfig,
        conv1: Conv1d,
        conv2: Conv1d,
        encoder_positions: GPUArray,
        encoder_layers: list[EncoderLayer],
        encoder_norm: Norm,
        embed: GPUArray,
        decoder_positions: GPUArray,
        decoder_layers: list[DecoderLayer],
        decoder_norm: Norm,
        lm_head: GPUArray,
    ) -> None:
        self.config = config
        self.conv1, self.conv2 = conv1, conv2
        self.encoder_positions, self.encoder_layers = encoder_positions, encoder_layers
        self.encoder_norm = encoder_norm
        self.embed, self.decoder_positions = embed, decoder_positions
        self.decoder_layers, self.decoder_norm = decoder_layers, decoder_norm
        self.lm_head = lm_head  # (d_model, vocab): the embedding read transposed when tied
        self.dtype, self.device = embed.dtype, embed.device
        self.decoder_config = config.decoder()
        self.embed_scale = float(np.sqrt(config.d_model)) if config.scale_embedding else 1.0
        #: one-token decode steps through WhisperStep (device counters, a CUDA graph on
        #: GPUs); False: every step through the prompt path (kept to compare the two)
        self.fast_steps = True
        self._step: WhisperStep | None = None
        self._stepped_batches: set[int] = set()  # batch sizes a step ran for (kernels warm)
        #: the encoder as a CUDA graph per (small) batch size on GPUs, eager elsewhere
        self.encoder_graph = EncoderGraph(self._encode, self.device)

    def __repr__(self) -> str:
        c = self.config
        return (
            f"WhisperModel(d_model={c.d_model}, encoder_layers={c.encoder_layers}, "
            f"decoder_layers={c.decoder_layers}, n_mels={c.num_mel_bins}, vocab={c.vocab_size}, "
            f"dtype={self.dtype.name}, device={self.device})"
        )

    # -- encoder ---------------------------------------------------------------------
    def encode(self, features: Any) -> GPUArray:
        """Encoder output (batch, positions, d_model) for log-mel `features`
        (batch, n_mels, frames) or (n_mels, frames), frames = `config.n_frames`."""
        return self.encoder_graph(self._features(features))

    def _encode(self, x: GPUArray) -> GPUArray:
        """The encoder's work on features already in the model's dtype and device."""
        batch = x.shape[0]
        x = self.conv2(self.conv1(x.transpose(0, 2, 1)))
        x = x + self.encoder_positions
        seq, d = x.shape[1], x.shape[2]
        x = x.reshape((batch * seq, d))
        for layer in self.encoder_layers:
            h = layer.attn_norm(x)
            q, k, v = layer.attn.project(h, batch, seq)
            t = (0, 2, 1, 3)
            attn = layer.attn.attend(q.transpose(*t), k.transpose(*t), v.transpose(*t), None,
                                     causal=False)  # fmt: skip
            x = x + layer.attn.output(attn, batch, seq)
            x = x + layer.mlp(layer.mlp_norm(x))
        return self.encoder_norm(x).reshape((batch, seq, d))

    def _features(self, features: Any) -> GPUArray:
        c = self.config
        x = features if isinstance(features, GPUArray) else None
        if x is None:
            host = np.asarray(features)
            if host.dtype.kind not in "fiu":
                raise TypeError(f"encode: features must be real numbers, got dtype {host.dtype}")
            x = gp.from_numpy(np.ascontiguousarray(host, dtype=self.dtype.to_numpy_dtype()),
                              self.device)  # fmt: skip
        if x.ndim == 2:
            x = x.reshape((1, *x.shape))
        if x.ndim != 3 or x.shape[1:] != (c.num_mel_bins, c.n_frames):
            raise ValueError(
                f"encode: features must be (batch, {c.num_mel_bins}, {c.n_frames}) log-mel "
                f"frames (pad_or_trim to {c.n_frames}), got shape {x.shape}"
            )
        if x.device != self.device:
            raise ValueError(f"encode: features are on {x.device}, the model on {self.device}")
        return x.astype(self.dtype) if x.dtype != self.dtype else x

    # -- decoder ---------------------------------------------------------------------
    def cross_cache(self, encoded: GPUArray) -> CrossCache:
        """Each decoder layer's keys and values of the encoder output (batch, positions, d)."""
        batch, seq, d = encoded.shape
        flat = encoded.reshape((batch * seq, d))
        keys, values = [], []
        for layer in self.decoder_layers:
            keys.append(_heads(layer.cross_attn.k(flat), batch, seq, layer.cross_attn))
            values.append(_heads(layer.cross_attn.v(flat), batch, seq, layer.cross_attn))
        return CrossCache(keys, values)

    def new_cache(self, batch: int, max_length: int | None = None) -> KVCache:
        """An empty self-attention cache (max_length defaults to max_target_positions)."""
        length = max_length or self.config.max_target_positions
        return KVCache(self.decoder_config, batch, length, self.dtype, self.device)

    def decode(
        self, tokens: Any, cache: KVCache, cross: CrossCache, last_only: bool = False
    ) -> GPUArray:
        """Logits (batch, seq, vocab) of `tokens` (batch, seq) continuing what `cache` holds;
        (batch, vocab) with `last_only`."""
        ids = np.asarray(tokens.to_numpy() if isinstance(tokens, GPUArray) else tokens)
        if ids.ndim == 1:
            ids = ids[None, :]
        if ids.ndim != 2 or ids.shape[1] == 0 or ids.dtype.kind not in "iu":
            raise ValueError(f"decode: tokens must be (batch, seq) integers, got {ids.shape}")
        if ((ids < 0) | (ids >= self.config.vocab_size)).any():
            raise IndexError(f"decode: a token id is outside [0, {self.config.vocab_size})")
        batch, seq = ids.shape
        if cross.batch != batch:
            raise ValueError(f"decode: {batch} token rows but {cross.batch} encoder outputs")
        if cache.length + seq > self.config.max_target_positions:
            raise ValueError(
                f"decode: {cache.length + seq} tokens exceed the decoder's "
                f"{self.config.max_target_positions} positions"
            )
        start, _ = cache.reserve(np.ones(ids.shape, dtype=bool))
        if seq == 1 and self.fast_steps:
            logits = self._stepper(cache, cross).run(ids, start)
            return logits if last_only else logits.reshape((batch, 1, -1))
        if self._prompt_as_steps(seq, last_only):
            step = self._stepper(cache, cross)
            for j in range(seq):
                logits = step.run(ids[:, j : j + 1], start + j)
            return logits
        end = start + seq
        x = gp.take(self.embed, self._upload(ids.reshape(-1)), axis=0)
        if self.embed_scale != 1.0:
            x = x * self.embed_scale
        positions = self.decoder_positions[start:end]
        x = (x.reshape((batch, seq, -1)) + positions).reshape((batch * seq, -1))
        t = (0, 2, 1, 3)
        for i, layer in enumerate(self.decoder_layers):
            q, k, v = layer.self_attn.project(layer.self_norm(x), batch, seq)
            cache.keys[i][:, :, start:end, :] = k.transpose(*t)
            cache.values[i][:, :, start:end, :] = v.transpose(*t)
            keys, values = cache.keys[i][:, :, :end, :], cache.values[i][:, :, :end, :]
            attn = layer.self_attn.attend(q.transpose(*t), keys, values, None)
            x = x + layer.self_attn.output(attn, batch, seq)
            q = _heads(layer.cross_attn.q(layer.cross_norm(x)), batch, seq, layer.cross_attn)
            attn = layer.cross_attn.attend(q, cross.keys[i], cross.values[i], None,
                                           causal=False)  # fmt: skip
            x = x + layer.cross_attn.output(attn, batch, seq)
            x = x + layer.mlp(layer.mlp_norm(x))
        if last_only:
            x = x.reshape((batch, seq, -1))[:, -1, :]
        logits = self.decoder_norm(x) @ self.lm_head
        return logits if last_only else logits.reshape((batch, seq, -1))

    def _stepper(self, cache: KVCache, cross: CrossCache) -> WhisperStep:
        """The one-token step bound to this cache and encoder output (a new one when
        either changed: another window, or rows reordered into new arrays)."""
        step = self._step
        if step is None or not step.bound_to(cache, cross):
            # a new cache (another window, another run) whose batch size stepped before
            # captures at once; rows reordered into new arrays (the same cache, maybe new
            # arrays every step) run eagerly, as a graph replayed once would cost more
            fresh = step is None or step.cache is not cache
            early = fresh and cache.batch in self._stepped_batches
            step = self._step = WhisperStep(self, cache, cross, capture_first=early)
            self._stepped_batches.add(cache.batch)
        return step

    def _prompt_as_steps(self, seq: int, last_only: bool) -> bool:
        """Whether a prompt runs as one-token steps: a short one (Whisper's forced start
        tokens) whose last logits are all that is wanted, on a GPU, where those steps are
        graph replays and cost less than one eager pass of the prompt path (~300
        launches); the CPU reads the weights once per step, so it keeps the prompt path."""
        return (self.fast_steps and last_only and seq <= SHORT_PROMPT
                and self.device.type == "cuda")  # fmt: skip

    def release_steps(self) -> None:
        """Drop the step binding (its graph, and its hold on the last cache and encoder
        output); the next one-token decode makes a new one."""
        self._step = None

    def release_graphs(self) -> None:
        """Drop every CUDA graph (the decode step's and the encoder's) and the memory they
        keep; later calls capture anew."""
        self.release_steps()
        self.encoder_graph = EncoderGraph(self._encode, self.device)

    def _upload(self, values: np.ndarray) -> GPUArray:
        return gp.from_numpy(np.ascontiguousarray(values, dtype=np.int64), self.device)
