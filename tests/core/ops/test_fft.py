"""gp.fft against numpy.fft: lengths (primes, 400), axes, norms, views, dtypes, bad input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._dispatch import DispatchError, kernel_for
from pygpukit.testing import assert_allclose
from pygpukit.testing._strategies import views

NORMS = st.sampled_from(["backward", "ortho", "forward"])
#: lengths worth a transform: tiny, primes, the Whisper frame, powers of two, odd
LENGTHS = st.sampled_from([1, 2, 3, 5, 7, 8, 13, 16, 17, 30, 64, 97, 400])
REAL = st.sampled_from([gp.float32, gp.float64])
COMPLEX = st.sampled_from([gp.complex64, gp.complex128])
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn")


def _signal(data: st.DataObject, dtype: Any, length: int, lead: int) -> gp.GPUArray:
    """A batch of signals along a random axis, in a random view layout."""
    ndim = data.draw(st.integers(1, 3))
    shape = [data.draw(st.integers(1, 3)) for _ in range(ndim)]
    shape[lead % ndim] = length
    kinds = ("contiguous", "transposed", "reversed", "stepped", "offset", "broadcast")
    return data.draw(views(dtype, st.just(tuple(shape)), (-2.0, 2.0), kinds=kinds))


def _check(got: gp.GPUArray, want: np.ndarray, dtype: gp.DataType) -> None:
    """Relative error of the whole transform, by the precision of the dtype's parts."""
    assert got.dtype is dtype, f"dtype {got.dtype}, expected {dtype}"
    assert got.shape == want.shape
    actual = got.to_numpy().astype(np.complex128)
    scale = float(np.linalg.norm(want)) or 1.0
    bound = 1e-12 if dtype in (gp.float64, gp.complex128) else 1e-5
    assert float(np.linalg.norm(actual - want)) / scale <= bound


@pytest.mark.parametrize("name", ONE_D)
@settings(max_examples=30, deadline=None)
@given(data=st.data(), length=LENGTHS, norm=NORMS)
def test_one_dimensional_transforms(name: str, data: st.DataObject, length: int,
                                    norm: str) -> None:  # fmt: skip
    takes_real = name in ("rfft", "ihfft")
    dtype = data.draw(REAL if takes_real else COMPLEX)
    axis = data.draw(st.integers(-3, 2))
    x = _signal(data, dtype, length, axis)
    axis = data.draw(st.sampled_from([axis % x.ndim, axis % x.ndim - x.ndim]))
    n = data.draw(st.none() | st.integers(1, 2 * length + 2))
    if name in ("irfft", "hfft") and n is None and length == 1:
        n = 1  # the default 2 * (m - 1) would be 0
    host = x.to_numpy().astype(np.float64 if takes_real else np.complex128)
    want = getattr(np.fft, name)(host, n=n, axis=axis, norm=norm)
    got = getattr(gp.fft, name)(x, n=n, axis=axis, norm=norm)
    if name in ("irfft", "hfft"):
        want_dtype = gp.float32 if dtype is gp.complex64 else gp.float64
    elif takes_real:
        want_dtype = gp.complex64 if dtype is gp.float32 else gp.complex128
    else:
        want_dtype = dtype
    _check(got, want, want_dtype)


@pytest.mark.parametrize("name", N_D)
@settings(max_examples=30, deadline=None)
@given(data=st.data(), norm=NORMS)
def test_n_dimensional_transforms(name: str, data: st.DataObject, norm: str) -> None:
    takes_real = name == "rfftn"
    dtype = data.draw(REAL if takes_real else COMPLEX)
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.integers(1, 6)) for _ in range(ndim))
    x = data.draw(views(dtype, st.just(shape), (-2.0, 2.0)))
    axes = data.draw(st.none() | st.permutations(range(ndim)).flatmap(
        lambda p: st.integers(1, ndim).map(lambda k: tuple(p[:k]))))  # fmt: skip
    s = None
    if axes is not None and data.draw(st.booleans()):
        s = tuple(data.draw(st.integers(1, 8)) for _ in axes)
        axes = tuple(a - ndim if data.draw(st.booleans()) else a for a in axes)
    last = (ndim - 1) if axes is None else axes[-1] % ndim
    if name == "irfftn" and s is None and shape[last] == 1:
        return  # the default output length 2 * (1 - 1) = 0 is refused (tested below)
    host = x.to_numpy().astype(np.float64 if takes_real else np.complex128)
    want = getattr(np.fft, name)(host, s=s, axes=axes, norm=norm)
    got = getattr(gp.fft, name)(x, s=s, axes=axes, norm=norm)
    if name == "irfftn":
        want_dtype = gp.float32 if dtype is gp.complex64 else gp.float64
    elif takes_real:
        want_dtype = gp.complex64 if dtype is gp.float32 else gp.complex128
    else:
        want_dtype = dtype
    _check(got, want, want_dtype)


