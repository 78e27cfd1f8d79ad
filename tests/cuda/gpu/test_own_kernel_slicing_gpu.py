"""Our own kernels sliced inside best-effort tasks on the GPU: elementwise ops, reductions,
the NVRTC matmul and batched products give results bit-identical to the whole launch, in
several gated launches; copies are charged device time; a guaranteed task's requests stay
near their solo latency beside a sliced elementwise/reduction hog (loosely)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu

N = 1 << 28  # float32 elements: 1 GiB per array, so x + y moves 3 GiB (3 slices)
# (slices are slicing.SLICE_BYTES = 1 GiB of memory traffic; under compute-sanitizer sizes
# and slices are `slicing_shrink` times smaller, see tests/cuda/conftest.py)


def _shrunk(shape: tuple[int, ...], shrink: int) -> tuple[int, ...]:
    """`shape` with its last two dimensions divided by `shrink` (a 1-D one by its square)."""
    if len(shape) == 1:
        return (shape[0] // shrink**2,)
    return (*shape[:-2], shape[-2] // shrink, shape[-1] // shrink)


def _random(shape: Any, dtype: str = "float32", seed: int | None = None) -> gp.GPUArray:
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(shape, dtype=np.float32)
    return gp.asarray(host, device="cuda:0").astype(dtype)


def _in_task(fn: Callable[[], Any], policy: str = "best_effort") -> tuple[Any, dict[str, Any]]:
    memory = "16GB" if policy == "guaranteed" else None
    with gp.Scheduler(total_memory="40GB", device="cuda:0", workers=1) as sched:
        task = sched.submit(fn, policy=policy, memory=memory)
        got = task.result(300)
        return got, task.stats()


def _sliced_run(fn: Callable[[], Any]) -> Any:
    """fn's result in a best-effort task, checked to have taken more gated launches than
    in a guaranteed task (whose ops run whole)."""
    got, stats = _in_task(fn)
    _, whole = _in_task(fn, "guaranteed")
    assert stats["launches"] > whole["launches"], (
        f"not sliced: {stats['launches']} launches best-effort, {whole['launches']} whole"
    )
    return got


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), "the sliced result differs from the whole one"


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    "op",
    [lambda x, y: x + y, lambda x, y: x * y - 0.5, lambda x, y: gp.exp(x),
     lambda x, y: gp.where(x > 0, x, y)],
    ids=["add", "mul_sub", "exp", "where"],
)  # fmt: skip
def test_sliced_elementwise_ops_equal_the_whole_bit_for_bit(op, dtype, slicing_shrink):
    n = N if dtype == "float32" else 2 * N  # the same bytes per array
    shape = _shrunk((n,), slicing_shrink)
    x, y = _random(shape, dtype), _random(shape, dtype)
    whole = op(x, y).to_numpy()
    _same_bits(_sliced_run(lambda: op(x, y).to_numpy()), whole)


@pytest.mark.parametrize(("src", "dst"), [("float32", "bfloat16"), ("float16", "float32")])
def test_a_sliced_cast_equals_the_whole(src, dst, slicing_shrink):
    x = _random(_shrunk((N,), slicing_shrink), src)  # 1.5 or 2 GiB moved: 2 slices
    whole = x.astype(dst).to_numpy()
    _same_bits(_sliced_run(lambda: x.astype(dst).to_numpy()), whole)


def test_a_sliced_broadcast_op_on_a_2d_view_equals_the_whole(slicing_shrink):
    x = _random(_shrunk((16384, 16384), slicing_shrink))  # 1 GiB
    row = _random(x.shape[1:])
    view = x[:, 1:]  # not contiguous: the strided path, cut into blocks of rows
    whole = (view * row[1:]).to_numpy()
    _same_bits(_sliced_run(lambda: (view * row[1:]).to_numpy()), whole)


@pytest.mark.parametrize(
    ("shape", "reduce"),
    [((3 * N,), lambda x: gp.sum(x)), ((3 * N,), lambda x: gp.var(x)),
     ((3 << 14, 1 << 14), lambda x: gp.mean(x, axis=1)),
     ((3 << 14, 1 << 14), lambda x: gp.argmax(x, axis=0)),
     ((3 << 14, 1 << 14), lambda x: gp.max(x, axis=0))],
    ids=["sum", "var", "mean_rows", "argmax_cols", "max_cols"],
)  # fmt: skip
def test_sliced_reductions_equal_the_whole_bit_for_bit(shape, reduce, slicing_shrink):
    x = _random(_shrunk(shape, slicing_shrink))  # 3 GiB: 3 slices
    whole = reduce(x).to_numpy()
    _same_bits(np.asarray(_sliced_run(lambda: reduce(x).to_numpy())), np.asarray(whole))


def test_the_sliced_nvrtc_matmul_equals_the_whole(slicing_shrink):
    rng = np.random.default_rng()
    a = rng.integers(-8, 8, _shrunk((4096, 8192), slicing_shrink)).astype(np.int32)
    b = rng.integers(-8, 8, _shrunk((8192, 8192), slicing_shrink)).astype(np.int32)
    x, y = gp.asarray(a, device="cuda:0"), gp.asarray(b, device="cuda:0")
    whole = gp.matmul(x, y).to_numpy()  # int32: our NVRTC kernel (cuBLASLt takes floats)
    got = _sliced_run(lambda: gp.matmul(x, y).to_numpy())
    _same_bits(got, whole)
    np.testing.assert_array_equal(got[-4:], a[-4:].astype(np.int64) @ b.astype(np.int64))


def test_a_sliced_batched_product_equals_the_whole(slicing_shrink):
    x = _random(_shrunk((8, 2048, 4096), slicing_shrink), "bfloat16")
    y = _random(_shrunk((8, 4096, 4096), slicing_shrink), "bfloat16")
    whole = gp.matmul(x, y).astype("float32").to_numpy()
    _same_bits(_sliced_run(lambda: gp.matmul(x, y).astype("float32").to_numpy()), whole)


def test_copies_are_charged_device_time():
    host = np.random.default_rng().standard_normal(1 << 27).astype(np.float32)  # 512 MiB

    def copies() -> None:
        x = gp.asarray(host, device="cuda:0")  # host to device, through the Rust copier
        y = x.copy()  # device to device
        y.to_numpy()  # device to host

    _, stats = _in_task(copies)
    # 1.5 GiB of copies take milliseconds of device time; before copies were measured no
    # device time was charged for them at all
    assert stats["gpu_time"] > 5e-3, stats
    assert stats["queued_launches"] == 0


def _p99(times: list[float]) -> float:
    return float(np.percentile(np.asarray(times), 99))


@pytest.mark.timing
def test_a_guaranteed_request_stays_near_its_solo_latency_beside_a_sliced_hog():
    """Requests (a small elementwise op and a reduction, synchronised) in a guaranteed task,
    beside a best-effort hog of 4 GiB elementwise ops and reductions, run as slices."""
    a = _random((1 << 20,))

    def request_loop(n: int) -> list[float]:
        times = []
        for i in range(n + 10):
            start = time.perf_counter()
            gp.sum(a * 2.0 + 1.0).to_numpy()  # downloads on the task's stream: synchronised
            if i >= 10:  # first calls on a new stream are not the steady state
                times.append(time.perf_counter() - start)
            time.sleep(0.001)
        return times

    stop = threading.Event()
    done = [0, 0]

    def hog() -> None:
        x = gp.full((1 << 30,), 1.5, dtype="float32", device="cuda:0")  # 4 GiB
        while not stop.is_set():
            y = x * 1.0001
            gp.sum(y)
            done[0] += 1
        gp.cuda.current_stream(0).synchronize()

    with gp.Scheduler(total_memory="40GB", device="cuda:0", workers=2) as sched:
        solo = sched.submit(request_loop, 200, policy="guaranteed", memory="256MB", priority=10)
        solo_p99 = _p99(solo.result(300))
        hogging = sched.submit(hog, policy="best_effort", bandwidth=0.2, name="hog")
        time.sleep(0.5)
        shared = sched.submit(request_loop, 200, policy="guaranteed", memory="256MB",
                              priority=10)  # fmt: skip
        shared_p99 = _p99(shared.result(300))
        stop.set()
        hogging.result(300)
        hog_stats = hogging.stats()
    assert done[0] > 0, "the hog made no progress"
    # each hog op is 2 sliced launches' worth or more: slices were launched
    assert hog_stats["launches"] >= 3 * done[0], hog_stats
    bound = max(3 * solo_p99, solo_p99 + 2e-3)
    assert shared_p99 < bound, (
        f"request p99 {shared_p99 * 1e3:.2f} ms beside the hog vs {solo_p99 * 1e3:.2f} ms "
        f"alone; {done[0]} hog rounds"
    )


@pytest.mark.timing
def test_a_cancel_reaches_a_sliced_hog_and_little_device_work_is_left():
    """A best-effort task looping over 4 GiB elementwise ops (8 slices each) is cancelled:
    it ends at its next slice, and its work still queued on the device is about the
    gate's bound (2 ms), not whole ops."""
    running = threading.Event()

    def hog() -> None:
        x = gp.full((1 << 30,), 1.5, dtype="float32", device="cuda:0")
        while True:
            x = x * 1.0
            running.set()

    with gp.Scheduler(total_memory="40GB", device="cuda:0", workers=1) as sched:
        task = sched.submit(hog, policy="best_effort")
        assert running.wait(60)
        time.sleep(0.3)
        asked = time.perf_counter()
        task.cancel()
        with pytest.raises(gp.TaskCancelled):
            task.result(30)
        ended = time.perf_counter() - asked
        gp.cuda.synchronize()
        drained = time.perf_counter() - asked
    assert ended < 0.05, f"the task ran {ended * 1e3:.1f} ms past its cancel"
    assert drained < 0.05, f"{drained * 1e3:.1f} ms of its device work was left queued"
