"""Host time of a Whisper-small float16 decode step and encode on the stub GPU (no device):
launches per call, host ms per call and per launch, optionally a cProfile of the step.

    python scripts/profile_whisper_stub.py [--prompt-path] [--kernels] [--profile]

The weights are uninitialised arrays (the stub models no contents), at small's shapes.
``--prompt-path`` times the one-token step through the generic prompt path (the model's
`fast_steps` off), as every step ran before WhisperStep. The stub has no CUDA graphs, so
the fast step runs eagerly here: on a GPU the graph replay replaces this host time.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import stub_cuda  # scripts/ is on sys.path when run

SMALL = (768, 12, 12, 80, 51865)  # d_model, layers, heads, n_mels, vocab
START = [50258, 50259, 50360, 50364]


def build(gp: Any) -> Any:
    from pygpukit.asr.whisper.config import WhisperConfig
    from pygpukit.asr.whisper.model import Conv1d, DecoderLayer, EncoderLayer, WhisperModel
    from pygpukit.llm.layers import Attention, DenseMLP, Linear, Norm

    d, layers, heads, mels, vocab = SMALL
    cfg = WhisperConfig(vocab, mels, d, layers, heads, 4 * d, layers, heads, 4 * d)

    def e(*shape: int) -> Any:
        return gp.empty(shape, dtype=gp.float16, device="cuda:0")

    def lin(n_in: int, n_out: int, bias: bool = True) -> Linear:
        return Linear(e(n_out, n_in).mT, e(n_out) if bias else None)

    def norm() -> Norm:
        return Norm(e(d), e(d), 1e-5)

    def attn(c: Any) -> Attention:
        return Attention(lin(d, d), lin(d, d, False), lin(d, d), lin(d, d), None, None, c)

    def mlp() -> DenseMLP:
        return DenseMLP(lin(d, 4 * d), lin(4 * d, d), None, "gelu")

    enc, dec = cfg.encoder(), cfg.decoder()
    embed = e(vocab, d)
    return WhisperModel(
        cfg, Conv1d(e(d, 3 * mels), e(d), 1), Conv1d(e(d, 3 * d), e(d), 2), e(1500, d),
        [EncoderLayer(norm(), attn(enc), norm(), mlp()) for _ in range(layers)], norm(),
        embed, e(448, d),
        [DecoderLayer(norm(), attn(dec), norm(), attn(dec), norm(), mlp())
         for _ in range(layers)],
        norm(), embed.mT,
    )  # fmt: skip


def measure(
    ctx: Any, names: dict[int, str], fn: Callable[[], Any], calls: int
) -> tuple[Counter[str], float]:
    """(kernel names launched by one call, best host seconds per call over 3 rounds)."""
    for _ in range(3):
        fn()
    ctx.launches.clear()
    ctx.record = True
    fn()
    ctx.record = False
    kernels = Counter(names[f] for f, *_ in ctx.launches)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return kernels, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompt-path", action="store_true", help="steps through the prompt path")
    ap.add_argument("--kernels", action="store_true", help="list the kernels of each call")
    ap.add_argument("--profile", action="store_true", help="cProfile 20 decode steps")
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    os.environ["PYGPUKIT_WHISPER_GRAPH"] = "0"  # the stub has no graphs: time the eager step
    ctx = stub_cuda.install()
    names = stub_cuda.KERNEL_NAMES
    import pygpukit as gp

    model = build(gp)
    model.fast_steps = not args.prompt_path
    feats = np.zeros((1, SMALL[3], 3000), np.float32)
    cross = model.cross_cache(model.encode(feats))
    cache = model.new_cache(1, len(START) + 8 * args.calls)
    model.decode(np.array([START]), cache, cross, last_only=True)
    token = np.array([[50400]])

    def step() -> Any:
        return model.decode(token, cache, cross, last_only=True).to_numpy()

    path = "prompt path" if args.prompt_path else "WhisperStep, eager"
    for label, fn, calls in (("decode step (" + path + ")", step, args.calls),
                             ("encode", lambda: model.encode(feats), 3)):  # fmt: skip
        kernels, seconds = measure(ctx, names, fn, calls)
        n = sum(kernels.values())
        print(f"{label}: {n} launches, host {seconds * 1e3:.2f} ms/call, "
              f"{seconds * 1e6 / max(n, 1):.1f} us/launch")  # fmt: skip
        if args.kernels:
            for name, count in kernels.most_common():
                print(f"  {count:4d} {name}")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            step()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
