"""WhisperConfig: the shape of a Whisper checkpoint, read from its Hugging Face config.json."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygpukit.llm import TransformerConfig

__all__ = ["WhisperConfig", "load_whisper_config"]

#: frames of log-mel per encoder position: conv2 has stride 2
FRAMES_PER_POSITION = 2


@dataclass(frozen=True)
class WhisperConfig:
    """Sizes of the encoder and decoder (tiny through large-v3 differ only in these)."""

    vocab_size: int
    num_mel_bins: int
    d_model: int
    encoder_layers: int
    encoder_attention_heads: int
    encoder_ffn_dim: int
    decoder_layers: int
    decoder_attention_heads: int
    decoder_ffn_dim: int
    max_source_positions: int = 1500
    max_target_positions: int = 448
    scale_embedding: bool = False
    layer_norm_eps: float = 1e-5
    activation: str = "gelu"

    def __post_init__(self) -> None:
        for name in ("encoder_attention_heads", "decoder_attention_heads"):
            heads = getattr(self, name)
            if not isinstance(heads, int) or heads < 1 or self.d_model % heads:
                raise ValueError(
                    f"WhisperConfig: d_model {self.d_model} must be a multiple of {name} {heads}"
                )
        if self.activation not in ("gelu", "gelu_tanh"):
            raise ValueError(f"WhisperConfig: unsupported activation {self.activation!r}")

    @property
    def n_frames(self) -> int:
        """Log-mel frames of one encoder window (3000 = 30 s for every released model)."""
        return self.max_source_positions * FRAMES_PER_POSITION

    def encoder(self) -> TransformerConfig:
        """The encoder's shape in the llm layers' terms (non-causal, learned positions)."""
        return self._stack(
            self.encoder_layers, self.encoder_attention_heads, self.encoder_ffn_dim,
            self.max_source_positions,
        )  # fmt: skip

    def decoder(self) -> TransformerConfig:
        """The decoder's shape in the llm layers' terms (its KV cache is built from it)."""
        return self._stack(
            self.decoder_layers, self.decoder_attention_heads, self.decoder_ffn_dim,
            self.max_target_positions,
        )  # fmt: skip

    def _stack(self, layers: int, heads: int, ffn: int, positions: int) -> TransformerConfig:
        return TransformerConfig(
            model_type="whisper",
            vocab_size=self.vocab_size,
            hidden_size=self.d_model,
            num_layers=layers,
            num_heads=heads,
            num_kv_heads=heads,
            head_dim=self.d_model // heads,
            intermediate_size=ffn,
            max_position_embeddings=positions,
            norm_eps=self.layer_norm_eps,
            norm="layer",
            activation=self.activation,
            positions="learned",
            attention_bias=True,
            output_bias=True,
            mlp_bias=True,
        )

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> WhisperConfig:
        """Read a transformers WhisperConfig dict (config.json)."""
        if raw.get("model_type") != "whisper":
            raise ValueError(f"config.json: model_type {raw.get('model_type')!r} is not 'whisper'")
        act = raw.get("activation_function", "gelu")
        acts = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
        if act not in acts:
            raise ValueError(f"config.json: activation_function {act!r} is not supported")

        def need(name: str) -> int:
            value = raw.get(name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"config.json: {name} must be a positive int, got {value!r}")
            return value

        return cls(
            vocab_size=need("vocab_size"),
            num_mel_bins=need("num_mel_bins"),
            d_model=need("d_model"),
            encoder_layers=need("encoder_layers"),
            encoder_attention_heads=need("encoder_attention_heads"),
            encoder_ffn_dim=need("encoder_ffn_dim"),
            decoder_layers=need("decoder_layers"),
            decoder_attention_heads=need("decoder_attention_heads"),
            decoder_ffn_dim=need("decoder_ffn_dim"),
            max_source_positions=need("max_source_positions"),
            max_target_positions=need("max_target_positions"),
            scale_embedding=bool(raw.get("scale_embedding", False)),
            activation=acts[act],
        )


def load_whisper_config(path: str | os.PathLike[str]) -> tuple[WhisperConfig, dict[str, Any]]:
    """(WhisperConfig, the raw dict) from config.json or the model directory holding it."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no config.json (a Whisper model directory needs one)")
    try:
        raw = json.loads(p.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{p}: must hold a JSON object")
    try:
        return WhisperConfig.from_dict(raw), raw
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None
