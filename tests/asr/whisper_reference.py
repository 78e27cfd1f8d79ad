"""Independent float64 NumPy references: openai-whisper's log-mel front end, and Whisper's
forward pass (conv stem, pre-LN encoder and decoder, cross-attention, tied output projection)."""

from __future__ import annotations

import math

import numpy as np
from tiny_whisper import HF_CONFIG

Weights = dict[str, np.ndarray]


def _w(t: Weights, name: str) -> np.ndarray:
    return t[name].astype(np.float64)


def _gelu(x: np.ndarray) -> np.ndarray:
    # math.erf, not scipy's: the GPU machine has no scipy, and these arrays are small
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _layer_norm(t: Weights, name: str, x: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * _w(t, name + ".weight") + _w(t, name + ".bias")


def _linear(t: Weights, name: str, x: np.ndarray) -> np.ndarray:
    y = x @ _w(t, name + ".weight").T
    return y + _w(t, name + ".bias") if name + ".bias" in t else y


def _conv(t: Weights, name: str, x: np.ndarray, stride: int) -> np.ndarray:
    """x (channels, time) -> (out, time'), kernel 3, padding 1."""
    w, b = _w(t, name + ".weight"), _w(t, name + ".bias")
    padded = np.pad(x, ((0, 0), (1, 1)))
    steps = (x.shape[1] - 1) // stride + 1
    out = np.stack([np.einsum("oik,ik->o", w, padded[:, s * stride : s * stride + 3])
                    for s in range(steps)], axis=1)  # fmt: skip
    return out + b[:, None]


def _attention(
    t: Weights, name: str, x: np.ndarray, source: np.ndarray, causal: bool
) -> np.ndarray:
    heads = HF_CONFIG["encoder_attention_heads"]
    q, k, v = (
        _linear(t, f"{name}.{p}_proj", a) for p, a in (("q", x), ("k", source), ("v", source))
    )
    d = q.shape[-1] // heads
    out = np.zeros_like(q)
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(d)
        if causal:
            scores = np.where(np.tril(np.ones(scores.shape, bool)), scores, -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        out[:, cols] = (p / p.sum(-1, keepdims=True)) @ v[:, cols]
    return _linear(t, f"{name}.out_proj", out)


def reference_encode(t: Weights, features: np.ndarray) -> np.ndarray:
    """(n_mels, frames) -> (positions, d_model)."""
    x = _gelu(_conv(t, "model.encoder.conv1", features.astype(np.float64), 1))
    x = _gelu(_conv(t, "model.encoder.conv2", x, 2)).T + _w(
        t, "model.encoder.embed_positions.weight"
    )
    for i in range(HF_CONFIG["encoder_layers"]):
        base = f"model.encoder.layers.{i}"
        h = _layer_norm(t, base + ".self_attn_layer_norm", x)
        x = x + _attention(t, base + ".self_attn", h, h, causal=False)
        h = _layer_norm(t, base + ".final_layer_norm", x)
        x = x + _linear(t, base + ".fc2", _gelu(_linear(t, base + ".fc1", h)))
    return _layer_norm(t, "model.encoder.layer_norm", x)


def reference_logits(t: Weights, encoded: np.ndarray, tokens: list[int]) -> np.ndarray:
    """(len(tokens), vocab) decoder logits for `tokens` attending to `encoded`."""
    embed = _w(t, "model.decoder.embed_tokens.weight")
    x = embed[tokens] + _w(t, "model.decoder.embed_positions.weight")[: len(tokens)]
    for i in range(HF_CONFIG["decoder_layers"]):
        base = f"model.decoder.layers.{i}"
        h = _layer_norm(t, base + ".self_attn_layer_norm", x)
        x = x + _attention(t, base + ".self_attn", h, h, causal=True)
        h = _layer_norm(t, base + ".encoder_attn_layer_norm", x)
        x = x + _attention(t, base + ".encoder_attn", h, encoded, causal=False)
        h = _layer_norm(t, base + ".final_layer_norm", x)
        x = x + _linear(t, base + ".fc2", _gelu(_linear(t, base + ".fc1", h)))
    return np.asarray(_layer_norm(t, "model.decoder.layer_norm", x) @ embed.T)


def reference_log_mel(audio: np.ndarray, n_mels: int, padding: int = 0) -> np.ndarray:
    """openai-whisper's log_mel_spectrogram in float64, one clip, written out step by step."""
    a = np.concatenate([audio.astype(np.float64), np.zeros(padding)])
    padded = np.pad(a, 200, mode="reflect")  # center=True, reflect
    n_frames = 1 + (padded.size - 400) // 160
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)  # periodic Hann
    frames = np.stack([padded[i * 160 : i * 160 + 400] * window for i in range(n_frames)])
    power = np.abs(np.fft.rfft(frames, axis=-1)) ** 2
    power = power[:-1].T  # the last frame is dropped
    bank = slaney_mel_bank(n_mels)
    logs = np.log10(np.maximum(bank @ power, 1e-10))
    logs = np.maximum(logs, logs.max() - 8.0)
    return (logs + 4.0) / 4.0


def _hz_to_slaney_mel(hz: np.ndarray) -> np.ndarray:
    # Slaney's scale: linear (200/3 Hz per mel) below 1 kHz, logarithmic (27 mels per
    # factor 6.4) above
    linear = hz / (200.0 / 3.0)
    log = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (math.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log, linear)


def _slaney_mel_to_hz(mel: np.ndarray) -> np.ndarray:
    linear = mel * (200.0 / 3.0)
    log = 1000.0 * np.exp((mel - 15.0) * (math.log(6.4) / 27.0))
    return np.where(mel >= 15.0, log, linear)


def slaney_mel_bank(n_mels: int, sr: int = 16000, n_fft: int = 400) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) float64 triangles on the Slaney mel scale, area-normalised
    (librosa.filters.mel's default, which openai-whisper ships), written without librosa so
    the reference also runs where librosa is absent (the GPU machine)."""
    bins = np.fft.rfftfreq(n_fft, 1.0 / sr)
    edges = _slaney_mel_to_hz(
        np.linspace(_hz_to_slaney_mel(np.array(0.0)), _hz_to_slaney_mel(np.array(sr / 2)),
                    n_mels + 2)
    )  # fmt: skip
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (bins - lo) / (mid - lo)
    falling = (hi - bins) / (hi - mid)
    bank = np.maximum(0.0, np.minimum(rising, falling))
    return np.asarray(bank * (2.0 / (hi - lo)))
