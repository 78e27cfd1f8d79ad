"""The llm family: decode tokens/s of Llama-shaped random-weight models through
pygpukit.llm's graph decode, beside a PyTorch CUDA-graph decoder in the same run, and the
load time of a 2 GB checkpoint against reading its file.

- ``decode``: bf16, one token per row per step, TinyLlama-1.1B and Llama-3-8B shapes.
  The weights are made on the device (a hash of the element index, no download) and
  shared with the PyTorch peer through DLPack, so both run the same numbers; the row's
  check is the relative difference of the first step's logits. The time is one graph
  replay (a step with no host sync); the note adds the generate-style loop (fetching each
  token) and the percentage of the weight-streaming roofline (weight bytes read per step
  over the GPU's HBM bandwidth, from the table below by device name).
  The ``linear_rows`` rows run the same step with ``gp.linear_rows`` (a hand-written
  weight-streaming kernel) in place of cuBLASLt's matmul for every projection.
- ``prefill``: one prompt of 2048 tokens beside transformers (``llm_prefill.py``).
- ``load``: a Llama-shaped bf16 checkpoint of about 2 GB written to a temporary folder,
  loaded to the device by ``load_model_from_safetensors``, against reading the file's
  bytes (both after a first untimed pass, so both read from the page cache).
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .cases import SpecialCase
from .results import ERROR, FAIL, MISSING, PASS, PeerResult, Row
from .runner import Bench, _join, _short
from .special import _ratios
from .timing import Stats

#: the model shapes (random weights of these sizes)
SHAPES: dict[str, dict[str, int]] = {
    "TinyLlama-1.1B": dict(layers=22, hidden=2048, heads=32, kv=4, head_dim=64, ffn=5632,
                           vocab=32000),
    "Llama-3-8B": dict(layers=32, hidden=4096, heads=32, kv=8, head_dim=128, ffn=14336,
                       vocab=128256),
}  # fmt: skip
#: HBM bandwidth in bytes/s by a piece of the device name, most specific first
HBM_BANDWIDTH = (
    ("GH200", 4.0e12), ("H200", 4.8e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12),
    ("H100", 3.35e12), ("A100-SXM4-80GB", 2.039e12), ("A100 80GB PCIe", 1.935e12),
    ("A100", 1.555e12), ("L40S", 0.864e12), ("RTX 4090", 1.008e12),
)  # fmt: skip
PROMPT, STEPS, CACHE = 16, 128, 512
#: the load case's model (its layer count follows the size); smaller files use a narrower one
LOAD_SHAPE = dict(layers=0, hidden=2048, heads=32, kv=4, head_dim=64, ffn=5632, vocab=32000)
SMALL_LOAD_SHAPE = dict(layers=0, hidden=512, heads=8, kv=2, head_dim=64, ffn=1408, vocab=4000)


def cases(batches: list[int], load_mb: list[int], quick: bool = False) -> list[SpecialCase]:
    """Batch 1 of every shape (TinyLlama only when `quick`), larger batches of TinyLlama,
    and one load case per checkpoint size."""
    out = []
    for b in batches:
        for name in SHAPES if b == 1 and not quick else ("TinyLlama-1.1B",):
            out.append(SpecialCase("llm", "decode", f"{name} shape, bf16, batch {b}",
                                   "llm_decode", {"shape": name, "batch": b}))  # fmt: skip
    # the same step with the hand-written matrix-vector kernel (quick runs too: the
    # cuBLASLt-vs-linear_rows choice at batch 1 is what the row is for)
    for name in SHAPES if not quick else ("TinyLlama-1.1B",):
        params = {"shape": name, "batch": 1, "gemv": True}
        out.append(SpecialCase("llm", "decode", f"{name} shape, bf16, batch 1, linear_rows",
                               "llm_decode", params))  # fmt: skip
    if not quick:
        for name in SHAPES:
            out.append(SpecialCase("llm", "prefill", f"{name} shape, bf16, 2048 tokens",
                                   "llm_prefill", {"shape": name, "tokens": 2048}))  # fmt: skip
    for mb in load_mb:
        out.append(SpecialCase("llm", "load", f"Llama-shaped bf16 checkpoint, {mb} MB",
                               "llm_load", {"mb": mb}))  # fmt: skip
    return out


def hbm_bandwidth(device_name: str) -> float | None:
    """Bytes/s of the GPU's memory by its name, or None for a GPU not in the table."""
    for piece, bandwidth in HBM_BANDWIDTH:
        if piece.lower() in device_name.lower():
            return bandwidth
    return None


