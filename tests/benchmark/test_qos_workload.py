"""The qos benchmark's measuring parts on the CPU, with a stand-in library: latencies,
hog counting, and the family's rows on a device without a GPU."""

from __future__ import annotations

import time
from contextlib import nullcontext

import numpy as np
import pytest
from pygpukit.benchmark import qos_workload as W
from pygpukit.benchmark.cli import main


def _library(request_s: float) -> W.Library:
    a = np.random.default_rng().standard_normal((64, 64))
    return W.Library(
        name="stand-in",
        request=lambda: time.sleep(request_s),
        hog_step=lambda: a @ a,
        sync=lambda: None,
        stream=lambda kind: nullcontext(),
    )


def test_solo_and_beside_hog_measure_requests_and_hog_products():
    lib = _library(0.002)
    alone = W.solo(lib, 20)
    assert len(alone.request_ms) == 20
    assert 2.0 <= alone.p50 < 50.0
    assert alone.p99 >= alone.p50
    beside = W.beside_hog(lib, 10, nullcontext, nullcontext)
    assert len(beside.request_ms) == 10
    assert beside.hog_per_s > 0
    assert W.hog_alone(lib, 0.2) > 0


def test_a_failing_hog_is_reported():
    lib = _library(0.001)

    def broken() -> None:
        raise OSError("device lost")

    lib.hog_step = broken
    with pytest.raises(RuntimeError, match="the hog failed: device lost"):
        W.beside_hog(lib, 3, nullcontext, nullcontext)


def test_the_check_catches_a_wrong_request():
    rng = np.random.default_rng()
    x, w = rng.standard_normal((4, 8)), rng.standard_normal((8, 8))
    good = np.maximum(x @ w, 0.0)
    W._check(good, x, [w], lambda a: a)
    with pytest.raises(AssertionError, match="wrong"):
        W._check(good + 1.0, x, [w], lambda a: a)


def test_qos_is_opt_in_and_its_gpu_rows_are_missing_on_the_cpu(capsys):
    assert main(["qos", "--quick", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("request beside hog") == 5
    assert "a GPU case" in out
    assert "| admission" in out and "bar (p99 < 50 us)" in out  # measured on any device


def test_requests_drop_the_warm_up_and_hold_off_the_collector():
    import gc

    calls, collector = [], []
    lib = _library(0.0)
    lib.request = lambda: (calls.append(1), collector.append(gc.isenabled()))  # type: ignore[assignment]
    assert gc.isenabled()
    times = W.requests(lib, 5, warmup=3)
    assert len(times) == 5 and len(calls) == 8
    assert collector == [True] * 3 + [False] * 5, "warm-up with, measurement without the GC"
    assert gc.isenabled(), "the collector is back on afterwards"


def test_solo_is_the_best_of_its_runs_by_p99():
    lib = _library(0.0)
    spikes = iter([0.03] + [0.0] * 1000)  # one hiccup in the first run
    lib.request = lambda: time.sleep(next(spikes))  # type: ignore[assignment]
    alone = W.solo(lib, 20, runs=2, warmup=0)
    assert len(alone.request_ms) == 20
    assert alone.p99 < 20.0, "the run with the 30 ms hiccup set the baseline"
