"""complex64 and complex128: dtype objects, promotion, casts, creation, conversions, DLPack."""

from __future__ import annotations

import itertools
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit._dispatch import DispatchError
from pygpukit._providers import KernelProvider

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite

c8, c16 = gp.complex64, gp.complex128
f2, bf, f4, f8 = gp.float16, gp.bfloat16, gp.float32, gp.float64


def test_dtype_objects() -> None:
    assert c8.name == "complex64" and c8.itemsize == 8 and c8.kind == "c"
    assert c16.to_numpy_dtype() == np.complex128
    assert dt.as_dtype("complex64") is c8 and dt.as_dtype(np.complex128) is c16
    assert dt.as_dtype(complex) is c8  # the default complex dtype, like float -> float32
    assert c8.is_complex and c8.is_inexact and not c8.is_floating and not c8.is_integer
    assert pickle.loads(pickle.dumps(c16)) is c16
    assert repr(c8) == "pygpukit.complex64" and c8 == "complex64" and c8 == np.complex64
    assert dt.real_of(c8) is f4 and dt.real_of(c16) is f8 and dt.real_of(f2) is f2
    assert dt.complex_of(f8) is c16 and dt.complex_of(f2) is c8 and dt.complex_of(c16) is c16


def test_isdtype_kinds() -> None:
    assert gp.isdtype(c8, "complex floating") and gp.isdtype(c16, "numeric")
    assert not gp.isdtype(c8, "real floating") and not gp.isdtype(f4, "complex floating")
    assert gp.isdtype(c16, ("integral", "complex floating"))


def test_finfo_of_complex_gives_its_parts() -> None:
    info = gp.finfo(c8)
    assert info.dtype is f4 and info.eps == float(np.finfo(np.float32).eps)
    assert gp.finfo(c16).bits == 64


# The standard's (2024.12) table for the floating types, written out.
FLOAT_TABLE = {
    (f4, c8): c8, (f4, c16): c16, (f8, c8): c16, (f8, c16): c16, (c8, c8): c8,
    (c8, c16): c16, (c16, c16): c16,
}  # fmt: skip


@pytest.mark.parametrize(("pair", "want"), list(FLOAT_TABLE.items()), ids=str)
def test_promotion_table(pair: tuple[gp.DataType, gp.DataType], want: gp.DataType) -> None:
    a, b = pair
    assert gp.promote_types(a, b) is want and gp.promote_types(b, a) is want


def test_mixed_kinds_with_complex() -> None:
    for d, c in itertools.product((gp.bool_, *dt.INTEGER_DTYPES, f2, bf), dt.COMPLEX_DTYPES):
        assert gp.promote_types(d, c) is c  # bool, ints and half floats join either complex
    with pytest.raises(TypeError, match="storage type"):
        gp.promote_types(gp.float8_e4m3fn, c8)


def test_python_complex_scalars_are_weak() -> None:
    assert gp.result_type(f4, 1j) is c8
    assert gp.result_type(f8, 1j) is c16
    assert gp.result_type(c16, 1.5) is c16 and gp.result_type(c8, 2) is c8
    assert gp.result_type(gp.int32, 1j) is c8
    x = gp.asarray(np.array([1.0, 2.0], dtype=np.float64))
    assert (x * 1j).dtype is c16 and (1j + gp.ones((2,), dtype=f2)).dtype is c8


def test_can_cast_follows_promotion() -> None:
    assert gp.can_cast(f4, c8) and gp.can_cast(c8, c16) and gp.can_cast(f8, c16)
    assert not gp.can_cast(c8, f4) and not gp.can_cast(f8, c8) and not gp.can_cast(c16, c8)


def test_casts_to_complex_and_the_refused_complex_to_real() -> None:
    x = gp.asarray(np.array([1.5, -2.0], dtype=np.float32))
    z = x.astype(c8)
    assert z.dtype is c8 and z.tolist() == [1.5 + 0j, -2 + 0j]
    assert z.astype(c16).dtype is c16 and gp.astype(z, gp.bool_).tolist() == [True, True]
    for target in (f4, f8, gp.int32):
        with pytest.raises(TypeError, match=f"cannot cast complex64 to {target.name}"):
            z.astype(target)
    with pytest.raises(TypeError, match="cannot cast complex64 to float32"):
        x[...] = z  # assignment is a cast too
    with pytest.raises(TypeError, match="complex value"):
        x[...] = 1j
    with pytest.raises(TypeError, match="complex value"):
        x[gp.asarray([True, False])] = 2j


