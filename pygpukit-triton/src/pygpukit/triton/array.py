"""`TritonArray`: a GPUArray as Triton sees a tensor (its address and element type), no copy.

Triton's JIT and its interpreter take any object with ``data_ptr()`` and a ``dtype``; a
Triton dtype there is taken as is. The interpreter also asks for a few storage methods
(``untyped_storage``, ``new_empty``, ``set_``, ``copy_``) to move device tensors to the
host and back: our host (cpu device) arrays already live there, so those calls hand back
the same memory and copy nothing.
"""

from __future__ import annotations

from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import DataType

#: our dtype names -> Triton's language dtype names
_TL_NAMES = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "int1",
}  # fmt: skip


def tl_dtype(dtype: DataType) -> Any:
    """The ``triton.language`` dtype of one of our dtypes (TypeError if Triton has none)."""
    import triton.language as tl

    name = _TL_NAMES.get(dtype.name)
    if name is None:
        raise TypeError(f"Triton has no element type for {dtype.name}")
    return getattr(tl, name)


class TritonArray:
    """A GPUArray's memory as a Triton kernel argument: `data_ptr()`, `dtype`, shape and
    strides (in elements). It holds the array, so the memory lives while it does."""

    __slots__ = ("array", "dtype", "ptr", "shape", "strides")

    def __init__(self, array: GPUArray) -> None:
        if not isinstance(array, GPUArray):
            raise TypeError(f"from_gpuarray wants a GPUArray, got {type(array).__name__}")
        size = array.dtype.itemsize
        for axis, s in enumerate(array.strides):
            if s % size:
                raise ValueError(f"axis {axis} has stride {s} bytes, not a whole element")
        self.array = array
        self.dtype = tl_dtype(array.dtype)
        self.ptr = int(array.buffer.ptr) + array.offset
        self.shape = tuple(array.shape)
        self.strides = tuple(s // size for s in array.strides)

    def data_ptr(self) -> int:
        return self.ptr

    @property
    def device(self) -> str:
        return str(self.array.device)

    def stride(self, axis: int | None = None) -> Any:
        return self.strides if axis is None else self.strides[axis]

    def numel(self) -> int:
        return self.array.size

    # -- the storage calls Triton's interpreter makes (host memory: no copies) ----------
    def untyped_storage(self) -> TritonArray:
        return self

    def cpu(self) -> TritonArray:
        if self.array.device.type != "cpu":
            raise ValueError(
                "Triton's interpreter (TRITON_INTERPRET=1) runs on host memory; this array "
                f"is on {self.array.device}"
            )
        return self

    def new_empty(self, *args: Any, **kwargs: Any) -> TritonArray:
        return self  # then set_(storage, ...) "points" it at the same memory

    def set_(self, *args: Any) -> TritonArray:
        return self

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple[int, ...]:
        return self.shape

    def copy_(self, other: Any) -> TritonArray:
        return self  # the interpreter wrote the same host memory

    def __repr__(self) -> str:
        return f"TritonArray({self.array.dtype.name}{list(self.shape)} on {self.device})"


def from_gpuarray(x: GPUArray) -> TritonArray:
    """The seeds' name: `x` as a Triton kernel argument (shares its memory)."""
    return TritonArray(x)
