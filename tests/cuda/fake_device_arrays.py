"""GPUArrays over made-up device addresses, for host tests of launch planning: nothing is
allocated and nothing reads the memory (the launches under test are recorded)."""

from __future__ import annotations

from typing import Any

from pygpukit import Device, GPUArray
from pygpukit import _dtypes as dt

CUDA0 = Device("cuda", 0)


class FakeBuffer:
    """A device block's address and size, nothing more."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.ptr = ptr
        self.nbytes = nbytes


def fake_array(shape: tuple[int, ...], dtype: dt.DataType, ptr: int, strides: Any = None,
               offset: int = 0, nbytes: int = 1 << 40) -> GPUArray:  # fmt: skip
    return GPUArray(FakeBuffer(ptr, nbytes), shape, dtype, CUDA0, strides, offset)
