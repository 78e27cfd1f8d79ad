"""GPU error paths: launch limits, > 48 KB of shared memory, a faulted kernel, out of memory."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys

import numpy as np
import pygpukit as gp
import pytest
from pygpukit_cuda.launch_limits import DeviceLimits

pytestmark = pytest.mark.gpu

ADD1 = r"""
extern "C" __global__ void add1(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"""

BOUNDED = r"""
extern "C" __global__ void __launch_bounds__(128) twice(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
"""

# each block reverses its slice of x through dynamic shared memory
REVERSE = r"""
extern "C" __global__ void reverse_tile(const float* x, float* out, int per_block) {
    extern __shared__ float tile[];
    const float* src = x + (long long)blockIdx.x * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) tile[i] = src[i];
    __syncthreads();
    float* dst = out + (long long)blockIdx.x * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) dst[i] = tile[per_block - 1 - i];
}
"""


def _device_limits() -> DeviceLimits:
    from pygpukit_cuda.device import context
    from pygpukit_cuda.launch_limits import device_limits

    return device_limits(0, context(0))


def test_launch_over_the_limits_raises_before_launch() -> None:
    dev = _device_limits()
    host = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    x = gp.from_numpy(host)
    k = gp.jit(ADD1, func="add1")
    bx, bz = dev.max_block[0], dev.max_block[2]
    gx, gy, gz = dev.max_grid
    optin = dev.shared_per_block_optin
    cases = [
        ({"grid": 1, "block": bx + 1}, f"block.x = {bx + 1} is over the device's limit of {bx}"),
        ({"grid": 1, "block": (1, 1, bz + 1)}, f"block.z = {bz + 1}"),
        ({"grid": 1, "block": (64, 32)}, "2048 threads, over the device's limit of 1024"),
        ({"grid": gx + 1, "block": 1}, f"grid.x = {gx + 1} is over the device's limit of {gx}"),
        ({"grid": (1, gy + 1), "block": 1}, f"grid.y = {gy + 1}"),
        ({"grid": (1, 1, gz + 1), "block": 1}, f"grid.z = {gz + 1}"),
        ({"grid": 0, "block": 32}, "grid.x = 0"),
        ({"grid": 1, "block": -32}, "block.x = -32"),
        ({"grid": 1, "block": 32, "shared_mem": optin + 1}, f"limit of {optin} bytes"),
        ({"grid": 1, "block": 32, "shared_mem": -4}, "cannot be negative"),
        ({"size": (gx + 1) * 256}, f"grid.x = {gx + 1}"),  # the grid derived from size=
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            k(x, 64, **kwargs)
    np.testing.assert_array_equal(x.to_numpy(), host)  # nothing ran
    k(x, 64, grid=1, block=64)
    np.testing.assert_array_equal(x.to_numpy(), host + np.float32(1))


def test_a_kernels_own_thread_limit_is_enforced() -> None:
    from pygpukit_cuda.launch_limits import function_limits

    k = gp.jit(BOUNDED, func="twice")
    assert function_limits(k.compile(0)).max_threads_per_block == 128
    host = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    x = gp.from_numpy(host)
    with pytest.raises(ValueError, match="256 threads, over this kernel's limit of 128"):
        k(x, 1000, block=256)
    k(x, 1000, block=128)
    np.testing.assert_array_equal(x.to_numpy(), host * np.float32(2))


@pytest.mark.parametrize("kib", [100, 200, 20, None])  # None: the device's opt-in maximum
def test_dynamic_shared_memory_over_48k(kib: int | None) -> None:
    nbytes = _device_limits().shared_per_block_optin if kib is None else kib * 1024
    per_block, blocks = nbytes // 4, 3
    host = np.random.default_rng(kib or 3).standard_normal(blocks * per_block)
    host = host.astype(np.float32)
    x = gp.from_numpy(host)
    out = gp.from_numpy(np.full(host.shape, np.nan, np.float32))  # poisoned
    k = gp.jit(REVERSE, func="reverse_tile")
    k(x, out, per_block, grid=blocks, block=256, shared_mem=per_block * 4)
    want = host.reshape(blocks, per_block)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(out.to_numpy(), want)


def test_without_the_opt_in_the_driver_refuses_over_48k() -> None:
    # the same kernel (another source text: another CUfunction) launched raw, no opt-in
    k = gp.jit(REVERSE + "\n// raw\n", func="reverse_tile")
    fn = k.compile(0)
    x = gp.from_numpy(np.ones(25600, np.float32))
    out = gp.from_numpy(np.zeros(25600, np.float32))
    args = (x.buffer.ptr, out.buffer.ptr, 25600)
    with pytest.raises(RuntimeError, match="cuLaunchKernel"):
        fn.launch((1,), (256,), args, 100 * 1024)
    k(x, out, 25600, grid=1, block=256, shared_mem=100 * 1024)  # opts in, then works
    np.testing.assert_array_equal(out.to_numpy(), np.ones(25600, np.float32))


FAULT = r"""
import numpy as np, pygpukit as gp
BAD = '''
extern "C" __global__ void poke(float* x, unsigned long long bad, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { x[i] = 1.0f; ((float*)bad)[i] = 2.0f; }
}
'''
k = gp.jit(BAD, func="poke")
x = gp.from_numpy(np.zeros(64, np.float32))

