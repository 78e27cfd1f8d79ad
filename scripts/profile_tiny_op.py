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
    try:
        import torch

        if args.device.startswith("cuda") and torch.cuda.is_available():
            ta = torch.ones(1, device="cuda")
            tb = torch.ones(1, device="cuda")
            us = per_call_us(lambda: ta + tb, args.calls, torch.cuda.synchronize)
            print(f"{'torch a + b':<18} {us:7.2f} us")
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
