"""Fused projections: each layer's q/k/v weights (and gate/up) stored side by side, so a
decode step runs one matmul per group instead of three (or two).

At batch 1 a decode step is a string of matrix-vector products; small ones (Llama's k and
v are an eighth of q) cannot keep the GPU's memory busy and each costs a launch. The
fused weight is one (in, q + k + v) array; the layer's own Linear objects are rebound to
column views of it, so the eager path reads the same memory and the originals are freed
(one layer at a time: the extra memory is one layer's projections, once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pygpukit as gp

from .layers import DenseMLP, Linear

if TYPE_CHECKING:
    from .model import CausalTransformerModel

__all__ = ["FusedLayer", "fuse_projections"]


@dataclass
class FusedLayer:
    """One layer's fused projections and where each part's columns start and end."""

    qkv: Linear
    qkv_split: tuple[int, int]  # end of q's columns, end of k's
    gate_up: Linear | None  # None: no gated dense MLP (GPT-2, MoE)
    gate_columns: int


def _fuse(parts: list[Linear]) -> tuple[Linear, list[Linear]] | None:
    """The fused Linear of `parts` and the parts rebound to its column views; None when
    some parts have a bias and others not."""
    biased = [p.bias is not None for p in parts]
    if any(biased) and not all(biased):
        return None
    # (out, in) storage, as checkpoints keep it: the fused weight is its (in, out) view
    storage = gp.concat([p.weight.mT for p in parts], axis=0)
    weight = storage.mT
    bias = gp.concat([p.bias for p in parts if p.bias is not None]) if all(biased) else None
    fused = Linear(weight, bias)
    rebound, start = [], 0
    for p in parts:
        end = start + p.weight.shape[1]
        part_bias = bias[start:end] if bias is not None else None
        rebound.append(Linear(weight[:, start:end], part_bias))
        start = end
    return fused, rebound


def fuse_projections(model: CausalTransformerModel) -> list[FusedLayer] | None:
    """Fuse every layer's projections once (kept on the model); None if some layer cannot."""
    done: list[FusedLayer] | None = getattr(model, "fused_layers", None)
    if done is not None:
        return done
    out: list[FusedLayer] = []
    for block in model.blocks:
        attn = block.attn
        got = _fuse([attn.q, attn.k, attn.v])
        if got is None:
            return None
        qkv, (attn.q, attn.k, attn.v) = got[0], got[1]
        split = (attn.q.weight.shape[1], attn.q.weight.shape[1] + attn.k.weight.shape[1])
        gate_up, gate_columns = None, 0
        mlp = block.mlp
        if isinstance(mlp, DenseMLP) and mlp.gate is not None:
            pair = _fuse([mlp.gate, mlp.up])
            if pair is not None:
                gate_up, (mlp.gate, mlp.up) = pair[0], pair[1]
                gate_columns = mlp.gate.weight.shape[1]
        out.append(FusedLayer(qkv, split, gate_up, gate_columns))
    model.fused_layers = out  # type: ignore[attr-defined]
    return out
