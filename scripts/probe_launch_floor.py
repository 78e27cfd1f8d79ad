"""Where a tiny op's host time goes, step by step, on the host it runs on: host time alone
per call (`pygpukit.benchmark.timing.issue_us`: bursts of 64 calls, the sync after each
burst untimed) of

- a bare native launch of a one-thread kernel (a LaunchPlan: one vectorcall into C++, then
  cuLaunchKernel), the floor under any tiny op;
- an allocation from the device's pool, freed at once (no launch);
- both together;
- the learned fast path of add (`fresh`), the op's front door, and `gp.add` itself;
- PyTorch's add, where PyTorch is installed and the driver is real,

sampled in turn, so a drift of the host's speed lands on all of them alike. `--calls
64,1000,5000` times each burst length in turn; bursts longer than 64 are also timed through
their sync, as the benchmark rows are, which shows whether the host sets their pace. On the
null driver (scripts/null_libcuda.c) every step but the GPU runs, which separates our own
cost from the driver's:

    python scripts/probe_launch_floor.py
    cc -O2 -shared -fPIC -o /tmp/libnullcuda.so scripts/null_libcuda.c
    PYGPUKIT_CUDA_DRIVER=/tmp/libnullcuda.so OPENBLAS_NUM_THREADS=1 \
        python scripts/probe_launch_floor.py
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit._ops import elementwise
from pygpukit.benchmark.timing import ISSUE_CALLS, issue_us, per_call_interleaved
from pygpukit_cuda.device import _allocators
from pygpukit_cuda.launch_floor import bare_launch


def cases() -> tuple[dict[str, Callable[[], Any]], Callable[[], None]]:
    """The steps to time, and the sync to run between bursts."""
    a = gp.asarray(np.array([1.5], np.float32), device="cuda")
    b = gp.asarray(np.array([2.25], np.float32), device="cuda")
    gp.add(a, b)  # learns the fast path
    launch = bare_launch(0)
    allocate = _allocators[a.device.index].allocate
    door = elementwise._doors["add"]
    fresh = door.known["float32"][2]
    steps: dict[str, Callable[[], Any]] = {
        "native launch (LaunchPlan)": launch,
        "pool allocation and free": lambda: allocate(4),
        "allocation + launch": lambda: (allocate(4), launch()),
        "fast path (fresh)": lambda: fresh(a, b),
        "front door": lambda: door.cell[0](a, b),
        "gp.add": lambda: gp.add(a, b),
    }
    sync: Callable[[], None] = gp.cuda.synchronize
    if "PYGPUKIT_CUDA_DRIVER" in os.environ:
        return steps, sync  # the null driver: PyTorch would open the real one
    try:
        import torch
    except ImportError:
        return steps, sync
    ta, tb = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    steps["torch.add"] = lambda: torch.add(ta, tb)
    return steps, torch.cuda.synchronize  # waits for both: one primary context


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=101, help="bursts per step and repeat")
    ap.add_argument("--repeats", type=int, default=2, help="times to measure every step")
    ap.add_argument("--calls", default=str(ISSUE_CALLS),
                    help="burst lengths, comma-separated (e.g. 64,1000,5000)")  # fmt: skip
    args = ap.parse_args()
    bursts = [int(c) for c in args.calls.split(",")]
    if min(bursts) < 1:
        ap.error(f"--calls: every burst length must be at least 1, got {args.calls}")
    steps, sync = cases()
    contestants = [(fn, sync) for fn in steps.values()]
    for repeat in range(args.repeats):
        for calls in bursts:
            got = issue_us(contestants, rounds=args.rounds, calls=calls)
            print(f"repeat {repeat + 1}: host time alone, us/call in bursts of {calls}")
            for name, us in zip(steps, got, strict=True):
                print(f"  {name:<28} {us:6.2f}")
            if calls > ISSUE_CALLS:
                # the benchmark row's own measure: the same burst timed through its sync, so
                # a device or a driver queue that sets the pace shows as a larger figure
                samples = max(3, args.rounds // 10)
                rows = per_call_interleaved(contestants, calls, warmup=1, repeats=samples,
                                            budget_s=1.0)  # fmt: skip
                print(f"repeat {repeat + 1}: as the benchmark row (sync timed), bursts of {calls}")
                for name, row in zip(steps, rows, strict=True):
                    print(f"  {name:<28} {row.median_ms * 1e3:6.2f}")


if __name__ == "__main__":
    main()
