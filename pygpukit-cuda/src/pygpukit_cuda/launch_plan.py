"""Launch plans: one kernel launch with everything fixed but a few argument values.

`make(context, func, grid, block, shared, params, slots)` returns the extension's native
`LaunchPlan` (a vectorcall object: the elementwise and reduction hot paths pay no pybind11
argument loading) when the context is the extension's own, else `PackedLaunch`, its Python
twin, which packs the same bytes and calls ``context.launch`` (stand-in contexts in host
tests and ``scripts/stub_cuda.py`` have only that).

A slot is ``(byte offset, code)``: code ``P`` is a device pointer (an int), anything else the
struct-module code of a scalar; scalars convert as a C cast would (``float()``, ``bool()``,
integers wrapped to their width).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

Slot = tuple[int, str]

# each code as the unsigned struct code of its width (integers are written wrapped)
_UNSIGNED = {"P": "Q", "?": "?", "b": "B", "B": "B", "h": "H", "H": "H", "i": "I", "I": "I",
             "q": "Q", "Q": "Q", "f": "f", "d": "d"}  # fmt: skip
_MAX_PARAMS = 4096


def _convert(code: str) -> Callable[[Any], Any]:
    if code in "fd":
        return float  # native-mode struct packs "f" as a C cast: out of range is infinity
    if code == "?":
        return bool
    mask = (1 << (8 * struct.calcsize(_UNSIGNED[code]))) - 1
    if code == "P":
        return lambda v: _pointer(v) & mask
    return lambda v: int(v) & mask


def _pointer(value: Any) -> int:
    if not isinstance(value, int):
        raise TypeError(f"a device pointer must be an int, not {type(value).__name__}")
    return value


def check_slots(params: bytes, slots: Sequence[Slot]) -> None:
    """What the native constructor refuses, refused here too (ValueError)."""
    if len(params) > _MAX_PARAMS:
        raise ValueError(
            f"a launch plan's parameters take {len(params)} bytes; kernels take at most "
            f"{_MAX_PARAMS}"
        )
    for offset, code in slots:
        if code not in _UNSIGNED:
            raise ValueError(f"unknown launch plan slot code {code!r} (P or one of ?bBhHiIqQfd)")
        size = struct.calcsize(_UNSIGNED[code])
        if offset + size > len(params) or offset % size:
            raise ValueError(
                f"launch plan slot at byte {offset} ({code!r}) does not fit aligned in "
                f"{len(params)} parameter bytes"
            )


class PackedLaunch:
    """The Python twin of the native LaunchPlan (same calling convention and bytes)."""

    __slots__ = ("block", "context", "func", "grid", "params", "shared", "writers")

    def __init__(self, context: Any, func: int, grid: Any, block: Any, shared: int,
                 params: bytes, slots: Sequence[Slot]) -> None:  # fmt: skip
        check_slots(params, slots)
        self.context = context
        self.func = func
        self.grid = grid
        self.block = block
        self.shared = shared
        self.params = bytes(params)
        self.writers = [
            (struct.Struct("@" + _UNSIGNED[code]), offset, _convert(code)) for offset, code in slots
        ]

    def __call__(self, stream: int, *values: Any) -> None:
        if len(values) != len(self.writers):
            raise TypeError(
                f"LaunchPlan takes the stream and {len(self.writers)} values "
                f"({len(values) + 1} arguments given)"
            )
        args = self.pack(*values)
        self.context.launch(self.func, self.grid, self.block, self.shared, stream, args)

    def pack(self, *values: Any) -> bytearray:
        """The parameters with each value in its slot (what a call hands the driver)."""
        args = bytearray(self.params)
        for (packer, offset, convert), value in zip(self.writers, values, strict=True):
            packer.pack_into(args, offset, convert(value))
        return args


def make(context: Any, func: int, grid: Any, block: Any, shared: int, params: bytes,
         slots: Sequence[Slot]) -> Callable[..., None]:  # fmt: skip
    """A launch plan on `context`: native when the context can make one."""
    native = getattr(context, "launch_plan", None)
    if native is None:
        return PackedLaunch(context, func, grid, block, shared, params, slots)
    return native(func, grid, block, shared, bytes(params), list(slots))
