"""The qos family: how well one GPU is shared between a latency-sensitive request and a
GEMM hog (see qos_workload), under each way pygpukit offers and PyTorch's top-priority
stream, in one run. Each row's time is the request's latency beside the hog; its note and
`extra` give p50 and p99 over the request alone and the hog's throughput over the hog alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import qos_workload as W
from .cases import SpecialCase
from .results import ERROR, MISSING, PASS, Row
from .runner import Bench, _join, _short
from .timing import Stats

#: requests per measurement, and seconds of hog alone
REQUESTS, HOG_ALONE_S = 300, 3.0
#: the issue's bars for gp.Scheduler: request p99 over solo, hog throughput over solo
BAR_P99, BAR_HOG = 2.0, 0.5

LABELS = {
    "threads": "pygpukit: plain threads and streams",
    "priority": "pygpukit: request stream at top priority",
    "green": "pygpukit: green contexts (32 SMs reserved)",
    "scheduler": "pygpukit: gp.Scheduler (guaranteed vs best_effort)",
    "torch": "torch: request stream at top priority",
}

#: solo baselines per library, measured once per run
_SOLO: dict[str, tuple[Any, W.Measure, float]] = {}


def cases(requests: int = REQUESTS) -> list[SpecialCase]:
    out = [
        SpecialCase("qos", "request beside hog", LABELS[s], "qos", {"setting": s, "n": requests})
        for s in (*W.SETTINGS, "torch")
    ]
    return [*out, admission_case()]


def _baseline(name: str, make: Any, n: int) -> tuple[Any, W.Measure, float]:
    if name not in _SOLO:
        lib = make()
        _SOLO[name] = (lib, W.solo(lib, n), W.hog_alone(lib, HOG_ALONE_S))
    return _SOLO[name]


def run_qos(case: SpecialCase, bench: Bench) -> Row:
    if case.kind == "qos_admit":
        return run_admission(case, bench)
    setting, n = case.params["setting"], int(case.params["n"])
    row = Row(case.family, case.op, case.case, unit="ms")
    if bench.device.type != "cuda":
        row.status, row.note = MISSING, f"a GPU case; this run is on {bench.device}"
        return row
    try:
        if setting == "torch":
            torch = next((p.xp for p in bench.peers if p.name == "torch" and p.load()), None)
            if torch is None:
                row.status, row.note = MISSING, "torch is not available"
                return row
            row.provider = "torch"
            lib, alone, hog_alone = _baseline(
                "torch", lambda: W.torch_library(torch, bench.device.index), n
            )
            measure = W.beside_hog(lib, n, lambda: lib.stream("urgent"), lambda: lib.stream("low"))
        else:
            row.provider = "pygpukit"
            lib, alone, hog_alone = _baseline(
                "pygpukit", lambda: W.pygpukit_library(bench.device), n
            )
            measure = W.pygpukit_setting(setting, lib, bench.device, n)
    except Exception as exc:  # a setting the device cannot run is a row, not the end
        row.status, row.note = ERROR, _join(row.note, f"{type(exc).__name__}: {_short(exc)}")
        return row
    row.stats = Stats.of(measure.request_ms)
    ratios = {
        "p50_over_solo": measure.p50 / alone.p50,
        "p99_over_solo": measure.p99 / alone.p99,
        "hog_over_solo": measure.hog_per_s / hog_alone if hog_alone > 0 else 0.0,
        "solo_p50_ms": alone.p50,
        "solo_p99_ms": alone.p99,
        "p50_ms": measure.p50,
        "p99_ms": measure.p99,
    }
    row.extra.update(ratios)
    row.status = PASS
    row.note = (
        f"p50 {ratios['p50_over_solo']:.2f}x, p99 {ratios['p99_over_solo']:.2f}x solo "
        f"({alone.p50:.2f}/{alone.p99:.2f} ms); hog {ratios['hog_over_solo']:.2f} of solo"
    )
    if setting == "scheduler":
        met = ratios["p99_over_solo"] <= BAR_P99 and ratios["hog_over_solo"] >= BAR_HOG
        row.note += f"; bar (p99 <= {BAR_P99}x, hog >= {BAR_HOG}) {'met' if met else 'missed'}"
    return row


# -- admission --------------------------------------------------------------------------
#: submissions timed, and the issue's bar on their p99
ADMISSIONS, BAR_ADMISSION_US = 2000, 50.0


def admission_case() -> SpecialCase:
    return SpecialCase("qos", "admission", f"{ADMISSIONS} submits of a no-op task", "qos_admit")


def run_admission(case: SpecialCase, bench: Bench) -> Row:
    """How long `submit` takes (admission: checks, reservation, queueing), on any device."""
    import time

    import pygpukit as gp

    row = Row(case.family, case.op, case.case, unit="us", provider="pygpukit")
    times = []
    with gp.Scheduler(total_memory="1GB", workers=2, device=bench.device) as sched:
        tasks = []
        for i in range(ADMISSIONS):
            start = time.perf_counter()
            tasks.append(sched.submit(int, memory="64KB", policy="guaranteed"))
            times.append((time.perf_counter() - start) * 1e3)
            if i % 64 == 63:  # keep the reservation from filling
                for task in tasks:
                    task.result(30)
                tasks.clear()
        for task in tasks:
            task.result(30)
    row.stats = Stats.of(times)
    p99_us = float(np.percentile(times, 99)) * 1e3
    row.extra.update(p50_us=float(np.percentile(times, 50)) * 1e3, p99_us=p99_us)
    row.status = PASS
    met = "met" if p99_us < BAR_ADMISSION_US else "missed"
    row.note = f"p99 {p99_us:.1f} us; bar (p99 < {BAR_ADMISSION_US:.0f} us) {met}"
    return row
