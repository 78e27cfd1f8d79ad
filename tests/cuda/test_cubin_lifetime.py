"""`cubin.load` keeps its module loaded while plans made from it live: a plan holds only the
raw CUfunction, and a module unloaded under it makes every launch fail with
CUDA_ERROR_INVALID_HANDLE (the first H100 run of the triton provider). The driver here is a
stand-in whose handles die with their module object, as the real driver's do."""

from __future__ import annotations

import gc
import itertools
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from pygpukit_cuda import cubin

_handles = itertools.count(0x1000)


class FakeModule:
    """A loaded module: its function handles are valid until it is garbage-collected."""

    live: ClassVar[set[int]] = set()
    loads = 0

    def __init__(self, context: Any, image: bytes) -> None:
        FakeModule.loads += 1
        self.mine: list[int] = []

    def function(self, name: str) -> int:
        handle = next(_handles)
        self.mine.append(handle)
        FakeModule.live.add(handle)
        return handle

    def __del__(self) -> None:  # cuModuleUnload: every handle of the module is dead now
        FakeModule.live.difference_update(self.mine)


class FakeContext:
    """Launches as the driver would: only with a handle of a module still loaded."""

    def __init__(self) -> None:
        self.launched: list[int] = []

    def launch(self, func: int, grid: Any, block: Any, shared: int, stream: int,
               args: bytes) -> None:  # fmt: skip
        if func not in FakeModule.live:
            raise RuntimeError("cuLaunchKernel failed: CUDA_ERROR_INVALID_HANDLE")
        self.launched.append(func)

    def set_function_attribute(self, func: int, attr: int, value: int) -> None:
        assert func in FakeModule.live


@pytest.fixture
def fake_driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeContext]:
    ctx = FakeContext()
    monkeypatch.setattr(cubin, "_loader", SimpleNamespace(driver=lambda: SimpleNamespace(
        Module=FakeModule)))  # fmt: skip
    monkeypatch.setattr(cubin, "context", lambda index: ctx)
    monkeypatch.setattr(cubin, "_loaded", {})
    FakeModule.loads = 0
    yield ctx
    cubin._loaded.clear()
    gc.collect()


def _plan(image: bytes = b"\x7fELF image") -> Any:
    fn = cubin.load(0, image, "kernel", shared=0)
    return fn.plan((1,), (32,), bytes(8), [(0, "P")])


def test_a_plan_outlives_the_function_object_it_came_from(fake_driver: FakeContext) -> None:
    plan = _plan()  # the CubinFunction is dropped here, as Program.bind drops it
    gc.collect()
    plan(0, 0x2000)  # raised INVALID_HANDLE when the module went with the CubinFunction
    assert len(fake_driver.launched) == 1


def test_the_same_image_is_loaded_once(fake_driver: FakeContext) -> None:
    a = cubin.load(0, b"\x7fELF one", "kernel")
    assert cubin.load(0, bytearray(b"\x7fELF one"), "kernel") is a
    assert cubin.load(0, b"\x7fELF two", "kernel") is not a
    assert FakeModule.loads == 2 and cubin.loaded_count() == 2


def test_a_new_context_loads_the_image_again(monkeypatch: pytest.MonkeyPatch,
                                             fake_driver: FakeContext) -> None:  # fmt: skip
    a = cubin.load(0, b"\x7fELF one", "kernel")
    fresh = FakeContext()  # the old context was lost and made again
    monkeypatch.setattr(cubin, "context", lambda index: fresh)
    b = cubin.load(0, b"\x7fELF one", "kernel")
    assert b is not a and b.context is fresh and FakeModule.loads == 2


def test_load_refuses_an_image_that_is_not_bytes(fake_driver: FakeContext) -> None:
    with pytest.raises(TypeError, match="non-empty bytes"):
        cubin.load(0, 5, "kernel")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="non-empty bytes"):
        cubin.load(0, b"", "kernel")
