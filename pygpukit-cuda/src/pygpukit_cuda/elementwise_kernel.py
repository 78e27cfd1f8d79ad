"""`gp.ElementwiseKernel`: one CUDA C statement run for every element of broadcast arrays.

    squared_diff = gp.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqdiff")
    z = squared_diff(x, y)          # output allocated with the broadcast shape
    squared_diff(x, 2.0, z)         # or written into a given array

Parameters are ``TYPE NAME``: TYPE is a dtype name (``float32``) or a placeholder (any other
identifier, e.g. ``T``) that takes the dtype of the first array passed for it. In the
operation each name is that element's value (outputs are assigned); ``raw`` parameters are
typed pointers indexed by hand, ``i`` is the element's flat index and ``n`` the element
count. float16/bfloat16 values are computed in float (their raw pointers see the 16-bit
storage). Inputs may be views of any strides and broadcast against each other; a Python
scalar is passed by value. One kernel is compiled per combination of dtypes and scalar
positions and cached like every other kernel.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import launcher, streams
from .device_choice import require_gpu
from .dims import merge_dims
from .kernels.ctypes_table import ctype
from .kernels.preamble import MAX_DIMS, PREAMBLE
from .provider import scalar_for

_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
DTYPES_BY_NAME = {d.name: d for d in dt.ALL_DTYPES}
#: names the generated kernel defines itself
RESERVED = frozenset({"i", "n"})
#: most blocks a launch asks for; the kernel's grid-stride loop covers the rest
MAX_BLOCKS = 1 << 16


@dataclass(frozen=True)
class EwParam:
    name: str
    type: str
    raw: bool
    output: bool

    @property
    def dtype(self) -> dt.DataType | None:
        """The fixed dtype, or None for a placeholder."""
        return DTYPES_BY_NAME.get(self.type)


def parse_params(text: str, output: bool) -> list[EwParam]:
    params = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        words = item.split()
        raw = words[0] == "raw"
        if raw:
            words = words[1:]
        if len(words) != 2 or not all(_IDENT.match(w) for w in words):
            raise ValueError(
                f"ElementwiseKernel: cannot read parameter {item!r}; write 'TYPE NAME' or "
                "'raw TYPE NAME', TYPE a dtype name such as float32 or a placeholder such as T"
            )
        params.append(EwParam(words[1], words[0], raw, output))
    return params


class ElementwiseKernel:
    """A user elementwise operation, compiled on first use per dtype combination."""

    def __init__(
        self,
        in_params: str,
        out_params: str,
        operation: str,
        name: str = "kernel",
        *,
        preamble: str = "",
        options: tuple[str, ...] | list[str] = (),
        block: int = 256,
    ) -> None:
        if not _IDENT.match(name):
            raise ValueError(f"ElementwiseKernel: name {name!r} is not a C identifier")
        self.inputs = parse_params(in_params, output=False)
        self.outputs = parse_params(out_params, output=True)
        if not self.outputs:
            raise ValueError("ElementwiseKernel: out_params names no output")
        names = [p.name for p in self.inputs + self.outputs]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"ElementwiseKernel: parameter name(s) used twice: {dup}")
        taken = sorted(RESERVED.intersection(names))
        if taken:
            raise ValueError(f"ElementwiseKernel: {taken} are defined by the kernel itself")
        for p in self.outputs:
            if p.raw:
                raise ValueError(f"ElementwiseKernel: output {p.name!r} cannot be raw")
        self.operation = operation
        self.name = name
        self.preamble = preamble
        self.options = tuple(options)
        self.block = block
        self._sources: dict[tuple[Any, ...], tuple[str, str, str]] = {}

    @property
    def nin(self) -> int:
        return len(self.inputs)

    @property
    def nout(self) -> int:
        return len(self.outputs)

    def __call__(self, *args: Any, size: int | None = None, stream: Any = None) -> Any:
        if len(args) not in (self.nin, self.nin + self.nout):
            raise TypeError(
                f"{self.name}() takes {self.nin} inputs (and optionally {self.nout} outputs), "
                f"got {len(args)} arguments"
            )
        ins, outs = list(args[: self.nin]), list(args[self.nin :])
        device = self._device_of(ins + outs)
        types = self._bind_types(ins, outs)
        shape = self._shape(ins, outs, size)
        if not outs:
            from pygpukit import empty

            outs = [empty(shape, dtype=types[p.type], device=device) for p in self.outputs]
        elif any(o.shape != shape for o in outs):
            raise ValueError(
                f"{self.name}(): outputs have shapes {[o.shape for o in outs]}; they must "
                "all have one shape"
            )
        n = math.prod(shape)
        if n:
            self._launch(ins, outs, types, shape, n, device.index, stream)
        return outs[0] if self.nout == 1 else tuple(outs)

    # -- checking the arguments ------------------------------------------------------------
    def _device_of(self, values: list[Any]) -> Any:
        devices = {v.device for v in values if isinstance(v, GPUArray)}
        if len(devices) > 1:
            raise ValueError(
                f"{self.name}(): arrays are on different devices {sorted(map(str, devices))}"
            )
        if not devices:
            from pygpukit import Device

            return Device("cuda", require_gpu(f"{self.name}()"))
        (device,) = devices
        if device.type != "cuda":
            raise ValueError(
                f"{self.name}(): arrays are on {device}; ElementwiseKernel runs on cuda devices "
                "(move them with gp.asarray(x, device='cuda'))"
            )
        return device

    def _bind_types(self, ins: list[Any], outs: list[Any]) -> dict[str, dt.DataType]:
        bound: dict[str, dt.DataType] = {}
        pairs = list(zip(self.inputs, ins, strict=True)) + list(
            zip(self.outputs, outs, strict=False)
        )
        for p, v in pairs:
            if isinstance(v, GPUArray):
                want = p.dtype or bound.setdefault(p.type, v.dtype)
                if v.dtype != want:
                    raise TypeError(
                        f"{self.name}(): {p.name!r} is {v.dtype.name}, but its type {p.type} "
                        f"is {want.name} here; convert with .astype({want.name})"
                    )
            elif p.raw or p.output:
                raise TypeError(
                    f"{self.name}(): {p.name!r} must be a GPUArray, not {type(v).__name__}"
                )
            elif isinstance(v, np.ndarray | list | tuple):
                raise TypeError(
                    f"{self.name}(): {p.name!r} is a host {type(v).__name__}; pass a GPUArray "
                    "(gp.asarray(x, device='cuda')) or a scalar"
                )
            elif not isinstance(v, bool | int | float | np.generic):
                raise TypeError(f"{self.name}(): {p.name!r} = {v!r} is not an array or a scalar")
        for p, v in pairs:  # scalars fix what no array fixed, as NumPy's default types do
            if not isinstance(v, GPUArray) and p.dtype is None and p.type not in bound:
                bound[p.type] = dt.as_dtype(np.asarray(v).dtype)
        for p in self.outputs:
            if p.dtype is None and p.type not in bound:
                raise TypeError(f"{self.name}(): cannot tell the dtype of output {p.name!r} "
                                f"(type {p.type}); pass the output array")  # fmt: skip
        return {**bound, **{p.type: p.dtype for p in self.inputs + self.outputs if p.dtype}}

    def _shape(self, ins: list[Any], outs: list[Any], size: int | None) -> tuple[int, ...]:
        arrays = [
            v
            for p, v in zip(self.inputs, ins, strict=True)
            if isinstance(v, GPUArray) and not p.raw
        ]
        if outs:
            shape = tuple(outs[0].shape)
            for a in arrays:
                try:
                    fits = np.broadcast_shapes(a.shape, shape) == shape
                except ValueError:
                    fits = False
                if not fits:
                    raise ValueError(
                        f"{self.name}(): an input of shape {a.shape} cannot broadcast to the "
                        f"output shape {shape}"
                    )
            return shape
        if arrays:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
            if size is not None and size != math.prod(shape):
                raise ValueError(f"{self.name}(): size={size}, but the arrays have shape {shape}")
            return shape
        if size is None:
            raise TypeError(f"{self.name}(): no elementwise array argument; pass size=")
        return (int(size),)

    # -- the kernel ------------------------------------------------------------------------
    def _launch(self, ins: list[Any], outs: list[Any], types: dict[str, dt.DataType],
                shape: tuple[int, ...], n: int, index: int, stream: Any) -> None:  # fmt: skip
        params = self.inputs + self.outputs
        values = ins + outs
        strided = [v.broadcast_to(shape) if v.shape != shape else v
                   for p, v in zip(params, values, strict=True)
                   if isinstance(v, GPUArray) and not p.raw]  # fmt: skip
        dims = merge_dims(shape, [a.strides for a in strided])
        if len(dims) > MAX_DIMS:
            raise NotImplementedError(
                f"{self.name}(): {len(dims)} dimensions that cannot be merged (at most "
                f"{MAX_DIMS}); make the arrays contiguous first"
            )
        scalar_at = tuple(not isinstance(v, GPUArray) for v in values)
        kname, source, fmt = self.kernel_source(types, scalar_at)
        args: list[Any] = []
        for p, v in zip(params, values, strict=True):
            if isinstance(v, GPUArray):
                args.append(v.buffer.ptr + v.offset)
            else:
                args.append(scalar_for(types[p.type], v))
        sizes = [s for s, _ in dims] + [1] * (MAX_DIMS - len(dims))
        pad = [0] * (MAX_DIMS - len(dims))
        rows = [[st[k] for _, st in dims] + pad for k in range(len(strided))] or [[0] * MAX_DIMS]
        args += [n, len(dims), *sizes, *(x for row in rows for x in row)]
        fn = launcher.function(index, kname, source, fmt, self.options)
        grid = min(-(-n // self.block), MAX_BLOCKS)
        handle = None if stream is None else int(getattr(stream, "handle", stream))
        if handle is None:
            handle = streams.current_handle(index)
        fn.launch((grid,), (self.block,), tuple(args), 0, handle)

    def kernel_source(
        self, types: dict[str, dt.DataType], scalar_at: tuple[bool, ...] | None = None
    ) -> tuple[str, str, str]:
        """(kernel name, CUDA C source, argument struct format) for placeholder and fixed
        `types` by type name, with scalars at the parameters `scalar_at` marks (none by
        default); generated once per combination."""
        params = self.inputs + self.outputs
        types = {**types, **{p.type: p.dtype for p in params if p.dtype is not None}}
        scalar_at = scalar_at or (False,) * len(params)
        key = (tuple(types.get(p.type) for p in params), scalar_at)
        found = self._sources.get(key)
        if found is not None:
            return found
        decl, fmt, loads, stores = [], "@", [], []
        k = 0
        for p, is_scalar in zip(params, scalar_at, strict=True):
            c = ctype(types[p.type])
            if is_scalar:
                decl.append(f"const {c.math} {p.name}")
                fmt += c.scalar_fmt
            elif p.raw:
                const = "" if p.output else "const "
                decl.append(f"{const}{c.storage}* __restrict__ {p.name}")
                fmt += "Q"
            else:
                decl.append(f"char* __restrict__ _pgk_p{k}")
                fmt += "Q"
                at = f"_pgk_p{k} + _pgk_off[{k}]"
                if not p.output:
                    loads.append(f"const {c.math} {p.name} = pgk_ld_{c.name}({at});")
                else:
                    reads = _reads_output(self.operation, p.name)
                    init = f" = pgk_ld_{c.name}({at})" if reads else ""
                    loads.append(f"{c.math} {p.name}{init};")
                    stores.append(f"pgk_st_{c.name}({at}, {p.name});")
                k += 1
        nops = max(k, 1)
        fmt += "qq" + "q" * (MAX_DIMS * (1 + nops))
        placeholders = sorted({p.type for p in params if p.dtype is None})
        typedefs = "".join(f"  typedef {ctype(types[t]).math} {t};\n" for t in placeholders)
        kname = f"pgk_ew_{self.name}_{len(self._sources)}"
        source = f"""{PREAMBLE}
{self.preamble}
struct {kname}_layout {{ long long shape[{MAX_DIMS}]; long long st[{nops}][{MAX_DIMS}]; }};
extern "C" __global__ void {kname}({", ".join(decl)}, const long long n,
    const long long _pgk_nd, const {kname}_layout _pgk_L) {{
{typedefs}  PGK_GRID_LOOP(i, n) {{
    long long _pgk_off[{nops}];
    if (_pgk_nd <= 1) {{
      for (int k = 0; k < {nops}; ++k) _pgk_off[k] = i * _pgk_L.st[k][0];
    }} else {{
      long long rem = i;
      for (int k = 0; k < {nops}; ++k) _pgk_off[k] = 0;
      // unrolled over every possible axis, so each reads the layout at a constant index:
      // a dynamic index makes each thread copy the whole layout struct to local memory
      // first (128+ bytes a thread, more traffic than a small op's own data)
      #pragma unroll
      for (int d = {MAX_DIMS} - 1; d >= 0; --d) {{
        if (d < _pgk_nd) {{
          const long long c = rem % _pgk_L.shape[d];
          rem /= _pgk_L.shape[d];
          for (int k = 0; k < {nops}; ++k) _pgk_off[k] += c * _pgk_L.st[k][d];
        }}
      }}
    }}
    {" ".join(loads)}
    {{
{self.operation};
    }}
    {" ".join(stores)}
  }}
}}
"""
        entry = (kname, source, fmt)
        self._sources[key] = entry
        return entry

    def __repr__(self) -> str:
        sig = lambda ps: ", ".join(("raw " if p.raw else "") + f"{p.type} {p.name}" for p in ps)  # noqa: E731
        return f"<ElementwiseKernel {self.name}({sig(self.inputs)}) -> ({sig(self.outputs)})>"


def _reads_output(operation: str, name: str) -> bool:
    """Whether `operation` may read output `name` before writing it: any use other than as
    the target of a plain assignment (``name = ...``) counts."""
    uses = len(re.findall(rf"\b{name}\b", operation))
    plain = len(re.findall(rf"\b{name}\s*=(?!=)", operation))
    return uses != plain
