"""The compiled launch path on the host: launch plans made from real sm_90 CUBIN metadata,
with the driver replaced by a recorder, pack exactly the arguments the kernel's PTX
declares (ours, then Triton's zeroed scratch pointers), and a second call of a kernel
reuses its plan, passing only pointers."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.triton import availability

pytestmark = pytest.mark.skipif(not availability.status()[0], reason=availability.status()[1])


class Recorder:
    """A stand-in context: keeps every launch's (grid, block, shared, stream, bytes)."""

    def __init__(self) -> None:
        self.launches: list[tuple[Any, ...]] = []
        self.images: list[bytes] = []

    def launch(self, func: int, grid: Any, block: Any, shared: int, stream: int,
               args: bytes) -> None:  # fmt: skip
        self.launches.append((func, grid, block, shared, stream, bytes(args)))


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    from pygpukit.triton.launch import clear_plans
    from pygpukit_cuda import cubin
    from pygpukit_cuda.launch_plan import PackedLaunch

    clear_plans()
    rec = Recorder()
    loaded: list[str] = []

    class FakeFunction:
        def __init__(self, index: int, image: bytes, name: str, shared: int) -> None:
            assert image[:4] == b"\x7fELF"
            loaded.append(name)
            rec.images.append(image)
            self.shared = shared

        def plan(self, grid: Any, block: Any, params: bytes, slots: Any) -> PackedLaunch:
            return PackedLaunch(rec, 1, grid, block, self.shared, params, slots)

    monkeypatch.setattr(cubin, "load", FakeFunction)
    monkeypatch.setattr(cubin, "compute_capability", lambda index: 90)
    monkeypatch.setattr(availability, "interpret", lambda: False)
    rec.loaded = loaded  # type: ignore[attr-defined]
    yield rec
    clear_plans()  # plans bound to the recorder must not serve a later (GPU) test


def _ptr(a: gp.GPUArray) -> int:
    return int(a.buffer.ptr) + a.offset


def test_rmsnorm_plan_packs_every_parameter(recorder: Recorder) -> None:
    from pygpukit.triton.kernels import rows

    x = gp.asarray(np.ones((6, 40), np.float32))
    w = gp.asarray(np.ones(40, np.float32))
    out = gp.empty((6, 40), dtype="float32")
    rows.rmsnorm(x, w, out, 1e-5)
    _, grid, block, _, stream, args = recorder.launches[-1]
    # 40 -> BLOCK 64, 16 rows a program (2048 // 64 capped at 16), 4 warps
    assert grid == (1, 1, 1) and block == (128,) and stream == 0
    from pygpukit.triton.compiled import _compiled

    done = next(c for c in _compiled.values() if c.cubin == recorder.images[-1])
    values = struct.unpack(done.arg_format, args)
    assert values[:4] == (_ptr(x), _ptr(out), _ptr(w), _ptr(x))  # beta unused: x's address
    # nrows, n, R2 (R1 == 1 is compiled in, as Triton's JIT specialises ones)
    assert values[4:7] == (6, 40, 6)
    assert values[7:13] == (0, 0, 40, 0, 0, 40)  # row strides; the unit column strides too
    assert values[13] == pytest.approx(1e-5)
    assert all(v == 0 for v in values[14:]) and len(values) == 14 + done.trailing


def test_a_second_call_reuses_the_plan_with_new_pointers(recorder: Recorder) -> None:
    x1 = gp.asarray(np.arange(10, dtype=np.float32))
    x2 = gp.asarray(np.arange(10, dtype=np.float32))
    out = gp.empty((10,), dtype="float32")
    from pygpukit._plugins import registry

    kernel = registry().providers["triton"].kernels["add"].fn
    kernel(x1, x2, out, gp.float32)
    n_loaded = len(recorder.loaded)  # type: ignore[attr-defined]
    y = gp.asarray(np.arange(10, dtype=np.float32))
    kernel(y, x2, out, gp.float32)
    assert len(recorder.loaded) == n_loaded  # type: ignore[attr-defined]  # no new load
    first, second = recorder.launches[-2][-1], recorder.launches[-1][-1]
    assert struct.unpack_from("@QQQ", second) == (_ptr(y), _ptr(x2), _ptr(out))
    assert first[24:] == second[24:]  # sizes and strides were packed once, into the plan
    kernel(x1, 2.5, out, gp.float32)  # a scalar operand goes by value, in its own plan
    packed = recorder.launches[-1][-1]
    assert struct.unpack_from("@Q", packed)[0] == _ptr(x1)
    assert struct.unpack_from("@f", packed, 8)[0] == 2.5


