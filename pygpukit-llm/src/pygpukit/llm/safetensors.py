"""Our reader of the .safetensors format: a validated header and memory-mapped tensors.

A file is an 8-byte little-endian header length N, N bytes of JSON, then one byte buffer.
The JSON maps each tensor name to its dtype, shape and ``[begin, end)`` byte range inside
the buffer (``__metadata__`` holds free-form strings). Every rule of the format is checked
when the file is opened, so a truncated or corrupt file fails there with a message naming
the file, the tensor and the byte range, never later as a crash or a silently wrong array.
Tensor data is never read whole: ``get`` returns a NumPy view of a read-only memory map.
"""

from __future__ import annotations

import json
import math
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["SafeTensorsError", "SafeTensorsFile", "TensorInfo", "DTYPES"]

#: the format's dtype names and the NumPy dtypes they load as
DTYPES: dict[str, np.dtype[Any]] = {
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "I64": np.dtype(np.int64),
    "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U8": np.dtype(np.uint8),
    "BOOL": np.dtype(np.bool_),
}
NAME_OF_DTYPE = {v: k for k, v in DTYPES.items()}

#: the format caps the header at 100 MB; a larger length means a corrupt or foreign file
MAX_HEADER_BYTES = 100_000_000


class SafeTensorsError(ValueError):
    """A .safetensors file (or shard index) breaks the format or disagrees with itself."""


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives: dtype name, shape and absolute byte range in the file."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int  # absolute file offset of the first byte
    end: int  # absolute file offset one past the last byte

    @property
    def nbytes(self) -> int:
        return self.end - self.start

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        return DTYPES[self.dtype]


def _fail(path: Path, message: str) -> SafeTensorsError:
    return SafeTensorsError(f"{path}: {message}")


def _read_header(path: Path, file_size: int) -> tuple[dict[str, Any], int]:
    """The parsed JSON header and the file offset where the byte buffer starts."""
    if file_size < 8:
        raise _fail(path, f"file is {file_size} bytes, too short for the 8-byte header length")
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        if n > MAX_HEADER_BYTES:
            raise _fail(path, f"header length {n} is over the format's limit of 100 MB")
        if 8 + n > file_size:
            raise _fail(
                path,
                f"header claims bytes [8, {8 + n}) but the file has only {file_size} bytes "
                "(truncated file?)",
            )
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"header bytes [8, {8 + n}) are not valid UTF-8 JSON: {exc}") from None
    if not isinstance(header, dict):
        raise _fail(path, f"header must be a JSON object, got {type(header).__name__}")
    return header, 8 + n


def _parse_entry(path: Path, name: str, entry: Any, base: int) -> TensorInfo:
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise _fail(path, f"tensor {name!r}: entry must have exactly dtype, shape, data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in DTYPES:
        raise _fail(path, f"tensor {name!r}: unknown dtype {dtype!r} (known: {', '.join(DTYPES)})")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise _fail(path, f"tensor {name!r}: shape must be a list of ints >= 0, got {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise _fail(
            path,
            f"tensor {name!r}: data_offsets must be [begin, end] with 0 <= begin "
            f"<= end, got {offsets!r}",
        )
    begin, end = offsets
    want = math.prod(shape) * DTYPES[dtype].itemsize
    if end - begin != want:
        raise _fail(
            path,
            f"tensor {name!r}: {dtype} {tuple(shape)} needs {want} bytes but its byte range "
            f"[{base + begin}, {base + end}) holds {end - begin}",
        )
    return TensorInfo(name, dtype, tuple(shape), base + begin, base + end)


class SafeTensorsFile:
    """One .safetensors file, opened read-only; tensors are NumPy views of a memory map.

    >>> st = SafeTensorsFile("model.safetensors")     # doctest: +SKIP
    >>> st.tensor_names[:2], st.num_tensors, st.file_size  # doctest: +SKIP
    >>> w = st.get("model.embed_tokens.weight")         # no copy: a view of the map
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such safetensors file")
        self.file_size = self.path.stat().st_size
        header, base = _read_header(self.path, self.file_size)
        meta = header.pop("__metadata__", None) or {}
        if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
        ):
            raise _fail(self.path, "__metadata__ must map strings to strings")
        self.metadata: dict[str, str] = meta
        self._infos = {n: _parse_entry(self.path, n, e, base) for n, e in header.items()}
        self._check_layout(base)
        self._map: mmap.mmap | None = None

    def _check_layout(self, base: int) -> None:
        """Byte ranges must tile the buffer exactly, in order, and end at the file's end."""
        cursor = base
        for info in sorted(self._infos.values(), key=lambda i: (i.start, i.end)):
            if info.start != cursor:
                kind = (
                    "overlaps the one before" if info.start < cursor else "leaves a gap before it"
                )
                raise _fail(
                    self.path,
                    f"tensor {info.name!r}: byte range [{info.start}, {info.end}) {kind} "
                    f"(expected it to start at {cursor})",
                )
            if info.end > self.file_size:
                raise _fail(
                    self.path,
                    f"tensor {info.name!r}: byte range [{info.start}, {info.end}) runs past the "
                    f"end of the file ({self.file_size} bytes; truncated file?)",
                )
            cursor = info.end
        if cursor != self.file_size:
            raise _fail(
                self.path,
                f"{self.file_size - cursor} bytes after the last tensor (byte range "
                f"[{cursor}, {self.file_size})) belong to no tensor",
            )

    # -- the seed API ------------------------------------------------------------------
    @property
    def tensor_names(self) -> list[str]:
        return list(self._infos)

    @property
    def num_tensors(self) -> int:
        return len(self._infos)

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def __iter__(self) -> Iterator[str]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)

    def info(self, name: str) -> TensorInfo:
        """Dtype, shape and byte range of tensor `name` (KeyError names the file)."""
        try:
            return self._infos[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor named {name!r}") from None

    def get(self, name: str) -> np.ndarray:
        """Tensor `name` as a read-only NumPy view of the memory-mapped file (no copy)."""
        info = self.info(name)
        if info.nbytes == 0:
            return np.empty(info.shape, dtype=info.numpy_dtype)
        if self._map is None:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            if len(self._map) != self.file_size:  # the file changed since the header check
                size = len(self._map)
                self.close()
                raise _fail(self.path, f"file size changed from {self.file_size} to {size} bytes")
        count = math.prod(info.shape)
        arr = np.frombuffer(self._map, dtype=info.numpy_dtype, count=count, offset=info.start)
        return arr.reshape(info.shape)

    def close(self) -> None:
        """Drop the memory map (views handed out keep it alive until they are freed)."""
        self._map = None

    def __enter__(self) -> SafeTensorsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        size = f"{self.num_tensors} tensors, {self.file_size} bytes"
        return f"SafeTensorsFile({str(self.path)!r}, {size})"


def save_file(
    tensors: dict[str, np.ndarray],
    path: str | os.PathLike[str],
    metadata: dict[str, str] | None = None,
) -> None:
    """Write NumPy arrays as a .safetensors file (tests and conversions use it)."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    arrays = []
    for name, value in tensors.items():
        arr = np.ascontiguousarray(value)
        if arr.dtype not in NAME_OF_DTYPE:
            raise TypeError(f"save_file: tensor {name!r} has dtype {arr.dtype}, not a format dtype")
        header[name] = {
            "dtype": NAME_OF_DTYPE[arr.dtype],
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + arr.nbytes],
        }
        offset += arr.nbytes
        arrays.append(arr)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # keep the buffer 8-byte aligned, as the format advises
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        for arr in arrays:
            f.write(arr.tobytes())
