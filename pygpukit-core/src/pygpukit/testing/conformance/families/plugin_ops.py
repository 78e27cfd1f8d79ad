"""Conformance specs for the ops plugins add with ``register_op(..., reference=, inputs=)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType, as_dtype
from ....backend import empty, kernel
from ....ops_catalog import Convention, OpCheck, conventions
from ..._assertions import assert_allclose
from ..catalog import Case, CasesFn, OpSpec

#: draws of `inputs` per dtype: several, so the plugin's generator varies the shapes
DRAWS = 3


def _strided(g: GPUArray) -> GPUArray:
    """The same values as a strided view: every other element of a wider parent."""
    if g.ndim == 0:
        return g
    parent = empty((*g.shape[:-1], 2 * g.shape[-1]), g.dtype, g.device)
    view = parent[..., ::2]
    view[...] = g
    return view


def _offset(g: GPUArray) -> GPUArray:
    """The same values as a contiguous view at an offset inside a larger buffer."""
    flat = empty((g.size + 3,), g.dtype, g.device)
    view = flat[2 : 2 + g.size].reshape(g.shape)
    view[...] = g
    return view


_LAYOUTS: dict[str, Callable[[GPUArray], GPUArray]] = {
    "contiguous": lambda g: g,
    "strided": _strided,
    "offset": _offset,
}


def _place(conv: Convention, arrays: tuple[GPUArray, ...], out: GPUArray) -> tuple[Any, ...]:
    """The kernel's positional arguments: the inputs in order, `out` at the ``out`` slot."""
    names = conv.positional
    at = names.index("out")
    if len(names) != len(arrays) + 1:
        raise AssertionError(
            f"{conv.op}{conv.signature}: inputs= gave {len(arrays)} arrays for "
            f"{len(names) - 1} input slots"
        )
    return (*arrays[:at], out, *arrays[at:])


def _cases(conv: Convention, check: OpCheck) -> CasesFn:
    direct_ok = "out" in conv.positional and not conv.keywords

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        out_dtype = check.out_dtype or d
        found: list[Case] = []
        for draw in range(DRAWS):
            hosts = tuple(np.asarray(h) for h in check.inputs(rng, d))
            want = np.asarray(check.reference(*hosts)).astype(out_dtype.to_numpy_dtype())
            for label, layout in _LAYOUTS.items():
                arrays = tuple(layout(GPUArray.from_numpy(h, device)) for h in hosts)
                shapes = " ".join(str(h.shape) for h in hosts)

                def run(
                    backend: str,
                    arrays: tuple[GPUArray, ...] = arrays,
                    shape: tuple[int, ...] = want.shape,
                ) -> Any:
                    if check.function is not None:
                        return check.function(*arrays, backend=backend)
                    fn = kernel(conv.op, *arrays, backend=backend)
                    out = empty(shape, out_dtype, device)
                    fn(*_place(conv, arrays, out))
                    return out

                def direct(
                    fn: Callable[..., Any], out: GPUArray, arrays: tuple[GPUArray, ...] = arrays
                ) -> None:
                    fn(*_place(conv, arrays, out))

                found.append(
                    Case(
                        f"draw {draw} {label} {shapes}",
                        run,
                        want,
                        out_dtype,
                        direct=direct if direct_ok and want.size else None,
                        check=_compare(check, out_dtype),
                        needs=tuple({as_dtype(h.dtype) for h in hosts} - {d}),
                    )
                )
        return found

    return cases


def _compare(check: OpCheck, d: DataType) -> Callable[[GPUArray, np.ndarray, str], None]:
    def compare(actual: GPUArray, expected: np.ndarray, msg: str) -> None:
        assert_allclose(actual, expected, d, rtol=check.rtol, atol=check.atol, err_msg=msg)

    return compare


def specs() -> list[OpSpec]:
    """One spec per registered plugin op that came with a reference."""
    return [
        OpSpec(conv.op, "plugin", conv.check.dtypes, _cases(conv, conv.check))
        for conv in conventions().values()
        if conv.family == "plugin" and conv.check is not None
    ]