def test_roundtrips_and_real_inputs() -> None:
    rng = np.random.default_rng(3)
    sig = rng.standard_normal((5, 400)).astype(np.float32)  # Whisper's frame, batched
    x = gp.asarray(sig)
    spec = gp.fft.rfft(x)
    assert spec.dtype is gp.complex64 and spec.shape == (5, 201)
    back = gp.fft.irfft(spec, n=400)
    assert back.dtype is gp.float32
    assert_allclose(back, sig, rtol=1e-5, atol=1e-5)
    odd = gp.fft.irfft(gp.fft.rfft(x[:, :399]), n=399)  # odd n recovers odd lengths
    assert_allclose(odd, sig[:, :399], rtol=1e-5, atol=1e-5)
    # a real input to the complex transforms is promoted (float64 -> complex128)
    y = gp.asarray(sig.astype(np.float64))
    assert gp.fft.fft(y).dtype is gp.complex128 and gp.fft.fft(x).dtype is gp.complex64
    assert gp.fft.fft(x.astype(gp.float16)).dtype is gp.complex64
    assert gp.fft.rfft(x.astype(gp.bfloat16)).dtype is gp.complex64
    prime = gp.asarray(rng.standard_normal(1009) + 1j * rng.standard_normal(1009))
    assert_allclose(gp.fft.ifft(gp.fft.fft(prime)), prime.to_numpy(), op_kind="reduction")


def test_frequencies_and_shifts() -> None:
    for n in (1, 2, 7, 8, 400):
        for d in (1.0, 0.25):
            assert_allclose(gp.fft.fftfreq(n, d=d), np.fft.fftfreq(n, d=d).astype(np.float32))
            assert_allclose(gp.fft.rfftfreq(n, d=d, dtype=gp.float64), np.fft.rfftfreq(n, d=d))
    assert gp.fft.fftfreq(4).dtype is gp.float32
    host = np.arange(30).reshape(5, 6)
    x = gp.asarray(host)
    for axes in (None, 0, (1,), (-1, 0)):
        assert gp.fft.fftshift(x, axes=axes).tolist() == np.fft.fftshift(host, axes).tolist()
        assert gp.fft.ifftshift(x, axes=axes).tolist() == np.fft.ifftshift(host, axes).tolist()
    assert gp.fft.fftshift(gp.asarray(3.0)).item() == 3.0


BAD: list[tuple[str, Any, dict[str, Any], type[Exception], str]] = [
    ("fft", [1, 2], {}, TypeError, "fft.fft: x must have a complex .*int64"),
    ("rfft", [1j], {}, TypeError, "fft.rfft: x must have a real floating dtype, got complex64"),
    ("rfftn", [True], {}, TypeError, "real floating dtype, got bool"),
    ("fft", [1j, 2j], {"n": 0}, ValueError, "n must be >= 1, got 0"),
    ("irfft", [1j, 2j], {"n": -4}, ValueError, "n must be >= 1, got -4"),
    ("irfft", [1j], {}, ValueError, "default output length 2 \\* \\(m - 1\\) is 0"),
    ("fft", [1j], {"n": 2.5}, TypeError, "n must be an int"),
    ("fft", [1j], {"axis": 1}, ValueError, "axis 1 is out of range"),
    ("fft", 1j, {}, ValueError, "at least one dimension"),
    ("fft", [1j], {"norm": "none"}, ValueError, "norm must be one of backward, ortho, forward"),
    ("fftn", [[1j]], {"axes": ()}, ValueError, "axes must name at least one axis"),
    ("fftn", [[1j]], {"axes": (0, -2)}, ValueError, "axis more than once"),
    ("fftn", [[1j]], {"axes": (0, 2)}, ValueError, "axes entry 2 is out of range"),
    ("fftn", [[1j]], {"s": (2, 2)}, ValueError, "s was given without axes"),
    ("ifftn", [[1j]], {"s": (2,), "axes": (0, 1)}, ValueError, "same length"),
    ("irfftn", [[1j]], {"s": (0, 2), "axes": (0, 1)}, ValueError, "every entry of s must be"),
    ("fftn", [[1j]], {"axes": 0}, TypeError, "axes must be a sequence of ints"),
    ("fftfreq", 0, {}, ValueError, "n must be >= 1"),
    ("rfftfreq", 4, {"d": 0.0}, ValueError, "d must be finite and nonzero"),
    ("fftfreq", 4, {"dtype": gp.int32}, TypeError, "real floating dtype, got int32"),
]


@pytest.mark.parametrize(("name", "value", "kwargs", "error", "match"), BAD,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])  # fmt: skip
def test_bad_input_is_answered_clearly(name: str, value: Any, kwargs: dict[str, Any],
                                       error: type[Exception], match: str) -> None:  # fmt: skip
    arg = value if name.endswith("freq") else gp.asarray(value)
    with pytest.raises(error, match=match):
        getattr(gp.fft, name)(arg, **kwargs)


def test_empty_axis_needs_a_length() -> None:
    empty = gp.zeros((0, 3), dtype=gp.complex64)
    with pytest.raises(ValueError, match="axis 0 has length 0"):
        gp.fft.fft(empty, axis=0)
    assert gp.fft.fft(empty, n=4, axis=0).tolist() == [[0j] * 3] * 4
    assert gp.fft.fft(empty).shape == (0, 3)  # an empty batch is fine


def test_dispatch_goes_through_the_providers() -> None:
    z = gp.asarray(np.ones(4, dtype=np.complex64))
    assert gp.explain("fft_c2c", z).chosen == "cpu"
    with pytest.raises(ValueError, match="unknown backend 'nowhere'"):
        gp.fft.fft(z, backend="nowhere")
    with pytest.raises(DispatchError, match=r"fft_c2c.*cpu"):
        kernel_for("fft_c2c", z.device, (gp.float32,))  # the kernel declares complex only
    assert gp.fft.fft(z, backend="cpu").tolist() == [4 + 0j, 0j, 0j, 0j]