def _layer_params(shape: dict[str, int]) -> int:
    h, f = shape["hidden"], shape["ffn"]
    q, kv = shape["heads"] * shape["head_dim"], shape["kv"] * shape["head_dim"]
    return h * (q + 2 * kv) + q * h + 3 * h * f + 2 * h


def weight_bytes_per_step(shape: dict[str, int]) -> int:
    """bf16 bytes a decode step streams: every matrix but the embedding (one row of it)."""
    return 2 * (shape["layers"] * _layer_params(shape) + shape["vocab"] * shape["hidden"]
                + shape["hidden"])  # fmt: skip


def run_llm(case: SpecialCase, bench: Bench) -> Row:
    # bf16 through 22-32 layers by two different op orders: ~1e-2 apart; a bug is ~1
    row = Row(case.family, case.op, case.case, unit="tok/s", tol=1e-1)
    if bench.device.type != "cuda":
        row.status, row.note = MISSING, f"a GPU case; this run is on {bench.device}"
        return row
    try:
        if case.kind == "llm_load":
            _load(bench, row, int(case.params["mb"]))
        elif case.kind == "llm_prefill":
            from .llm_prefill import run_prefill

            run_prefill(case, bench, row)
        else:
            _decode(case, bench, row)
    except Exception as exc:  # report, don't crash
        row.status, row.note = ERROR, _join(row.note, f"{type(exc).__name__}: {_short(exc)}")
    finally:
        bench.release()
    return row


# -- weights made on the device ---------------------------------------------------------------
def _hashed(gp: Any, shape: tuple[int, ...], seed: int, scale: float, device: Any) -> Any:
    """Pseudo-random bf16 values of unit variance times `scale`, made on the device."""
    n = math.prod(shape)
    i = gp.arange(n, dtype="float32", device=device)
    h = gp.sin(i * 12.9898 + seed * 78.233) * 43758.5453
    u = h - gp.floor(h)  # uniform-looking in [0, 1)
    del i, h
    return ((u - 0.5) * (scale * math.sqrt(12.0))).astype("bfloat16").reshape(shape)


def build_model(shape: dict[str, int], device: Any) -> tuple[Any, dict[str, Any]]:
    """Our CausalTransformerModel of `shape`, and its weights by name ((out, in) arrays)."""
    import pygpukit as gp
    from pygpukit.llm.config import TransformerConfig
    from pygpukit.llm.layers import Attention, DenseMLP, Linear, Norm
    from pygpukit.llm.model import Block, CausalTransformerModel
    from pygpukit.llm.spec import LLAMA_SPEC

    h, f, v, d = shape["hidden"], shape["ffn"], shape["vocab"], shape["head_dim"]
    q, kv = shape["heads"] * d, shape["kv"] * d
    cfg = TransformerConfig.from_dict({
        "model_type": "llama", "vocab_size": v, "hidden_size": h, "intermediate_size": f,
        "num_hidden_layers": shape["layers"], "num_attention_heads": shape["heads"],
        "num_key_value_heads": shape["kv"], "head_dim": d, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "max_position_embeddings": 8192,
    })  # fmt: skip
    seed = iter(range(10**6))
    w: dict[str, Any] = {}

    def mat(name: str, n_out: int, n_in: int) -> Linear:
        w[name] = _hashed(gp, (n_out, n_in), next(seed), 1 / math.sqrt(n_in), device)
        return Linear(w[name].mT)

    def norm(name: str) -> Norm:
        w[name] = (_hashed(gp, (h,), next(seed), 0.1, device) + 1).astype("bfloat16")
        return Norm(w[name], None, cfg.norm_eps)

    w["embed"] = _hashed(gp, (v, h), next(seed), 1.0, device)
    blocks = []
    for i in range(shape["layers"]):
        attn = Attention(mat(f"q.{i}", q, h), mat(f"k.{i}", kv, h), mat(f"v.{i}", kv, h),
                         mat(f"o.{i}", h, q), None, None, cfg)  # fmt: skip
        mlp = DenseMLP(up=mat(f"u.{i}", f, h), down=mat(f"d.{i}", h, f),
                       gate=mat(f"g.{i}", f, h), activation="silu")  # fmt: skip
        blocks.append(Block(norm(f"n1.{i}"), attn, norm(f"n2.{i}"), mlp))
    final = norm("norm")
    head = mat("head", v, h)
    model = CausalTransformerModel(cfg, LLAMA_SPEC, w["embed"], blocks, final, head.weight)
    return model, w


