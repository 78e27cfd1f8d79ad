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
    """Where `a + b`'s time goes: the native launch alone (packed arguments reused), and
    everything but it (each plan's launch replaced by a no-op)."""
    from types import SimpleNamespace

    from pygpukit_cuda import provider

    c = a + b
    plan = next(p for p in provider._plans.values() if "add" in p.spec.name)
    packed = bytearray(plan.template)
    plan.ptrs.pack_into(packed, 0, c.buffer.ptr, a.buffer.ptr, b.buffer.ptr)
    fn = plan.fn
    ctx, handle = fn.context, fn.handle
    us = per_call_us(lambda: ctx.launch(handle, plan.grid, provider.BLOCK, 0, 0, packed), calls,
                     sync)  # fmt: skip
    print(f"{'native launch':<18} {us:7.2f} us (Context.launch, arguments packed once)")
    noop = SimpleNamespace(launch=lambda *args: None)
    saved = {key: p.fn for key, p in provider._plans.items()}
    for p in provider._plans.values():
        p.fn = SimpleNamespace(context=noop, handle=p.fn.handle, device_index=p.fn.device_index)
        if hasattr(p, "fast"):
            p.fast = None  # the fastcall experiment, when applied
    try:
        us = per_call_us(lambda: a + b, calls, sync)
    finally:
        for key, f in saved.items():
            provider._plans[key].fn = f
        provider._plans.clear()  # rebuilt on the next call, with the real launch
    print(f"{'a + b, no launch':<18} {us:7.2f} us (every Python layer, the launch a no-op)")


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
    """The native launch of an empty kernel with a 16-byte and a 368-byte parameter block
    (the elementwise kernels pass ~376 bytes): does the block's size cost host time?"""
    import struct
    import sys

    mod = gp.RawModule(_PARAM_PROBE)
    for name, extra in (("pgk_probe_small", 0), ("pgk_probe_large", 44)):
        fn = mod.get_function(name, param_types=["float*", "long long", *["long long"] * extra])
        f = fn.compile(0)
        packed = bytearray(struct.pack("@Qq" + "q" * extra, a.buffer.ptr, 1, *([0] * extra)))
        us = _launch_us(f.context.launch, (f.context, f.handle, 1, 32, 0, 0, packed), calls,
                        sync, method=True)  # fmt: skip
        print(f"{name:<18} {us:7.2f} us (native launch, {len(packed)}-byte parameters)")
        native = sys.modules.get(type(f.context).__module__)
        launch_packed = getattr(native, "launch_packed", None)
        if launch_packed is not None:  # the fastcall experiment, when applied
            us = _launch_us(launch_packed, (f.context, f.handle, 1, 32, 0, packed), calls, sync)
            print(f"{name + ' fast':<18} {us:7.2f} us (launch_packed)")


def _launch_us(launch: Callable[..., object], args: tuple[object, ...], calls: int,
               sync: Callable[[], None], method: bool = False) -> float:  # fmt: skip
    """Per-call time of `launch(*args)` (a bound method drops the context argument)."""
    call_args = args[1:] if method else args
    return per_call_us(lambda: launch(*call_args), calls, sync)


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
