"""Conformance specs of the complex-number parts (real, imag, conj, angle) and the three
FFT kernels (``fft_c2c``, ``fft_r2c``, ``fft_c2r``), against NumPy in double precision.

FFT cases cover lengths 1, 2, primes, 400 and powers of two, several axes at once,
batches, each ``norm``, and strided views; the direct kernel calls follow the
conventions of ``pygpukit._ops.fourier``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pygpukit as gp

from .... import _dtypes as dt
from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType
from ..catalog import Case, Layout, OpSpec
from ._common import EDGE_LAYOUTS, VIEW_LAYOUTS, draw, relative_frobenius, upload

Cases = Callable[[np.random.Generator, DataType, Device], list[Case]]
#: the largest relative Frobenius error of a transform, by the precision of its parts
FROBENIUS = {4: 1e-5, 8: 1e-12}


def _frobenius(d: DataType) -> Callable[[GPUArray, np.ndarray, str], None]:
    return relative_frobenius(FROBENIUS[dt.real_of(d).itemsize])


PARTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "real": np.real, "imag": np.imag, "conj": np.conj, "angle": np.angle,
}  # fmt: skip


def _part_cases(op: str) -> Cases:
    ref = PARTS[op]
    fn = getattr(gp, op)

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        out_dtype = d if op == "conj" else dt.real_of(d)
        result = []
        for layout in (*VIEW_LAYOUTS, *EDGE_LAYOUTS):
            g, h = upload(draw(rng, layout.parent, d), layout, device)
            expected = np.asarray(ref(np.asarray(h).astype(np.complex128)))

            def run(name: str, g: GPUArray = g) -> GPUArray:
                return fn(g, backend=name)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g) -> None:
                if out.size:
                    kernel(g, out)

            kind = "transcendental" if op == "angle" else "exact"
            result.append(Case(layout.label, run, expected, out_dtype, direct,
                               strided_out=True, op_kind=kind))  # fmt: skip
        return result

    return cases


# (label, parent layout, axes, norm, lengths along the axes or None)
FFT_SHAPES: tuple[tuple[str, Layout, tuple[int, ...], str, tuple[int, ...] | None], ...] = (
    ("length 1", Layout("c", (1,)), (0,), "backward", None),
    ("length 2", Layout("c", (2,)), (0,), "ortho", None),
    ("prime 13, batched", Layout("c", (3, 13)), (1,), "backward", None),
    ("400, batched, forward norm", Layout("c", (4, 400)), (1,), "forward", None),
    ("256 along axis 0 of a transposed view", Layout("t", (5, 256), transpose=True), (0,),
     "backward", None),
    ("2-d of a stepped view", Layout("s", (9, 12), key=(slice(None, None, 2),
                                                         slice(None, None, -1))), (0, 1),
     "ortho", None),
    ("3 axes, reversed order", Layout("c", (2, 3, 4, 5)), (3, 1, 2), "backward", None),
    ("padded and cropped", Layout("c", (6, 10)), (0, 1), "backward", (8, 7)),
)  # fmt: skip


def _scale(norm: str, size: int, forward: bool) -> float:
    if norm == "ortho":
        return float(1 / np.sqrt(size))
    return 1 / size if (norm == "forward") == forward else 1.0


def _fit(h: np.ndarray, axes: tuple[int, ...], lengths: tuple[int, ...]) -> np.ndarray:
    out = h
    for a, n in zip(axes, lengths, strict=True):
        if n < out.shape[a]:
            out = np.take(out, np.arange(n), axis=a)
        elif n > out.shape[a]:
            pad = [(0, 0)] * out.ndim
            pad[a] = (0, n - out.shape[a])
            out = np.pad(out, pad)
    return out


def _c2c_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for i, (label, layout, axes, norm, s) in enumerate(FFT_SHAPES):
        forward = i % 2 == 0
        g, h = upload(draw(rng, layout.parent, d), layout, device)
        wide = np.asarray(h).astype(np.complex128)
        lengths = tuple(h.shape[a] for a in axes) if s is None else s
        fitted = _fit(wide, axes, lengths)
        size = int(np.prod(lengths))
        if forward:
            expected = np.fft.fftn(fitted, axes=axes) * _scale(norm, size, True)
        else:
            expected = np.fft.ifftn(fitted, axes=axes, norm="forward") * _scale(norm, size, False)
        public = gp.fft.fftn if forward else gp.fft.ifftn

        def run(name: str, g: GPUArray = g, axes: Any = axes, norm: str = norm, s: Any = s,
                public: Any = public) -> GPUArray:  # fmt: skip
            return public(g, s=s, axes=axes, norm=norm, backend=name)

        direct = None
        if s is None:
            scale = _scale(norm, size, forward)

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       axes: Any = tuple(a % h.ndim for a in axes), forward: bool = forward,
                       scale: float = scale) -> None:  # fmt: skip
                kernel(g, out, axes, forward, scale)

        result.append(Case(f"{label}, {'forward' if forward else 'inverse'}", run, expected,
                           d, direct, check=_frobenius(d)))  # fmt: skip
    return result


def _r2c_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    out_dtype = dt.complex_of(d)
    for label, layout, axes, norm, s in FFT_SHAPES:
        g, h = upload(draw(rng, layout.parent, d), layout, device)
        wide = np.asarray(h).astype(np.float64)
        lengths = tuple(h.shape[a] for a in axes) if s is None else s
        size = int(np.prod(lengths))
        expected = np.fft.rfftn(_fit(wide, axes, lengths), axes=axes) * _scale(norm, size, True)

        def run(name: str, g: GPUArray = g, axes: Any = axes, norm: str = norm,
                s: Any = s) -> GPUArray:  # fmt: skip
            return gp.fft.rfftn(g, s=s, axes=axes, norm=norm, backend=name)

        direct = None
        if s is None:

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       axes: Any = axes, scale: float = _scale(norm, size, True),
                       ) -> None:  # fmt: skip
                kernel(g, out, axes, scale)

        result.append(Case(label, run, expected, out_dtype, direct, check=_frobenius(d)))
    return result


def _c2r_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    out_dtype = dt.real_of(d)
    for label, layout, axes, norm, s in FFT_SHAPES:
        # the signal lengths; x holds the Hermitian half along the last axis
        lengths = tuple(layout.apply(np.empty(layout.parent)).shape[a] for a in axes)
        if s is not None:
            lengths = s
        if lengths[-1] < 2:
            continue  # irfft of one point has no half to start from
        g, h = upload(draw(rng, layout.parent, d), layout, device)
        last = axes[-1]
        half = dict(zip(axes, lengths, strict=True))
        half[last] = lengths[-1] // 2 + 1
        wide = np.asarray(h).astype(np.complex128)
        fitted = _fit(wide, tuple(half), tuple(half.values()))
        size = int(np.prod(lengths))
        expected = np.fft.irfftn(fitted, s=lengths, axes=axes, norm="forward") * _scale(
            norm, size, False
        )

        def run(name: str, g: GPUArray = g, axes: Any = axes, norm: str = norm,
                s: Any = lengths) -> GPUArray:  # fmt: skip
            return gp.fft.irfftn(g, s=s, axes=axes, norm=norm, backend=name)

        direct = None
        if all(g.shape[a] == n for a, n in half.items()):

            def direct(kernel: Callable[..., Any], out: GPUArray, g: GPUArray = g,
                       axes: Any = axes, scale: float = _scale(norm, size, False),
                       ) -> None:  # fmt: skip
                kernel(g, out, axes, scale)

        result.append(Case(label, run, expected, out_dtype, direct, check=_frobenius(d)))
    return result


def specs() -> list[OpSpec]:
    out = [OpSpec(op, "complex", dt.COMPLEX_DTYPES, _part_cases(op), "exact") for op in PARTS]
    out += [
        OpSpec("fft_c2c", "fft", dt.COMPLEX_DTYPES, _c2c_cases, "reduction",
               function="fft"),
        OpSpec("fft_r2c", "fft", (dt.float32, dt.float64), _r2c_cases, "reduction",
               function="fft"),
        OpSpec("fft_c2r", "fft", dt.COMPLEX_DTYPES, _c2r_cases, "reduction",
               function="fft"),
    ]  # fmt: skip
    return out
