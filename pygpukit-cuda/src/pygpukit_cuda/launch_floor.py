"""The floor under any tiny op on this host, at this minute: one launch of a one-thread
kernel through the native launch point (a LaunchPlan: one vectorcall into C++, then
``cuLaunchKernel``), with no allocation, dispatch or array made per call.

On the lent H100 the driver's own launch is user-space CPU work with no system call and six
mutex pairs (scripts/probe_driver_launch_inside.cu), and the floor moved between 3.3 and
5.1 us with the host's load (benchmarks/h100-2026-11-25e-launch-floor.md). The benchmark's
tiny rows time it beside ours and the peers' add, so each row says how much of a tiny op's
host time is the driver's and how much is ours.
"""

from __future__ import annotations

from collections.abc import Callable

from pygpukit import GPUArray
from pygpukit.backend import empty

from . import launch_plan, launcher, streams
from .device_facts import data_ptr

_KERNEL = "pgk_floor_store"
_SOURCE = r"""
extern "C" __global__ void pgk_floor_store(float* y) { y[threadIdx.x] = 1.0f; }
"""


def bare_launch(device_index: int) -> Callable[[], None]:
    """A function that launches the one-thread store kernel once, on the stream current on
    `device_index` now, into a one-element array it holds (freed with the function)."""
    target = empty((1,), "float32", f"cuda:{device_index}")
    fn = launcher.function(device_index, _KERNEL, _SOURCE, "@Q")
    plan = launch_plan.make(fn.context, fn.handle, (1,), (1,), 0, fn.packer.pack(0), [(0, "P")])
    stream, ptr = streams.current_handle(device_index), data_ptr(target)

    def launch(_keep: GPUArray = target) -> None:  # the default keeps the written array alive
        plan(stream, ptr)

    return launch
