"""Probe one batch-1 bf16 decode step of a TinyLlama-shaped model, kernel by kernel.

On a GPU: every op call of one StaticDecoder step is recorded (op, operand shapes), then
each kind of call is captured in a CUDA graph of its own (all of its call sites, i.e. every
layer's weights, so the weights stream from HBM as in the step, repeated a few times) and
replayed under CUDA events: GPU time per call, calls per step and time per step, beside the
whole step's graph replay (what the table does not list is the counter updates and the
gaps between kernels). Projections are also timed the other way (cuBLASLt matmul vs
gp.linear_rows), and the cache attention at longer contexts.

    python scripts/probe_decode.py                 # GPU: the table
    python scripts/probe_decode.py --gemv          # the step with linear_rows projections
    python scripts/probe_decode.py --stub          # no GPU: the step's launches, grids, blocks

``--stub`` runs on the pretend GPU of ``stub_cuda.py`` (no cuBLASLt there: products show
up as the NVRTC fallback matmul kernel, which the GPU does not use for bf16).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: ops of the decode step recorded by name (module attributes of pygpukit, looked up at
#: call time by static_decode, so wrapping them here sees every call)
OPS = ("embedding", "rope_at_inplace", "kv_cache_write_pair", "sdpa_causal_cache",
       "add_rmsnorm", "silu_mul", "linear_rows", "bias_add_inplace", "argmax",
       "rope_kv_cache_write", "decode_advance", "rope_cache_attention")  # fmt: skip
TINYLLAMA = dict(layers=22, hidden=2048, heads=32, kv=4, head_dim=64, ffn=5632, vocab=32000)


class Call:
    """One recorded call: what ran, on what, and how to run it again."""

    def __init__(self, op: str, fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:  # fmt: skip
        self.op, self.fn, self.args, self.kwargs = op, fn, args, kwargs

    @property
    def label(self) -> str:
        # a Linear shows its weight's (in, out) shape
        shapes = [getattr(a, "weight", a).shape for a in self.args
                  if hasattr(getattr(a, "weight", a), "shape")]  # fmt: skip
        return f"{self.op} {' '.join('x'.join(map(str, s)) or '()' for s in shapes)}"

    def again(self, **swap: Any) -> Any:
        args = list(self.args)
        for i, value in swap.items():
            args[int(i[1:])] = value
        return self.fn(*args, **self.kwargs)


def record(step: Callable[[], Any]) -> list[Call]:
    """Run `step` with the decode ops wrapped; the outermost calls, in order."""
    import pygpukit as gp
    from pygpukit.llm import layers

    calls: list[Call] = []
    depth = [0]

    def wrap(op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if depth[0] == 0:
                calls.append(Call(op, fn, args, kwargs))
            depth[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1

        return wrapped

    saved = {op: getattr(gp, op) for op in OPS}
    linear, norm = layers.Linear.__call__, layers.Norm.__call__
    try:
        for op, fn in saved.items():
            setattr(gp, op, wrap(op, fn))
        layers.Linear.__call__ = wrap("matmul", linear)  # type: ignore[method-assign]
        layers.Norm.__call__ = wrap("norm", norm)  # type: ignore[method-assign]
        step()
    finally:
        for op, fn in saved.items():
            setattr(gp, op, fn)
        layers.Linear.__call__ = linear  # type: ignore[method-assign]
        layers.Norm.__call__ = norm  # type: ignore[method-assign]
    return calls


def setup(device: Any, layers: int, cache_len: int, prompt: int, gemv: bool,
          graph: bool, base: dict[str, int] = TINYLLAMA) -> tuple[Any, np.ndarray]:  # fmt: skip
    """A prefilled StaticDecoder of the `base` shape (random weights) and its first token."""
    from pygpukit.benchmark.llm_decode import build_model
    from pygpukit.llm.static_decode import StaticDecoder

    shape = dict(base, layers=layers)
    model, _ = build_model(shape, device)
    ids = np.random.default_rng(0).integers(3, shape["vocab"], (1, prompt))
    cache = model.new_cache(1, cache_len)
    model(ids, cache, last_only=True)
    return StaticDecoder(model, cache, use_graph=graph, gemv=gemv), np.array([7])


# -- GPU ---------------------------------------------------------------------------------------
def gpu_us(
    calls: Sequence[Callable[..., Any]], device_index: int, total: int = 48
) -> tuple[float, int]:
    """(GPU microseconds per call, kernels per call) of `calls` captured round-robin into one
    graph (repeated up to `total` calls), replayed under events."""
    import pygpukit as gp

    reps = max(1, math.ceil(total / len(calls)))
    g = gp.cuda.Graph(device_index)
    with gp.cuda.graph(g):
        for _ in range(reps):
            for c in calls:
                c()
    g.replay()
    g.replay()
    start, end = gp.cuda.Event(), gp.cuda.Event()
    start.record()
    for _ in range(5):
        g.replay()
    end.record()
    end.synchronize()
    n = reps * len(calls)
    return gp.cuda.get_elapsed_time(start, end) * 1e3 / (5 * n), round(g.node_count / n)


def step_us(decoder: Any, n: int = 50) -> float:
    """GPU microseconds of one replay of the decoder's whole-step graph."""
    import pygpukit as gp

    decoder.step()  # captures (the step before ran eagerly)
    assert decoder.graph_captured, decoder.refusal
    start, end = gp.cuda.Event(), gp.cuda.Event()
    start.record()
    for _ in range(n):
        decoder._graph.replay()  # replays alone: the host bookkeeping is not under test
    end.record()
    end.synchronize()
    return gp.cuda.get_elapsed_time(start, end) * 1e3 / n


