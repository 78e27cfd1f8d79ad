"""Zero-copy interop with PyTorch and CuPy through DLPack and the CUDA array interface:
pointer equality, writes seen from both sides, non-contiguous views, stream handshake.
Each library's tests skip where it is not installed."""

from __future__ import annotations

import gc

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def sample() -> tuple[np.ndarray, gp.GPUArray]:
    h = np.arange(24, dtype=np.float32).reshape(4, 6)
    return h, gp.asarray(h, device="cuda")


def test_cuda_array_interface_v3() -> None:
    _, x = sample()
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (4, 6) and cai["typestr"] == "<f4"
    assert cai["data"][0] == x.buffer.ptr and cai["strides"] is None and cai["stream"] == 1
    v = x[:, ::2].__cuda_array_interface__
    assert v["strides"] == (24, 8)
    assert x.__dlpack_device__() == (2, 0)


def test_torch_both_ways_zero_copy() -> None:
    torch = pytest.importorskip("torch")
    _, x = sample()
    t = torch.from_dlpack(x)
    assert t.device.type == "cuda" and t.data_ptr() == x.buffer.ptr
    t[0, 0] = 100.0
    assert x.to_numpy()[0, 0] == 100.0
    tv = torch.from_dlpack(x[:, 1::2])
    assert tv.stride() == (6, 2) and tv.data_ptr() == x.buffer.ptr + 4
    np.testing.assert_array_equal(tv.cpu().numpy(), x.to_numpy()[:, 1::2])

    src = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4).t()
    g = gp.from_dlpack(src)
    assert g.shape == (4, 3) and g.strides == (4, 16)
    assert g.buffer.ptr + g.offset == src.data_ptr()
    g[0, 0] = -5.0
    torch.cuda.synchronize()
    assert float(src[0, 0]) == -5.0
    np.testing.assert_array_equal((g * 2).to_numpy(), (src * 2).cpu().numpy())
    for dtype in (torch.bfloat16, torch.int64, torch.bool, torch.float16):
        tt = (torch.arange(6, device="cuda") % 3).to(dtype)
        np.testing.assert_array_equal(
            gp.from_dlpack(tt).to_numpy().astype(np.float32),
            tt.float().cpu().numpy(),
        )
    del t, tv, g, src
    gc.collect()


def test_cupy_both_ways_zero_copy() -> None:
    cp = pytest.importorskip("cupy")
    _, x = sample()
    c = cp.from_dlpack(x)
    assert c.data.ptr == x.buffer.ptr
    c[1, 1] = 7.0
    assert x.to_numpy()[1, 1] == 7.0
    c2 = cp.asarray(x[::-1])  # through __cuda_array_interface__ (negative strides)
    np.testing.assert_array_equal(cp.asnumpy(c2), x.to_numpy()[::-1])
    src = cp.arange(10, dtype=cp.int32)[::3]
    g = gp.from_dlpack(src)
    assert g.buffer.ptr + g.offset == src.data.ptr
    np.testing.assert_array_equal(g.to_numpy(), cp.asnumpy(src))
    g[0] = 42
    cp.cuda.runtime.deviceSynchronize()
    assert int(src[0]) == 42


def test_export_on_a_stream_orders_the_consumer() -> None:
    torch = pytest.importorskip("torch")
    s = gp.cuda.Stream(non_blocking=True)
    with s:
        x = gp.zeros((1 << 22,), dtype="float32")
        for _ in range(10):
            x += 1.0
        cap_stream = torch.cuda.current_stream().cuda_stream or 1
        t = torch.from_dlpack(x.__dlpack__(stream=cap_stream))
    assert float(t.min()) == 10.0
    del t, x
    gc.collect()
    torch.cuda.synchronize()
    gp.cuda.synchronize()


def test_capsule_keeps_memory_alive_and_deleter_runs() -> None:
    torch = pytest.importorskip("torch")
    from pygpukit import _dlpack

    before = _dlpack.live_exports()
    x = gp.arange(1000, dtype="float32", device="cuda")
    t = torch.from_dlpack(x)
    del x
    gc.collect()
    assert float(t[999]) == 999.0
    del t
    gc.collect()
    assert _dlpack.live_exports() == before
