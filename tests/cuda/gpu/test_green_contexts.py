"""SM partitions on the GPU: green-context streams run our kernels and cuBLASLt products
correctly, and gp.Scheduler reserves SMs for guaranteed tasks (or says why not)."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture
def partition():
    reason = gp.cuda.sm_partition_unavailable(0)
    if reason is not None:
        pytest.skip(f"no green contexts here: {reason}")
    return gp.cuda.SmPartition(32, 0)


def test_the_split_follows_the_devices_granularity(partition):
    layout = gp.cuda.sm_layout(0)
    assert partition.reserved_sms >= 32
    assert partition.reserved_sms % layout["alignment"] == 0
    assert partition.reserved_sms + partition.rest_sms <= layout["sms"]
    assert partition.rest_sms >= layout["min_partition"]


@pytest.mark.parametrize("side", ["reserved", "rest"])
def test_kernels_and_products_on_each_side_match_numpy(partition, side):
    rng = np.random.default_rng()
    a = rng.standard_normal((256, 384)).astype(np.float32)
    b = rng.standard_normal((384, 128)).astype(np.float32)
    stream = partition.stream(side)
    with stream:
        x, y = gp.asarray(a, device="cuda:0"), gp.asarray(b, device="cuda:0")
        product = gp.matmul(x, y)  # cuBLASLt (or the NVRTC matmul)
        relu = gp.maximum(product, 0.0)  # an NVRTC elementwise kernel
        out = relu.to_numpy()
    stream.synchronize()
    expect = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0.0)
    np.testing.assert_allclose(out, expect, rtol=2e-3, atol=2e-3)


def test_guaranteed_tasks_get_reserved_sms():
    reason = gp.cuda.sm_partition_unavailable(0)
    with gp.Scheduler(total_memory="4GB", device="cuda:0", reserve_sms=32) as sched:
        host = np.random.default_rng().standard_normal(4096).astype(np.float32)
        run = lambda: (gp.asarray(host, device="cuda:0") * 2).to_numpy()  # noqa: E731
        out = sched.submit(run, memory="64MB", policy="guaranteed").result(60)
        rest = sched.submit(run, policy="best_effort").result(60)
        iso = sched.stats()["isolation"]
    np.testing.assert_allclose(out, host * 2)
    np.testing.assert_allclose(rest, host * 2)
    if reason is None:
        assert iso["mode"] == "sm" and iso["reserved_sms"] >= 32, iso
    else:
        assert iso["mode"] == "priority" and iso["reason"], iso
