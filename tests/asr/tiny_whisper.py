"""Tiny Whisper folders made in the test: a byte-level tokenizer and random weights.

The tokenizer has the 256 byte symbols, then Whisper's special tokens in Whisper's order
(end of text, start of transcript, two languages, tasks, ..., no-timestamps) and one
timestamp token per 0.02 s of the tiny model's window. Weights are written with NumPy
(no torch needed); the transformers parity tests save their own with save_pretrained.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pygpukit.llm import save_file

N_MELS = 80
SOURCE_POSITIONS = 25  # encoder positions: a window of 50 frames = 0.5 s
SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|de|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nospeech|>",
    "<|notimestamps|>",
]
EOT, SOT, EN, DE = 256, 257, 258, 259
NO_TIMESTAMPS = 256 + SPECIALS.index("<|notimestamps|>")
TIMESTAMP_BEGIN = NO_TIMESTAMPS + 1
VOCAB = TIMESTAMP_BEGIN + SOURCE_POSITIONS + 1

HF_CONFIG: dict[str, Any] = dict(
    vocab_size=VOCAB,
    num_mel_bins=N_MELS,
    d_model=32,
    encoder_layers=2,
    encoder_attention_heads=4,
    decoder_layers=2,
    decoder_attention_heads=4,
    encoder_ffn_dim=48,
    decoder_ffn_dim=48,
    max_source_positions=SOURCE_POSITIONS,
    max_target_positions=48,
    pad_token_id=EOT,
    bos_token_id=EOT,
    eos_token_id=EOT,
    decoder_start_token_id=SOT,
    begin_suppress_tokens=[220, EOT],
    suppress_tokens=[],
)


def write_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    stamps = [f"<|{i * 0.02:.2f}|>" for i in range(SOURCE_POSITIONS + 1)]
    tok.add_special_tokens(SPECIALS + stamps)
    assert tok.get_vocab_size() == VOCAB
    tok.save(str(folder / "tokenizer.json"))


def write_generation_config(folder: Path, **extra: Any) -> None:
    gen = dict(
        decoder_start_token_id=SOT,
        eos_token_id=EOT,
        pad_token_id=EOT,
        no_timestamps_token_id=NO_TIMESTAMPS,
        begin_suppress_tokens=[220, EOT],
        **extra,
    )
    (folder / "generation_config.json").write_text(json.dumps(gen))


def make_checkpoint(folder: Path, seed: int = 0, scale: float = 0.3) -> dict[str, np.ndarray]:
    """config.json, model.safetensors (random float32), tokenizer.json, generation_config;
    returns the tensors written."""
    rng = np.random.default_rng(seed)
    c = HF_CONFIG
    d, f = c["d_model"], c["encoder_ffn_dim"]

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln() -> tuple[np.ndarray, np.ndarray]:
        return 1 + w(d) * 0.3, w(d) * 0.3

    t: dict[str, np.ndarray] = {
        "model.encoder.conv1.weight": w(d, N_MELS, 3),
        "model.encoder.conv1.bias": w(d),
        "model.encoder.conv2.weight": w(d, d, 3),
        "model.encoder.conv2.bias": w(d),
        "model.encoder.embed_positions.weight": w(SOURCE_POSITIONS, d),
        "model.decoder.embed_tokens.weight": w(VOCAB, d),
        "model.decoder.embed_positions.weight": w(c["max_target_positions"], d),
    }
    for part, n in (("encoder", c["encoder_layers"]), ("decoder", c["decoder_layers"])):
        t[f"model.{part}.layer_norm.weight"], t[f"model.{part}.layer_norm.bias"] = ln()
        attns = ["self_attn"] + (["encoder_attn"] if part == "decoder" else [])
        for i in range(n):
            base = f"model.{part}.layers.{i}"
            for a in attns:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    t[f"{base}.{a}.{proj}.weight"] = w(d, d)
                    if proj != "k_proj":
                        t[f"{base}.{a}.{proj}.bias"] = w(d)
                norm = "self_attn_layer_norm" if a == "self_attn" else "encoder_attn_layer_norm"
                t[f"{base}.{norm}.weight"], t[f"{base}.{norm}.bias"] = ln()
            t[f"{base}.fc1.weight"], t[f"{base}.fc1.bias"] = w(f, d), w(f)
            t[f"{base}.fc2.weight"], t[f"{base}.fc2.bias"] = w(d, f), w(d)
            t[f"{base}.final_layer_norm.weight"], t[f"{base}.final_layer_norm.bias"] = ln()
    save_file(t, folder / "model.safetensors")
    config = dict(c, model_type="whisper", activation_function="gelu", scale_embedding=False)
    (folder / "config.json").write_text(json.dumps(config))
    write_tokenizer(folder)
    write_generation_config(folder)
    return t
