"""Is a tiny op host-bound or GPU-bound? For 1-element `add` (ours, PyTorch's, CuPy's):
the host time of a burst of calls without a sync (the GPU queue absorbs it), and with the
sync that waits for the GPU to finish the burst. When the two agree, the host is the limit;
when the synced time is larger, the GPU's per-kernel rate is. The libraries take turns.

    python scripts/tiny_op_rates.py [--burst 500] [--rounds 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import pygpukit as gp


def rates(cases: list[tuple[str, Callable[[], object], Callable[[], None]]], burst: int,
          rounds: int) -> dict[str, tuple[float, float]]:  # fmt: skip
    """Per case: (median host us/call without sync, median us/call including the sync).
    The cases take turns round by round, so drift in the host's speed hits all alike."""
    for _, fn, sync in cases:
        for _ in range(3):
            for _ in range(burst):
                fn()
            sync()
    host: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    total: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(rounds):
        for name, fn, sync in cases:
            sync()
            t0 = time.perf_counter()
            for _ in range(burst):
                fn()
            t1 = time.perf_counter()
            sync()
            t2 = time.perf_counter()
            host[name].append((t1 - t0) / burst * 1e6)
            total[name].append((t2 - t0) / burst * 1e6)
    return {n: (statistics.median(host[n]), statistics.median(total[n])) for n in host}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    cases: list[tuple[str, Callable[[], object], Callable[[], None]]] = []
    a = gp.asarray(np.ones(1, np.float32), device="cuda")
    b = gp.asarray(np.ones(1, np.float32), device="cuda")
    cases.append(("pygpukit add", lambda: gp.add(a, b), gp.cuda.synchronize))
    try:
        import torch

        ta, tb = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
        cases.append(("torch add", lambda: torch.add(ta, tb), torch.cuda.synchronize))
    except ImportError:
        pass
    try:
        import cupy

        ca, cb = cupy.ones(1, cupy.float32), cupy.ones(1, cupy.float32)
        sync = cupy.cuda.get_current_stream().synchronize
        cases.append(("cupy add", lambda: cupy.add(ca, cb), sync))
    except ImportError:
        pass
    print(f"{'case':<14} {'host us/call':>13} {'with sync':>10}  (burst {args.burst})")
    for name, (host, total) in rates(cases, args.burst, args.rounds).items():
        print(f"{name:<14} {host:13.2f} {total:10.2f}")


if __name__ == "__main__":
    main()
