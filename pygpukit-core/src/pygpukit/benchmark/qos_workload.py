"""The isolation workload: a latency-sensitive request beside a best-effort GEMM hog, run
alone and under each way of sharing the GPU; request p50/p99 and hog throughput.

- request: 8 bf16 products (64 x 2048 by 2048 x 2048) each followed by relu, synchronised
  per request, one request every millisecond;
- hog: back-to-back 8192 x 8192 bf16 products (synchronised every few, to count them).
"""

from __future__ import annotations

import gc
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

REQ_M, REQ_K, REQ_N, REQ_STEPS = 64, 2048, 2048, 8
HOG_N, HOG_SYNC_EVERY = 8192, 4
GAP_S = 0.001
#: requests run and dropped before each measurement, on its own stream (first calls on a new
#: stream or green context are not the steady state being compared)
WARMUP = 30
#: the SMs reserved for the request, by hand ("green") and by gp.Scheduler alike
RESERVE_SMS = 32
#: ways to share the GPU, for pygpukit; "torch" is PyTorch's top-priority stream
SETTINGS = ("threads", "priority", "green", "scheduler")


@dataclass
class Measure:
    """Request latencies (ms) and the hog's products per second over the same window."""

    request_ms: list[float]
    hog_per_s: float

    @property
    def p50(self) -> float:
        return float(np.percentile(self.request_ms, 50))

    @property
    def p99(self) -> float:
        return float(np.percentile(self.request_ms, 99))


@dataclass
class Library:
    """One library's side of the workload: its arrays, ops and streams."""

    name: str
    request: Callable[[], None]  # one request, synchronised
    hog_step: Callable[[], None]  # one hog product, not synchronised
    sync: Callable[[], None]  # wait for the current stream
    stream: Callable[[str], AbstractContextManager[Any]]  # "urgent" / "low" stream scope


def pygpukit_library(device: Any, check: bool = True) -> Library:
    import pygpukit as gp

    rng = np.random.default_rng(7)
    put = lambda a: gp.asarray(a.astype(np.float32), device=device).astype("bfloat16")  # noqa: E731
    x = put(rng.standard_normal((REQ_M, REQ_K)))
    ws = [put(rng.standard_normal((REQ_K, REQ_N)) / math.sqrt(REQ_K)) for _ in range(REQ_STEPS)]
    big = put(rng.standard_normal((HOG_N, HOG_N)) / math.sqrt(HOG_N))

    def request() -> Any:
        h = x
        for w in ws:
            h = gp.maximum(gp.matmul(h, w), 0.0)
        gp.cuda.current_stream(device.index).synchronize()
        return h

    if check:
        to_host = lambda a: a.astype("float32").to_numpy()  # noqa: E731
        _check(to_host(request()), x, ws, to_host)
    least, greatest = gp.cuda.stream_priority_range(device.index)
    streams = {
        "urgent": gp.cuda.Stream(priority=greatest, non_blocking=True, device=device.index),
        "low": gp.cuda.Stream(priority=least, non_blocking=True, device=device.index),
        "plain": gp.cuda.Stream(non_blocking=True, device=device.index),
    }
    return Library(
        "pygpukit",
        request,
        lambda: gp.matmul(big, big),
        lambda: gp.cuda.current_stream(device.index).synchronize(),
        lambda kind: streams[kind],
    )


def torch_library(torch: Any, device_index: int) -> Library:
    dev = torch.device("cuda", device_index)
    rng = np.random.default_rng(7)
    put = lambda a: torch.from_numpy(a.astype(np.float32)).to(dev).bfloat16()  # noqa: E731
    x = put(rng.standard_normal((REQ_M, REQ_K)))
    ws = [put(rng.standard_normal((REQ_K, REQ_N)) / math.sqrt(REQ_K)) for _ in range(REQ_STEPS)]
    big = put(rng.standard_normal((HOG_N, HOG_N)) / math.sqrt(HOG_N))

    def request() -> Any:
        h = x
        for w in ws:
            h = torch.relu(h @ w)
        torch.cuda.current_stream(dev).synchronize()
        return h

    _check(request().float().cpu().numpy(), x, ws, lambda a: a.float().cpu().numpy())
    least, greatest = torch.cuda.Stream.priority_range()
    streams = {
        "urgent": torch.cuda.Stream(device=dev, priority=greatest),
        "low": torch.cuda.Stream(device=dev, priority=least),
        "plain": torch.cuda.Stream(device=dev),
    }
    return Library(
        "torch",
        request,
        lambda: big @ big,
        lambda: torch.cuda.current_stream(dev).synchronize(),
        lambda kind: torch.cuda.stream(streams[kind]),
    )


def _check(got: np.ndarray, x: Any, ws: list[Any], host: Callable[[Any], np.ndarray]) -> None:
    """The request's result against float64 from the same bf16 operands (bf16 between steps
    makes 8 chained products drift; 5% of the norm is far below a wrong result's error)."""
    h = host(x).astype(np.float64)
    for w in ws:
        h = np.maximum(h @ host(w).astype(np.float64), 0.0)
    err = float(np.linalg.norm(got - h)) / max(float(np.linalg.norm(h)), 1e-30)
    if not err <= 5e-2:
        raise AssertionError(f"the request's result is wrong: relative error {err:.3g}")


