"""Probe the qos benchmark's scheduler case on a GPU: which SMs each task's stream runs on,
how long the request waits at the launch gate, how deep the hog's device queue gets, and
what inflates the solo baseline's p99.

    python scripts/probe_qos.py [--requests 300] [--skip-solo]

Runs the request beside the hog under gp.Scheduler twice: "reserve" (reserve_sms=32 at
construction, as the benchmark now does) and "late" (the reserve sized from the request's
bandwidth when it arrives, after the hog started: the old benchmark). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import threading
import time
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit.benchmark import qos_workload as W


def _pct(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"p50": float(np.percentile(values, 50)), "p99": float(np.percentile(values, 99)),
            "max": float(np.max(values))}  # fmt: skip


def _worst(times: list[float], k: int = 8) -> list[tuple[int, float]]:
    """The `k` slowest requests as (index, ms): early indices point at warm-up, evenly
    spread ones at something periodic (the collector, a timer)."""
    order = sorted(range(len(times)), key=lambda i: -times[i])[:k]
    return [(i, round(times[i], 3)) for i in sorted(order)]


def solo_diagnosis(lib: W.Library, n: int) -> dict[str, Any]:
    """The old solo pattern (10 warm-up requests, collector on) against the new one, with
    the collector's passes that fell inside the measured requests."""
    passes: list[float] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":  # every generation: which requests a pass fell into
            passes.append(time.perf_counter())

    out: dict[str, Any] = {}
    gc.callbacks.append(note)
    try:
        with lib.stream("plain"):
            times = []
            starts = []
            W.requests(lib, 10, warmup=0)  # the old warm-up
            for _ in range(n):
                start = time.perf_counter()
                lib.request()
                starts.append((start, time.perf_counter()))
                times.append((starts[-1][1] - start) * 1e3)
                time.sleep(W.GAP_S)
            hit = [i for i, (a, b) in enumerate(starts) if any(a <= t <= b for t in passes)]
            out["old"] = {**_pct(times), "worst": _worst(times), "gc_passes_in_requests": hit}
            new = W.requests(lib, n)
            out["new_run1"] = {**_pct(new), "worst": _worst(new)}
            new2 = W.requests(lib, n)
            out["new_run2"] = {**_pct(new2), "worst": _worst(new2)}
    finally:
        gc.callbacks.remove(note)
    return out


def scheduler_case(lib: W.Library, device: Any, n: int, reserve: bool) -> dict[str, Any]:
    """The benchmark's scheduler row, instrumented from inside each task."""
    stop = threading.Event()
    done = [0]
    placement: dict[str, Any] = {}
    per_request: list[tuple[float, float]] = []  # (latency ms, gate wait ms during it)
    kwargs: dict[str, Any] = {"reserve_sms": W.RESERVE_SMS} if reserve else {}

    with gp.Scheduler(device=device, workers=2, **kwargs) as sched:
        iso = sched._isolation

        def where(name: str) -> None:
            s = gp.cuda.current_stream(device.index)
            placement[name] = {"stream": hex(s.ptr), "priority": s.priority,
                               "side": iso.side_of(s)}  # fmt: skip

        def hog_task() -> None:
            where("hog")
            while not stop.is_set():
                for _ in range(W.HOG_SYNC_EVERY):
                    lib.hog_step()
                lib.sync()
                done[0] += W.HOG_SYNC_EVERY

        def request_task() -> None:
            import _pygpukit_rust as rust

            where("request")
            me = rust.current_task_id()
            for _ in range(W.WARMUP):
                lib.request()
                time.sleep(W.GAP_S)
            for _ in range(n):
                before = sched.stats(me)["gate_wait_time"]
                start = time.perf_counter()
                lib.request()
                latency = (time.perf_counter() - start) * 1e3
                waited = (sched.stats(me)["gate_wait_time"] - before) * 1e3
                per_request.append((latency, waited))
                time.sleep(W.GAP_S)

        hog = sched.submit(hog_task, policy="best_effort", bandwidth=0.2, name="hog")
        time.sleep(0.3)
        deepest = [0]
        watching = threading.Event()

        def watch() -> None:
            while not watching.is_set():
                deepest[0] = max(deepest[0], sched.stats(hog)["queued_launches"])
                time.sleep(0.0005)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        start, before = time.perf_counter(), done[0]
        req = sched.submit(request_task, memory="512MB", policy="guaranteed",
                           bandwidth=0.25, priority=10, name="request")  # fmt: skip
        req.result(600)
        rate = (done[0] - before) / (time.perf_counter() - start)
        watching.set()
        stop.set()
        hog.result(600)
        watcher.join(5)
        keys = ("launches", "gpu_time", "busy_time", "throttle_events", "gate_wait_time",
                "gate_wait_max", "queued_launches")  # fmt: skip
        stats = {name: {k: sched.stats(t).get(k) for k in keys} for name, t in
                 (("hog", hog), ("request", req))}  # fmt: skip
        isolation = sched.stats()["isolation"]
    latencies = [lat for lat, _ in per_request]
    waits = [w for _, w in per_request]
    return {
        "placement": placement,
        "isolation": isolation,
        "request_ms": {**_pct(latencies), "worst": _worst(latencies)},
        "request_gate_wait_ms": _pct(waits),
        "hog_products_per_s": rate,
        "hog_deepest_queue": deepest[0],
        "task_stats": stats,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--skip-solo", action="store_true")
    args = ap.parse_args()
    device = gp.Device.parse("cuda:0")
    lib = W.pygpukit_library(device)
    report: dict[str, Any] = {}
    if not args.skip_solo:
        report["solo"] = solo_diagnosis(lib, args.requests)
        alone = W.solo(lib, args.requests)  # what the benchmark now divides by
        report["solo_benchmark"] = {"p50": alone.p50, "p99": alone.p99}
    for name, reserve in (("reserve", True), ("late", False)):
        try:
            report[name] = scheduler_case(lib, device, args.requests, reserve)
        except Exception as exc:  # report it and go on to the other case
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
