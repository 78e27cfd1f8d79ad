"""The one-row product (pygpukit_cuda.gemv) beside cuBLASLt and PyTorch, per bf16 shape:

- GPU time per call: 20 calls captured in one CUDA graph, the replay timed (host time
  out of the way), for our kernel, our cuBLASLt path and PyTorch's own graph;
- time per call in a burst of 200 calls with one synchronize (what the benchmark's
  ``matmul burst`` rows time), the three taking turns;
- how far our kernel's result is from cuBLASLt's (relative Frobenius).

Needs an sm_90+ GPU and PyTorch:

    python scripts/probe_gemv.py [--shapes 1x2048x2048,8x4096x4096]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pygpukit as gp
import torch
from pygpukit_cuda import gemv, plans

#: (M, K, N): the benchmark's, the decoder graph's, TinyLlama's and Llama-3-8B's projections,
#: and narrow or short ones
SHAPES = ((1, 2048, 2048), (1, 4096, 4096), (1, 1024, 2816), (1, 2816, 1024),
          (1, 1024, 1024), (1, 2048, 5632), (1, 5632, 2048), (1, 4096, 14336),
          (1, 14336, 4096), (1, 256, 4096), (1, 4096, 256), (1, 16384, 1024))  # fmt: skip


def _replay_us(replay: Callable[[], Any], sync: Callable[[], None], calls: int,
               replays: int) -> float:  # fmt: skip
    """Median time of one replay (after one untimed), over the `calls` it holds."""
    replay()
    sync()
    times = []
    for _ in range(replays):
        t0 = time.perf_counter()
        replay()
        sync()
        times.append((time.perf_counter() - t0) * 1e6 / calls)
    return statistics.median(times)


def _graph_us(call: Callable[[], Any], calls: int = 20, replays: int = 25) -> float:
    """GPU time per call: `calls` captured in one graph, the median replay over `calls`."""
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        for _ in range(calls):
            call()
    return _replay_us(g.replay, gp.cuda.synchronize, calls, replays)


def _torch_graph_us(call: Callable[[], Any], calls: int = 20, replays: int = 25) -> float:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            call()
    return _replay_us(g.replay, torch.cuda.synchronize, calls, replays)


def _bursts(turns: dict[str, tuple[Callable[[], Any], Callable[[], None]]], calls: int = 200,
            rounds: int = 9) -> dict[str, float]:  # fmt: skip
    """Median time per call in bursts of `calls`, the entries taking turns each round."""
    got: dict[str, list[float]] = {name: [] for name in turns}
    for _ in range(rounds):
        for name, (call, sync) in turns.items():
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            sync()
            got[name].append((time.perf_counter() - t0) * 1e6 / calls)
    return {name: statistics.median(v) for name, v in got.items()}


def probe(m: int, k: int, n: int) -> dict[str, float]:
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    gx = gp.asarray(x, device="cuda").astype("bfloat16")
    gw = gp.asarray(w, device="cuda").astype("bfloat16")
    tx, tw = torch.from_numpy(x).cuda().bfloat16(), torch.from_numpy(w).cuda().bfloat16()

    def ours_with(enabled: bool) -> Callable[[], Any]:
        gemv.ENABLED = enabled
        plans.forget()  # the cached layout keeps its first choice
        gp.matmul(gx, gw)  # planned now, with this choice
        return lambda: gp.matmul(gx, gw)

    sync = gp.cuda.synchronize
    kernel = ours_with(True)
    k_out = kernel().astype("float32").to_numpy()
    k_gpu = _graph_us(kernel)
    lt = ours_with(False)
    lt_out = lt().astype("float32").to_numpy()
    lt_gpu = _graph_us(lt)
    t_gpu = _torch_graph_us(lambda: tx @ tw)
    # bursts: the kernel against torch, then cuBLASLt against torch (one choice planned at
    # a time: matmul's cache holds one choice per layout)
    tsync = torch.cuda.synchronize
    burst_kernel = _bursts({"kernel": (ours_with(True), sync), "torch": (lambda: tx @ tw, tsync)})
    burst_lt = _bursts({"cublaslt": (ours_with(False), sync), "torch": (lambda: tx @ tw, tsync)})
    gemv.ENABLED = True
    plans.forget()
    diff = float(np.linalg.norm(k_out - lt_out) / np.linalg.norm(lt_out))
    return {"gpu_kernel": k_gpu, "gpu_cublaslt": lt_gpu, "gpu_torch": t_gpu,
            "burst_kernel": burst_kernel["kernel"], "burst_torch_a": burst_kernel["torch"],
            "burst_cublaslt": burst_lt["cublaslt"], "burst_torch_b": burst_lt["torch"],
            "diff": diff}  # fmt: skip


def _decoder_replay_us() -> float:
    """One replay of the benchmark's decoder graph (launch_path), median of 30."""
    from pygpukit.benchmark.launch_path import HIDDEN, decoder_step, decoder_weights

    weights = decoder_weights(gp, lambda a: gp.asarray(a, device="cuda").astype("bfloat16"))
    x = gp.asarray(np.ones((1, HIDDEN), np.float32), device="cuda").astype("bfloat16")
    decoder_step(gp, x, weights)
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        decoder_step(gp, x, weights)
    return _replay_us(g.replay, gp.cuda.synchronize, 1, 30)


