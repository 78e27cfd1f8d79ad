"""gp.Scheduler on the GPU: each task's kernels run on a stream of its own."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def test_task_runs_on_its_own_prioritised_stream():
    seen: list[tuple[int, int]] = []

    def work(host: np.ndarray) -> np.ndarray:
        stream = gp.cuda.current_stream()
        seen.append((stream.ptr, stream.priority))
        x = gp.asarray(host, device="cuda:0")
        return (x * 2 + 1).to_numpy()

    host = np.random.default_rng().standard_normal(1 << 16).astype(np.float32)
    with gp.Scheduler(total_memory="1GB", device="cuda:0") as sched:
        low = sched.submit(work, host, priority=0).result(60)
        high = sched.submit(work, host, priority=5).result(60)
    np.testing.assert_allclose(low, host * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(high, host * 2 + 1, rtol=1e-6)
    default = gp.cuda.current_stream().ptr
    assert all(ptr != default for ptr, _ in seen), "tasks must not share the caller's stream"
    least, greatest = gp.cuda.stream_priority_range()
    assert seen[0][1] == least and seen[1][1] < least and seen[1][1] >= greatest


def test_task_memory_is_charged_on_the_gpu():
    def alloc() -> int:
        return gp.empty((8 << 20,), dtype="uint8", device="cuda:0").nbytes

    with gp.Scheduler(total_memory="1GB", device="cuda:0") as sched:
        with pytest.raises(MemoryError, match="memory limit"):
            sched.submit(alloc, memory="1MB", policy="guaranteed").result(60)
        assert sched.submit(alloc, memory="16MB", policy="guaranteed").result(60) == 8 << 20