def test_creation() -> None:
    assert gp.asarray([1 + 2j, 3]).dtype is c8  # Python complex: the default complex dtype
    host = np.array([[1 + 2j, -3j]], dtype=np.complex128)
    assert gp.asarray(host).dtype is c16 and gp.from_numpy(host).to_numpy().tolist() == [
        [1 + 2j, -3j]
    ]
    assert gp.asarray(host, dtype=c8).dtype is c8
    with pytest.raises(TypeError, match="cannot convert complex data to float32"):
        gp.asarray(host, dtype=f4)
    assert gp.zeros((2,), dtype=c16).tolist() == [0j, 0j]
    assert gp.ones((1,), dtype="complex64").tolist() == [1 + 0j]
    full = gp.full((2, 2), 1 - 1j)
    assert full.dtype is c8 and np.all(full.to_numpy() == 1 - 1j)
    assert gp.full((1,), 2, dtype=c16).tolist() == [2 + 0j]
    assert gp.full_like(full, 3j).tolist() == [[3j, 3j], [3j, 3j]]
    with pytest.raises(TypeError, match="complex value"):
        gp.full((2,), 1j, dtype=f4)
    assert gp.empty((3,), dtype=c8).dtype is c8
    np.testing.assert_array_equal(gp.eye(3, 4, k=1, dtype=c16).to_numpy(), np.eye(3, 4, k=1))
    ls = gp.linspace(0, 1 + 2j, 5)
    assert ls.dtype is c8
    np.testing.assert_allclose(ls.to_numpy(), np.linspace(0, 1 + 2j, 5), rtol=1e-6)
    np.testing.assert_allclose(gp.linspace(0, 1, 3, dtype=c16).to_numpy(), [0, 0.5, 1])
    with pytest.raises(TypeError, match="complex dtype"):
        gp.linspace(0, 1j, 3, dtype=f4)
    with pytest.raises(TypeError, match="arange: dtype must be a real dtype"):
        gp.arange(3, dtype=c8)


def test_scalars_and_printing() -> None:
    z = gp.asarray(np.array(1.5 - 2j, dtype=np.complex64))
    assert z.item() == 1.5 - 2j and complex(z) == 1.5 - 2j and bool(z)
    with pytest.raises(TypeError, match="to float"):
        float(z)
    with pytest.raises(TypeError, match="to int"):
        int(z)
    text = repr(gp.asarray(np.array([1 + 2j, -0.5j], dtype=np.complex128)))
    assert text.startswith("GPUArray([") and "2.j" in text and "dtype=complex128" in text


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_dlpack_roundtrip_with_numpy(dtype: Any) -> None:
    host = (np.arange(12).reshape(3, 4) * (1 - 0.5j)).astype(dtype)
    g = gp.asarray(host)[:, ::-2]
    back = np.from_dlpack(g)
    np.testing.assert_array_equal(back, host[:, ::-2])
    assert back.dtype == dtype
    again = gp.from_dlpack(host[::2])
    assert again.dtype.to_numpy_dtype() == dtype
    np.testing.assert_array_equal(again.to_numpy(), host[::2])


def test_kernels_without_a_dtype_list_refuse_complex() -> None:
    """A provider that says nothing about dtypes is never handed complex data."""
    provider = KernelProvider("oldstyle", device_type="cpu")
    provider.add("add", lambda *a: None)
    kernel = provider.kernels["add"]
    assert kernel.refusal((f4, f4)) is None
    reason = kernel.refusal((f4, c8))
    assert reason is not None and "complex64" in reason and "real dtypes only" in reason
    provider.add("add", lambda *a: None, dtypes=["complex64"])
    assert provider.kernels["add"].refusal((c8,)) is None


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    yield from testsite.isolated_config(monkeypatch, tmp_path)


@pytest.fixture
def toyblas(project: Path, tmp_path: Path) -> Iterator[Any]:
    yield from testsite.toyblas_in_process(tmp_path)


def test_dispatch_names_the_complex_dtype(toyblas: Any) -> None:
    z = gp.asarray(np.array([1j, 2], dtype=np.complex64))
    with pytest.raises(DispatchError, match="cannot run add: no kernel for dtype complex64"):
        gp.add(z, z, backend="toyblas")
    assert gp.add(z, z).tolist() == [2j, 4 + 0j]  # the cpu provider serves it
    assert toyblas.calls["add"] == 0
    assert "toyblas: no kernel for dtype complex64" in str(gp.explain("add", z, z))
