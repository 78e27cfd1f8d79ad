"""Which products a scheduler task runs in row slices (the slices themselves need a GPU)."""

from __future__ import annotations

import pygpukit as gp
import pytest

slicing = pytest.importorskip("pygpukit_cuda.slicing")


def test_outside_a_task_nothing_is_sliced():
    assert slicing.rows_per_slice(8192, 8192, 8192) is None


@pytest.mark.parametrize(
    ("policy", "shape", "rows"),
    [
        ("best_effort", (8192, 8192, 8192), 2048),  # 1.1 TFLOP: 4 slices
        ("best_effort", (4096, 8192, 8192), 2048),  # 0.55 TFLOP: 2 slices
        ("best_effort", (5000, 8192, 8192), 1792),  # 3 slices, rounded up to 256-row steps
        ("best_effort", (64, 2048, 2048), None),  # small: whole
        ("best_effort", (300, 65536, 65536), None),  # too few rows to split
        ("guaranteed", (8192, 8192, 8192), None),
        ("burstable", (8192, 8192, 8192), None),
    ],
)
def test_only_large_best_effort_products_are_sliced(policy, shape, rows):
    with gp.Scheduler(total_memory="64MB", workers=1) as sched:
        memory = None if policy == "best_effort" else "1MB"
        limit = "2MB" if policy == "burstable" else None
        task = sched.submit(slicing.rows_per_slice, *shape, policy=policy, memory=memory,
                            memory_limit=limit)  # fmt: skip
        assert task.result(10) == rows


def test_yielding_without_guaranteed_work_returns_at_once():
    import _pygpukit_rust as rust

    assert rust.task_yield() is False  # outside a task
    with pytest.raises(ValueError, match="max_s"):
        rust.task_yield(-1.0)
    with gp.Scheduler(total_memory="64MB", workers=1) as sched:
        # nothing guaranteed is on the device: no wait, whatever the bound
        assert sched.submit(rust.task_yield, 30.0, policy="best_effort").result(10) is False
        assert sched.submit(slicing.between_slices, policy="best_effort").result(10) is None
