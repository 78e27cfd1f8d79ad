"""ModelSpec: how one family names its tensors, and detecting the family of a checkpoint."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = [
    "ModelSpec",
    "detect_model_spec",
    "GPT2_SPEC",
    "LLAMA_SPEC",
    "MISTRAL_SPEC",
    "QWEN2_SPEC",
    "QWEN3_SPEC",
    "MIXTRAL_SPEC",
    "SPECS",
]


@dataclass(frozen=True)
class ModelSpec:
    """Tensor names of one family; ``{i}`` is the layer index, ``{e}`` the expert index."""

    name: str
    embed: str
    final_norm: str
    lm_head: str
    attn_norm: str
    mlp_norm: str
    q: str = ""
    k: str = ""
    v: str = ""
    qkv: str = ""  # one fused projection (GPT-2's c_attn)
    o: str = ""
    q_norm: str = ""
    k_norm: str = ""
    gate: str = ""
    up: str = ""
    down: str = ""
    router: str = ""
    expert_gate: str = ""
    expert_up: str = ""
    expert_down: str = ""
    position_embed: str = ""
    #: GPT-2 stores linear weights as (in, out) (its Conv1D); the others as (out, in)
    weights_in_out: bool = False
    #: a prefix some checkpoints put before every name (GPT2LMHeadModel's "transformer.")
    optional_prefix: str = ""


GPT2_SPEC = ModelSpec(
    name="gpt2",
    embed="wte.weight",
    position_embed="wpe.weight",
    final_norm="ln_f",
    lm_head="lm_head.weight",
    attn_norm="h.{i}.ln_1",
    mlp_norm="h.{i}.ln_2",
    qkv="h.{i}.attn.c_attn",
    o="h.{i}.attn.c_proj",
    up="h.{i}.mlp.c_fc",
    down="h.{i}.mlp.c_proj",
    weights_in_out=True,
    optional_prefix="transformer.",
)
LLAMA_SPEC = ModelSpec(
    name="llama",
    embed="model.embed_tokens.weight",
    final_norm="model.norm.weight",
    lm_head="lm_head.weight",
    attn_norm="model.layers.{i}.input_layernorm.weight",
    mlp_norm="model.layers.{i}.post_attention_layernorm.weight",
    q="model.layers.{i}.self_attn.q_proj",
    k="model.layers.{i}.self_attn.k_proj",
    v="model.layers.{i}.self_attn.v_proj",
    o="model.layers.{i}.self_attn.o_proj",
    gate="model.layers.{i}.mlp.gate_proj",
    up="model.layers.{i}.mlp.up_proj",
    down="model.layers.{i}.mlp.down_proj",
)
MISTRAL_SPEC = replace(LLAMA_SPEC, name="mistral")
QWEN2_SPEC = replace(LLAMA_SPEC, name="qwen2")
QWEN3_SPEC = replace(
    LLAMA_SPEC,
    name="qwen3",
    q_norm="model.layers.{i}.self_attn.q_norm.weight",
    k_norm="model.layers.{i}.self_attn.k_norm.weight",
)
MIXTRAL_SPEC = replace(
    LLAMA_SPEC,
    name="mixtral",
    gate="",
    up="",
    down="",
    router="model.layers.{i}.block_sparse_moe.gate.weight",
    expert_gate="model.layers.{i}.block_sparse_moe.experts.{e}.w1.weight",
    expert_down="model.layers.{i}.block_sparse_moe.experts.{e}.w2.weight",
    expert_up="model.layers.{i}.block_sparse_moe.experts.{e}.w3.weight",
)

SPECS = {
    s.name: s for s in (GPT2_SPEC, LLAMA_SPEC, MISTRAL_SPEC, QWEN2_SPEC, QWEN3_SPEC, MIXTRAL_SPEC)
}


def detect_model_spec(tensor_names: Iterable[str], model_type: str | None = None) -> ModelSpec:
    """The family of a checkpoint: from config.json's `model_type` when given, else its names.

    From names alone Llama, Mistral and Qwen2 without biases look the same and are all run
    by the Llama code, so "llama" is the answer for them; q/k biases say Qwen2, q_norm says
    Qwen3, block_sparse_moe says Mixtral, wte + h.0 says GPT-2.
    """
    if model_type is not None:
        if model_type not in SPECS:
            raise ValueError(
                f"detect_model_spec: model_type {model_type!r} is not supported "
                f"(supported: {', '.join(SPECS)})"
            )
        return SPECS[model_type]
    names = set(tensor_names)
    if not names:
        raise ValueError("detect_model_spec: the checkpoint has no tensors")
    stripped = {n.removeprefix("transformer.") for n in names}
    if "wte.weight" in stripped and any(n.startswith("h.0.attn.") for n in stripped):
        return GPT2_SPEC
    if any(".block_sparse_moe." in n for n in names):
        return MIXTRAL_SPEC
    if any(".self_attn.q_norm." in n for n in names):
        return QWEN3_SPEC
    if "model.layers.0.self_attn.q_proj.bias" in names and (
        "model.layers.0.self_attn.o_proj.bias" not in names
    ):
        return QWEN2_SPEC
    if "model.embed_tokens.weight" in names and any(".self_attn.q_proj." in n for n in names):
        return LLAMA_SPEC
    sample = ", ".join(sorted(names)[:5])
    raise ValueError(
        f"detect_model_spec: tensor names match no supported family (gpt2, llama, mistral, "
        f"qwen2, qwen3, mixtral); the first names are {sample}"
    )
