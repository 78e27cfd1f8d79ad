"""Tiny checkpoints made from NumPy, and an independent float64 NumPy reference forward.

Nothing here imports pygpukit.llm: the writer packs the .safetensors bytes by hand and
the reference follows the published model definitions, so the tests compare two
separate implementations.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

VOCAB = 61
BASE: dict[str, Any] = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    intermediate_size=40,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    rms_norm_eps=1e-6,
    max_position_embeddings=64,
    rope_theta=10000.0,
    bos_token_id=1,
    eos_token_id=2,
    tie_word_embeddings=False,
)

CONFIGS: dict[str, dict[str, Any]] = {
    "gpt2": dict(
        model_type="gpt2",
        vocab_size=VOCAB,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=64,
        layer_norm_epsilon=1e-5,
        activation_function="gelu_new",
        bos_token_id=1,
        eos_token_id=2,
    ),
    "llama": dict(
        BASE,
        model_type="llama",
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8,
        },
    ),
    "mistral": dict(BASE, model_type="mistral", sliding_window=5, head_dim=12),
    "qwen2": dict(BASE, model_type="qwen2", rope_scaling={"type": "linear", "factor": 3.0}),
    "qwen3": dict(BASE, model_type="qwen3", head_dim=16),
    "mixtral": dict(BASE, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2),
}

FORMAT_NAMES = {
    np.dtype(np.float32): "F32",
    np.dtype(np.float16): "F16",
    np.dtype(ml_dtypes.bfloat16): "BF16",
    np.dtype(ml_dtypes.float8_e4m3fn): "F8_E4M3",
    np.dtype(np.int64): "I64",
}


# -- writing ---------------------------------------------------------------------------------
def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The format by hand: u64 header length, JSON header, the tensors' bytes in order."""
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {
            "dtype": FORMAT_NAMES[arr.dtype],
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"".join(blobs))


def dims(cfg: dict[str, Any]) -> dict[str, int]:
    if cfg["model_type"] == "gpt2":
        h = cfg["n_embd"]
        return dict(
            h=h,
            layers=cfg["n_layer"],
            heads=cfg["n_head"],
            kv=cfg["n_head"],
            d=h // cfg["n_head"],
            inter=4 * h,
            vocab=cfg["vocab_size"],
        )
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    return dict(
        h=h,
        layers=cfg["num_hidden_layers"],
        heads=heads,
        kv=cfg["num_key_value_heads"],
        d=cfg.get("head_dim") or h // heads,
        inter=cfg["intermediate_size"],
        vocab=cfg["vocab_size"],
    )


