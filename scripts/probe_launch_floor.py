"""How much of a tiny op's host time is the driver's launch call: host time alone per call
(`pygpukit.benchmark.timing.issue_us`) of a bare native launch of a one-thread kernel (a
LaunchPlan: one vectorcall into C++, then cuLaunchKernel), of `gp.add` on one-element arrays,
and of PyTorch's add, sampled in turn on the same host.

    python scripts/probe_launch_floor.py
"""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import torch
from pygpukit.benchmark.timing import ISSUE_CALLS, issue_us
from pygpukit_cuda import launch_plan, launcher
from pygpukit_cuda.device_facts import data_ptr

NOOP = r"""
extern "C" __global__ void pgk_probe_store(float* y) { y[threadIdx.x] = 1.0f; }
"""


def main() -> None:
    a = gp.asarray(np.array([1.5], np.float32), device="cuda")
    b = gp.asarray(np.array([2.25], np.float32), device="cuda")
    fn = launcher.function(0, "pgk_probe_store", NOOP, "@Q")
    plan = launch_plan.make(fn.context, fn.handle, (1,), (1,), 0, fn.packer.pack(0), [(0, "P")])
    out = data_ptr(a)
    ta, tb = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    sync = torch.cuda.synchronize
    names = ["native launch (LaunchPlan)", "gp.add", "torch.add"]
    got = issue_us([(lambda: plan(0, out), sync), (lambda: gp.add(a, b), sync),
                    (lambda: torch.add(ta, tb), sync)], rounds=101)  # fmt: skip
    for name, us in zip(names, got, strict=True):
        print(f"{name:<28} {us:6.2f} us/call (host time alone, {ISSUE_CALLS} calls)")


if __name__ == "__main__":
    main()