# -- decode -----------------------------------------------------------------------------------
def _timed(fn: Any, sync: Any, steps: int, samples: int = 5) -> Stats:
    out = []
    for _ in range(samples):
        sync()
        t0 = time.perf_counter()
        fn(steps)
        sync()
        out.append((time.perf_counter() - t0) * 1e3 / steps)
    return Stats.of(out, inner=steps)


def _decode(case: SpecialCase, bench: Bench, row: Row) -> None:
    import pygpukit as gp
    from pygpukit.llm.static_decode import StaticDecoder

    shape, batch = SHAPES[case.params["shape"]], int(case.params["batch"])
    model, weights = build_model(shape, bench.device)
    prompt = np.random.default_rng(bench.seed).integers(3, shape["vocab"], (batch, PROMPT))
    cache = model.new_cache(batch, CACHE)
    logits = model(prompt, cache, last_only=True)
    first = logits.astype("float32").to_numpy().argmax(-1)
    # the peer's caches start from our prefill's keys and values (copies)
    snapshot = ([k.copy() for k in cache.keys], [v.copy() for v in cache.values])
    decoder = StaticDecoder(model, cache, use_graph=True,
                            gemv=bool(case.params.get("gemv", False)))  # fmt: skip
    step_logits = decoder.step(first)[0].astype("float32").to_numpy()
    # check: the static step against the eager forward of the prompt plus that token
    ids = np.concatenate([prompt, first[:, None]], axis=1)
    want = model(ids, last_only=True).astype("float32").to_numpy()
    row.error = _rel(step_logits, want)
    decoder.step()  # captures the graph
    if not decoder.graph_captured:
        row.status, row.note = FAIL, f"no CUDA graph: {decoder.refusal}"
        return
    row.provider = "cuda"  # the cuda provider's kernels, replayed from one CUDA graph

    def replay(n: int) -> None:
        for _ in range(n):
            decoder.step()

    def fetch_each(n: int) -> None:  # what generate does: the chosen ids read every step
        for _ in range(n):
            decoder.step()[1].to_numpy()

    steps = min(STEPS, (CACHE - PROMPT - 2) // 12)  # 5 samples + 1 loop fit the cache
    row.stats = _timed(replay, bench.sync, steps)
    loop = _timed(fetch_each, bench.sync, steps, samples=1)
    row.rate = batch * 1e3 / row.stats.median_ms
    bytes_per_step = weight_bytes_per_step(shape)
    name = str(gp.get_device_info(bench.device).get("name", ""))
    bandwidth = hbm_bandwidth(name)
    roofline = None if bandwidth is None else bandwidth / bytes_per_step  # steps/s
    pct = None if roofline is None else 100 * (1e3 / row.stats.median_ms) / roofline
    row.extra = {"tok_s": row.rate, "loop_tok_s": batch * 1e3 / loop.median_ms,
                 "weight_bytes": bytes_per_step, "roofline_steps_s": roofline,
                 "roofline_pct": pct, "graph_nodes": decoder._graph.node_count}  # fmt: skip
    row.note = (f"{row.rate:.0f} tok/s replaying ({batch * 1e3 / loop.median_ms:.0f} with a "
                f"token fetch per step); "
                + (f"{pct:.0f}% of the {roofline:.0f} steps/s roofline "
                   f"({bytes_per_step / 1e9:.2f} GB at {bandwidth / 1e12:.2f} TB/s)"
                   if pct is not None and roofline is not None and bandwidth is not None
                   else f"no HBM bandwidth known for {name!r}"))  # fmt: skip
    row.status = PASS if row.error <= (row.tol or 0) else FAIL
    _torch_peer(bench, row, shape, weights, batch, first, step_logits, snapshot)
    del snapshot
    _ratios(row)


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def _torch_peer(bench: Bench, row: Row, shape: dict[str, int], weights: dict[str, Any],
                batch: int, first: np.ndarray, ours: np.ndarray,
                snapshot: Any) -> None:  # fmt: skip
    peer = next((p for p in bench.peers if p.name == "torch" and p.load()), None)
    if peer is None:
        return
    from .llm_torch import TorchLlama

    t = peer.xp
    result = PeerResult("torch")
    row.peers.append(result)
    try:
        tw = {k: t.from_dlpack(a) for k, a in weights.items()}  # the same memory, no copy
        model = TorchLlama(t, tw, shape, CACHE, batch)
        with t.no_grad():
            # the same first step as ours: our prefill's keys and values, our first token
            for i, (k, v) in enumerate(zip(*snapshot, strict=True)):
                model.k[i].copy_(t.from_dlpack(k))
                model.v[i].copy_(t.from_dlpack(v))
            model.tokens.copy_(t.from_numpy(first.astype(np.int64)).cuda())
            model.pos.fill_(PROMPT)
            theirs = model.forward().float().cpu().numpy()
            result.error = _rel(theirs, ours)
            model.capture()
            steps = min(STEPS, (CACHE - PROMPT - 2) // 12)

            def replay(n: int) -> None:
                for _ in range(n):
                    model.graph.replay()

            model.pos.fill_(PROMPT)
            result.stats = _timed(replay, peer.sync, steps)
        result.rate = batch * 1e3 / result.stats.median_ms
        result.note = "hand-written Llama, static KV cache, torch CUDA graph"
    except Exception as exc:
        result.note = f"torch: {type(exc).__name__}: {_short(exc)}"


# -- load -------------------------------------------------------------------------------------
def _load(bench: Bench, row: Row, mb: int) -> None:
    from pygpukit.llm import load_model_from_safetensors
    from pygpukit.llm.safetensors import save_file

    row.unit, row.tol = "s", None
    rng = np.random.default_rng(bench.seed)
    s = dict(LOAD_SHAPE if mb >= 1000 else SMALL_LOAD_SHAPE)
    per_layer = 2 * _layer_params(s)
    fixed = 2 * 2 * s["vocab"] * s["hidden"]
    s["layers"] = max(1, round((mb * 1e6 - fixed) / per_layer))
    h, f, v, d = s["hidden"], s["ffn"], s["vocab"], s["head_dim"]
    q, kv = s["heads"] * d, s["kv"] * d
    import json

    import ml_dtypes

    def mat(n_out: int, n_in: int) -> np.ndarray:
        return (rng.standard_normal((n_out, n_in), dtype=np.float32) / math.sqrt(n_in)).astype(
            ml_dtypes.bfloat16
        )

    tensors = {"model.embed_tokens.weight": mat(v, h), "lm_head.weight": mat(v, h),
               "model.norm.weight": np.ones(h, ml_dtypes.bfloat16)}  # fmt: skip
    for i in range(s["layers"]):
        p = f"model.layers.{i}."
        tensors.update({
            p + "input_layernorm.weight": np.ones(h, ml_dtypes.bfloat16),
            p + "post_attention_layernorm.weight": np.ones(h, ml_dtypes.bfloat16),
            p + "self_attn.q_proj.weight": mat(q, h), p + "self_attn.k_proj.weight": mat(kv, h),
            p + "self_attn.v_proj.weight": mat(kv, h), p + "self_attn.o_proj.weight": mat(h, q),
            p + "mlp.gate_proj.weight": mat(f, h), p + "mlp.up_proj.weight": mat(f, h),
            p + "mlp.down_proj.weight": mat(h, f),
        })  # fmt: skip
    config = {"model_type": "llama", "vocab_size": v, "hidden_size": h, "intermediate_size": f,
              "num_hidden_layers": s["layers"], "num_attention_heads": s["heads"],
              "num_key_value_heads": s["kv"], "rms_norm_eps": 1e-5}  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        save_file(tensors, path / "model.safetensors")
        (path / "config.json").write_text(json.dumps(config))
        del tensors
        size = (path / "model.safetensors").stat().st_size

        def read() -> float:
            t0 = time.perf_counter()
            with open(path / "model.safetensors", "rb") as fh:
                while fh.readinto(buf):
                    pass
            return time.perf_counter() - t0

        def load() -> float:
            t0 = time.perf_counter()
            model = load_model_from_safetensors(path, device=bench.device, progress=False)
            bench.sync()
            elapsed = time.perf_counter() - t0
            del model
            bench.release()
            return elapsed

        buf = bytearray(64 << 20)
        read()
        load()  # first passes: page cache warm, kernels compiled
        reads = [read() for _ in range(3)]
        loads = [load() for _ in range(3)]
    row.stats = Stats.of([x * 1e3 for x in loads])
    read_s, load_s = float(np.median(reads)), float(np.median(loads))
    ratio = load_s / read_s
    row.extra = {"file_bytes": size, "read_s": read_s, "load_s": load_s, "ratio": ratio}
    row.note = (f"{size / 1e9:.2f} GB: load {load_s:.2f} s, reading the file {read_s:.2f} s "
                f"({size / read_s / 1e9:.1f} GB/s); load / read = {ratio:.2f} "
                "(goal <= 1.5)")  # fmt: skip
    row.status = PASS
    row.provider = "cuda"
