"""gp.fft's per-call fast path: a repeated call reuses its decision, and only an identical
call does (a changed n, norm, axis, dtype, shape or argument type takes the full path)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._ops import fourier

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def fresh() -> None:
    fourier._decided.clear()


def _close(got: gp.GPUArray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-9, atol=1e-9)


def test_a_repeated_call_is_kept_and_answers_the_same() -> None:
    a = RNG.standard_normal((4, 16))
    x = gp.asarray(a)
    first = gp.fft.rfft(x)
    assert len(fourier._decided) == 1
    second = gp.fft.rfft(x)
    assert len(fourier._decided) == 1
    _close(first, np.fft.rfft(a))
    _close(second, np.fft.rfft(a))


@pytest.mark.parametrize(
    "calls",
    [
        # (function, kwargs) in order: each must be answered for its own arguments
        [("rfft", {}), ("rfft", {"n": 10}), ("rfft", {}), ("rfft", {"n": 10})],
        [("irfft", {}), ("irfft", {"n": 15}), ("irfft", {"n": 16}), ("irfft", {})],
        [
            ("fft", {"norm": "backward"}),
            ("fft", {"norm": "ortho"}),
            ("fft", {"norm": "forward"}),
            ("fft", {"norm": "backward"}),
        ],
        [
            ("ifft", {"axis": -1}),
            ("ifft", {"axis": 0}),
            ("ifft", {"axis": 1}),
            ("ifft", {"axis": 0}),
        ],
        [("fft", {}), ("ifft", {}), ("fftn", {}), ("ifftn", {}), ("fft", {})],
        [
            ("rfftn", {"axes": (0, 1)}),
            ("rfftn", {"axes": [1, 0]}),
            ("rfftn", {"axes": (1,)}),
            ("rfftn", {"s": (4, 8), "axes": (0, 1)}),
            ("rfftn", {"axes": (1, 0)}),
        ],
        [
            ("irfftn", {"axes": (0, 1)}),
            ("irfftn", {"s": (4, 30), "axes": (0, 1)}),
            ("irfftn", {"s": [-1, 30], "axes": [0, 1]}),
            ("irfftn", {"axes": (0, 1)}),
        ],
    ],
)
def test_changed_arguments_never_reuse_a_decision(calls: list[tuple[str, dict[str, Any]]]) -> None:
    real = RNG.standard_normal((4, 16))
    cplx = RNG.standard_normal((4, 16)) + 1j * RNG.standard_normal((4, 16))
    for name, kwargs in calls:
        a = real if name in ("rfft", "rfftn") else cplx
        got = getattr(gp.fft, name)(gp.asarray(a), **kwargs)
        _close(got, getattr(np.fft, name)(a, **kwargs))


def test_shape_and_dtype_are_part_of_the_key() -> None:
    for shape, dtype in [((4, 16), np.float64), ((4, 18), np.float64), ((16, 4), np.float64),
                         ((4, 16), np.float32), ((4, 16), np.float64)]:  # fmt: skip
        a = RNG.standard_normal(shape).astype(dtype)
        got = gp.fft.rfft(gp.asarray(a))
        assert got.dtype is (gp.complex64 if dtype == np.float32 else gp.complex128)
        np.testing.assert_allclose(got.to_numpy(), np.fft.rfft(a), rtol=1e-4, atol=1e-4)


def test_views_share_a_decision_and_are_read_as_views() -> None:
    # strides are part of the key: each layout gets its own decision, and a view is read as one
    a = RNG.standard_normal((16, 4))
    x = gp.asarray(a)
    _close(gp.fft.fft(gp.asarray(np.ascontiguousarray(a.T))), np.fft.fft(a.T))
    _close(gp.fft.fft(gp.permute_dims(x, (1, 0))), np.fft.fft(a.T))


def test_inputs_that_are_cast_padded_or_cropped_are_not_kept() -> None:
    a = RNG.standard_normal((3, 8))
    gp.fft.rfft(gp.asarray(a.astype(np.float16)))  # computed in float32: a cast copy
    gp.fft.rfft(gp.asarray(a), n=12)  # padded
    gp.fft.fft(gp.asarray(a), n=5)  # cropped (and cast to complex)
    gp.fft.fft(gp.asarray(a))  # real input to a complex transform: a cast
    assert fourier._decided == {}


@pytest.mark.parametrize(
    "kwargs",
    [{"axis": True}, {"axis": np.int64(1)}, {"n": np.int64(8)}, {"norm": np.str_("ortho")}],
)
def test_unusual_argument_types_take_the_full_path(kwargs: dict[str, Any]) -> None:
    a = RNG.standard_normal((3, 8))
    got = gp.fft.rfft(gp.asarray(a), **kwargs)
    plain: dict[str, Any] = {k: (str(v) if k == "norm" else int(v)) for k, v in kwargs.items()}
    _close(got, np.fft.rfft(a, **plain))
    assert fourier._decided == {}


def test_bad_arguments_still_raise_after_a_good_call() -> None:
    x = gp.asarray(RNG.standard_normal((3, 8)))
    gp.fft.rfft(x)
    with pytest.raises(ValueError):
        gp.fft.rfft(x, norm="sideways")
    with pytest.raises(ValueError):
        gp.fft.rfft(x, n=0)
    with pytest.raises((ValueError, IndexError)):
        gp.fft.rfft(x, axis=2)
