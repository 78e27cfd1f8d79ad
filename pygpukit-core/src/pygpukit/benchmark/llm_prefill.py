"""The llm family's prefill rows: one prompt of 2048 tokens through a Llama-shaped bf16
model (the last position's logits), ours beside transformers' LlamaForCausalLM holding the
same weights (copied in from ours through DLPack) in the same run.

Ours runs op by op (flash attention for the prompt, the KV cache filled as it goes);
transformers runs its default attention. The peer is skipped, with a note, where
transformers is not installed.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .cases import SpecialCase
from .llm_decode import SHAPES, _rel, build_model
from .results import FAIL, PASS, PeerResult, Row
from .runner import Bench, _short
from .special import _ratios
from .timing import Stats


def _median_ms(fn: Any, sync: Any, samples: int = 5) -> Stats:
    fn()  # warm: kernels compiled, plans made
    out = []
    for _ in range(samples):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append((time.perf_counter() - t0) * 1e3)
    return Stats.of(out)


def run_prefill(case: SpecialCase, bench: Bench, row: Row) -> None:

    shape, tokens = SHAPES[case.params["shape"]], int(case.params["tokens"])
    model, weights = build_model(shape, bench.device)
    ids = np.random.default_rng(bench.seed).integers(3, shape["vocab"], (1, tokens))

    def ours() -> Any:
        return model(ids, model.new_cache(1, tokens), last_only=True)

    mine = ours().astype("float32").to_numpy()
    # check: the last position of a cache-less full forward (same ops, no cache writes)
    want = model(ids).astype("float32").to_numpy()[:, -1]
    row.error, row.tol = _rel(mine, want), 1e-2
    if not row.error <= row.tol:
        row.status, row.note = FAIL, "wrong result, not timed"
        return
    row.provider = "cuda"
    row.stats = _median_ms(ours, bench.sync)
    row.rate = tokens * 1e3 / row.stats.median_ms
    row.note = f"{row.rate:.0f} tok/s prefill, one prompt of {tokens}"
    row.status = PASS
    _transformers_peer(bench, row, shape, weights, ids, mine)
    _ratios(row)


def _hf_state(weights: dict[str, Any], layers: int, t: Any) -> dict[str, Any]:
    names = {"embed": "model.embed_tokens.weight", "norm": "model.norm.weight",
             "head": "lm_head.weight"}  # fmt: skip
    parts = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
             "o": "self_attn.o_proj", "g": "mlp.gate_proj", "u": "mlp.up_proj",
             "d": "mlp.down_proj", "n1": "input_layernorm",
             "n2": "post_attention_layernorm"}  # fmt: skip
    for i in range(layers):
        for short, long in parts.items():
            names[f"{short}.{i}"] = f"model.layers.{i}.{long}.weight"
    return {names[k]: t.from_dlpack(a) for k, a in weights.items()}


def _transformers_peer(bench: Bench, row: Row, shape: dict[str, int], weights: dict[str, Any],
                       ids: np.ndarray, mine: np.ndarray) -> None:  # fmt: skip
    peer = next((p for p in bench.peers if p.name == "torch" and p.load()), None)
    if peer is None:
        return
    result = PeerResult("transformers")
    row.peers.append(result)
    try:
        import transformers
    except ImportError:
        result.note = "transformers is not installed"
        return
    t = peer.xp
    try:
        cfg = transformers.LlamaConfig(
            vocab_size=shape["vocab"], hidden_size=shape["hidden"],
            intermediate_size=shape["ffn"], num_hidden_layers=shape["layers"],
            num_attention_heads=shape["heads"], num_key_value_heads=shape["kv"],
            head_dim=shape["head_dim"], rms_norm_eps=1e-5, rope_theta=10000.0,
            max_position_embeddings=8192, tie_word_embeddings=False,
        )  # fmt: skip
        with t.device("cuda"):
            hf = transformers.LlamaForCausalLM._from_config(cfg, torch_dtype=t.bfloat16)
        hf.eval()
        missing = hf.load_state_dict(_hf_state(weights, shape["layers"], t), strict=False)
        if missing.missing_keys:
            raise ValueError(f"weights not mapped: {missing.missing_keys[:3]}")
        tids = t.from_numpy(ids).cuda()

        def theirs() -> Any:
            with t.no_grad():
                hidden = hf.model(tids, use_cache=False).last_hidden_state[:, -1]
                return hf.lm_head(hidden)

        result.error = _rel(theirs().float().cpu().numpy(), mine)
        result.stats = _median_ms(theirs, peer.sync)
        result.rate = ids.shape[1] * 1e3 / result.stats.median_ms
        result.note = f"transformers {transformers.__version__}, default attention"
    except Exception as exc:
        result.note = f"transformers: {type(exc).__name__}: {_short(exc)}"