def requests(lib: Library, n: int, warmup: int = WARMUP) -> list[float]:
    """`n` requests one GAP_S apart, after `warmup` dropped ones; each one's latency in ms
    (host clock, synchronised). The garbage collector is held off while they run, in every
    setting alike: a collection pass is a host pause of milliseconds, which in a 0.4 ms
    request is a p99 outlier that says nothing about the GPU's sharing."""
    for _ in range(warmup):
        lib.request()
        time.sleep(GAP_S)
    times = []
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(n):
            start = time.perf_counter()
            lib.request()
            times.append((time.perf_counter() - start) * 1e3)
            time.sleep(GAP_S)
    finally:
        if was_enabled:
            gc.enable()
    return times


class Hog:
    """The hog on a thread of its own, counting finished products; `scope` is entered on
    that thread (a stream, a partition) around the loop."""

    def __init__(self, lib: Library, scope: Callable[[], AbstractContextManager[Any]]) -> None:
        self.lib, self.scope = lib, scope
        self.stop = threading.Event()
        self.done = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        try:
            with self.scope():
                while not self.stop.is_set():
                    for _ in range(HOG_SYNC_EVERY):
                        self.lib.hog_step()
                    self.lib.sync()
                    self.done += HOG_SYNC_EVERY
        except BaseException as exc:  # reported by the caller
            self.error = exc

    @contextmanager
    def running(self) -> Iterator[Hog]:
        self.thread.start()
        try:
            time.sleep(0.3)  # the hog fills the device first
            yield self
        finally:
            self.stop.set()
            self.thread.join(60)
        if self.error is not None:
            raise RuntimeError(f"the hog failed: {self.error}") from self.error


def hog_alone(lib: Library, seconds: float) -> float:
    """The hog's products per second with the device to itself."""
    hog = Hog(lib, lambda: lib.stream("plain"))
    with hog.running():
        start, before = time.perf_counter(), hog.done
        time.sleep(seconds)
        rate = (hog.done - before) / (time.perf_counter() - start)
    return rate


def solo(lib: Library, n: int, runs: int = 2, warmup: int = WARMUP) -> Measure:
    """The request alone on a plain stream, measured like the contended settings (same
    warm-up, sample count and per-request sync): the best of `runs` runs by p99, so that
    one host hiccup does not set the baseline every ratio divides by (the first H100 run's
    solo p99 was 6x its p50); a lower baseline only makes the ratios stricter."""
    with lib.stream("plain"):
        best = [requests(lib, n, warmup) for _ in range(max(1, runs))]
    return min((Measure(t, 0.0) for t in best), key=lambda m: m.p99)


def beside_hog(
    lib: Library,
    n: int,
    request_scope: Callable[[], AbstractContextManager[Any]],
    hog_scope: Callable[[], AbstractContextManager[Any]],
) -> Measure:
    """The request under `request_scope` while the hog runs under `hog_scope`."""
    hog = Hog(lib, hog_scope)
    with hog.running():
        start, before = time.perf_counter(), hog.done
        with request_scope():
            times = requests(lib, n)
        rate = (hog.done - before) / (time.perf_counter() - start)
    return Measure(times, rate)


def pygpukit_setting(setting: str, lib: Library, device: Any, n: int) -> Measure:
    """One pygpukit setting (see SETTINGS) beside the hog."""
    import pygpukit as gp

    if setting == "threads":
        return beside_hog(lib, n, lambda: lib.stream("plain"), lambda: lib.stream("plain"))
    if setting == "priority":
        return beside_hog(lib, n, lambda: lib.stream("urgent"), lambda: lib.stream("low"))
    if setting == "green":
        reason = gp.cuda.sm_partition_unavailable(device.index)
        if reason is not None:
            raise RuntimeError(f"no green contexts: {reason}")
        part = gp.cuda.SmPartition(RESERVE_SMS, device.index)
        least, greatest = gp.cuda.stream_priority_range(device.index)
        urgent, low = part.stream("reserved", greatest), part.stream("rest", least)
        return beside_hog(lib, n, lambda: urgent, lambda: low)
    if setting == "scheduler":
        return under_scheduler(lib, device, n)
    raise ValueError(f"unknown setting {setting!r}; choose from {', '.join(SETTINGS)}")


def under_scheduler(lib: Library, device: Any, n: int) -> Measure:
    """The request as a guaranteed task (priority 10) and the hog as a best-effort task
    (bandwidth 0.2), both under one gp.Scheduler; the tasks' own streams are used. The
    scheduler reserves the green row's RESERVE_SMS SMs when it is made, since the hog starts
    first (see `reserve_sms` in gp.Scheduler)."""
    import pygpukit as gp

    stop = threading.Event()
    done = [0]

    def hog_task() -> None:
        while not stop.is_set():
            for _ in range(HOG_SYNC_EVERY):
                lib.hog_step()
            lib.sync()
            done[0] += HOG_SYNC_EVERY

    with gp.Scheduler(device=device, workers=2, reserve_sms=RESERVE_SMS) as sched:
        hog = sched.submit(hog_task, policy="best_effort", bandwidth=0.2, name="hog")
        time.sleep(0.3)
        start, before = time.perf_counter(), done[0]
        req = sched.submit(requests, lib, n, memory="512MB", policy="guaranteed",
                           bandwidth=0.25, priority=10, name="request")  # fmt: skip
        times = req.result(600)
        rate = (done[0] - before) / (time.perf_counter() - start)
        stop.set()
        hog.result(600)
    return Measure(times, rate)