def gpu_main(args: argparse.Namespace) -> None:
    import pygpukit as gp

    device = gp.Device.parse("cuda:0")
    print(f"device: {gp.get_device_info(device).get('name', '?')}")
    decoder, first = setup(device, args.layers, args.cache, args.prompt, args.gemv, True,
                           _base_shape(args.shape))  # fmt: skip
    calls = record(lambda: decoder.step(first))  # eager: compiles, cuBLASLt trials
    step = step_us(decoder)
    nodes = decoder._graph.node_count
    groups: dict[str, list[Call]] = {}
    for c in calls:
        groups.setdefault(c.label, []).append(c)
    rows: list[tuple[str, int, int, float]] = []
    extra: list[tuple[str, float]] = []
    for label, group in groups.items():
        us, kernels = gpu_us([c.again for c in group], device.index)
        rows.append((label, len(group), kernels, us))
        op = group[0].op
        if op in ("matmul", "linear_rows"):  # the other projection kernel on the same weights
            other = [_other_projection(c) for c in group]
            name = "linear_rows" if op == "matmul" else "cuBLASLt matmul"
            extra.append((f"{label}  as {name}", gpu_us(other, device.index)[0]))
        if op == "sdpa_causal_cache":
            for ctx in args.contexts:
                if ctx > args.cache:
                    continue
                ends = gp.asarray(np.full((1,), ctx, np.int32), device=device)
                starts = gp.zeros((1,), dtype=gp.int32, device=device)
                redo = [lambda c=c, s=starts, e=ends: c.again(a3=s, a4=e) for c in group]
                extra.append((f"{label}  at context {ctx}", gpu_us(redo, device.index)[0]))
        ctxs = [c for c in args.contexts if c <= args.cache]
        extra += _replaced_paths(op, label, group, device.index, ctxs)
    listed = sum(n * us for _, n, _, us in rows)
    print(f"\none step: {step:.1f} us replayed ({1e6 / step:.0f} tok/s), {nodes} graph nodes, "
          f"{sum(n * k for _, n, k, _ in rows)} of them in the listed calls\n")  # fmt: skip
    print(f"{'call (op, operand shapes)':<58} {'calls':>5} {'kern':>4} {'us/call':>8} "
          f"{'us/step':>8} {'%step':>6}")  # fmt: skip
    for label, n, k, us in sorted(rows, key=lambda r: -r[1] * r[3]):
        print(
            f"{label[:58]:<58} {n:>5} {k:>4} {us:>8.2f} {n * us:>8.1f} {100 * n * us / step:>6.1f}"
        )
    print(f"{'listed calls':<58} {'':>5} {'':>4} {'':>8} {listed:>8.1f} "
          f"{100 * listed / step:>6.1f}")  # fmt: skip
    print(f"{'rest (counters, gaps, unlisted ops)':<58} {'':>5} {'':>4} {'':>8} "
          f"{step - listed:>8.1f} {100 * (step - listed) / step:>6.1f}")  # fmt: skip
    if extra:
        print("\nalternatives (us per call):")
        for label, us in extra:
            print(f"  {label:<80} {us:8.2f}")


