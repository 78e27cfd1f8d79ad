"""Compile a Triton program for one GPU architecture and read what our launcher needs from
the result: the CUBIN, the kernel's name, its dynamic shared memory and warps, and the
exact parameter list (from the PTX entry, so the scratch pointers recent Triton versions
append after the user's arguments are counted, whatever the version).

Compiling needs no GPU (Triton ships ptxas), so this runs in CPU tests too.
"""

from __future__ import annotations

import functools
import re
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .availability import require

#: PTX parameter types -> struct codes (native alignment, as the CUDA ABI lays them out)
_PTX_CODES = {
    "u64": "Q", "b64": "Q", "s64": "q", "u32": "I", "b32": "I", "s32": "i", "f32": "f",
    "f64": "d", "u16": "H", "b16": "H", "s16": "h", "u8": "B", "b8": "B", "s8": "b",
}  # fmt: skip
_PARAM = re.compile(r"\.param\s+\.(\w+)(?:\s+\.ptr\s+\.\w+\s+\.align\s+\d+)?\s+(\w+)")


@dataclass(frozen=True)
class Compiled:
    """One compiled kernel, ready to load: what `pygpukit_cuda.cubin` needs."""

    name: str
    cubin: bytes
    shared: int
    num_warps: int
    #: struct codes of every kernel parameter, in order (ours first, then Triton's own)
    param_codes: tuple[str, ...]
    #: how many trailing parameters Triton added (global / profile scratch pointers)
    trailing: int
    #: bytes of global scratch each program uses (tensor descriptors), and their alignment
    global_scratch: int
    scratch_align: int = 1

    @property
    def arg_format(self) -> str:
        return "@" + "".join(self.param_codes)

    def offsets(self) -> list[int]:
        """Byte offset of each parameter in the packed buffer."""
        fmt, out = "@", []
        for code in self.param_codes:
            out.append(struct.calcsize(fmt + code) - struct.calcsize(code))
            fmt += code
        return out


def ptx_params(ptx: str, name: str) -> list[str]:
    """The PTX types of the parameters of entry `name`, in order."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    if m is None:
        raise ValueError(f"the PTX has no entry {name!r}")
    return [t for t, _ in _PARAM.findall(m.group(1))]


_lock = threading.Lock()
_compiled: dict[Any, Compiled] = {}


def compile_program(fn: Any, signature: Mapping[str, str], constexprs: Mapping[str, Any],
                    aligned: tuple[int, ...], arch: int, num_warps: int,
                    num_stages: int) -> Compiled:  # fmt: skip
    """Compile Triton function `fn` for sm_`arch` (cached in memory here; on disk by Triton).

    `signature` maps every parameter name to its Triton type (``*fp32``, ``i32``, ...) or
    ``constexpr``; `aligned` lists the indices of pointer parameters whose address is a
    multiple of 16 (Triton vectorises loads through them)."""
    key = (fn, tuple(signature.items()), tuple(constexprs.items()), aligned, arch, num_warps,
           num_stages)  # fmt: skip
    found = _compiled.get(key)
    if found is not None:
        return found
    triton = require()
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    attrs = {(i,): [["tt.divisibility", 16]] for i in aligned}
    src = ASTSource(fn, dict(signature), dict(constexprs), attrs)
    options = {"num_warps": num_warps, "num_stages": num_stages, "enable_fp_fusion": True}
    kernel = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)
    md = kernel.metadata
    if getattr(md, "num_ctas", 1) != 1:
        raise NotImplementedError(
            f"{md.name}: kernels of several CTAs (clusters) are not supported"
        )
    types = ptx_params(kernel.asm["ptx"], md.name)
    ours = sum(1 for t in signature.values() if t != "constexpr")
    trailing = len(types) - ours
    if trailing < 0 or any(t not in ("u64", "b64") for t in types[ours:]):
        raise RuntimeError(
            f"{md.name}: Triton {triton.__version__} compiled {len(types)} parameters for "
            f"{ours} arguments; this launcher does not know that layout"
        )
    out = Compiled(
        name=md.name,
        cubin=bytes(kernel.asm["cubin"]),
        shared=int(md.shared),
        num_warps=int(md.num_warps),
        param_codes=tuple(_PTX_CODES[t] for t in types),
        trailing=trailing,
        global_scratch=int(getattr(md, "global_scratch_size", 0) or 0),
        scratch_align=int(getattr(md, "global_scratch_align", 1) or 1),
    )
    with _lock:
        _compiled.setdefault(key, out)
    return out


@functools.cache
def triton_type(dtype_name: str) -> str:
    """The Triton pointer-element type name of one of our dtypes (``float32`` -> ``fp32``)."""
    names = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
             "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
             "bool": "i1"}  # fmt: skip
    if dtype_name not in names:
        raise TypeError(f"the triton backend has no kernels for {dtype_name}")
    return names[dtype_name]
