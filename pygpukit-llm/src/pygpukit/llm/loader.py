"""load_model_from_safetensors: checkpoint + config.json -> CausalTransformerModel.

Each tensor is read from the memory map, cast on the host only when its dtype differs
from the model's, and copied to the device once. Every tensor the model needs is checked
for presence and shape; a tensor the model would not use is an error too (a checkpoint
of another shape must not load silently).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .checkpoint import Checkpoint, open_checkpoint
from .config import TransformerConfig, load_config
from .layers import Attention, DenseMLP, Linear, MoEMLP, Norm
from .model import Block, CausalTransformerModel
from .spec import ModelSpec, detect_model_spec

__all__ = ["TensorReader", "load_model_from_safetensors"]

#: buffers some checkpoints carry that the model recomputes (never weights)
IGNORED_SUFFIXES = (".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq")
FLOAT_DTYPES = {
    "float32": gp.float32,
    "float16": gp.float16,
    "bfloat16": gp.bfloat16,
    "float64": gp.float64,
}


class _Reader:
    """Pulls named tensors out of a checkpoint onto the device, checking shapes."""

    def __init__(
        self, ckpt: Checkpoint, spec: ModelSpec, dtype: Any, device: Any, progress: Any
    ) -> None:
        self.ckpt, self.spec, self.dtype, self.device = ckpt, spec, dtype, device
        self.progress = progress
        self.used: set[str] = set()
        self.prefix = ""
        if spec.optional_prefix and any(n.startswith(spec.optional_prefix) for n in ckpt):
            self.prefix = spec.optional_prefix

    def name(self, template: str, **index: int) -> str:
        name = template.format(**index)
        if self.prefix and name != self.spec.lm_head:
            name = self.prefix + name
        return name

    def has(self, name: str) -> bool:
        return name in self.ckpt

    def get(self, name: str, shape: tuple[int, ...]) -> GPUArray:
        if name not in self.ckpt:
            raise ValueError(
                f"{self.ckpt.directory}: the checkpoint has no tensor {name!r} "
                f"({self.spec.name} needs it, shape {shape})"
            )
        info = self.ckpt.info(name)
        if info.shape != shape:
            raise ValueError(
                f"{self.ckpt.file_of(name).path}: tensor {name!r} (bytes [{info.start}, "
                f"{info.end})) has shape {info.shape} but config.json implies {shape}"
            )
        host = self.ckpt.get(name)
        target = self.dtype.to_numpy_dtype()
        if host.dtype != target:
            host = host.astype(target)
        self.used.add(name)
        self.progress.update(info.nbytes)
        return gp.from_numpy(np.ascontiguousarray(host), self.device)

    def linear(self, template: str, n_in: int, n_out: int, bias: bool, **index: int) -> Linear:
        base = self.name(template, **index)
        if self.spec.weights_in_out:
            weight = self.get(base + ".weight", (n_in, n_out))
        else:
            weight = self.get(base + ".weight", (n_out, n_in)).mT
        b = self.get(base + ".bias", (n_out,)) if bias else None
        return Linear(weight, b)

    def norm(self, template: str, size: int, cfg: TransformerConfig, **index: int) -> Norm:
        base = self.name(template, **index)
        if cfg.norm == "rms":
            base = base.removesuffix(".weight")
            return Norm(self.get(base + ".weight", (size,)), None, cfg.norm_eps)
        gamma = self.get(base + ".weight", (size,))
        return Norm(gamma, self.get(base + ".bias", (size,)), cfg.norm_eps)


def _attention(r: _Reader, cfg: TransformerConfig, i: int) -> Attention:
    s, h, d = r.spec, cfg.hidden_size, cfg.head_dim
    nq, nkv = cfg.num_heads * d, cfg.num_kv_heads * d
    if s.qkv:  # GPT-2: one (in, 3 * out) projection, split as column views
        fused = r.linear(s.qkv, h, 3 * nq, True, i=i)
        assert fused.bias is not None
        q, k, v = (
            Linear(fused.weight[:, j * nq : (j + 1) * nq], fused.bias[j * nq : (j + 1) * nq])
            for j in range(3)
        )
    else:
        q = r.linear(s.q, h, nq, cfg.attention_bias, i=i)
        k = r.linear(s.k, h, nkv, cfg.attention_bias, i=i)
        v = r.linear(s.v, h, nkv, cfg.attention_bias, i=i)
    o = r.linear(s.o, nq, h, cfg.output_bias, i=i)
    q_norm = k_norm = None
    if cfg.qk_norm:
        q_norm = Norm(r.get(r.name(s.q_norm, i=i), (d,)), None, cfg.norm_eps)
        k_norm = Norm(r.get(r.name(s.k_norm, i=i), (d,)), None, cfg.norm_eps)
    return Attention(q, k, v, o, q_norm, k_norm, cfg)


def _mlp(r: _Reader, cfg: TransformerConfig, i: int) -> DenseMLP | MoEMLP:
    s, h, n = r.spec, cfg.hidden_size, cfg.intermediate_size
    if cfg.num_experts:
        router = r.get(r.name(s.router, i=i), (cfg.num_experts, h)).mT
        experts = [
            DenseMLP(
                up=r.linear(s.expert_up.removesuffix(".weight"), h, n, False, i=i, e=e),
                down=r.linear(s.expert_down.removesuffix(".weight"), n, h, False, i=i, e=e),
                gate=r.linear(s.expert_gate.removesuffix(".weight"), h, n, False, i=i, e=e),
                activation=cfg.activation,
            )
            for e in range(cfg.num_experts)
        ]
        return MoEMLP(router, experts, cfg.num_experts_per_tok)
    gate = r.linear(s.gate, h, n, cfg.mlp_bias, i=i) if s.gate else None
    return DenseMLP(
        up=r.linear(s.up, h, n, cfg.mlp_bias, i=i),
        down=r.linear(s.down, n, h, cfg.mlp_bias, i=i),
        gate=gate,
        activation=cfg.activation,
    )


def _pick_dtype(dtype: Any, ckpt: Checkpoint, spec: ModelSpec, prefix: str) -> Any:
    if dtype is None:  # the checkpoint's own float dtype; float8 checkpoints compute in bf16
        stored = ckpt.info(prefix + spec.embed).dtype
        return {"F32": gp.float32, "F16": gp.float16, "BF16": gp.bfloat16, "F64": gp.float64}.get(
            stored, gp.bfloat16
        )
    key = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    if key not in FLOAT_DTYPES:
        raise ValueError(
            f"load_model_from_safetensors: dtype must be one of "
            f"{', '.join(FLOAT_DTYPES)}, got {dtype!r}"
        )
    return FLOAT_DTYPES[key]


def load_model_from_safetensors(
    path: str | os.PathLike[str],
    dtype: Any = None,
    spec: ModelSpec | None = None,
    *,
    config: TransformerConfig | None = None,
    device: Any = None,
    progress: bool = True,
) -> CausalTransformerModel:
    """Load a model directory (config.json + safetensors), a .safetensors file with its
    config.json beside it, or a shard index. `dtype` defaults to the checkpoint's own."""
    from tqdm.auto import tqdm

    ckpt = open_checkpoint(path)
    if config is None:
        config = load_config(Path(path) if Path(path).is_dir() else ckpt.directory)
    if spec is None:
        spec = detect_model_spec(ckpt.tensor_names, config.model_type)
    prefix = (
        spec.optional_prefix
        if any(n.startswith(spec.optional_prefix or "\0") for n in ckpt)
        else ""
    )
    dt = _pick_dtype(dtype, ckpt, spec, prefix)
    total = sum(ckpt.info(n).nbytes for n in ckpt)
    with tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        desc=f"loading {config.model_type}",
        disable=not progress,
        leave=False,
    ) as bar:
        r = _Reader(ckpt, spec, dt, device, bar)
        model = _build(r, config)
    unused = [n for n in ckpt if n not in r.used and not n.endswith(IGNORED_SUFFIXES)]
    scales = [n for n in unused if n.endswith(("weight_scale_inv", "weight_scale"))]
    if scales:
        raise ValueError(
            f"{ckpt.directory}: {len(scales)} FP8 scale tensors (e.g. {scales[0]!r}); "
            "checkpoints quantized with per-block scales are not supported yet (plain "
            "F8_E4M3 weights are)"
        )
    if unused:
        raise ValueError(
            f"{ckpt.directory}: {len(unused)} tensors of the checkpoint are not used by a "
            f"{config.model_type} model of this config.json (e.g. {unused[0]!r}); does the "
            "config match the weights?"
        )
    return model