def test_specialization_hints_pointers_all_or_none_and_compiles_ones_in() -> None:
    from pygpukit.triton.launch import specialization

    a = gp.asarray(np.zeros(64, np.float32))
    off = a[1:]  # 4 bytes past an aligned address
    args = [a, a, 1, 32, 7]
    align, ones = specialization(args, [_ptr(x) if isinstance(x, gp.GPUArray) else x
                                        for x in args], slots=(0, 1))  # fmt: skip
    assert align == 0b01011 and ones == 0b00100
    args = [a, off, 1, 32, 7]
    align, ones = specialization(args, [_ptr(x) if isinstance(x, gp.GPUArray) else x
                                        for x in args], slots=(0, 1, 2))  # fmt: skip
    assert align == 0b01000 and ones == 0  # one misaligned pointer: no pointer is hinted


def test_plans_keep_their_module_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real `cubin.load`, with a driver whose handles die with their module: the
    second (hot path) call must launch a handle that is still loaded. Program.bind drops its
    CubinFunction, which unloaded the module: INVALID_HANDLE on the H100."""
    import gc
    from types import SimpleNamespace

    from pygpukit.triton.kernels import rows
    from pygpukit.triton.launch import clear_plans
    from pygpukit_cuda import cubin

    live: set[int] = set()

    class Module:
        def __init__(self, context: Any, image: bytes) -> None:
            self.handle = id(self)
            live.add(self.handle)

        def function(self, name: str) -> int:
            return self.handle

        def __del__(self) -> None:
            live.discard(self.handle)

    class Context:
        def launch(self, func: int, *rest: Any) -> None:
            assert func in live, "cuLaunchKernel: CUDA_ERROR_INVALID_HANDLE"

        def set_function_attribute(self, func: int, attr: int, value: int) -> None:
            pass

    ctx = Context()
    monkeypatch.setattr(cubin, "_loader", SimpleNamespace(driver=lambda: SimpleNamespace(
        Module=Module)))  # fmt: skip
    monkeypatch.setattr(cubin, "context", lambda index: ctx)
    monkeypatch.setattr(cubin, "_loaded", {})
    monkeypatch.setattr(cubin, "compute_capability", lambda index: 90)
    monkeypatch.setattr(availability, "interpret", lambda: False)
    clear_plans()
    try:
        x = gp.asarray(np.ones((6, 40), np.float32))
        w = gp.asarray(np.ones(40, np.float32))
        out = gp.empty((6, 40), dtype="float32")
        rows.rmsnorm(x, w, out, 1e-5)  # binds: loads the module, makes the plan
        gc.collect()
        rows.rmsnorm(x, w, out, 1e-5)  # the kept plan
        assert live and cubin.loaded_count() == 1
    finally:
        clear_plans()
        cubin._loaded.clear()


@pytest.mark.slow
def test_tensor_descriptor_attention_gets_scratch_per_stream(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TMA attention kernel asks for global scratch (its programs write their K/V
    descriptors there): the plan packs a buffer of grid x per-program bytes, aligned as
    Triton asks, into the first trailing parameter; one per stream, kept across calls."""
    from pygpukit.triton import launch
    from pygpukit.triton.compiled import _compiled
    from pygpukit.triton.kernels import attention as ka

    monkeypatch.setattr(ka, "USE_TMA", True)
    monkeypatch.setattr(ka, "_wave", lambda out: 132)
    handles = iter([7, 7, 9])
    monkeypatch.setattr(launch, "stream", lambda index: next(handles))
    q = gp.asarray(np.ones((1, 2, 256, 64), np.float32)).astype("float16")
    out = gp.empty((1, 2, 256, 64), dtype="float16")
    pointers = []
    for _ in range(3):
        ka.sdpa_causal(q, q, q, out, 0.125, (128, 64, 8, 2, "heavy", False))
        _, grid, _, _, stream, packed = recorder.launches[-1]
        done = next(c for c in _compiled.values() if c.cubin == recorder.images[-1])
        assert done.global_scratch > 0 and grid == (2, 2, 1)
        ours = len(done.param_codes) - done.trailing
        scratch = struct.unpack_from("@Q", packed, done.offsets()[ours])[0]
        assert scratch and scratch % done.scratch_align == 0
        pointers.append((stream, scratch))
    (s1, p1), (s2, p2), (s3, p3) = pointers
    assert (s1, s2, s3) == (7, 7, 9) and p1 == p2 and p3 != p1
