"""launch_plan.PackedLaunch, the Python twin of the native LaunchPlan: the bytes each slot
code writes, and the errors for bad slots and calls. No GPU: the context records."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from pygpukit_cuda import launch_plan
from pygpukit_cuda.launch_plan import PackedLaunch


class Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def launch(self, func: int, grid: Any, block: Any, shared: int, stream: int, args: Any) -> None:
        self.calls.append((func, grid, block, shared, stream, bytes(args)))


# (code, value, the bytes a C cast of the value gives)
CASES = [
    ("P", 0xDEAD_BEEF_0000, struct.pack("@Q", 0xDEAD_BEEF_0000)),
    ("?", 3, b"\x01"),
    ("?", 0.0, b"\x00"),
    ("b", 255, struct.pack("@b", -1)),  # wraps like a C cast
    ("B", -1, struct.pack("@B", 255)),
    ("h", -2, struct.pack("@h", -2)),
    ("H", 70000, struct.pack("@H", 70000 - 65536)),
    ("i", 2.9, struct.pack("@i", 2)),  # int() truncates a float
    ("I", -1, struct.pack("@I", 2**32 - 1)),
    ("q", -(2**63), struct.pack("@q", -(2**63))),
    ("Q", 2**64 + 5, struct.pack("@Q", 5)),
    ("f", 1.5, struct.pack("@f", 1.5)),
    ("f", 1e300, struct.pack("@f", float("inf"))),  # out of range: infinity, as a C cast
    ("d", 7, struct.pack("@d", 7.0)),
]


@pytest.mark.parametrize(("code", "value", "want"), CASES)
def test_each_code_writes_what_a_c_cast_gives(code: str, value: Any, want: bytes) -> None:
    ctx = Recording()
    params = bytes(range(1, 17))  # the bytes outside the slot must survive
    plan = PackedLaunch(ctx, 7, 2, 64, 0, params, [(8, code)])
    plan(5, value)
    (func, grid, block, shared, stream, args), = ctx.calls  # fmt: skip
    assert (func, grid, block, shared, stream) == (7, 2, 64, 0, 5)
    assert args[:8] == params[:8] and args[8 : 8 + len(want)] == want
    assert args[8 + len(want) :] == params[8 + len(want) :]


def test_each_call_starts_from_the_template() -> None:
    ctx = Recording()
    plan = PackedLaunch(ctx, 1, 1, 1, 0, bytes(16), [(0, "P"), (8, "d")])
    plan(0, 11, 2.5)
    plan(0, 12, -1.0)
    assert [c[-1] for c in ctx.calls] == [
        struct.pack("@Qd", 11, 2.5), struct.pack("@Qd", 12, -1.0)
    ]  # fmt: skip


def test_bad_slots_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown launch plan slot code 'x'"):
        PackedLaunch(Recording(), 1, 1, 1, 0, bytes(8), [(0, "x")])
    with pytest.raises(ValueError, match="slot at byte 4 \\('q'\\) does not fit aligned in 8"):
        PackedLaunch(Recording(), 1, 1, 1, 0, bytes(8), [(4, "q")])
    with pytest.raises(ValueError, match="slot at byte 8 \\('f'\\) does not fit"):
        PackedLaunch(Recording(), 1, 1, 1, 0, bytes(8), [(8, "f")])
    with pytest.raises(ValueError, match="take 4100 bytes; kernels take at most 4096"):
        PackedLaunch(Recording(), 1, 1, 1, 0, bytes(4100), [])


def test_bad_calls_raise_before_launching() -> None:
    ctx = Recording()
    plan = PackedLaunch(ctx, 1, 1, 1, 0, bytes(16), [(0, "P"), (8, "f")])
    with pytest.raises(TypeError, match="takes the stream and 2 values \\(2 arguments given\\)"):
        plan(0, 1)
    with pytest.raises(TypeError, match="device pointer must be an int, not float"):
        plan(0, 1.0, 2.0)
    with pytest.raises(ValueError, match="could not convert string to float"):
        plan(0, 1, "x")
    assert ctx.calls == []


def test_make_takes_the_contexts_own_plan_when_it_has_one() -> None:
    made: list[tuple[Any, ...]] = []

    class Native(Recording):
        def launch_plan(self, *args: Any) -> str:
            made.append(args)
            return "native"

    assert launch_plan.make(Native(), 1, 2, 3, 0, b"\0" * 8, [(0, "P")]) == "native"
    assert made == [(1, 2, 3, 0, b"\0" * 8, [(0, "P")])]
    assert isinstance(launch_plan.make(Recording(), 1, 2, 3, 0, bytes(8), []), PackedLaunch)


def test_the_native_type_is_made_by_contexts_only() -> None:
    native = pytest.importorskip("pygpukit_cuda._native")
    with pytest.raises(TypeError, match="cannot create"):
        native.LaunchPlan()
