"""Each PyGPUkit dtype as CUDA C sees it: storage type, math type, and conversion snippets.

Half and 8-bit float types are stored as raw bits and computed in float, like GPUs do. The
expressions returned here are C fragments; `preamble.PREAMBLE` defines the helpers they call.
"""

from __future__ import annotations

from dataclasses import dataclass

from pygpukit.core import dtypes as dt


@dataclass(frozen=True)
class CType:
    dtype: dt.DataType
    #: the dtype's number in kernels' runtime dtype switches (its index in ALL_DTYPES)
    code: int
    storage: str
    math: str
    #: struct-module code of a scalar kernel argument of the math type
    scalar_fmt: str

    @property
    def name(self) -> str:
        return self.dtype.name

    @property
    def is_float_math(self) -> bool:
        return self.math in ("float", "double")

    @property
    def is_bool(self) -> bool:
        return self.dtype.kind == "b"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind in "if"

    @property
    def bits(self) -> int:
        return self.dtype.itemsize * 8


_TABLE = {
    "bool": ("unsigned char", "bool", "?"),
    "int8": ("signed char", "signed char", "b"),
    "uint8": ("unsigned char", "unsigned char", "B"),
    "int16": ("short", "short", "h"),
    "int32": ("int", "int", "i"),
    "int64": ("long long", "long long", "q"),
    "float16": ("unsigned short", "float", "f"),
    "bfloat16": ("unsigned short", "float", "f"),
    "float32": ("float", "float", "f"),
    "float64": ("double", "double", "d"),
    "float8_e4m3fn": ("unsigned char", "float", "f"),
    "float8_e5m2": ("unsigned char", "float", "f"),
}

CTYPES: dict[dt.DataType, CType] = {
    d: CType(d, i, *_TABLE[d.name]) for i, d in enumerate(dt.ALL_DTYPES)
}


def ctype(dtype: dt.DataType) -> CType:
    return CTYPES[dtype]


def load(dtype: dt.DataType, ptr: str) -> str:
    """C expression: the element at byte pointer `ptr`, as the dtype's math type."""
    return f"pgk_ld_{dtype.name}({ptr})"


def store(dtype: dt.DataType, ptr: str, value: str) -> str:
    """C statement: store `value` (already of the dtype's math type) at `ptr`."""
    return f"pgk_st_{dtype.name}({ptr}, {value});"


def convert(value: str, src: dt.DataType, dst: dt.DataType) -> str:
    """C expression: `value` (src's math type) as dst's math type, with NumPy's rules."""
    s, d = ctype(src), ctype(dst)
    if s.math == d.math and not (src is dt.float64 and dst is dt.float16):
        return value
    if d.is_bool:
        return f"(({value}) != 0)"
    if not d.is_float_math:
        # float to int truncates toward zero; wider ints wrap like NumPy's casts
        return f"(({d.math})(long long)({value}))" if s.is_float_math else f"(({d.math})({value}))"
    if src is dt.float64 and dst is dt.float16:
        return f"pgk_d2f_odd({value})"  # round once, not twice, on the way to half
    return f"(({d.math})({value}))"


def load_any(dst: dt.DataType) -> str:
    """A C function `pgk_load_as_<dst>(p, code)` reading an element of any dtype (given by
    its code) as dst's math type. An element of dst's own dtype is read inline; any other
    goes through the out-of-line readers of the preamble, so each instance stays small
    (compile time) while the common same-dtype case stays fast."""
    d = ctype(dst)
    direct = load(dst, "p")
    if d.is_bool:
        other = "(pgk_load_f64(p, code) != 0)"
    elif not d.is_float_math:
        other = f"(({d.math})pgk_load_i64(p, code))"
    elif dst is dt.float16:
        other = "pgk_d2f_odd(pgk_load_f64(p, code))"
    else:
        other = f"(({d.math})pgk_load_f64(p, code))"
    return (
        f"__device__ __forceinline__ {d.math} pgk_load_as_{dst.name}(const char* p, int code) {{\n"
        f"  return code == {d.code} ? {direct} : {other};\n}}\n"
    )


def any_loaders() -> str:
    """The preamble's out-of-line readers: any dtype (by code) as double or as long long."""
    out = []
    for name, ret in (("f64", "double"), ("i64", "long long")):
        cases = "\n".join(
            f"    case {c.code}: return ({ret})({load(c.dtype, 'p')});" for c in CTYPES.values()
        )
        out.append(
            f"__device__ __noinline__ {ret} pgk_load_{name}(const char* p, int code) {{\n"
            f"  switch (code) {{\n{cases}\n    default: return 0;\n  }}\n}}\n"
        )
    return "".join(out)