def attempt(what, fn):
    try:
        fn()
    except gp.cuda.CudaContextLostError as e:
        print(f"{what}: LOST {e}", flush=True)
    except Exception as e:
        print(f"{what}: OTHER {type(e).__name__}: {e}", flush=True)
    else:
        print(f"{what}: OK", flush=True)

attempt("launch", lambda: k(x, 1 << 45, 64, grid=1, block=64))
attempt("sync", gp.cuda.synchronize)
attempt("download", x.to_numpy)
attempt("relaunch", lambda: k(x, 0, 0, grid=1, block=1))
attempt("elementwise", lambda: x + x)  # the native LaunchPlan path
attempt("upload", lambda: gp.from_numpy(np.ones(1 << 20, np.float32)))
print("END", flush=True)
"""

HEALTHY = r"""
import numpy as np, pygpukit as gp
host = np.random.default_rng(5).standard_normal(4096).astype(np.float32)
x = gp.from_numpy(host)
k = gp.jit('''extern "C" __global__ void add1(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }''', func="add1")
k(x, x.size)
print("RESULT", bool(np.array_equal(x.to_numpy(), host + np.float32(1))))
"""


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180)  # fmt: skip


@pytest.mark.skipif(
    bool(os.environ.get("PYGPUKIT_UNDER_SANITIZER")),
    reason="faults on purpose: compute-sanitizer would report the deliberate bad write",
)
def test_illegal_address_loses_the_context_and_a_new_process_works() -> None:
    out = _child(FAULT)
    report = out.stdout + out.stderr
    assert out.returncode == 0, report  # interpreter exit neither crashes nor hangs
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    assert "END" in out.stdout, report
    assert lines["launch"].startswith(("OK", "LOST")), report  # the fault is asynchronous
    for what in ("sync", "download", "relaunch", "elementwise", "upload"):
        assert lines[what].startswith("LOST"), report
        assert "CUDA context is lost" in lines[what] and "restarted" in lines[what], report
    first = lines["launch"] if lines["launch"].startswith("LOST") else lines["sync"]
    assert "CUDA_ERROR_" in first, report  # the driver's name for what went wrong
    assert "cuda:0 was lost earlier" in lines["relaunch"], report  # fails fast
    fresh = _child(HEALTHY)
    assert fresh.returncode == 0, fresh.stderr
    assert "RESULT True" in fresh.stdout, fresh.stdout + fresh.stderr


@pytest.mark.alone
def test_out_of_memory_names_sizes_and_the_pool_recovers() -> None:
    dev = gp.Device("cuda", 0)
    gc.collect()
    base = gp.memory.stats(dev)
    total = int(base["device_total"])
    huge = 2 * total
    with pytest.raises(MemoryError) as info:
        gp.empty((huge,), dtype="uint8", device="cuda")
    msg = str(info.value)
    assert f"{huge} bytes" in msg and "cuda:0" in msg, msg
    assert "cached" in msg and "free on the device" in msg, msg
    # a series of allocations that exhausts the device
    chunk = max(total // 16, 1 << 28)
    held = []
    with pytest.raises(MemoryError, match=f"requested {chunk} bytes"):
        for _ in range(64):
            held.append(gp.empty((chunk,), dtype="uint8", device="cuda"))
    assert len(held) >= 4
    del held
    gc.collect()
    gp.memory.free_all_cached(dev)
    after = gp.memory.stats(dev)
    assert after["used"] == base["used"], (base, after)
    assert after["device_free"] >= base["device_free"] - (64 << 20), (base, after)
    # the pool and the device work normally afterwards
    host = np.random.default_rng(6).standard_normal(1 << 20).astype(np.float32)
    x = gp.from_numpy(host)
    gp.jit(ADD1, func="add1")(x, x.size)
    np.testing.assert_array_equal(x.to_numpy(), host + np.float32(1))
