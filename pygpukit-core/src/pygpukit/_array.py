"""`GPUArray`: a typed, strided view of one device buffer."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _views
from ._device import Buffer, Device
from ._dtypes import DataType, as_dtype
from ._indexing import basic_view, is_basic_index
from ._placement import backend_of, resolve_device


class GPUArray:
    """An n-dimensional array on a device (GPU, or the CPU without one).

    Views share their buffer as in NumPy; strides and offset are in bytes. Operations
    dispatch to the kernel provider chosen for the array's device and dtype (see
    ``pygpukit.explain``). Create arrays with ``pygpukit.asarray``, ``zeros``,
    ``from_numpy`` and friends rather than with this constructor.
    """

    __slots__ = (
        "__weakref__", "_buffer", "_device", "_dtype", "_offset", "_readonly", "_shape",
        "_strides",
    )  # fmt: skip
    __array_priority__ = 100  # NumPy defers to our operators

    def __init__(
        self,
        buffer: Buffer,
        shape: tuple[int, ...],
        dtype: DataType,
        device: Device,
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
        readonly: bool = False,
    ) -> None:
        self._buffer = buffer
        self._shape = shape
        self._dtype = dtype
        self._device = device
        self._strides = (
            strides if strides is not None else _views.contiguous_strides(shape, dtype.itemsize)
        )
        self._offset = offset
        #: set on broadcast views (as NumPy does): their elements share memory
        self._readonly = readonly

    # -- construction ---------------------------------------------------------------
    @classmethod
    def empty(cls, shape: tuple[int, ...], dtype: DataType, device: Device) -> GPUArray:
        """A new contiguous array with uninitialised contents."""
        size = dtype.itemsize
        if len(shape) == 1:  # the common cases, without the general strides loop
            buffer = backend_of(device).allocate(device, size * shape[0])
            return cls(buffer, shape, dtype, device, (size,))
        if len(shape) == 2:  # a matmul's output, every decode-step product
            m, n = shape
            buffer = backend_of(device).allocate(device, size * m * n)
            return cls(buffer, shape, dtype, device, (size * max(n, 1), size))
        nbytes = size
        for n in shape:
            nbytes *= n
        buffer = backend_of(device).allocate(device, nbytes)
        return cls(buffer, shape, dtype, device)

    @classmethod
    def from_numpy(cls, array: Any, device: Device | str | None = None) -> GPUArray:
        host = np.asarray(array)
        dtype = DataType.from_numpy_dtype(host.dtype)
        dev = resolve_device(device)
        out = cls.empty(host.shape, dtype, dev)
        if host.size:
            backend_of(dev).upload(out._buffer, 0, np.ascontiguousarray(host))
        return out

    def _view(
        self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int, readonly: bool = False
    ) -> GPUArray:
        """A view of the same buffer; a view of a read-only array is read-only too."""
        return GPUArray(self._buffer, shape, self._dtype, self._device, strides, offset,
                        readonly or self._readonly)  # fmt: skip

    # -- metadata -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> DataType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def strides(self) -> tuple[int, ...]:
        return self._strides

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def buffer(self) -> Buffer:
        """The device buffer this array views (shared by all its views)."""
        return self._buffer

    @property
    def writable(self) -> bool:
        """False for read-only views (``broadcast_to`` and ``broadcast_arrays`` results and
        their views), whose elements may share memory; write to a ``.copy()`` instead."""
        return not self._readonly

    def check_writable(self, what: str = "the target") -> None:
        """Raise ValueError (NumPy's type) if this array is a read-only view."""
        if self._readonly:
            raise ValueError(
                f"{what} is read-only: a broadcast view (shape {self._shape}, strides "
                f"{self._strides}) shares memory between elements and with its source; "
                "write to a .copy() instead"
            )

    @property
    def is_contiguous(self) -> bool:
        return _views.is_c_contiguous(self._shape, self._strides, self._dtype.itemsize)

    @property
    def real(self) -> GPUArray:
        """The real parts (a copy, float32 for complex64); see ``pygpukit.real``."""
        return _ops.real(self)

    @property
    def imag(self) -> GPUArray:
        """The imaginary parts (a copy); zeros for a real array."""
        return _ops.imag(self)

    def conj(self) -> GPUArray:
        """The complex conjugate (a copy of a real array)."""
        return _ops.conj(self)

    @property
    def T(self) -> GPUArray:
        if self.ndim != 2:
            raise ValueError(f".T wants a 2-D array, got {self.ndim}-D; use .mT or permute_dims")
        return self.transpose()

    @property
    def mT(self) -> GPUArray:
        if self.ndim < 2:
            raise ValueError(f".mT wants at least 2 dimensions, got {self.ndim}")
        axes = (*range(self.ndim - 2), self.ndim - 1, self.ndim - 2)
        return self.transpose(axes)

    # -- views ----------------------------------------------------------------------
    def reshape(self, *shape: Any, copy: bool | None = None) -> GPUArray:
        target = shape[0] if len(shape) == 1 else shape
        new_shape = _views.resolve_reshape(self.size, target)
        strides = (
            None
            if copy
            else _views.reshape_strides(self._shape, self._strides, new_shape, self.itemsize)
        )
        if strides is not None:
            return self._view(new_shape, strides, self._offset)
        if copy is False:
            raise ValueError(
                f"cannot reshape {self._shape} to {new_shape} without a copy (copy=False)"
            )
        return self.copy().reshape(new_shape)

    def transpose(self, *axes: Any) -> GPUArray:
        order = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        if not order:
            order = tuple(reversed(range(self.ndim)))
        perm = _views.normalize_axes(tuple(order), self.ndim)
        if len(perm) != self.ndim:
            raise ValueError(f"axes {tuple(order)} do not match an array of {self.ndim} dimensions")
        shape = tuple(self._shape[a] for a in perm)
        strides = tuple(self._strides[a] for a in perm)
        return self._view(shape, strides, self._offset)

    permute = transpose

    def squeeze(self, axis: int | tuple[int, ...] | None = None) -> GPUArray:
        if axis is None:
            drop = tuple(i for i, n in enumerate(self._shape) if n == 1)
        else:
            if self.ndim == 0:
                raise ValueError(f"cannot squeeze axis {axis} of a 0-d array")
            drop = _views.normalize_axes(axis, self.ndim)
            for a in drop:
                if self._shape[a] != 1:
                    raise ValueError(f"cannot squeeze axis {a} of size {self._shape[a]}")
        keep = [i for i in range(self.ndim) if i not in drop]
        return self._view(
            tuple(self._shape[i] for i in keep), tuple(self._strides[i] for i in keep), self._offset
        )

    def expand_dims(self, axis: int = 0) -> GPUArray:
        ndim = self.ndim + 1
        if isinstance(axis, int) and not -ndim <= axis < ndim:
            raise _views.AxisError(
                f"expand_dims: axis {axis} is out of range for a {self.ndim}-D array "
                f"(the new axis goes at {-ndim} to {ndim - 1})"
            )
        pos = _views.normalize_axis(axis, ndim)
        shape = (*self._shape[:pos], 1, *self._shape[pos:])
        strides = (*self._strides[:pos], 0, *self._strides[pos:])
        return self._view(shape, strides, self._offset)

    def broadcast_to(self, shape: Any) -> GPUArray:
        """A read-only view of this array broadcast to `shape` (zero strides, as NumPy)."""
        target = _views.normalize_shape(shape)
        strides = _views.broadcast_strides(self._shape, self._strides, target)
        return self._view(target, strides, self._offset, readonly=True)

    def __getitem__(self, key: Any) -> GPUArray:
        if is_basic_index(key):
            shape, strides, offset = basic_view(self._shape, self._strides, self._offset, key)
            return self._view(shape, strides, offset)
        return _ops.getitem_advanced(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if is_basic_index(key):
            shape, strides, offset = basic_view(self._shape, self._strides, self._offset, key)
            _ops.assign(self._view(shape, strides, offset), value)
        else:
            _ops.setitem_advanced(self, key, value)

    # -- copies and conversions -----------------------------------------------------
    def copy(self) -> GPUArray:
        return _ops.copy(self)

    def contiguous(self) -> GPUArray:
        """Self if C-contiguous, else a contiguous copy."""
        return self if self.is_contiguous else _ops.copy(self)

    def astype(self, dtype: Any, /, *, copy: bool = True) -> GPUArray:
        target = as_dtype(dtype)
        if target is self._dtype and not copy:
            return self
        return _ops.astype(self, target)

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data (waits for pending work on the device)."""
        src = self.contiguous()
        out = np.empty(src._shape, dtype=src._dtype.to_numpy_dtype())
        if out.size:
            backend_of(src._device).download(src._buffer, src._offset, out)
        return out

    def to_device(self, device: Device | str, /, *, stream: Any = None) -> GPUArray:
        target = Device.parse(device)
        if target == self._device:
            return self
        return GPUArray.from_numpy(self.to_numpy(), target)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a GPUArray cannot be viewed by NumPy without a copy")
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        if api_version not in (None, "2021.12", "2022.12", "2023.12"):
            raise ValueError(f"unsupported Array API version {api_version!r}")
        import pygpukit

        return pygpukit

    # -- interchange: DLPack and the CUDA array interface (zero-copy) ------------------
    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:  # fmt: skip
        """A DLPack capsule of this array's memory (versioned when max_version >= (1, 0))."""
        from . import _dlpack

        hook = getattr(backend_of(self._device), "dlpack", None)
        if hook is not None:
            return hook(self, stream=stream, max_version=max_version, dl_device=dl_device,
                        copy=copy)  # fmt: skip
        kind, index = _dlpack.device_of(self)
        return _dlpack.export_array(self, kind, index, max_version=max_version,
                                    dl_device=dl_device, copy=copy)  # fmt: skip

    def __dlpack_device__(self) -> tuple[int, int]:
        from . import _dlpack

        hook = getattr(backend_of(self._device), "dlpack_device", None)
        return hook(self) if hook is not None else _dlpack.device_of(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """Version 3 of Numba's CUDA array interface (only for arrays on a CUDA device)."""
        hook = getattr(backend_of(self._device), "cuda_array_interface", None)
        if hook is None:
            raise AttributeError(f"arrays on {self._device} have no __cuda_array_interface__")
        return hook(self)

    def item(self) -> bool | int | float | complex:
        if self.size != 1:
            raise ValueError(
                f"only one-element arrays convert to a Python scalar, got size {self.size}"
            )
        return self.to_numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.to_numpy().tolist()

    def __bool__(self) -> bool:
        return bool(self.item())

    def __int__(self) -> int:
        if self._dtype.is_complex:
            raise TypeError(f"cannot convert a {self._dtype.name} array to int")
        return int(self.item())  # type: ignore[arg-type]

    def __float__(self) -> float:
        if self._dtype.is_complex:
            raise TypeError(f"cannot convert a {self._dtype.name} array to float; use complex()")
        return float(self.item())  # type: ignore[arg-type]

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if not self._dtype.is_integer:
            raise TypeError(f"only integer arrays can be used as an index, not {self._dtype}")
        return operator.index(self.item())  # type: ignore[arg-type]

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __iter__(self) -> Iterator[GPUArray]:
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._shape[0]))

    def __repr__(self) -> str:
        body = np.array2string(self.to_numpy(), separator=", ", prefix="GPUArray(", threshold=200)
        return f"GPUArray({body}, dtype={self._dtype.name}, device='{self._device}')"

    __str__ = __repr__

    def __hash__(self) -> int:  # arrays compare elementwise, so they cannot be hashed
        raise TypeError("unhashable type: 'GPUArray'")

    # -- operators ------------------------------------------------------------------
    # (the forward ones call the public functions, whose first lines are the tiny-op fast
    # path; the reflected ones, whose left operand is not an array, go the general way)
    def __add__(self, other: Any) -> GPUArray:
        return _ops.add(self, other)

    def __radd__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("add", other, self)

    def __sub__(self, other: Any) -> GPUArray:
        return _ops.subtract(self, other)

    def __rsub__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("subtract", other, self)

    def __mul__(self, other: Any) -> GPUArray:
        return _ops.multiply(self, other)

    def __rmul__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("multiply", other, self)

    def __truediv__(self, other: Any) -> GPUArray:
        return _ops.divide(self, other)

    def __rtruediv__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("divide", other, self)

    def __floordiv__(self, other: Any) -> GPUArray:
        return _ops.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("floor_divide", other, self)

    def __mod__(self, other: Any) -> GPUArray:
        return _ops.remainder(self, other)

    def __rmod__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("remainder", other, self)

    def __pow__(self, other: Any) -> GPUArray:
        return _ops.pow(self, other)

    def __rpow__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("pow", other, self)

    def __matmul__(self, other: Any) -> GPUArray:
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> GPUArray:
        return _ops.matmul(other, self)

    def __and__(self, other: Any) -> GPUArray:
        return _ops.bitwise_and(self, other)

    def __rand__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("bitwise_and", other, self)

    def __or__(self, other: Any) -> GPUArray:
        return _ops.bitwise_or(self, other)

    def __ror__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("bitwise_or", other, self)

    def __xor__(self, other: Any) -> GPUArray:
        return _ops.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("bitwise_xor", other, self)

    def __lshift__(self, other: Any) -> GPUArray:
        return _ops.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("bitwise_left_shift", other, self)

    def __rshift__(self, other: Any) -> GPUArray:
        return _ops.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> GPUArray:
        return _ops.apply_binary("bitwise_right_shift", other, self)

    def __lt__(self, other: Any) -> GPUArray:
        return _ops.less(self, other)

    def __le__(self, other: Any) -> GPUArray:
        return _ops.less_equal(self, other)

    def __gt__(self, other: Any) -> GPUArray:
        return _ops.greater(self, other)

    def __ge__(self, other: Any) -> GPUArray:
        return _ops.greater_equal(self, other)

    def __eq__(self, other: Any) -> GPUArray:  # type: ignore[override]
        return _ops.equal(self, other)

    def __ne__(self, other: Any) -> GPUArray:  # type: ignore[override]
        return _ops.not_equal(self, other)

    def __neg__(self) -> GPUArray:
        return _ops.negative(self)

    def __pos__(self) -> GPUArray:
        return _ops.positive(self)

    def __abs__(self) -> GPUArray:
        return _ops.abs(self)

    def __invert__(self) -> GPUArray:
        return _ops.bitwise_invert(self)

    def __iadd__(self, other: Any) -> GPUArray:
        return _ops.inplace("add", self, other)

    def __isub__(self, other: Any) -> GPUArray:
        return _ops.inplace("subtract", self, other)

    def __imul__(self, other: Any) -> GPUArray:
        return _ops.inplace("multiply", self, other)

    def __itruediv__(self, other: Any) -> GPUArray:
        return _ops.inplace("divide", self, other)

    def __ifloordiv__(self, other: Any) -> GPUArray:
        return _ops.inplace("floor_divide", self, other)

    def __imod__(self, other: Any) -> GPUArray:
        return _ops.inplace("remainder", self, other)

    def __ipow__(self, other: Any) -> GPUArray:
        return _ops.inplace("pow", self, other)

    def __iand__(self, other: Any) -> GPUArray:
        return _ops.inplace("bitwise_and", self, other)

    def __ior__(self, other: Any) -> GPUArray:
        return _ops.inplace("bitwise_or", self, other)

    def __ixor__(self, other: Any) -> GPUArray:
        return _ops.inplace("bitwise_xor", self, other)

    def __ilshift__(self, other: Any) -> GPUArray:
        return _ops.inplace("bitwise_left_shift", self, other)

    def __irshift__(self, other: Any) -> GPUArray:
        return _ops.inplace("bitwise_right_shift", self, other)

    def __imatmul__(self, other: Any) -> GPUArray:
        result = _ops.matmul(self, other)
        if result.shape != self._shape or result.dtype is not self._dtype:
            raise ValueError(
                f"@= would change the array from {self._shape} {self._dtype} "
                f"to {result.shape} {result.dtype}"
            )
        self[...] = result
        return self


from . import _ops  # noqa: E402  (operators call into the op layer, which imports GPUArray)
