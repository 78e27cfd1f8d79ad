"""`pygpukit.jit`: compile a CUDA C kernel from a string and call it like a function.

    kernel = gp.jit(src, func="scale")
    kernel(x, factor=0.5, n=x.size)

The parameter list is read from the source (or given as `param_types`), so arguments are
checked and converted before anything is launched: GPUArrays become device pointers, Python
and NumPy scalars become the parameter's C type. Keyword arguments map to parameter names.
The grid comes from `grid=`, else from `size=`, a parameter named n/size/count/numel, or the
largest array argument, with `block=` threads per block (256 by default). A grid, block or
`shared_mem=` over the device's or the kernel's limits raises ValueError before launch;
more than 48 KB of dynamic shared memory is opted in to (up to the device's maximum).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import launch_limits, launcher
from .device_choice import require_gpu
from .launch_limits import normalize_dims

#: C scalar type -> struct code (native alignment)
SCALAR_CODES = {
    "bool": "?", "char": "b", "signed char": "b", "int8_t": "b", "unsigned char": "B",
    "uint8_t": "B", "short": "h", "int16_t": "h", "unsigned short": "H", "uint16_t": "H",
    "int": "i", "signed": "i", "signed int": "i", "int32_t": "i", "unsigned": "I",
    "unsigned int": "I", "uint32_t": "I", "long": "q", "long long": "q", "int64_t": "q",
    "long int": "q", "long long int": "q", "ptrdiff_t": "q", "unsigned long": "Q",
    "unsigned long long": "Q", "uint64_t": "Q", "size_t": "Q", "float": "f", "double": "d",
    "half": "e", "__half": "e",
}  # fmt: skip

#: pointee C type -> the array dtypes such a pointer may point at (absent: any)
POINTEE_DTYPES = {
    "float": (dt.float32,), "double": (dt.float64,), "int": (dt.int32,),
    "int32_t": (dt.int32,), "long long": (dt.int64,), "int64_t": (dt.int64,),
    "long": (dt.int64,), "short": (dt.int16,), "int16_t": (dt.int16,),
    "char": (dt.int8, dt.uint8, dt.bool_), "signed char": (dt.int8,), "int8_t": (dt.int8,),
    "unsigned char": (dt.uint8, dt.bool_), "uint8_t": (dt.uint8, dt.bool_),
    "bool": (dt.bool_,), "half": (dt.float16,), "__half": (dt.float16,),
    "__nv_bfloat16": (dt.bfloat16,), "nv_bfloat16": (dt.bfloat16,),
    "unsigned short": (dt.float16, dt.bfloat16), "uint16_t": (dt.float16, dt.bfloat16),
}  # fmt: skip

#: parameter names taken as the element count when no grid or size is given
COUNT_NAMES = ("n", "N", "size", "count", "numel", "num_elements", "length")
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str
    pointer: bool

    @property
    def code(self) -> str:
        return "Q" if self.pointer else SCALAR_CODES[self.ctype]


def parse_params(source: str, func: str) -> list[Param]:
    """The parameters of `__global__ ... func(...)` in `source`."""
    for m in re.finditer(rf"\b{re.escape(func)}\s*\(", source):
        if "__global__" not in source[max(0, m.start() - 300) : m.start()]:
            continue
        depth, i = 1, m.end()
        while i < len(source) and depth:
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        text = source[m.end() : i - 1].strip()
        if not text or text == "void":
            return []
        return [_parse_param(p.strip(), func) for p in text.split(",")]
    raise ValueError(f"no __global__ function named {func!r} in the source")


def _parse_param(text: str, func: str) -> Param:
    clean = " ".join(_QUALIFIERS.sub(" ", text).split())
    pointer = "*" in clean or "[" in clean
    clean = clean.replace("*", " * ").replace("[", " [").split("[")[0]
    words = [w for w in clean.split() if w != "*"]
    if len(words) < 2:
        raise ValueError(f"{func}: cannot read parameter {text!r}: name it and give its type")
    ctype, name = " ".join(words[:-1]), words[-1]
    if not pointer and ctype not in SCALAR_CODES:
        raise ValueError(
            f"{func}: parameter {name!r} has type {ctype!r}, which jit cannot pass; "
            f"use a pointer or one of: {', '.join(sorted(SCALAR_CODES))} "
            "(or give param_types=)"
        )
    return Param(name, ctype, pointer)


class JitKernel:
    """A compiled user kernel; call it with the kernel's arguments to launch it."""

    def __init__(
        self,
        source: str,
        func: str,
        options: tuple[str, ...] = (),
        param_types: list[str] | None = None,
        block: int = 256,
    ) -> None:
        self.source = source
        self.func = func
        self.options = tuple(options)
        if param_types is not None:
            self.params = [_parse_param(f"{t} __p{i}", func) for i, t in enumerate(param_types)]
        else:
            self.params = parse_params(source, func)
        self.block = block
        self.arg_format = "@" + "".join(p.code for p in self.params)
        self._names = {p.name: i for i, p in enumerate(self.params)}

    def compile(self, device_index: int = 0) -> launcher.Function:
        """Compile and load for one device (done by the first call there)."""
        return launcher.function(
            device_index, self.func, self.source, self.arg_format, self.options
        )

    def __call__(
        self,
        *args: Any,
        grid: Any = None,
        block: Any = None,
        shared_mem: int = 0,
        stream: Any = None,
        size: int | None = None,
        **kwargs: Any,
    ) -> None:
        bound = self._bind(args, kwargs)
        values, device_index, largest = self._convert(bound)
        block_dims = normalize_dims(block if block is not None else self.block, "block")
        if grid is None:
            count = int(size) if size is not None else self._count(bound, largest)
            grid_dims = (max(1, -(-count // block_dims[0])), 1, 1)
        else:
            grid_dims = normalize_dims(grid, "grid")
        # no stream given: the current one (gp.cuda.Stream), as for every built-in kernel
        handle = None if stream is None else int(getattr(stream, "handle", stream))
        fn = self.compile(device_index)
        # over-limit configurations raise ValueError here; > 48 KB of shared memory opts in
        launch_limits.prepare(fn, grid_dims, block_dims, shared_mem)
        fn.launch(grid_dims, block_dims, tuple(values), int(shared_mem), handle)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        n = len(self.params)
        if len(args) > n:
            raise TypeError(f"{self.func}() takes {n} arguments but {len(args)} were given")
        bound: list[Any] = list(args) + [_MISSING] * (n - len(args))
        for key, value in kwargs.items():
            i = self._names.get(key)
            if i is None:
                raise TypeError(
                    f"{self.func}() has no parameter {key!r}; its parameters are "
                    f"{', '.join(p.name for p in self.params) or 'none'}"
                )
            if bound[i] is not _MISSING:
                raise TypeError(f"{self.func}() got two values for parameter {key!r}")
            bound[i] = value
        missing = [p.name for p, v in zip(self.params, bound, strict=True) if v is _MISSING]
        if missing:
            raise TypeError(f"{self.func}() is missing argument(s): {', '.join(missing)}")
        return bound

    def _convert(self, bound: list[Any]) -> tuple[list[Any], int, int]:
        values: list[Any] = []
        device_index: int | None = None
        largest = 0
        for p, v in zip(self.params, bound, strict=True):
            if p.pointer:
                ptr, index = _pointer(self.func, p, v)
                if index is not None:
                    if device_index is not None and index != device_index:
                        raise ValueError(f"{self.func}(): arrays are on different GPUs")
                    device_index = index
                    largest = max(largest, v.size)
                values.append(ptr)
            else:
                values.append(_scalar(self.func, p, v))
        return values, device_index or 0, largest

    def _count(self, bound: list[Any], largest: int) -> int:
        for name in COUNT_NAMES:
            i = self._names.get(name)
            if i is not None and not self.params[i].pointer:
                return int(bound[i])
        if largest:
            return largest
        raise TypeError(
            f"{self.func}(): cannot tell how many threads to launch; pass grid= (and block=) "
            "or size="
        )

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.ctype}{'*' if p.pointer else ''} {p.name}" for p in self.params)
        return f"<JitKernel {self.func}({sig})>"


_MISSING = object()


def _pointer(func: str, p: Param, v: Any) -> tuple[int, int | None]:
    if isinstance(v, GPUArray):
        if v.device.type != "cuda":
            raise TypeError(
                f"{func}(): argument {p.name!r} is on {v.device}; kernels need arrays on a "
                "cuda device (move it with .to_device('cuda'))"
            )
        allowed = POINTEE_DTYPES.get(p.ctype)
        if allowed is not None and v.dtype not in allowed:
            raise TypeError(
                f"{func}(): argument {p.name!r} is {p.ctype}* but the array is "
                f"{v.dtype.name}; pass a {'/'.join(d.name for d in allowed)} array or cast it"
            )
        if not v.is_contiguous:
            raise ValueError(
                f"{func}(): argument {p.name!r} is a strided view; kernels get a flat "
                "pointer, so pass x.contiguous() (and copy results back)"
            )
        return v.buffer.ptr + v.offset, v.device.index
    if v is None:
        return 0, None
    raise TypeError(f"{func}(): argument {p.name!r} is {p.ctype}*: pass a GPUArray, "
                    f"not {type(v).__name__}")  # fmt: skip


def _scalar(func: str, p: Param, v: Any) -> Any:
    code = p.code
    if isinstance(v, (GPUArray, str, bytes)) or v is None:
        raise TypeError(f"{func}(): argument {p.name!r} is a {p.ctype}, "
                        f"not a {type(v).__name__}")  # fmt: skip
    if isinstance(v, np.generic):
        v = v.item()
    if code in "fde":
        if not isinstance(v, (int, float)):
            raise TypeError(f"{func}(): argument {p.name!r} ({p.ctype}) wants a number, "
                            f"got {type(v).__name__}")  # fmt: skip
        return float(v)
    if code == "?":
        return bool(v)
    if isinstance(v, float) or not isinstance(v, int):
        raise TypeError(f"{func}(): argument {p.name!r} is a {p.ctype}: pass an int, "
                        f"not {type(v).__name__} {v!r}")  # fmt: skip
    bits = {"b": 8, "B": 8, "h": 16, "H": 16, "i": 32, "I": 32, "q": 64, "Q": 64}[code]
    lo, hi = (0, 2**bits - 1) if code.isupper() else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= v <= hi:
        raise OverflowError(f"{func}(): argument {p.name!r} = {v} does not fit a {p.ctype}")
    return int(v)


def jit(
    source: str,
    func: str,
    *,
    options: tuple[str, ...] | list[str] = (),
    param_types: list[str] | None = None,
    block: int = 256,
    device: Any = None,
) -> JitKernel:
    """Compile `func` from the CUDA C `source` (declare it ``extern "C" __global__``).

    Compiles now for `device` (default: the first GPU), so source errors raise here with
    NVRTC's log and the offending line. `param_types` (C type strings) replaces the
    parameter list read from the source; `options` are extra NVRTC options.
    """
    if not isinstance(source, str) or not isinstance(func, str):
        raise TypeError("jit(source, func=...) wants the CUDA C source and the kernel's name")
    kernel = JitKernel(source, func, tuple(options), param_types, block)
    index = require_gpu("gp.jit", device)
    kernel.compile(index)
    return kernel
