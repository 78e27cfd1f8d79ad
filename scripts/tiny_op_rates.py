"""Is a tiny op host-bound or GPU-bound? For 1-element `add` (ours, PyTorch's, CuPy's):
the host time of a burst of calls without a sync (the GPU queue absorbs it), and with the
sync that waits for the GPU to finish the burst. When the two agree, the host is the limit;
when the synced time is larger, the GPU's per-kernel rate is.

    python scripts/tiny_op_rates.py [--burst 500] [--rounds 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import pygpukit as gp


def rates(fn: Callable[[], object], sync: Callable[[], None], burst: int, rounds: int
          ) -> tuple[float, float]:  # fmt: skip
    """(median host us/call without sync, median us/call including the sync)."""
    for _ in range(3):
        for _ in range(burst):
            fn()
        sync()
    host, total = [], []
    for _ in range(rounds):
        sync()
        t0 = time.perf_counter()
        for _ in range(burst):
            fn()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        host.append((t1 - t0) / burst * 1e6)
        total.append((t2 - t0) / burst * 1e6)
    return statistics.median(host), statistics.median(total)


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
    for name, fn, sync in cases:
        host, total = rates(fn, sync, args.burst, args.rounds)
        print(f"{name:<14} {host:13.2f} {total:10.2f}")


if __name__ == "__main__":
    main()