def variants(shapes: Sequence[tuple[int, ...]]) -> None:
    """GPU time per call of kernel variants (loads in flight per thread, programmatic launch
    on or off, the strip widths allowed) and cuBLASLt, and the decoder graph's replay with
    each."""
    from pygpukit_cuda.kernels import gemv_source as gs

    pdl_wait, strips = gs.PDL_WAIT, gs.STRIPS
    print(
        "| variant | " + " | ".join("x".join(map(str, s)) for s in shapes) + " | decoder replay |"
    )
    print("|---" * (len(shapes) + 2) + "|")
    # (name, rows in flight per thread, programmatic launch, strips allowed)
    for name, unroll, pdl, allowed in (
        ("unroll 8, PDL", 8, True, strips), ("unroll 8", 8, False, strips),
        ("unroll 16", 16, False, strips), ("unroll 4", 4, False, strips),
        ("unroll 8, PDL, strip 64 at most", 8, True, strips[1:]),
        ("unroll 8, PDL, strip 128 always", 8, True, strips[:1]),
        ("unroll 4, PDL", 4, True, strips), ("cuBLASLt", 0, False, strips),
    ):  # fmt: skip
        gemv.ENABLED = unroll > 0
        gs.UNROLL, gs.PDL_WAIT = max(unroll, 1), pdl_wait if pdl else ""
        gs.STRIPS = allowed
        gs.gemv_kernel.cache_clear()
        plans.forget()
        cells = []
        for m, k, n in shapes:
            gx = gp.asarray(np.ones((m, k), np.float32), device="cuda").astype("bfloat16")
            gw = gp.asarray(np.ones((k, n), np.float32), device="cuda").astype("bfloat16")
            cells.append(f"{_graph_us(functools.partial(gp.matmul, gx, gw)):.2f}")
        print(f"| {name} | " + " | ".join(cells) + f" | {_decoder_replay_us():.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="", help="MxKxN,... (default: the list above)")
    parser.add_argument("--variants", action="store_true",
                        help="time kernel variants and the decoder graph instead")  # fmt: skip
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s] or SHAPES
    if args.variants:
        variants(shapes)
        return
    print(
        "| M x K x N | GPU us/call: kernel / cuBLASLt / torch | kernel's HBM GB/s |"
        " burst us/call: kernel (torch) / cuBLASLt (torch) | torch over kernel |"
        " vs cuBLASLt |"
    )
    print("|---|---|---|---|---|---|")
    for m, k, n in shapes:
        r = probe(m, k, n)
        gbs = (k * n + m * k + m * n) * 2 / (r["gpu_kernel"] * 1e3)
        print(
            f"| {m}x{k}x{n} | {r['gpu_kernel']:.2f} / {r['gpu_cublaslt']:.2f} / "
            f"{r['gpu_torch']:.2f} | {gbs:.0f} | "
            f"{r['burst_kernel']:.2f} ({r['burst_torch_a']:.2f}) / "
            f"{r['burst_cublaslt']:.2f} ({r['burst_torch_b']:.2f}) | "
            f"{r['burst_torch_a'] / r['burst_kernel']:.2f}x | {r['diff']:.1e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
