"""The benchmark's fft family: gp.fft beside torch.fft, cupy.fft and numpy.fft, plus complex
matmul, each checked against NumPy in double precision.

The rows the issue sets bars on: batched rfft of 4096 signals x 1024, one 2^24-point complex
fft, and rfft of 400-sample frames (Whisper's STFT), next to the same transforms inverse and
in 2-D. Rates are the usual FFT convention, 5 N log2 N flops per complex transform of N
points (half that for real transforms), in TFLOP/s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .cases import CHECK_ROWS, ArrayCase, Case, Expected, Sizes, _gp, size_label
from .results import Work

#: relative error allowed (max |got - want| / max |want|) by storage precision
TOL = {"float32": 1e-5, "complex64": 1e-5}


def _flops(points: int, batch: int, real: bool) -> float:
    return (2.5 if real else 5.0) * points * math.log2(max(points, 2)) * batch


def _c128(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.complex128 if np.iscomplexobj(x) else np.float64)


def _matmul_reference(a: np.ndarray, b: np.ndarray) -> Expected:
    """a @ b in complex128, on CHECK_ROWS random rows of a large product."""
    rows = None
    if a.shape[0] > CHECK_ROWS:
        rows = np.sort(np.random.default_rng(a.shape[0]).choice(a.shape[0], CHECK_ROWS,
                                                                replace=False))  # fmt: skip
        a = a[rows]
    return Expected(_c128(a) @ _c128(b), rows=rows)


def _shapes(sizes: Sizes) -> dict[str, Any]:
    """Problem sizes: the issue's bars, or small ones for --quick (sizes.vector small)."""
    if max(sizes.vector) <= 2**16:
        return {"batch": 64, "n": 1024, "big": 2**16, "frames": 100, "side": 256, "planes": 2}
    return {"batch": 4096, "n": 1024, "big": 2**24, "frames": 3000, "side": 2048, "planes": 8}


def cases(sizes: Sizes) -> list[Case]:
    gp = _gp()
    s = _shapes(sizes)
    b, n, big, frames, side, planes = (s[k] for k in ("batch", "n", "big", "frames", "side",
                                                       "planes"))  # fmt: skip
    half = n // 2 + 1
    out: list[Case] = [
        ArrayCase(
            "fft", "rfft", f"{b} x {n} float32, last axis", "fft_r2c", [("normal", (b, n))],
            ["float32"], lambda x: gp.fft.rfft(x),
            {"numpy": lambda xp, x: xp.fft.rfft(x), "torch": lambda t, x: t.fft.rfft(x)},
            lambda x: Expected(np.fft.rfft(_c128(x))), TOL["float32"],
            Work("TFLOP/s", _flops(n, b, True)), note="bar: <= 1.0x torch",
        ),
        ArrayCase(
            "fft", "irfft", f"{b} x {half} complex64 -> {n}", "fft_c2r", [("spectrum1", (b, half))],
            ["complex64"], lambda z: gp.fft.irfft(z, n=n),
            {"numpy": lambda xp, z: xp.fft.irfft(z, n=n),
             "torch": lambda t, z: t.fft.irfft(z, n=n)},
            lambda z: Expected(np.fft.irfft(_c128(z), n=n)), TOL["complex64"],
            Work("TFLOP/s", _flops(n, b, True)),
            note="input: rfft of a real signal (Hermitian, as inverse real transforms assume)",
        ),
        ArrayCase(
            "fft", "fft", f"{b} x {n} complex64, last axis", "fft_c2c", [("complex", (b, n))],
            ["complex64"], lambda z: gp.fft.fft(z),
            {"numpy": lambda xp, z: xp.fft.fft(z), "torch": lambda t, z: t.fft.fft(z)},
            lambda z: Expected(np.fft.fft(_c128(z))), TOL["complex64"],
            Work("TFLOP/s", _flops(n, b, False)),
        ),
        ArrayCase(
            "fft", "fft", f"{size_label(big)} complex64, one signal", "fft_c2c",
            [("complex", (big,))], ["complex64"], lambda z: gp.fft.fft(z),
            {"numpy": lambda xp, z: xp.fft.fft(z), "torch": lambda t, z: t.fft.fft(z)},
            lambda z: Expected(np.fft.fft(_c128(z))), TOL["complex64"],
            Work("TFLOP/s", _flops(big, 1, False)), note="bar: <= 1.0x torch",
        ),
        ArrayCase(
            "fft", "rfft", f"{frames} x 400 float32 (STFT frames)", "fft_r2c",
            [("normal", (frames, 400))], ["float32"], lambda x: gp.fft.rfft(x),
            {"numpy": lambda xp, x: xp.fft.rfft(x), "torch": lambda t, x: t.fft.rfft(x)},
            lambda x: Expected(np.fft.rfft(_c128(x))), TOL["float32"],
            Work("TFLOP/s", _flops(400, frames, True)), note="bar: <= 1.1x torch",
        ),
        ArrayCase(
            "fft", "fft2", f"{planes} x {side} x {side} complex64", "fft_c2c",
            [("complex", (planes, side, side))], ["complex64"],
            lambda z: gp.fft.fftn(z, axes=(-2, -1)),
            {"numpy": lambda xp, z: xp.fft.fftn(z, axes=(-2, -1)),
             "torch": lambda t, z: t.fft.fftn(z, dim=(-2, -1))},
            lambda z: Expected(np.fft.fftn(_c128(z), axes=(-2, -1))), TOL["complex64"],
            Work("TFLOP/s", _flops(side * side, planes, False)),
        ),
        ArrayCase(
            "fft", "rfft2", f"{planes} x {side} x {side} float32", "fft_r2c",
            [("normal", (planes, side, side))], ["float32"],
            lambda x: gp.fft.rfftn(x, axes=(-2, -1)),
            {"numpy": lambda xp, x: xp.fft.rfftn(x, axes=(-2, -1)),
             "torch": lambda t, x: t.fft.rfftn(x, dim=(-2, -1))},
            lambda x: Expected(np.fft.rfftn(_c128(x), axes=(-2, -1))), TOL["float32"],
            Work("TFLOP/s", _flops(side * side, planes, True)),
        ),
        ArrayCase(
            "fft", "irfft2", f"{planes} x {side} x {side // 2 + 1} complex64", "fft_c2r",
            [("spectrum2", (planes, side, side // 2 + 1))], ["complex64"],
            lambda z: gp.fft.irfftn(z, s=(side, side), axes=(-2, -1)),
            {"numpy": lambda xp, z: xp.fft.irfftn(z, s=(side, side), axes=(-2, -1)),
             "torch": lambda t, z: t.fft.irfftn(z, s=(side, side), dim=(-2, -1))},
            lambda z: Expected(np.fft.irfftn(_c128(z), s=(side, side), axes=(-2, -1))),
            TOL["complex64"], Work("TFLOP/s", _flops(side * side, planes, True)),
            note="input: rfft2 of real planes (Hermitian)",
        ),
    ]  # fmt: skip
    for m in sizes.matmul[:2]:
        out.append(ArrayCase(
            "fft", "matmul", f"{m}x{m}x{m} complex64", "matmul",
            [("complex", (m, m)), ("complex", (m, m))], ["complex64", "complex64"], gp.matmul,
            {"numpy": lambda xp, a, c: xp.matmul(a, c), "torch": lambda t, a, c: t.matmul(a, c)},
            _matmul_reference, 3e-5, Work("TFLOP/s", 8.0 * m**3),
            note="complex products: 4 real multiply-adds per term; large ones checked on "
                 f"{CHECK_ROWS} random rows",
        ))  # fmt: skip
    return out
