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


def test_every_launch_kind_passes_the_native_gate():
    """A gp.jit kernel, a cuBLASLt product, a built-in op and each host<->device copy inside a
    task are counted once by the Rust scheduler: the native launch point and the Rust copier
    pass the same gate, and the core adds none of its own."""
    if not gp.is_nvrtc_available():
        pytest.skip("no NVRTC")
    src = r"""
    extern "C" __global__ void twice(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= 2.0f;
    }"""
    kernel = gp.jit(src, func="twice")
    host = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)

    def work() -> tuple[np.ndarray, np.ndarray]:
        x = gp.asarray(host, device="cuda:0")  # 1 upload
        kernel(x, n=x.size)  # 1 launch
        y = gp.matmul(x, x)  # 1 cuBLASLt product (or an NVRTC kernel)
        z = y + 1.0  # 1 elementwise launch
        return x.to_numpy(), z.to_numpy()  # 2 downloads

    with gp.Scheduler(total_memory="1GB", device="cuda:0") as sched:
        # the first run plans the product (its candidate trial launches too)
        sched.submit(work, policy="guaranteed", memory="64MB").result(60)
        task = sched.submit(work, policy="guaranteed", memory="64MB")
        x, z = task.result(60)
        launches = sched.stats(task)["launches"]
    np.testing.assert_allclose(x, host * 2, rtol=1e-6)
    want = (host * 2).astype(np.float64) @ (host * 2).astype(np.float64) + 1
    np.testing.assert_allclose(z, want, rtol=1e-4, atol=1e-3)
    assert launches == 6, launches  # 3 launches, 1 upload, 2 downloads


def test_a_cancelled_task_stops_at_the_native_gate():
    from pygpukit_cuda import _loader

    assert _loader.native().launch_gate_installed()
