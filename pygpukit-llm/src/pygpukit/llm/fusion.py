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
from pygpukit import GPUArray

from .layers import DenseMLP, Linear, MoEMLP

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
    #: MoE: every expert's gate and up rows stacked (E, 2F, H), and down (E, H, F), in
    #: (out, in) storage for `gp.gather_matmul`; None for dense layers
    experts_gate_up: GPUArray | None = None
    experts_down: GPUArray | None = None


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
        layer = FusedLayer(qkv, split, gate_up, gate_columns)
        if isinstance(mlp, MoEMLP):
            _stack_experts(mlp, layer)
        out.append(layer)
    model.fused_layers = out  # type: ignore[attr-defined]
    return out


def _stack_experts(mlp: MoEMLP, layer: FusedLayer) -> None:
    """Stack the experts' weights (when none has a bias) and rebind them to views."""
    experts = mlp.experts
    if any(e.gate is None for e in experts):
        return
    linears = [lin for e in experts for lin in (e.gate, e.up, e.down)]
    if any(lin is None or lin.bias is not None for lin in linears):
        return
    n_ff, hidden = experts[0].up.weight.shape[1], experts[0].up.weight.shape[0]

    def rows(w: GPUArray) -> GPUArray:  # (in, out) view -> (1, out, in)
        return w.mT.reshape((1, *w.mT.shape))

    gate_up = gp.concat([gp.concat([rows(e.gate.weight), rows(e.up.weight)], axis=1)  # type: ignore[union-attr]
                         for e in experts], axis=0)  # fmt: skip
    down = gp.concat([rows(e.down.weight) for e in experts], axis=0)
    for i, e in enumerate(experts):
        e.gate = Linear(gate_up[i, :n_ff].mT)
        e.up = Linear(gate_up[i, n_ff:].mT)
        e.down = Linear(down[i].mT)
    assert gate_up.shape[1:] == (2 * n_ff, hidden)
    layer.experts_gate_up, layer.experts_down = gate_up, down