def random_weights(cfg: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Weights named as Hugging Face saves them, float32, scaled so logits are O(1..10)."""
    rng = np.random.default_rng(seed)
    n = dims(cfg)
    h, d, inter = n["h"], n["d"], n["inter"]

    def w(*shape: int, scale: float | None = None) -> np.ndarray:
        s = scale if scale is not None else 1.0 / math.sqrt(shape[-1] if len(shape) > 1 else 4)
        return (rng.standard_normal(shape) * s).astype(np.float32)

    def norm_w(size: int) -> np.ndarray:
        return (1.0 + 0.2 * rng.standard_normal(size)).astype(np.float32)

    t: dict[str, np.ndarray] = {}
    if cfg["model_type"] == "gpt2":
        t["wte.weight"] = w(n["vocab"], h, scale=0.5)
        t["wpe.weight"] = w(cfg["n_positions"], h, scale=0.3)
        for i in range(n["layers"]):
            p = f"h.{i}."
            for ln in ("ln_1", "ln_2"):
                t[p + ln + ".weight"], t[p + ln + ".bias"] = norm_w(h), w(h, scale=0.1)
            t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"] = (
                w(h, 3 * h, scale=h**-0.5),
                w(3 * h, scale=0.1),
            )
            t[p + "attn.c_proj.weight"], t[p + "attn.c_proj.bias"] = (
                w(h, h, scale=h**-0.5),
                w(h, scale=0.1),
            )
            t[p + "mlp.c_fc.weight"], t[p + "mlp.c_fc.bias"] = (
                w(h, inter, scale=h**-0.5),
                w(inter, scale=0.1),
            )
            t[p + "mlp.c_proj.weight"], t[p + "mlp.c_proj.bias"] = (
                w(inter, h, scale=inter**-0.5),
                w(h, scale=0.1),
            )
        t["ln_f.weight"], t["ln_f.bias"] = norm_w(h), w(h, scale=0.1)
        return {("transformer." + k): v for k, v in t.items()}
    t["model.embed_tokens.weight"] = w(n["vocab"], h, scale=1.0)
    for i in range(n["layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = norm_w(h)
        t[p + "post_attention_layernorm.weight"] = norm_w(h)
        for name, out in (("q", n["heads"] * d), ("k", n["kv"] * d), ("v", n["kv"] * d)):
            t[p + f"self_attn.{name}_proj.weight"] = w(out, h)
            if cfg["model_type"] == "qwen2":
                t[p + f"self_attn.{name}_proj.bias"] = w(out, scale=0.3)
        t[p + "self_attn.o_proj.weight"] = w(h, n["heads"] * d)
        if cfg["model_type"] == "qwen3":
            t[p + "self_attn.q_norm.weight"], t[p + "self_attn.k_norm.weight"] = (
                norm_w(d),
                norm_w(d),
            )
        if cfg["model_type"] == "mixtral":
            e = cfg["num_local_experts"]
            t[p + "block_sparse_moe.gate.weight"] = w(e, h, scale=1.0)
            for j in range(e):
                q = p + f"block_sparse_moe.experts.{j}."
                t[q + "w1.weight"], t[q + "w3.weight"], t[q + "w2.weight"] = (
                    w(inter, h),
                    w(inter, h),
                    w(h, inter),
                )
        else:
            t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"] = w(inter, h), w(inter, h)
            t[p + "mlp.down_proj.weight"] = w(h, inter)
    t["model.norm.weight"] = norm_w(h)
    if not cfg.get("tie_word_embeddings"):
        t["lm_head.weight"] = w(n["vocab"], h, scale=0.5)
    return t


def make_checkpoint(
    folder: Path,
    family: str,
    seed: int = 0,
    dtype: Any = np.float32,
    shards: int = 1,
    **overrides: Any,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """config.json + weights in `folder`; returns (config, weights as stored, in float32)."""
    cfg = dict(CONFIGS[family], **overrides)
    weights = {k: v.astype(dtype) for k, v in random_weights(cfg, seed).items()}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    if shards == 1:
        write_safetensors(folder / "model.safetensors", weights)
    else:
        names = list(weights)
        weight_map = {}
        for s in range(shards):
            part = names[s::shards]
            file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            write_safetensors(folder / file, {k: weights[k] for k in part})
            weight_map.update(dict.fromkeys(part, file))
        index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return cfg, {k: v.astype(np.float32) for k, v in weights.items()}


# -- the float64 reference ---------------------------------------------------------------------
def _rms(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * g + b


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _inv_freq(cfg: dict[str, Any], d: int) -> np.ndarray:
    inv = 1.0 / cfg.get("rope_theta", 10000.0) ** (np.arange(0, d, 2) / d)
    sc = cfg.get("rope_scaling")
    if not sc:
        return inv
    kind = sc.get("rope_type") or sc.get("type")
    if kind == "linear":
        return inv / sc["factor"]
    assert kind == "llama3"
    old, lo, hi, f = (
        sc["original_max_position_embeddings"],
        sc["low_freq_factor"],
        sc["high_freq_factor"],
        sc["factor"],
    )
    out = []
    for v in inv:
        wavelen = 2 * math.pi / v
        if wavelen < old / hi:
            out.append(v)
        elif wavelen > old / lo:
            out.append(v / f)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append((1 - smooth) * v / f + smooth * v)
    return np.array(out)


def _rotate(x: np.ndarray, pos: np.ndarray, inv: np.ndarray) -> np.ndarray:
    """x (S, H, D), NeoX half-split pairing."""
    ang = pos[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1 + np.exp(-x))


def reference_logits(
    cfg: dict[str, Any], weights: dict[str, np.ndarray], ids: list[int]
) -> np.ndarray:
    """Logits (S, vocab) of one sequence, float64, no cache, straight from the definitions."""
    W = {k: v.astype(np.float64) for k, v in weights.items()}
    n = dims(cfg)
    S, d, heads, kv = len(ids), n["d"], n["heads"], n["kv"]
    pos = np.arange(S, dtype=np.float64)
    causal = np.tril(np.ones((S, S), dtype=bool))
    window = cfg.get("sliding_window")
    if window and cfg["model_type"] in ("mistral", "mixtral"):
        causal &= (np.arange(S)[:, None] - np.arange(S)[None, :]) < window
    if cfg["model_type"] == "gpt2":
        eps = cfg["layer_norm_epsilon"]
        g = lambda k: W["transformer." + k]  # noqa: E731
        x = g("wte.weight")[ids] + g("wpe.weight")[:S]
        for i in range(n["layers"]):
            p = f"h.{i}."
            a = _layer_norm(x, g(p + "ln_1.weight"), g(p + "ln_1.bias"), eps)
            qkv = a @ g(p + "attn.c_attn.weight") + g(p + "attn.c_attn.bias")
            q, k, v = (m.reshape(S, heads, d) for m in np.split(qkv, 3, axis=-1))
            x = (
                x
                + _attend(q, k, v, causal).reshape(S, -1) @ g(p + "attn.c_proj.weight")
                + g(p + "attn.c_proj.bias")
            )
            m = _layer_norm(x, g(p + "ln_2.weight"), g(p + "ln_2.bias"), eps)
            x = (
                x
                + _gelu_tanh(m @ g(p + "mlp.c_fc.weight") + g(p + "mlp.c_fc.bias"))
                @ g(p + "mlp.c_proj.weight")
                + g(p + "mlp.c_proj.bias")
            )
        return _layer_norm(x, g("ln_f.weight"), g("ln_f.bias"), eps) @ g("wte.weight").T
    eps = cfg["rms_norm_eps"]
    inv = _inv_freq(cfg, d)
    x = W["model.embed_tokens.weight"][ids]
    for i in range(n["layers"]):
        p = f"model.layers.{i}."
        a = _rms(x, W[p + "input_layernorm.weight"], eps)

        def proj(name: str, nh: int, a: np.ndarray = a, p: str = p) -> np.ndarray:
            y = a @ W[p + f"self_attn.{name}_proj.weight"].T
            if p + f"self_attn.{name}_proj.bias" in W:
                y = y + W[p + f"self_attn.{name}_proj.bias"]
            return y.reshape(S, nh, d)

        q, k, v = proj("q", heads), proj("k", kv), proj("v", kv)
        if cfg["model_type"] == "qwen3":
            q = _rms(q, W[p + "self_attn.q_norm.weight"], eps)
            k = _rms(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k = _rotate(q, pos, inv), _rotate(k, pos, inv)
        x = x + _attend(q, k, v, causal).reshape(S, -1) @ W[p + "self_attn.o_proj.weight"].T
        m = _rms(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + (
            _moe(cfg, W, p, m) if cfg["model_type"] == "mixtral" else _swiglu(W, p + "mlp.", m)
        )
    logits: np.ndarray = (
        _rms(x, W["model.norm.weight"], eps)
        @ W.get("lm_head.weight", W["model.embed_tokens.weight"]).T
    )
    return logits


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """q (S, Hq, D), k/v (S, Hkv, D); query head h uses kv head h // (Hq / Hkv)."""
    group = q.shape[1] // k.shape[1]
    out = np.empty_like(q)
    for h in range(q.shape[1]):
        scores = q[:, h] @ k[:, h // group].T / math.sqrt(q.shape[-1])
        scores = np.where(allowed, scores, -np.inf)
        out[:, h] = _softmax(scores) @ v[:, h // group]
    return out


def _swiglu(W: dict[str, np.ndarray], p: str, x: np.ndarray) -> np.ndarray:
    return (_silu(x @ W[p + "gate_proj.weight"].T) * (x @ W[p + "up_proj.weight"].T)) @ W[
        p + "down_proj.weight"
    ].T


def _moe(cfg: dict[str, Any], W: dict[str, np.ndarray], p: str, x: np.ndarray) -> np.ndarray:
    probs = _softmax(x @ W[p + "block_sparse_moe.gate.weight"].T)
    k = cfg["num_experts_per_tok"]
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-probs[t])[:k]
        weights = probs[t, top] / probs[t, top].sum()
        for e, wgt in zip(top, weights, strict=True):
            q = p + f"block_sparse_moe.experts.{e}."
            y = (_silu(x[t] @ W[q + "w1.weight"].T) * (x[t] @ W[q + "w3.weight"].T)) @ W[
                q + "w2.weight"
            ].T
            out[t] += wgt * y
    return out


def reference_greedy(
    cfg: dict[str, Any], weights: dict[str, np.ndarray], prompt: list[int], steps: int
) -> list[int]:
    ids = list(prompt)
    for _ in range(steps):
        ids.append(int(reference_logits(cfg, weights, ids)[-1].argmax()))
    return ids
