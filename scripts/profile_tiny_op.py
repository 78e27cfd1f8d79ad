"""Where a tiny op's host time goes: time 1-element ops on a device beside PyTorch, then
print a cProfile of ours (the functions with the most own time).

    python scripts/profile_tiny_op.py [--device cuda] [--calls 20000] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable

import numpy as np
import pygpukit as gp


def per_call_us(fn: Callable[[], object], calls: int, sync: Callable[[], None]) -> float:
    for _ in range(200):
        fn()
    sync()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def split(a: gp.GPUArray, b: gp.GPUArray, calls: int, sync: Callable[[], None]) -> None:
    """Where `a + b`'s time goes: its launch alone (the native LaunchPlan, and
    Context.launch with the parameters packed once), and everything but the launch (each
    plan's launch replaced by a no-op)."""
    from pygpukit_cuda import launch_plan, provider

    made: list[tuple[object, ...]] = []
    real_make = launch_plan.make

    def recording_make(*args: object) -> Callable[..., None]:
        made.append(args)
        return real_make(*args)  # type: ignore[arg-type]

    provider._plans.clear()
    launch_plan.make = recording_make  # type: ignore[assignment]
    try:
        c = a + b
    finally:
        launch_plan.make = real_make  # type: ignore[assignment]
    ctx, func, grid, block, shared, params, slots = made[-1]
    values = (c.buffer.ptr, a.buffer.ptr, b.buffer.ptr)
    plan = ctx.launch_plan(func, grid, block, shared, params, slots)  # type: ignore[attr-defined]
    us = per_call_us(lambda: plan(0, *values), calls, sync)
    print(f"{'LaunchPlan':<18} {us:7.2f} us (a + b's native plan, {len(params)} bytes)")  # type: ignore[arg-type]
    packed = launch_plan.PackedLaunch(*made[-1]).pack(*values)  # type: ignore[arg-type]
    us = per_call_us(lambda: ctx.launch(func, grid, block, shared, 0, packed), calls, sync)  # type: ignore[attr-defined]
    print(f"{'Context.launch':<18} {us:7.2f} us (arguments packed once)")
    saved = {key: p.launch for key, p in provider._plans.items()}
    for p in provider._plans.values():
        p.launch = lambda *args: None
    try:
        us = per_call_us(lambda: a + b, calls, sync)
    finally:
        for key, launch in saved.items():
            provider._plans[key].launch = launch
    print(f"{'a + b, no launch':<18} {us:7.2f} us (every Python layer, the launch a no-op)")
    pieces: dict[str, Callable[[], object]] = {
        "GPUArray.empty": lambda: gp.GPUArray.empty(a.shape, a.dtype, a.device),
        "provider.run2": lambda: provider.run2(provider._plans[next(iter(saved))].spec, c, a, b),
    }
    for name, fn in pieces.items():
        print(f"{name:<18} {per_call_us(fn, calls, sync):7.2f} us")


_PARAM_PROBE = r"""
struct PgkPad { long long v[44]; };
extern "C" __global__ void pgk_probe_small(float* x, long long n) {
  if (n < 0) x[0] = 0.f;
}
extern "C" __global__ void pgk_probe_large(float* x, long long n, PgkPad pad) {
  if (n < 0) x[0] = (float)pad.v[0];
}
"""


def param_sizes(a: gp.GPUArray, calls: int, sync: Callable[[], None]) -> None:
    """The launch of an empty kernel with a 16-byte and a 368-byte parameter block (the
    elementwise kernels pass ~376 bytes), through Context.launch and a LaunchPlan: does the
    block's size cost host time, and what does the plan save?"""
    import struct

    mod = gp.RawModule(_PARAM_PROBE)
    for name, extra in (("pgk_probe_small", 0), ("pgk_probe_large", 44)):
        fn = mod.get_function(name, param_types=["float*", "long long", *["long long"] * extra])
        f = fn.compile(0)
        packed = bytes(struct.pack("@Qq" + "q" * extra, a.buffer.ptr, 1, *([0] * extra)))
        ctx = f.context
        us = per_call_us(lambda: ctx.launch(f.handle, 1, 32, 0, 0, packed), calls, sync)  # noqa: B023
        print(f"{name:<18} {us:7.2f} us (Context.launch, {len(packed)}-byte parameters)")
        plan = ctx.launch_plan(f.handle, 1, 32, 0, packed, [(0, "P")])
        ptr = a.buffer.ptr
        us = per_call_us(lambda: plan(0, ptr), calls, sync)  # noqa: B023
        print(f"{name + ' plan':<18} {us:7.2f} us (LaunchPlan, one pointer written)")
    # the same plan on other streams: does the legacy default stream's implicit ordering
    # with every blocking stream cost launch time?
    held = [gp.cuda.Stream(non_blocking=False), gp.cuda.Stream(non_blocking=True)]  # alive
    streams = {
        "per-thread default": 2,  # CU_STREAM_PER_THREAD
        "blocking stream": held[0].ptr,
        "non-blocking stream": held[1].ptr,
    }
    for label, handle in streams.items():
        us = per_call_us(lambda: plan(handle, ptr), calls, sync)  # noqa: B023
        print(f"{'plan, ' + label:<18} {us:7.2f} us")
    b = gp.asarray(np.ones(1, np.float32), device=a.device)
    with gp.cuda.Stream(non_blocking=True):
        us = per_call_us(lambda: a + b, calls, gp.cuda.synchronize)
    print(f"{'a + b, own stream':<18} {us:7.2f} us (a non-blocking stream current)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    dev = gp.Device(args.device) if hasattr(gp, "Device") else args.device
    a = gp.asarray(np.ones(1, np.float32), device=dev)
    b = gp.asarray(np.ones(1, np.float32), device=dev)
    sync = gp.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    cases: dict[str, Callable[[], object]] = {
        "gp.add(a, b)": lambda: gp.add(a, b),
        "a + b": lambda: a + b,
        "a + 1.0": lambda: a + 1.0,
        "gp.exp(a)": lambda: gp.exp(a),
        "gp.empty((1,))": lambda: gp.empty((1,), dtype=gp.float32, device=dev),
        "a * 2.0": lambda: a * 2.0,
        "gp.sum(a)": lambda: gp.sum(a),
    }
    for name, fn in cases.items():
        print(f"{name:<18} {per_call_us(fn, args.calls, sync):7.2f} us")
    if args.device.startswith("cuda"):
        split(a, b, args.calls, sync)
        param_sizes(a, args.calls, sync)
    try:
        import torch

        if args.device.startswith("cuda") and torch.cuda.is_available():
            ta = torch.ones(1, device="cuda")
            tb = torch.ones(1, device="cuda")
            peers: dict[str, Callable[[], object]] = {
                "torch a + b": lambda: ta + tb,
                "torch a + 1.0": lambda: ta + 1.0,
                "torch exp(a)": lambda: torch.exp(ta),
                "torch empty(1)": lambda: torch.empty(1, device="cuda"),
                "torch a * 2.0": lambda: ta * 2.0,
                "torch sum(a)": lambda: torch.sum(ta),
            }
            for name, fn in peers.items():
                print(f"{name:<18} {per_call_us(fn, args.calls, torch.cuda.synchronize):7.2f} us")
    except ImportError:
        pass
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        a + b
    sync()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
