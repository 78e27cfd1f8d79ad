"""load_whisper_model: a Hugging Face Whisper folder (config.json + safetensors) -> WhisperModel.

Tensors go through pygpukit.llm's checked reader (presence, shape, dtype cast, one copy
to the device); a tensor the model would not use is an error, so weights of another
shape or family never load silently.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pygpukit as gp
from pygpukit.llm import ModelSpec, open_checkpoint
from pygpukit.llm.layers import Attention, DenseMLP
from pygpukit.llm.loader import FLOAT_DTYPES, TensorReader

from .config import WhisperConfig, load_whisper_config
from .model import Conv1d, DecoderLayer, EncoderLayer, WhisperModel

__all__ = ["load_whisper_model"]

#: the names transformers' WhisperForConditionalGeneration saves (the reader needs a spec)
WHISPER_SPEC = ModelSpec(
    name="whisper",
    embed="model.decoder.embed_tokens.weight",
    final_norm="model.decoder.layer_norm",
    lm_head="proj_out.weight",
    attn_norm="",
    mlp_norm="",
)
STORED = {"F32": gp.float32, "F16": gp.float16, "BF16": gp.bfloat16, "F64": gp.float64}


def _conv(r: TensorReader, name: str, n_in: int, n_out: int, stride: int) -> Conv1d:
    weight = r.ckpt.get(name + ".weight") if r.has(name + ".weight") else None
    if weight is None or weight.shape != (n_out, n_in, 3):
        got = None if weight is None else weight.shape
        raise ValueError(
            f"{r.ckpt.directory}: tensor {name + '.weight'!r} must have shape "
            f"({n_out}, {n_in}, 3), got {got}"
        )
    r.used.add(name + ".weight")
    r.progress.update(weight.nbytes)
    # (out, in, tap) -> (out, tap, in) -> (out, 3 * in): the column order Conv1d lays out
    cols = weight.astype(r.dtype.to_numpy_dtype()).transpose(0, 2, 1).reshape(n_out, 3 * n_in)
    bias = r.get(name + ".bias", (n_out,))
    return Conv1d(gp.from_numpy(cols.copy(), r.device), bias, stride)


def _attention(r: TensorReader, base: str, cfg: Any) -> Attention:
    d = cfg.hidden_size
    return Attention(
        q=r.linear(base + ".q_proj", d, d, True),
        k=r.linear(base + ".k_proj", d, d, False),  # Whisper's keys have no bias
        v=r.linear(base + ".v_proj", d, d, True),
        o=r.linear(base + ".out_proj", d, d, True),
        q_norm=None,
        k_norm=None,
        cfg=cfg,
    )


def _mlp(r: TensorReader, base: str, cfg: Any) -> DenseMLP:
    d, n = cfg.hidden_size, cfg.intermediate_size
    return DenseMLP(
        up=r.linear(base + ".fc1", d, n, True),
        down=r.linear(base + ".fc2", n, d, True),
        gate=None,
        activation=cfg.activation,
    )


def _build(r: TensorReader, config: WhisperConfig) -> WhisperModel:
    enc, dec, d = config.encoder(), config.decoder(), config.d_model
    conv1 = _conv(r, "model.encoder.conv1", config.num_mel_bins, d, 1)
    conv2 = _conv(r, "model.encoder.conv2", d, d, 2)
    enc_pos = r.get("model.encoder.embed_positions.weight", (config.max_source_positions, d))
    encoder_layers = []
    for i in range(config.encoder_layers):
        base = f"model.encoder.layers.{i}"
        encoder_layers.append(
            EncoderLayer(
                attn_norm=r.norm(base + ".self_attn_layer_norm", d, enc),
                attn=_attention(r, base + ".self_attn", enc),
                mlp_norm=r.norm(base + ".final_layer_norm", d, enc),
                mlp=_mlp(r, base, enc),
            )
        )
    encoder_norm = r.norm("model.encoder.layer_norm", d, enc)
    embed = r.get(WHISPER_SPEC.embed, (config.vocab_size, d))
    dec_pos = r.get("model.decoder.embed_positions.weight", (config.max_target_positions, d))
    decoder_layers = []
    for i in range(config.decoder_layers):
        base = f"model.decoder.layers.{i}"
        decoder_layers.append(
            DecoderLayer(
                self_norm=r.norm(base + ".self_attn_layer_norm", d, dec),
                self_attn=_attention(r, base + ".self_attn", dec),
                cross_norm=r.norm(base + ".encoder_attn_layer_norm", d, dec),
                cross_attn=_attention(r, base + ".encoder_attn", dec),
                mlp_norm=r.norm(base + ".final_layer_norm", d, dec),
                mlp=_mlp(r, base, dec),
            )
        )
    decoder_norm = r.norm(WHISPER_SPEC.final_norm, d, dec)
    # proj_out is tied to the token embedding; save_pretrained usually leaves it out
    lm_head = (
        r.get(WHISPER_SPEC.lm_head, (config.vocab_size, d)).mT
        if r.has(WHISPER_SPEC.lm_head)
        else embed.mT
    )
    return WhisperModel(
        config, conv1, conv2, enc_pos, encoder_layers, encoder_norm,
        embed, dec_pos, decoder_layers, decoder_norm, lm_head,
    )  # fmt: skip


def load_whisper_model(
    path: str | os.PathLike[str],
    dtype: Any = None,
    *,
    device: Any = None,
    progress: bool = True,
) -> WhisperModel:
    """Load a Whisper model directory; `dtype` defaults to the checkpoint's own float dtype."""
    from tqdm.auto import tqdm

    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a directory (a Whisper model folder is needed)")
    config, _ = load_whisper_config(folder)
    ckpt = open_checkpoint(folder)
    if WHISPER_SPEC.embed not in ckpt:
        raise ValueError(
            f"{folder}: no {WHISPER_SPEC.embed!r}; is this a WhisperForConditionalGeneration "
            "checkpoint?"
        )
    if dtype is None:
        dt = STORED.get(ckpt.info(WHISPER_SPEC.embed).dtype, gp.float32)
    else:
        key = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
        if key not in FLOAT_DTYPES:
            raise ValueError(f"load: dtype must be one of {', '.join(FLOAT_DTYPES)}, got {dtype!r}")
        dt = FLOAT_DTYPES[key]
    total = sum(ckpt.info(n).nbytes for n in ckpt)
    with tqdm(total=total, unit="B", unit_scale=True, desc="loading whisper",
              disable=not progress, leave=False) as bar:  # fmt: skip
        r = TensorReader(ckpt, WHISPER_SPEC, dt, device, bar)
        model = _build(r, config)
    unused = [n for n in ckpt if n not in r.used]
    if unused:
        raise ValueError(
            f"{folder}: {len(unused)} tensors are not used by a Whisper model of this "
            f"config.json (e.g. {unused[0]!r}); does the config match the weights?"
        )
    return model
