"""The launch-path family: what one launch costs the host, beside PyTorch in the same run.

- ``add on a stream``: the tiny add with a created (non-blocking) stream current, ours and
  PyTorch's, sampled in turn as the tiny family does;
- ``matmul burst``: decode-shaped bf16 products (M rows of a K x N weight) called back to
  back, one synchronize per burst: the time per call in a burst;
- ``decoder graph``: a decoder-like sequence of >= 300 ops (rmsnorm, matmul, rope, silu,
  multiply, add over 22 layer-shaped blocks, one token) run eagerly and replayed from a
  CUDA graph; the row's time is one replay, the note holds the eager time, the speed-up
  and whether the replay's result is bit-identical to the eager one. PyTorch runs the same
  sequence eagerly and from its own CUDA graph.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .cases import SpecialCase
from .peers import Peer
from .results import ERROR, FAIL, MISSING, PASS, PeerResult, Row
from .runner import Bench, _join, _short
from .special import _ratios, launch_floor, note_issue_time
from .timing import Stats, per_call_interleaved

#: (M, K, N) of the decode-shaped products
MATMUL_SHAPES = ((1, 2048, 2048), (1, 4096, 4096), (64, 2048, 2048))
#: the decoder-like stack: layers, hidden size, heads x head_dim, MLP size
LAYERS, HIDDEN, HEADS, HEAD_DIM, FFN = 22, 1024, 8, 128, 2816
OPS_PER_LAYER = 14


def cases(calls: list[int]) -> list[SpecialCase]:
    out = [
        SpecialCase("launch", "add on a stream", f"1 element float32, {n} calls", "launch_stream",
                    {"calls": n})
        for n in calls
    ]  # fmt: skip
    out += [
        SpecialCase("launch", "matmul burst", f"{m}x{k} @ {k}x{n} bfloat16", "launch_matmul",
                    {"shape": (m, k, n)})
        for m, k, n in MATMUL_SHAPES
    ]  # fmt: skip
    out.append(SpecialCase("launch", "decoder graph",
                           f"{LAYERS * OPS_PER_LAYER} ops, {LAYERS} layers, hidden {HIDDEN}",
                           "launch_graph"))  # fmt: skip
    return out


def run_launch(case: SpecialCase, bench: Bench) -> Row:
    runner = {"launch_stream": _stream_add, "launch_matmul": _matmul_burst,
              "launch_graph": _decoder_graph}[case.kind]  # fmt: skip
    row = Row(case.family, case.op, case.case, unit="us/call", tol=0.0)
    if bench.device.type != "cuda":
        row.status, row.note = MISSING, f"a GPU case; this run is on {bench.device}"
        return row
    try:
        runner(case, bench, row)
    except Exception as exc:  # report, don't crash
        row.status, row.note = ERROR, _join(row.note, f"{type(exc).__name__}: {_short(exc)}")
    finally:
        bench.release()
    return row


def _torch(bench: Bench) -> Peer | None:
    return next((p for p in bench.peers if p.name == "torch" and p.load()), None)


# -- add on a stream ------------------------------------------------------------------------
def _stream_add(case: SpecialCase, bench: Bench, row: Row) -> None:
    import pygpukit as gp

    calls = int(case.params["calls"])
    stream = gp.cuda.Stream(non_blocking=True)
    timed: list[tuple[Row | PeerResult, Callable[[], Any], Callable[[], None]]] = []
    with stream:
        a = gp.asarray(np.array([1.5], dtype=np.float32), device=bench.device)
        b = gp.asarray(np.array([2.25], dtype=np.float32), device=bench.device)
        if float(gp.add(a, b).to_numpy()[0]) != 3.75:
            row.status, row.note = FAIL, "wrong result, not timed"
            return
    row.provider, row.error = gp.explain("add", a, b).chosen or "-", 0.0

    timed.append((row, lambda: gp.add(a, b), stream.synchronize))
    torch_peer = _torch(bench)
    t: Any = torch_peer.xp if torch_peer is not None else None
    if t is not None:
        ts = t.cuda.Stream()
        result = PeerResult("torch")
        row.peers.append(result)
        with t.cuda.stream(ts):
            ta = t.tensor([1.5], device="cuda")
            tb = t.tensor([2.25], device="cuda")
        result.error = 0.0
        timed.append((result, lambda: t.add(ta, tb), ts.synchronize))
    row.note = "each library's created stream current for the whole run"
    before = t.cuda.current_stream() if t is not None else None
    with stream:  # ours: the ContextVar; PyTorch's: its current stream
        if t is not None:
            t.cuda.set_stream(ts)
        try:
            stats = per_call_interleaved([(fn, sync) for _, fn, sync in timed], calls,
                                         warmup=bench.warmup, repeats=bench.repeats,
                                         budget_s=bench.budget_s)  # fmt: skip
            note_issue_time(row, timed, launch_floor(row, bench, stream.synchronize))
        finally:
            if t is not None:
                t.cuda.set_stream(before)
    for (who, _, _), got in zip(timed, stats, strict=True):
        who.stats = got
    row.status = PASS
    _ratios(row)


# -- decode-shaped matmul bursts ----------------------------------------------------------
def _matmul_burst(case: SpecialCase, bench: Bench, row: Row) -> None:
    import pygpukit as gp

    m, k, n = case.params["shape"]
    rng = np.random.default_rng(11)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32)
    gx = gp.asarray(x, device=bench.device).astype("bfloat16")
    gw = gp.asarray(w, device=bench.device).astype("bfloat16")
    # the reference from the bf16-rounded operands, in float64
    xr = gx.astype("float32").to_numpy().astype(np.float64)
    wr = gw.astype("float32").to_numpy().astype(np.float64)
    want = xr @ wr
    got = gp.matmul(gx, gw).astype("float32").to_numpy()
    row.error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    row.tol = 1e-2
    row.provider = gp.explain("matmul", gx, gw).chosen or "-"
    if not row.error <= row.tol:
        row.status, row.note = FAIL, "wrong result, not timed"
        return
    calls = 200
    timed: list[tuple[Row | PeerResult, Callable[[], Any], Callable[[], None]]] = [
        (row, lambda: gp.matmul(gx, gw), bench.sync)
    ]
    torch_peer = _torch(bench)
    if torch_peer is not None:
        t = torch_peer.xp
        tx = t.from_numpy(x).cuda().bfloat16()
        tw = t.from_numpy(w).cuda().bfloat16()
        result = PeerResult("torch")
        result.error = float(
            np.linalg.norm((tx @ tw).float().cpu().numpy() - want) / np.linalg.norm(want)
        )
        row.peers.append(result)
        timed.append((result, lambda: tx @ tw, torch_peer.sync))
    stats = per_call_interleaved([(fn, sync) for _, fn, sync in timed], calls,
                                 warmup=bench.warmup, repeats=bench.repeats,
                                 budget_s=bench.budget_s)  # fmt: skip
    for (who, _, _), got_stats in zip(timed, stats, strict=True):
        who.stats = got_stats
    row.status = PASS
    _ratios(row)


# -- a decoder-like sequence, eager and from a CUDA graph -------------------------------------
def decoder_weights(xp: Any, put: Callable[[np.ndarray], Any], seed: int = 5) -> dict[str, Any]:
    """Random bf16 weights of the stack (``put`` moves a float32 array to the device)."""
    rng = np.random.default_rng(seed)

    def mat(k: int, n: int) -> Any:
        return put((rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32))

    layers = []
    for _ in range(LAYERS):
        layers.append({
            "n1": put(1 + 0.1 * rng.standard_normal(HIDDEN).astype(np.float32)),
            "n2": put(1 + 0.1 * rng.standard_normal(HIDDEN).astype(np.float32)),
            "q": mat(HIDDEN, HEADS * HEAD_DIM), "k": mat(HIDDEN, HEADS * HEAD_DIM),
            "o": mat(HEADS * HEAD_DIM, HIDDEN),
            "g": mat(HIDDEN, FFN), "u": mat(HIDDEN, FFN), "d": mat(FFN, HIDDEN),
        })  # fmt: skip
    angles = 0.37 * np.arange(HEAD_DIM // 2, dtype=np.float64)
    cos = put(np.cos(angles)[None, :].astype(np.float32))
    sin = put(np.sin(angles)[None, :].astype(np.float32))
    return {"layers": layers, "cos": cos, "sin": sin}


def decoder_step(gp: Any, x: Any, weights: dict[str, Any]) -> Any:
    """One token through the stack with pygpukit ops: 14 ops a layer."""
    cos, sin = weights["cos"], weights["sin"]
    for w in weights["layers"]:
        h = gp.rmsnorm(x, w["n1"])
        q = gp.matmul(h, w["q"])
        k = gp.matmul(h, w["k"])
        gp.rope_inplace(q.reshape((1, HEADS, HEAD_DIM)), k.reshape((1, HEADS, HEAD_DIM)),
                        cos, sin)  # fmt: skip
        x = gp.add(x, gp.matmul(q, w["o"]))
        h = gp.rmsnorm(x, w["n2"])
        a = gp.multiply(gp.silu(gp.matmul(h, w["g"])), gp.matmul(h, w["u"]))
        x = gp.add(x, gp.matmul(a, w["d"]))
    return x


def _torch_step(t: Any, x: Any, weights: dict[str, Any]) -> Any:
    """The same sequence in PyTorch (its own rmsnorm, rope and silu)."""
    cos, sin = weights["cos"], weights["sin"]
    half = HEAD_DIM // 2

    def rms(v: Any, g: Any) -> Any:
        vf = v.float()
        return (vf * t.rsqrt(vf.pow(2).mean(-1, keepdim=True) + 1e-5) * g.float()).to(v.dtype)

    def rope(v: Any) -> Any:
        v = v.view(1, HEADS, HEAD_DIM).float()
        a, b = v[..., :half], v[..., half:]
        return t.cat((a * cos - b * sin, b * cos + a * sin), -1).view(1, -1).bfloat16()

    for w in weights["layers"]:
        h = rms(x, w["n1"])
        q, k = rope(h @ w["q"]), rope(h @ w["k"])
        del k
        x = x + q @ w["o"]
        h = rms(x, w["n2"])
        x = x + (t.nn.functional.silu(h @ w["g"]) * (h @ w["u"])) @ w["d"]
    return x


def _per_call(fn: Callable[[], Any], sync: Callable[[], None], reps: int) -> Stats:
    samples = []
    for _ in range(7):
        sync()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) * 1e3 / reps)
    return Stats.of(samples)


def _decoder_graph(case: SpecialCase, bench: Bench, row: Row) -> None:
    import pygpukit as gp

    row.unit = "us/step"
    weights = decoder_weights(gp, lambda a: gp.asarray(a, device=bench.device).astype("bfloat16"))
    rng = np.random.default_rng(6)
    x = gp.asarray(rng.standard_normal((1, HIDDEN)).astype(np.float32),
                   device=bench.device).astype("bfloat16")  # fmt: skip
    eager_out = decoder_step(gp, x, weights).to_numpy()  # also compiles every kernel
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        y = decoder_step(gp, x, weights)
    g.replay()
    replayed = y.to_numpy()
    identical = bool(np.array_equal(eager_out.view(np.uint16), replayed.view(np.uint16)))
    row.provider = gp.explain("matmul", x, weights["layers"][0]["q"]).chosen or "-"
    row.error = 0.0 if identical else float("inf")
    eager = _per_call(lambda: decoder_step(gp, x, weights), bench.sync, 5)
    row.stats = _per_call(g.replay, bench.sync, 50)
    speedup = eager.median_ms / row.stats.median_ms
    row.extra = {"eager_ms": eager.median_ms, "speedup": speedup, "nodes": g.node_count,
                 "bit_identical": identical}  # fmt: skip
    row.note = (f"one CUDA graph replay; eager {eager.median_ms * 1e3:.0f} us/step, "
                f"replay {speedup:.1f}x faster; "
                f"{g.node_count} graph nodes; bit-identical: {identical}")  # fmt: skip
    torch_peer = _torch(bench)
    if torch_peer is not None:
        t = torch_peer.xp
        tw = decoder_weights(t, lambda a: t.from_numpy(a).cuda().bfloat16())
        tx = t.from_numpy(x.astype("float32").to_numpy()).cuda().bfloat16()
        _torch_step(t, tx, tw)
        teager = _per_call(lambda: _torch_step(t, tx, tw), torch_peer.sync, 5)
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):
            _torch_step(t, tx, tw)
        t.cuda.current_stream().wait_stream(side)
        tg = t.cuda.CUDAGraph()
        with t.cuda.graph(tg):
            _torch_step(t, tx, tw)
        result = PeerResult("torch")
        result.stats = _per_call(tg.replay, torch_peer.sync, 50)
        result.error = 0.0
        result.note = f"torch eager {teager.median_ms * 1e3:.0f} us/step"
        row.peers.append(result)
    row.status = PASS if identical and speedup >= 1 else FAIL
    _ratios(row)
    del g, y
