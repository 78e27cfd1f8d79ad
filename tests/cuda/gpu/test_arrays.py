"""GPU arrays: round trips of every dtype, views, device facts, memory accounting."""

from __future__ import annotations

import gc

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt

pytestmark = pytest.mark.gpu


def host_data(dtype: dt.DataType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    npd = dtype.to_numpy_dtype()
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        info = np.iinfo(npd)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(npd)
    return (rng.standard_normal(shape) * 4).astype(np.float32).astype(npd)


def test_cuda_is_the_default_device_and_reports_facts() -> None:
    x = gp.asarray([1.0, 2.0])
    assert x.device.type == "cuda"
    info = gp.get_device_info("cuda:0") if hasattr(gp, "get_device_info") else None
    backend = gp._plugins.registry().devices["cuda"]
    facts = backend.info(gp.Device("cuda", 0))
    assert facts["arch"].startswith("sm_") and facts["total_memory"] > 2**30
    assert facts["nvrtc_path"] and facts["driver_version"]
    assert info is None or info
    assert gp.is_cuda_available() and gp.is_nvrtc_available()
    assert gp.get_nvrtc_path() == facts["nvrtc_path"]


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=lambda d: d.name)
def test_round_trip_every_dtype(dtype: dt.DataType) -> None:
    host = host_data(dtype, (3, 5, 7))
    x = gp.asarray(host, device="cuda")
    assert x.device.type == "cuda" and x.dtype is dtype
    out = x.to_numpy()
    assert out.dtype == host.dtype
    np.testing.assert_array_equal(out.view(np.uint8), host.view(np.uint8))


@pytest.mark.parametrize("dtype", [dt.float32, dt.bfloat16, dt.int64, dt.bool_],
                         ids=lambda d: d.name)  # fmt: skip
def test_strided_views_copy_out_correctly(dtype: dt.DataType) -> None:
    host = host_data(dtype, (6, 8, 5), seed=1)
    x = gp.asarray(host, device="cuda")
    for key in [(slice(None, None, 2), slice(1, 7, 3)), (Ellipsis, slice(None, None, -1))]:
        np.testing.assert_array_equal(x[key].to_numpy(), host[key])
    np.testing.assert_array_equal(x.transpose(2, 0, 1).to_numpy(), host.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.mT.copy().to_numpy(), np.swapaxes(host, -1, -2))


def test_assign_into_a_view_and_fill() -> None:
    host = np.arange(48, dtype=np.float32).reshape(6, 8)
    x = gp.asarray(host, device="cuda")
    x[1:5:2, ::3] = 7.5
    host[1:5:2, ::3] = 7.5
    np.testing.assert_array_equal(x.to_numpy(), host)
    z = gp.zeros((4, 3), dtype="int16", device="cuda")
    np.testing.assert_array_equal(z.to_numpy(), np.zeros((4, 3), np.int16))
    f = gp.full((2, 3), 2.5, dtype="bfloat16", device="cuda")
    assert f.to_numpy().astype(np.float32).tolist() == [[2.5] * 3] * 2


def test_empty_and_zero_size_arrays() -> None:
    x = gp.asarray(np.zeros((0, 4), np.float32), device="cuda")
    assert x.shape == (0, 4) and x.to_numpy().shape == (0, 4)
    assert (x + 1).shape == (0, 4)


def test_memory_is_reused_and_accounted() -> None:
    dev = gp.Device("cuda", 0)
    gc.collect()
    before = gp.memory.stats(dev)
    x = gp.empty((1024, 1024), dtype="float32", device="cuda")
    mid = gp.memory.stats(dev)
    assert mid["used"] >= before["used"] + 4 * 2**20
    del x
    gc.collect()
    after = gp.memory.stats(dev)
    assert after["used"] == before["used"] and after["cached"] >= 4 * 2**20
    y = gp.empty((1024, 1024), dtype="float32", device="cuda")
    again = gp.memory.stats(dev)
    reused = again["cache_hits"] > after["cache_hits"] or (
        "device_allocs" in again and again["device_allocs"] == after["device_allocs"]
    )
    assert reused, (after, again)
    del y


def test_arrays_live_in_the_rust_pool_registered_for_the_device() -> None:
    import _pygpukit_rust as rust

    x = gp.asarray(np.arange(1000, dtype=np.float32), device="cuda")
    assert gp.memory.stats("cuda:0")["allocator"] == "rust pool"
    assert "cuda:0" in rust.registered_devices()
    pool = rust.device_pool("cuda:0")
    used = pool.stats()["used"]
    assert used >= x.nbytes
    y = x + 1  # a second array of the same size: a block of the pool's cache, natively made
    assert type(y.buffer).__name__ == "DeviceBuffer"
    assert y.buffer.context is x.buffer.context
    assert pool.stats()["used"] >= used + x.nbytes
    del y
    assert pool.stats()["used"] == used


def test_out_of_memory_names_the_sizes() -> None:
    with pytest.raises(
        MemoryError, match=r"out of device memory allocating \d+ bytes.*free on the device"
    ):
        gp.empty((1 << 50,), dtype="uint8", device="cuda")


def test_streams_events_and_priorities() -> None:
    from pygpukit_cuda import _loader
    from pygpukit_cuda.device import context

    mod = _loader.driver()
    ctx = context(0)
    least, greatest = ctx.stream_priority_range()
    assert greatest <= least
    s = mod.Stream(ctx, priority=greatest)
    assert s.priority == greatest and s.handle != 0
    start, end = mod.Event(ctx), mod.Event(ctx)
    start.record(s.handle)
    end.record(s.handle)
    end.synchronize()
    assert end.query() and s.query()
    assert end.elapsed_since(start) >= 0.0


def test_allocator_capsule_for_the_rust_pool() -> None:
    from pygpukit_cuda.device import context

    cap = context(0).allocator_capsule()
    assert type(cap).__name__ == "PyCapsule"
    assert "pygpukit.device_allocator_v1" in repr(cap)
