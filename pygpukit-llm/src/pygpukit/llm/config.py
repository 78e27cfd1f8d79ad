"""TransformerConfig: the shape and options of a causal transformer, read from config.json."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TransformerConfig", "load_config", "SUPPORTED_MODEL_TYPES"]

SUPPORTED_MODEL_TYPES = ("gpt2", "llama", "mistral", "qwen2", "qwen3", "mixtral")

#: Hugging Face activation names and the pygpukit form each one is
ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
}
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")


@dataclass
class TransformerConfig:
    """Everything the model code needs to know about one architecture instance."""

    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int = 2048
    norm_eps: float = 1e-6
    norm: str = "rms"  # "rms" or "layer"
    activation: str = "silu"  # "silu", "gelu" or "gelu_tanh"
    positions: str = "rope"  # "rope" or "learned" (GPT-2)
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    attention_bias: bool = False  # bias on q/k/v (Qwen2; Llama's attention_bias)
    output_bias: bool = False  # bias on o_proj (Llama's attention_bias)
    mlp_bias: bool = False
    qk_norm: bool = False  # RMSNorm of each head's q and k (Qwen3)
    sliding_window: int | None = None
    num_experts: int = 0  # > 0: a mixture-of-experts FFN (Mixtral)
    num_experts_per_tok: int = 2
    tie_word_embeddings: bool = False
    bos_token_id: int | None = None
    eos_token_id: list[int] = field(default_factory=list)
    pad_token_id: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "intermediate_size",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"TransformerConfig: {name} must be a positive int, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"TransformerConfig: num_heads ({self.num_heads}) must be a multiple of "
                f"num_kv_heads ({self.num_kv_heads})"
            )
        if self.norm not in ("rms", "layer"):
            raise ValueError(f"TransformerConfig: norm must be 'rms' or 'layer', got {self.norm!r}")
        if self.activation not in ("silu", "gelu", "gelu_tanh"):
            raise ValueError(f"TransformerConfig: unknown activation {self.activation!r}")
        if self.positions == "rope" and self.head_dim % 2:
            raise ValueError(f"TransformerConfig: RoPE needs an even head_dim, got {self.head_dim}")
        if self.rope_scaling is not None:
            kind = self.rope_scaling.get("rope_type", self.rope_scaling.get("type", "default"))
            if kind not in ROPE_TYPES:
                raise ValueError(
                    f"TransformerConfig: rope_scaling type {kind!r} is not supported "
                    f"(supported: {', '.join(ROPE_TYPES)})"
                )
        if self.num_experts and not 1 <= self.num_experts_per_tok <= self.num_experts:
            raise ValueError(
                f"TransformerConfig: num_experts_per_tok must be in [1, {self.num_experts}], "
                f"got {self.num_experts_per_tok}"
            )

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TransformerConfig:
        """Read a Hugging Face config.json dict (model_type picks the field names)."""
        model_type = raw.get("model_type")
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise ValueError(
                f"config.json: model_type {model_type!r} is not supported (supported: "
                f"{', '.join(SUPPORTED_MODEL_TYPES)})"
            )
        return _from_gpt2(raw) if model_type == "gpt2" else _from_llama_like(raw, model_type)


def _need(raw: dict[str, Any], *names: str) -> Any:
    for name in names:
        if raw.get(name) is not None:
            return raw[name]
    raise ValueError(f"config.json: missing {' / '.join(names)}")


def _eos_list(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, list) else [int(value)]


def _activation(raw: dict[str, Any], key: str, default: str) -> str:
    name = raw.get(key) or default
    if name not in ACTIVATIONS:
        raise ValueError(f"config.json: {key} {name!r} is not supported ({', '.join(ACTIVATIONS)})")
    return ACTIVATIONS[name]


def _from_gpt2(raw: dict[str, Any]) -> TransformerConfig:
    hidden = int(_need(raw, "n_embd", "hidden_size"))
    heads = int(_need(raw, "n_head", "num_attention_heads"))
    if hidden % heads:
        raise ValueError(f"config.json: n_embd {hidden} is not a multiple of n_head {heads}")
    return TransformerConfig(
        model_type="gpt2",
        vocab_size=int(_need(raw, "vocab_size")),
        hidden_size=hidden,
        num_layers=int(_need(raw, "n_layer", "num_hidden_layers")),
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=hidden // heads,
        intermediate_size=int(raw.get("n_inner") or 4 * hidden),
        max_position_embeddings=int(_need(raw, "n_positions", "max_position_embeddings")),
        norm_eps=float(raw.get("layer_norm_epsilon", 1e-5)),
        norm="layer",
        activation=_activation(raw, "activation_function", "gelu_new"),
        positions="learned",
        attention_bias=True,
        output_bias=True,
        mlp_bias=True,
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", True)),
        bos_token_id=raw.get("bos_token_id"),
        eos_token_id=_eos_list(raw.get("eos_token_id")),
        pad_token_id=raw.get("pad_token_id"),
    )


def _rope_settings(raw: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """(theta, scaling) from either the classic fields or transformers 5's rope_parameters."""
    params = raw.get("rope_parameters")
    if isinstance(params, dict) and "rope_theta" in params:  # one set for all layers
        theta = float(params["rope_theta"])
        kind = params.get("rope_type", "default")
        scaling = (
            None if kind == "default" else {k: v for k, v in params.items() if k != "rope_theta"}
        )
        return theta, scaling
    scaling = raw.get("rope_scaling")
    if isinstance(scaling, dict):
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        scaling = None if kind == "default" else dict(scaling, rope_type=kind)
    return float(raw.get("rope_theta", 10000.0)), scaling or None


def _from_llama_like(raw: dict[str, Any], model_type: str) -> TransformerConfig:
    hidden = int(_need(raw, "hidden_size"))
    heads = int(_need(raw, "num_attention_heads"))
    kv_heads = int(raw.get("num_key_value_heads") or heads)
    head_dim = int(raw.get("head_dim") or hidden // heads)
    theta, scaling = _rope_settings(raw)
    window = raw.get("sliding_window")
    if model_type in ("qwen2", "qwen3") and not raw.get("use_sliding_window", False):
        window = None  # Qwen2/3 keep the field but attend fully unless use_sliding_window
    attention_bias = bool(raw.get("attention_bias", False))
    moe = model_type == "mixtral"
    return TransformerConfig(
        model_type=model_type,
        vocab_size=int(_need(raw, "vocab_size")),
        hidden_size=hidden,
        num_layers=int(_need(raw, "num_hidden_layers")),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=int(_need(raw, "intermediate_size")),
        max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
        norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
        activation=_activation(raw, "hidden_act", "silu"),
        rope_theta=theta,
        rope_scaling=scaling,
        attention_bias=attention_bias or model_type == "qwen2",
        output_bias=attention_bias,
        mlp_bias=bool(raw.get("mlp_bias", False)),
        qk_norm=model_type == "qwen3",
        sliding_window=int(window) if window else None,
        num_experts=int(raw.get("num_local_experts", 8)) if moe else 0,
        num_experts_per_tok=int(raw.get("num_experts_per_tok", 2)) if moe else 2,
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        bos_token_id=raw.get("bos_token_id"),
        eos_token_id=_eos_list(raw.get("eos_token_id")),
        pad_token_id=raw.get("pad_token_id"),
    )


def load_config(path: str | os.PathLike[str]) -> TransformerConfig:
    """TransformerConfig from a config.json file or the model directory holding one."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no config.json (the model's shape is read from it)")
    try:
        raw = json.loads(p.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{p}: must hold a JSON object")
    try:
        return TransformerConfig.from_dict(raw)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None
