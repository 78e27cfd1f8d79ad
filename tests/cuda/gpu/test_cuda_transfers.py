"""Host<->device copies through the Rust StreamCopier: exact round trips, ordering with
kernels on the current stream, downloads that wait for their stream only, clear errors,
and the pool and pinned staging back to where they started."""

from __future__ import annotations

import gc
import threading

import _pygpukit_rust as rust
import ml_dtypes
import numpy as np
import pygpukit as gp
import pytest
from pygpukit_cuda import transfers
from pygpukit_cuda.device import allocator

pytestmark = pytest.mark.gpu

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int64, np.bool_, np.float64]
# small (uploads go direct below 2 MiB), around 64 KiB, and several chunks and threads
SIZES = [1, 3, 1000, 16383, 16384, 16385, 100_003, 1 << 20, (1 << 22) + 1]

SPIN = r"""
extern "C" __global__ void pgk_test_spin(long long cycles, int* flag) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    flag[0] = 1;
}
"""


def random_host(n: int, dtype: object, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return rng.standard_normal(n).astype(dtype)


def busy(stream: gp.cuda.Stream, seconds: float = 0.2) -> gp.GPUArray:
    """Keep `stream` busy for about `seconds` with one spinning thread."""
    flag = gp.zeros((1,), dtype="int32")
    kernel = gp.jit(SPIN, func="pgk_test_spin")
    kernel(int(seconds * 2e9), flag, grid=1, block=1, stream=stream.ptr)
    return flag


def release() -> None:
    gc.collect()
    gp.cuda.synchronize()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_round_trip_is_exact(n: int, dtype: object) -> None:
    h = random_host(n, dtype, seed=n)
    x = gp.asarray(h)
    out = x.to_numpy()
    assert out.dtype == h.dtype
    np.testing.assert_array_equal(out.view(np.uint8), h.view(np.uint8))


def test_offset_views_and_partial_writes() -> None:
    h = random_host(3 * (1 << 18), np.float32, seed=1).reshape(3, -1)
    x = gp.asarray(h)
    np.testing.assert_array_equal(x[1:].to_numpy(), h[1:])  # an offset contiguous view
    np.testing.assert_array_equal(x[2, 5:].to_numpy(), h[2, 5:])
    np.testing.assert_array_equal(x[:, ::3].to_numpy(), h[:, ::3])  # strided: copied first
    new = random_host(100_000, np.float32, seed=2)
    x[1, 7 : 7 + new.size] = gp.asarray(new)
    h[1, 7 : 7 + new.size] = new
    np.testing.assert_array_equal(x.to_numpy(), h)


def test_chunked_copies_at_any_byte_offset() -> None:
    # A copier with tiny chunks and a low direct threshold: many chunks, 3 threads; random
    # lengths and byte offsets (seeded: hypothesis is not installed on every GPU machine).
    pool = allocator(0).pool
    c = rust.StreamCopier(
        pool, direct_below=1000, chunk_min=4096, chunk_max=65536, threads=3, bytes_per_thread=1
    )
    rng = np.random.default_rng(11)
    for n, offset in [(1, 0), (999, 1), (1000, 4095), (65536, 3)] + [
        (int(rng.integers(1, 600_000)), int(rng.integers(0, 4100))) for _ in range(30)
    ]:
        block = pool.allocate(n + offset + 16)
        h = rng.integers(0, 256, n, dtype=np.uint8)
        c.upload(block, offset, h)
        out = np.full(n, 0xEE, dtype=np.uint8)  # poisoned
        c.download(block, offset, out)
        np.testing.assert_array_equal(out, h, err_msg=f"n={n} offset={offset}")
        c.synchronize()
        block.free()
    assert c.stats()["inflight"] == 0


def test_upload_then_kernel_on_a_busy_stream() -> None:
    s = gp.cuda.Stream(non_blocking=True)
    h = random_host(1 << 24, np.float32, seed=3)  # 64 MiB: staged in chunks
    small = random_host(1000, np.float32, seed=4)  # direct
    with s:
        busy(s)
        x = gp.asarray(h)  # enqueued behind the spin
        y = x * 2.0
        xs = gp.asarray(small)
        ys = xs + 1.0
        got, got_small = y.to_numpy(), ys.to_numpy()
    np.testing.assert_array_equal(got, h * np.float32(2))
    np.testing.assert_array_equal(got_small, small + np.float32(1))
    del x, y, xs, ys
    release()


def test_upload_waits_for_earlier_kernels_reading_the_destination() -> None:
    s = gp.cuda.Stream(non_blocking=True)
    old = random_host(1 << 22, np.float32, seed=5)
    new = random_host(1 << 22, np.float32, seed=6)
    with s:
        a = gp.asarray(old)
        busy(s)
        b = a.copy()  # reads `a` after the spin
        transfers.upload(a._buffer, a._offset, new)  # must land after that read
        got_b, got_a = b.to_numpy(), a.to_numpy()
    np.testing.assert_array_equal(got_b, old)
    np.testing.assert_array_equal(got_a, new)
    del a, b
    release()


def test_download_after_kernels_on_a_stream() -> None:
    s = gp.cuda.Stream()
    for n in (100, 1 << 24):
        h = random_host(n, np.float32, seed=n)
        with s:
            x = gp.asarray(h)
            busy(s, 0.05)
            y = x * 3.0
            out = y.to_numpy()
        np.testing.assert_array_equal(out, h * np.float32(3))
    release()


def test_a_download_waits_for_its_stream_only() -> None:
    s1, s2 = gp.cuda.Stream(non_blocking=True), gp.cuda.Stream(non_blocking=True)
    h = random_host(1 << 22, np.float32, seed=9)
    with s2:
        small = gp.asarray(random_host(1000, np.float32, seed=7))
        big = gp.asarray(random_host(1 << 22, np.float32, seed=8))
        # staging, events and a pool block of h's size made before the spin
        small.to_numpy(), big.to_numpy(), gp.asarray(h).to_numpy()
    s2.synchronize()
    with s1:
        flag = busy(s1, 0.5)
    with s2:
        small.to_numpy()
        big.to_numpy()
        np.testing.assert_array_equal(gp.asarray(h).to_numpy(), h)
    assert not s1.query(), "a copy on s2 waited for s1 (or the whole device)"
    s1.synchronize()
    assert flag.to_numpy()[0] == 1
    del small, big, flag
    release()


def test_concurrent_copies_from_threads() -> None:
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for r in range(4):
                h = random_host((1 << 21) + k, np.float32, seed=100 * k + r)
                np.testing.assert_array_equal(gp.asarray(h).to_numpy(), h)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_bad_host_arrays_are_refused_clearly() -> None:
    x = gp.empty((1000,), dtype="float32")
    buf = x._buffer
    h = random_host(2000, np.float32, seed=10)
    with pytest.raises(ValueError, match="C-contiguous"):
        transfers.upload(buf, 0, h[::2])
    with pytest.raises(ValueError, match="does not fit"):
        transfers.upload(buf, 0, h)
    with pytest.raises(ValueError, match="does not fit"):
        transfers.download(buf, 8, np.empty(1000, np.float32))
    ro = np.empty(10, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        transfers.download(buf, 0, ro)
    with pytest.raises(TypeError, match="NumPy array"):
        transfers.upload(buf, 0, b"1234")  # type: ignore[arg-type]
    pool = allocator(0).pool
    freed = pool.allocate(64)
    freed.free()
    with pytest.raises(ValueError, match="freed"):
        transfers.copier(0).upload(freed, 0, h[:4])


def test_device_errors_name_the_driver_call() -> None:
    exc = rust.TransferError("copy_h2d_async failed with device error 1")
    exc.call, exc.code = "copy_h2d_async", 1
    err = transfers._device_error(exc)
    assert "cuMemcpyHtoDAsync failed" in str(err) and "CUDA_ERROR_INVALID_VALUE" in str(err)


def test_pool_and_staging_back_to_baseline() -> None:
    release()
    c = transfers.copier(0)
    assert c is not None and c.stats()["pinned_staging"]
    before_used = gp.memory.stats("cuda:0")["used"]
    before = c.stats()
    arrays = [gp.asarray(random_host(n, np.float32, seed=n)) for n in (10, 1 << 20, 1 << 23)]
    for a in arrays:
        a.to_numpy()
    after = c.stats()
    assert after["staged_chunks"] > before["staged_chunks"]
    assert after["direct_copies"] >= before["direct_copies"] + 1  # the 40-byte upload
    assert after["staging_reuses"] > before["staging_reuses"]
    del arrays, a
    release()
    assert c.reap() == 0 and c.stats()["inflight"] == 0
    assert gp.memory.stats("cuda:0")["used"] == before_used
    cached = c.stats()["staging_cached_bytes"]
    assert 0 < cached <= 128 << 20  # the copier's cache limit with 8 threads
    assert transfers.trim(0) == cached
    assert c.stats()["staging_cached_bytes"] == 0


def test_free_all_cached_also_frees_pinned_staging() -> None:
    host = random_host(1 << 21, np.float32, seed=5)
    a = gp.asarray(host)
    np.testing.assert_array_equal(a.to_numpy(), host)  # downloads are staged at every size
    c = transfers.copier(0)
    assert c is not None and c.stats()["staging_cached_bytes"] > 0
    gp.memory.free_all_cached("cuda:0")
    assert c.stats()["staging_cached_bytes"] == 0
    np.testing.assert_array_equal(a.to_numpy(), host)  # staging comes back on demand