def _build(r: _Reader, cfg: TransformerConfig) -> CausalTransformerModel:
    s = r.spec
    embed = r.get(r.name(s.embed), (cfg.vocab_size, cfg.hidden_size))
    position_embed = None
    if s.position_embed:
        position_embed = r.get(
            r.name(s.position_embed), (cfg.max_position_embeddings, cfg.hidden_size)
        )
    blocks = [
        Block(
            attn_norm=r.norm(s.attn_norm, cfg.hidden_size, cfg, i=i),
            attn=_attention(r, cfg, i),
            mlp_norm=r.norm(s.mlp_norm, cfg.hidden_size, cfg, i=i),
            mlp=_mlp(r, cfg, i),
        )
        for i in range(cfg.num_layers)
    ]
    final_norm = r.norm(s.final_norm, cfg.hidden_size, cfg)
    head_name = s.lm_head
    if r.has(head_name):
        lm_head = r.get(head_name, (cfg.vocab_size, cfg.hidden_size)).mT
    elif cfg.tie_word_embeddings or s.name == "gpt2":
        lm_head = embed.mT  # tied: the embedding, read transposed
    else:
        raise ValueError(
            f"{r.ckpt.directory}: no {head_name!r} and config.json does not set tie_word_embeddings"
        )
    return CausalTransformerModel(cfg, s, embed, blocks, final_norm, lm_head, position_embed)


#: the checked tensor reader, for other model families built on these layers (Whisper)
TensorReader = _Reader
