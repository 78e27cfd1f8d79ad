"""DLPack capsules, made and read with ctypes: export of a `GPUArray`'s memory (zero-copy,
legacy or versioned 1.x) and import of another library's capsule.

The exported capsule's manager context keeps the array (so its buffer) alive; the
deleter, called by the consumer or by the capsule's destructor when nobody consumed it,
lets it go. Imported capsules are renamed ``used_*`` and their deleter runs when the
`Foreign` owner is garbage collected.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import _pygpukit_rust as _rust

from . import _dtypes as dt
from ._views import contiguous_strides

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
DEVICE_TYPES = {"cpu": KDL_CPU, "cuda": KDL_CUDA}
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2

_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6
_F8_E4M3FN, _F8_E5M2 = 10, 12  # DLPack 1.1 codes
_CODES: dict[str, tuple[int, int]] = {
    "bool": (_BOOL, 8), "int8": (_INT, 8), "int16": (_INT, 16), "int32": (_INT, 32),
    "int64": (_INT, 64), "uint8": (_UINT, 8), "float16": (_FLOAT, 16),
    "float32": (_FLOAT, 32), "float64": (_FLOAT, 64), "bfloat16": (_BFLOAT, 16),
    "float8_e4m3fn": (_F8_E4M3FN, 8), "float8_e5m2": (_F8_E5M2, 8),
    "complex64": (_COMPLEX, 64), "complex128": (_COMPLEX, 128),
}  # fmt: skip
_DTYPES = {v: dt.as_dtype(k) for k, v in _CODES.items()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]  # fmt: skip


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
]  # fmt: skip


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
        ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor),
    ]  # fmt: skip


_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Exported tensors alive in consumers: address of the managed struct -> what it keeps alive.
_live: dict[int, tuple[Any, ...]] = {}
_live_lock = threading.Lock()


@_DELETER
def _deleter(address: int | None) -> None:
    with _live_lock:
        _live.pop(address or 0, None)


# The capsule destructor is C (in the Rust module): a consumer that refuses a capsule drops
# it with an exception pending, which a Python (ctypes) destructor would clobber.
_capsule_destructor = ctypes.c_void_p(_rust.dlpack_capsule_destructor())


def live_exports() -> int:
    """Exported tensors whose consumers have not called the deleter yet."""
    return len(_live)


def export(array: Any, device_type: int, device_id: int, *, versioned: bool,
           flags: int = 0) -> Any:  # fmt: skip
    """A DLPack capsule viewing `array`'s memory (zero-copy); the capsule keeps it alive."""
    code, bits = _CODES[array.dtype.name]
    ndim = array.ndim
    itemsize = array.itemsize
    shape = (ctypes.c_int64 * max(ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*(s // itemsize for s in array.strides))
    ptr = array.buffer.ptr + array.offset if array.size else (array.buffer.ptr or 0)
    tensor = DLTensor(
        ctypes.c_void_p(ptr or None), DLDevice(device_type, device_id), ndim,
        DLDataType(code, bits, 1), shape, strides, 0,
    )  # fmt: skip
    if versioned:
        minor = 1 if code in (_F8_E4M3FN, _F8_E5M2) else 0
        managed: Any = DLManagedTensorVersioned(DLPackVersion(1, minor), None, _deleter,
                                                flags, tensor)  # fmt: skip
        name = b"dltensor_versioned"
    else:
        managed = DLManagedTensor(tensor, None, _deleter)
        name = b"dltensor"
    address = ctypes.addressof(managed)
    with _live_lock:
        _live[address] = (managed, shape, strides, array)
    return _api.PyCapsule_New(address, name, _capsule_destructor)


class Foreign:
    """Memory another library exported through DLPack; its deleter runs when this dies."""

    __slots__ = ("__weakref__", "_address", "_deleter", "_source", "context", "nbytes", "ptr")

    def __init__(self, ptr: int, nbytes: int, address: int, deleter: Any, source: Any) -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.context: Any = None
        self._address = address
        self._deleter = deleter
        self._source = source  # the exporting object, kept alive as the protocol asks

    def __del__(self) -> None:
        if self._deleter:
            self._deleter(self._address)

    def __repr__(self) -> str:
        return f"<Foreign 0x{self.ptr:x} {self.nbytes} bytes>"


class Imported:
    """What a consumed capsule describes: data pointer, shape, byte strides, dtype, device."""

    def __init__(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 dtype: dt.DataType, device_type: int, device_id: int, owner: Foreign,
                 read_only: bool) -> None:  # fmt: skip
        self.ptr, self.shape, self.strides, self.dtype = ptr, shape, strides, dtype
        self.device_type, self.device_id, self.owner = device_type, device_id, owner
        self.read_only = read_only
        self.offset = 0

    def extent(self) -> tuple[int, int]:
        """(lowest, highest+1) byte offsets the strided view touches, from ptr."""
        if any(n == 0 for n in self.shape):
            return 0, 0
        lo = sum(s * (n - 1) for n, s in zip(self.shape, self.strides, strict=True) if s < 0)
        hi = sum(s * (n - 1) for n, s in zip(self.shape, self.strides, strict=True) if s > 0)
        return lo, hi + self.dtype.itemsize


def consume(capsule: Any, source: Any = None) -> Imported:
    """Take ownership of a DLPack capsule (legacy or versioned)."""
    cap = ctypes.c_void_p(id(capsule))
    versioned = bool(_api.PyCapsule_IsValid(cap, b"dltensor_versioned"))
    if not versioned and not _api.PyCapsule_IsValid(cap, b"dltensor"):
        raise ValueError("not an unconsumed DLPack capsule (was it used already?)")
    name = b"dltensor_versioned" if versioned else b"dltensor"
    address = _api.PyCapsule_GetPointer(cap, name)
    flags = 0
    if versioned:
        managed: Any = DLManagedTensorVersioned.from_address(address)
        if managed.version.major != 1:
            raise BufferError(f"DLPack version {managed.version.major} is not supported")
        flags = int(managed.flags)
    else:
        managed = DLManagedTensor.from_address(address)
    t = managed.dl_tensor
    key = (int(t.dtype.code), int(t.dtype.bits))
    if key not in _DTYPES or t.dtype.lanes != 1:
        raise TypeError(f"DLPack dtype (code {key[0]}, {key[1]} bits) has no PyGPUkit dtype")
    dtype = _DTYPES[key]
    ndim = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    if t.strides:
        strides = tuple(int(t.strides[i]) * dtype.itemsize for i in range(ndim))
    else:  # no strides given: C-contiguous
        strides = contiguous_strides(shape, dtype.itemsize)
    ptr = int(t.data or 0) + int(t.byte_offset)
    deleter = managed.deleter
    _api.PyCapsule_SetName(capsule, b"used_dltensor_versioned" if versioned else b"used_dltensor")
    imp = Imported(ptr, shape, tuple(strides), dtype, int(t.device.device_type),
                   int(t.device.device_id), None, bool(flags & FLAG_READ_ONLY))  # type: ignore[arg-type]  # fmt: skip
    lo, hi = imp.extent()
    # the buffer starts at the lowest byte touched; element 0 sits `offset` bytes in
    imp.offset = -lo
    imp.owner = Foreign(ptr + lo, hi - lo, address, deleter if deleter else None, source)
    return imp


def export_array(array: Any, device_type: int, device_id: int, *, max_version: Any = None,
                 dl_device: Any = None, copy: bool | None = None) -> Any:  # fmt: skip
    """The protocol's `__dlpack__` for an array on (device_type, device_id): the version,
    device and copy requests checked, the capsule made (synchronisation is the caller's)."""
    if dl_device is not None and tuple(dl_device) != (device_type, device_id):
        raise BufferError(
            f"cannot export an array of device {(device_type, device_id)} to {tuple(dl_device)}"
        )
    flags = 0
    if copy:
        array = array.copy()
        flags |= FLAG_IS_COPIED
    versioned = max_version is not None and int(max_version[0]) >= 1
    if array.dtype.name.startswith("float8") and (
        not versioned or tuple(int(v) for v in max_version) < (1, 1)
    ):
        raise BufferError(
            f"a {array.dtype.name} array needs DLPack 1.1 (max_version >= (1, 1)); the "
            f"consumer asked for {max_version}: convert with .astype('float32') first"
        )
    if not array.writable:
        if not versioned:
            raise BufferError(
                "a read-only (broadcast) view needs versioned DLPack to say so "
                "(max_version >= (1, 0)); export a .copy() instead"
            )
        flags |= FLAG_READ_ONLY
    return export(array, device_type, device_id, versioned=versioned, flags=flags)


def device_of(array: Any) -> tuple[int, int]:
    """(DLPack device type, id) of an array on a device type without its own hook."""
    kind = DEVICE_TYPES.get(array.device.type)
    if kind is None:
        raise BufferError(f"arrays on {array.device} cannot be exchanged through DLPack")
    return kind, array.device.index
