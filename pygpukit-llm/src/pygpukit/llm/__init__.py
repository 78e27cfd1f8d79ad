"""pygpukit.llm: load safetensors checkpoints and run causal language models on pygpukit ops.

GPT-2, Llama, Mistral, Qwen2, Qwen3 and Mixtral are read from a model directory
(config.json + *.safetensors) and run through the public pygpukit API, so the CPU
backend runs them and a GPU backend does too::

    from pygpukit.llm import load_model_from_safetensors, Tokenizer
    model = load_model_from_safetensors("path/to/model")
    tok = Tokenizer.from_pretrained("path/to/model")
    ids = model.generate(tok.encode("Hello"), max_new_tokens=32)
    print(tok.decode(ids))
"""

from __future__ import annotations

from typing import Any

from .checkpoint import Checkpoint, open_checkpoint
from .config import SUPPORTED_MODEL_TYPES, TransformerConfig, load_config
from .generation import GenerationConfig, StreamEvent
from .kv_cache import KVCache
from .loader import load_model_from_safetensors
from .model import CausalTransformerModel
from .safetensors import SafeTensorsError, SafeTensorsFile, TensorInfo, save_file
from .sampling import SamplingParams
from .spec import (
    GPT2_SPEC,
    LLAMA_SPEC,
    MISTRAL_SPEC,
    MIXTRAL_SPEC,
    QWEN2_SPEC,
    QWEN3_SPEC,
    ModelSpec,
    detect_model_spec,
)

__all__ = [
    "CausalTransformerModel",
    "ChatSession",
    "Checkpoint",
    "GenerationConfig",
    "GPT2_SPEC",
    "KVCache",
    "LLAMA_SPEC",
    "MISTRAL_SPEC",
    "MIXTRAL_SPEC",
    "ModelSpec",
    "QWEN2_SPEC",
    "QWEN3_SPEC",
    "SafeTensorsError",
    "SafeTensorsFile",
    "SamplingParams",
    "StreamEvent",
    "SUPPORTED_MODEL_TYPES",
    "TensorInfo",
    "Tokenizer",
    "TransformerConfig",
    "detect_model_spec",
    "load_config",
    "load_model_from_safetensors",
    "open_checkpoint",
    "save_file",
    "split_thinking",
]

#: names served from modules that import tokenizers / jinja2 (loaded on first use)
_LAZY = {"Tokenizer": "tokenizer", "ChatSession": "chat", "split_thinking": "chat"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'pygpukit.llm' has no attribute {name!r}")
