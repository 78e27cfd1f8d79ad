"""Probe the rare multi-millisecond requests of the qos workload under gp.Scheduler: for
each slow request, how much of it was host time spent issuing the 8 steps and how much was
waiting for the device, and the VM's steal time over each run.

    python scripts/probe_qos_tail.py [--runs 12] [--switch-interval S] [--hog-sync poll]

On the H100 (2026-11-25) a slow run had 1-14 slow requests (over 3x the median), 1.1-10 ms
spent issuing the steps and most under 0.3 ms in the sync; with py-spy attached (which made
them common) each slow request had one op, a product or a maximum, stalled 1.4-21 ms.
Ruled out: the launch gate (the request task's `gate_wait_max` was 0 in every run), steal
time, the pool (no driver allocations in the window). A 0.2 ms switch interval made them
more frequent (the qos test failed 4 of 8 runs against 0 of 8); making best-effort launches
step aside while a guaranteed task issues did not change them (10 of 50 runs at 3x solo or
more, against 8 of 50). Under py-spy the request's waits that showed were on the driver's
mutex (in cuLaunchKernel, cuEventRecord, cuBLASLt's cuLaunchKernelEx) beside the hog
spinning in cuStreamSynchronize, but a hog that polls instead (`--hog-sync poll`) did not
change them either: in turns over a slow stretch, 7 of 60 runs at 3x solo or more (54 slow
requests) with the spinning hog, 6 of 60 (45) with the polling one. How often they come
varies by machine and minute: 0 of 100 runs in one call, 18 of 100 in another.
scripts/probe_cpu_stalls.py found the cause: the host's CPU itself runs several times slower
for tens of milliseconds at a time, alone or beside the hog.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit.benchmark import qos_workload as W


def steal_ticks() -> int:
    """The VM's steal time over all CPUs, in USER_HZ ticks (-1 where not reported)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) if len(fields) > 8 else -1


def timed_library(device: Any, splits: list[tuple[float, float, list[float]]]) -> W.Library:
    """The workload's library with a request that records (issue ms, sync ms, each op's ms)
    per call."""
    lib = W.pygpukit_library(device)
    rng = np.random.default_rng(7)
    put = lambda a: gp.asarray(a.astype(np.float32), device=device).astype("bfloat16")  # noqa: E731
    x = put(rng.standard_normal((W.REQ_M, W.REQ_K)))
    scale = 1 / math.sqrt(W.REQ_K)
    ws = [put(rng.standard_normal((W.REQ_K, W.REQ_N)) * scale) for _ in range(W.REQ_STEPS)]

    def request() -> Any:
        start = time.perf_counter()
        marks = [start]
        h = x
        for w in ws:
            h = gp.matmul(h, w)
            marks.append(time.perf_counter())
            h = gp.maximum(h, 0.0)
            marks.append(time.perf_counter())
        issued = time.perf_counter()
        gp.cuda.current_stream(device.index).synchronize()
        ops = [(b - a) * 1e3 for a, b in itertools.pairwise(marks)]
        splits.append(((issued - start) * 1e3, (time.perf_counter() - issued) * 1e3, ops))
        return h

    lib.request = request
    return lib


def polled_sync(device: Any) -> None:
    """Wait for the current stream by polling it with sleeps in between, instead of the
    driver's spinning cuStreamSynchronize (what `--hog-sync poll` gives the hog)."""
    stream = gp.cuda.current_stream(device.index)
    while not stream.query():
        time.sleep(50e-6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--requests", type=int, default=150)
    ap.add_argument("--switch-interval", type=float, default=None)
    ap.add_argument("--hog-sync", choices=("spin", "poll"), default="spin",
                    help="how the hog waits for its products")  # fmt: skip
    ap.add_argument("--show-ops", type=int, default=3, help="slow requests per run to break down")
    args = ap.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    device = gp.Device.parse("cuda:0")
    splits: list[tuple[float, float, list[float]]] = []
    lib = timed_library(device, splits)
    if args.hog_sync == "poll":
        lib.sync = lambda: polled_sync(device)  # the request syncs by itself, not through this
    alone = W.solo(lib, args.requests)
    print(f"hog sync {args.hog_sync}; switch interval {sys.getswitchinterval()} s; "
          f"solo p50 {alone.p50:.3f} p99 {alone.p99:.3f} ms")  # fmt: skip
    for run in range(args.runs):
        splits.clear()
        steal = steal_ticks()
        shared = W.under_scheduler(lib, device, args.requests)
        measured = splits[-args.requests :]
        median = float(np.median([a + b for a, b, _ in measured]))
        slow = [(a, b, ops) for a, b, ops in measured if a + b > 3 * median]
        print(f"run {run}: p99 {shared.p99:.3f} ms ({shared.p99 / alone.p99:.2f}x solo), hog "
              f"{shared.hog_per_s:.0f}/s, steal {steal_ticks() - steal} ticks, {len(slow)} slow: "
              + " ".join(f"{a:.2f}+{b:.2f}" for a, b, _ in slow[:8]))  # fmt: skip
        for _, _, ops in slow[: args.show_ops]:
            print("  ops (matmul, maximum) ms: " + " ".join(f"{t:.2f}" for t in ops))


if __name__ == "__main__":
    main()
