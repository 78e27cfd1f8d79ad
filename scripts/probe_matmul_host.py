"""Where a decode-shaped bf16 product's host time goes. Per call, in bursts of 16 with the
sync untimed, taking turns in one process:

- the native cuBLASLt Product alone (the plan the first gp.matmul made, called with the
  same pointers);
- the output's pool allocation with it;
- gp.matmul itself;
- PyTorch's matmul.

The gap between the second and the third is our Python path (dispatch, the output array,
the plan key). Needs a GPU and PyTorch:

    python scripts/probe_matmul_host.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import torch
from pygpukit_cuda import plans
from pygpukit_cuda.device import _allocators

SHAPES = ((1, 2048, 2048), (1, 4096, 4096), (64, 2048, 2048))


def steps(m: int, k: int, n: int) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    a = gp.asarray(rng.standard_normal((m, k)).astype(np.float32), device="cuda")
    w = gp.asarray(rng.standard_normal((k, n)).astype(np.float32), device="cuda")
    a, w = a.astype("bfloat16"), w.astype("bfloat16")
    plans.MATMUL.clear()
    out = gp.matmul(a, w)
    ((_, product),) = plans.MATMUL.items()
    pointers = [x._buffer.ptr + x._offset for x in (a, w, out)]
    allocate = _allocators[a.device.index].allocate
    ta = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    tw = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)

    def ours(_keep: Any = out) -> Any:  # the default keeps `out`, whose pointer is used, alive
        return gp.matmul(a, w)

    return {
        "Product alone": lambda: product(*pointers),
        "alloc+Product": lambda: (allocate(m * n * 2), product(*pointers)),
        "gp.matmul": ours,
        "torch": lambda: ta @ tw,
    }


def main() -> None:
    sync = torch.cuda.synchronize  # one primary context: waits for ours too
    for m, k, n in SHAPES:
        timed = steps(m, k, n)
        for fn in timed.values():
            for _ in range(30):
                fn()
        sync()
        samples: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(81):
            for name, fn in timed.items():
                sync()
                start = time.perf_counter()
                for _ in range(16):
                    fn()
                samples[name].append((time.perf_counter() - start) * 1e6 / 16)
        sync()
        text = ", ".join(f"{name} {statistics.median(v):.2f}" for name, v in samples.items())
        print(f"{m}x{k} @ {k}x{n}, host us/call: {text}")


if __name__ == "__main__":
    main()
