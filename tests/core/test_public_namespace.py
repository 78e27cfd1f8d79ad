"""`pygpukit`'s namespace: only public names, the Array API constants, and the creation
edge cases the Array API test suite checks (empty ranges, diagonals off the matrix)."""

from __future__ import annotations

import math
import types

import numpy as np
import pygpukit as gp
import pytest

#: submodules that are public on purpose
PUBLIC_MODULES = {
    "backend", "backends", "benchmark", "config", "core", "device_info", "fft", "hookspecs",
    "audio", "jit", "llm", "memory", "ops", "ops_catalog", "plugins", "scheduler", "testing",
}  # fmt: skip


def test_no_implementation_names_leak_into_the_namespace() -> None:
    # (pytest's assertion rewriting adds names such as "@py_builtins": not identifiers)
    public = {n for n in dir(gp) if not n.startswith("_") and n.isidentifier()}
    leaks = {"Any", "annotations", "BINARY", "UNARY", "apply_binary", "apply_unary", "assign",
             "fill", "inplace", "getitem_advanced", "setitem_advanced"}  # fmt: skip
    assert not leaks & public, leaks & public
    modules = {n for n in public if isinstance(getattr(gp, n), types.ModuleType)}
    assert modules <= PUBLIC_MODULES, modules - PUBLIC_MODULES


def test_every_public_name_is_documented_or_a_value() -> None:
    for name in dir(gp):
        if name.startswith("_") or not name.isidentifier():
            continue
        value = getattr(gp, name)
        if isinstance(value, (types.FunctionType, type)):
            assert value.__doc__, f"pygpukit.{name} has no docstring"


def test_array_api_constants() -> None:
    assert gp.e == math.e and type(gp.e) is float
    assert gp.pi == math.pi and type(gp.pi) is float
    assert gp.inf == math.inf and type(gp.inf) is float
    assert math.isnan(gp.nan) and type(gp.nan) is float
    assert gp.newaxis is None
    x = gp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x[gp.newaxis].shape == (1, 2, 3)
    assert x[:, gp.newaxis, :].shape == (2, 1, 3)
    np.testing.assert_array_equal(gp.full(2, gp.inf).to_numpy(), [np.inf, np.inf])


@pytest.mark.parametrize(
    "args",
    [(0,), (5,), (-5,), (1, 0), (0, 0, 1), (0, 10, 3), (10, 0, -3), (0, 1, 0.1),
     (0.5, 2.7, 0.3), (2, 5.5), (10, 1, -2.5), (0, -1, 1), (3, 3, -1)],
)  # fmt: skip
def test_arange_edges_match_numpy(args: tuple[float, ...]) -> None:
    ref = np.arange(*args)
    got = gp.arange(*args).to_numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "float16", "float64"])
def test_arange_and_eye_empty_with_any_dtype(dtype: str) -> None:
    assert gp.arange(0, 0, 1, dtype=dtype).shape == (0,)
    assert gp.eye(0, dtype=dtype).shape == (0, 0)
    assert gp.eye(0, 3, dtype=dtype).shape == (0, 3)


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (3, 5, 2), (4, 2, -1), (3, 3, 5), (3, 3, -7),
                                   (1, 4, 3), (5, 1, -4)])  # fmt: skip
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float32"])
def test_eye_matches_numpy(n: int, m: int | None, k: int, dtype: str) -> None:
    np.testing.assert_array_equal(
        gp.eye(n, m, k=k, dtype=dtype).to_numpy(), np.eye(n, m, k=k, dtype=dtype)
    )


def test_asarray_whole_floats_convert_to_integers_exactly() -> None:
    np.testing.assert_array_equal(gp.asarray([1.0, -3.0], dtype="int32").to_numpy(), [1, -3])
    assert gp.asarray([], dtype="uint8").shape == (0,)
    with pytest.raises(TypeError, match="nan is not a whole number"):
        gp.asarray([1.0, float("nan")], dtype="int64")
    with pytest.raises(OverflowError, match="300 is out of range for int8"):
        gp.asarray([300.0], dtype="int8")