def _replaced_paths(op: str, label: str, group: list[Call], index: int,
                    contexts: Sequence[int] = ()) -> list[tuple[str, float]]:  # fmt: skip
    """The same calls through the kernels the fused ones replaced (us per call): the older
    cluster kernel of rope_cache_attention (also at `contexts`), the split-key attention and
    its merge, the element-loop add_rmsnorm, RoPE and the cache
    write as two ops."""
    import pygpukit as gp
    from pygpukit_cuda import attend_cluster, attend_short, decode_fused_ops

    if op == "rope_cache_attention":  # the older cluster kernel (PYGPUKIT_ATTEND_SHORT=0)
        rows = []
        for ctx in (None, *contexts):
            redo: list[Callable[[], Any]] = [c.again for c in group]
            if ctx is not None:  # the same calls over `ctx` keys (only ends moved)
                ends = gp.asarray(np.full((1,), ctx, np.int32), device=f"cuda:{index}")
                redo = [functools.partial(c.again, a10=ends) for c in group]
            at = "" if ctx is None else f" at context {ctx}"
            rows.append((f"{label}{at}", gpu_us(redo, index)[0]))
            attend_short.ENABLED = False
            try:
                rows.append((f"{label}{at}  older cluster kernel", gpu_us(redo, index)[0]))
            finally:
                attend_short.ENABLED = True
        return rows
    if op == "sdpa_causal_cache":
        attend_cluster.ENABLED = False
        try:
            return [(f"{label}  split-key kernel + merge", gpu_us([c.again for c in group],
                                                                  index)[0])]  # fmt: skip
        finally:
            attend_cluster.ENABLED = True
    if op == "add_rmsnorm":
        serves = decode_fused_ops.norm_vec_serves
        decode_fused_ops.norm_vec_serves = lambda *a: False
        try:
            return [(f"{label}  element kernel", gpu_us([c.again for c in group], index)[0])]
        finally:
            decode_fused_ops.norm_vec_serves = serves
    if op == "rope_kv_cache_write":

        def two_ops(c: Call) -> Callable[[], None]:
            q, k, v, cos, sin, pos, keys, values, slots = c.args

            def run() -> None:
                gp.rope_at_inplace(q, k, cos, sin, pos)
                gp.kv_cache_write_pair(keys, values, k.transpose(0, 2, 1, 3),
                                       v.transpose(0, 2, 1, 3), slots)  # fmt: skip

            return run

        return [(f"{label}  as rope_at + kv_write_pair",
                 gpu_us([two_ops(c) for c in group], index)[0])]  # fmt: skip
    return []


def _other_projection(c: Call) -> Callable[[], Any]:
    """The same product through the other kernel: linear_rows for a Linear, matmul for
    linear_rows (both on the same weight memory)."""
    import pygpukit as gp

    if c.op == "matmul":
        lin, x = c.args
        return lambda: gp.linear_rows(x, lin.weight.mT)
    x, w_out_in = c.args[:2]
    return lambda: gp.matmul(x, w_out_in.mT)


# -- stub --------------------------------------------------------------------------------------
def stub_main(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import stub_cuda

    ctx = stub_cuda.install()
    names = stub_cuda.KERNEL_NAMES
    import pygpukit as gp

    decoder, first = setup(gp.Device.parse("cuda:0"), args.layers, args.cache, args.prompt,
                           args.gemv, False)  # fmt: skip
    decoder.step(first)
    ctx.record = True
    calls = record(decoder.step)
    ctx.record = False
    launches = ctx.launches
    print(f"one step: {len(launches)} kernel launches, {len(calls)} recorded op calls "
          f"({args.layers} layers; the stub has no cuBLASLt)\n")  # fmt: skip
    print(f"{'kernel':<44} {'grid':>14} {'block':>10} {'blocks':>7} {'count':>6}")
    seen: Counter[tuple[str, tuple[int, ...], tuple[int, ...]]] = Counter()
    for func, grid, block, _shared, _stream, _args in launches:
        seen[(names.get(func, str(func)), _dims(grid), _dims(block))] += 1
    for (name, g, b), n in seen.items():
        dims = "x".join(map(str, g)), "x".join(map(str, b))
        print(f"{name[:44]:<44} {dims[0]:>14} {dims[1]:>10} {math.prod(g):>7} {n:>6}")


def _dims(d: Any) -> tuple[int, ...]:
    return tuple(d) if isinstance(d, (tuple, list)) else (int(d),)


def _base_shape(name: str) -> dict[str, int]:
    """The benchmark's shape of that name (TinyLlama when "tinyllama")."""
    from pygpukit.benchmark.llm_decode import SHAPES

    if name == "tinyllama":
        return TINYLLAMA
    return SHAPES[name]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stub", action="store_true", help="no GPU: list the step's launches")
    ap.add_argument("--gemv", action="store_true", help="projections through linear_rows")
    ap.add_argument(
        "--shape",
        default="tinyllama",
        choices=["tinyllama", "Llama-3-8B"],
        help="the model shape (the benchmark's; Llama-3-8B for the large row)",
    )
    ap.add_argument("--layers", type=int, default=None, help="the shape's (GPU), 2 (stub)")
    ap.add_argument("--cache", type=int, default=512, help="KV cache slots (the benchmark's)")
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--contexts", type=int, nargs="*", default=[128, 512],
                    help="cache lengths to time the attention at as well")  # fmt: skip
    args = ap.parse_args()
    if args.layers is None:
        args.layers = 2 if args.stub else _base_shape(args.shape)["layers"]
    (stub_main if args.stub else gpu_main)(args)


if __name__ == "__main__":
    main()
