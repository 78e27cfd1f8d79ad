"""The elementwise fast paths (same-shape arrays, an array and a Python scalar, unary ops)
cache their dtype rule and kernel per settings snapshot: interleaved calls of different
dtypes, scalar types and sides must each match NumPy, and refusals must repeat."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins"))
import testsite

DTYPES = ["float32", "float64", "int8", "int32", "uint8", "float16"]


def fresh(rng: np.random.Generator, dtype: str, n: int) -> np.ndarray:
    if dtype.startswith("float"):
        return rng.uniform(-4, 4, n).astype(dtype)
    return rng.integers(1, 20, n).astype(dtype)


def test_interleaved_binary_calls_match_numpy() -> None:
    rng = np.random.default_rng(11)
    for i in range(200):
        dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
        n = int(rng.integers(1, 9))
        a, b = fresh(rng, dtype, n), fresh(rng, dtype, n)
        ga, gb = gp.asarray(a), gp.asarray(b)
        kind = int(rng.integers(0, 5))
        if kind == 0:
            got, want = ga + gb, a + b
        elif kind == 1:
            got, want = ga * 3, a * np.array(3, dtype)
        elif kind == 2:
            got, want = 2.5 - ga, np.array(2.5, dtype if dtype.startswith("f") else "f4") - a
        elif kind == 3:
            got, want = gp.exp(ga), np.exp(a.astype(np.float64))
        else:
            got, want = ga < gb, a < b
        what = f"call {i}: kind {kind} {dtype} n={n}"
        assert got.shape == want.shape, what
        tol = 1e-2 if dtype == "float16" else 1e-5
        if kind == 3 and not dtype.startswith("float"):
            assert got.dtype == gp.float32, what
        elif kind == 4:
            assert got.dtype == gp.bool_, what
        elif kind == 2 and not dtype.startswith("f"):
            assert got.dtype == gp.float32, what  # an int array and a float scalar
        else:
            assert got.dtype == dt.as_dtype(dtype), what
        np.testing.assert_allclose(got.to_numpy().astype(np.float64), want, rtol=tol, err_msg=what)


def test_int_scalar_range_is_checked_on_every_call() -> None:
    x = gp.asarray(np.arange(4, dtype=np.int8))
    assert (x + 100).to_numpy().tolist() == [100, 101, 102, 103]  # caches the rule
    for bad in (128, -129, 1000):
        with pytest.raises(OverflowError, match="out of range for int8"):
            x + bad
        with pytest.raises(OverflowError, match="out of range for int8"):
            bad * x
    assert (x - 3).to_numpy().tolist() == [-3, -2, -1, 0]


def test_refusals_repeat_and_are_not_cached() -> None:
    t = gp.asarray(np.array([True, False]))
    for _ in range(2):
        with pytest.raises(TypeError, match="numeric arrays"):
            t + t
        with pytest.raises(TypeError, match="numeric"):
            gp.negative(t)
    with pytest.raises(TypeError, match="wants a GPUArray"):
        gp.exp(np.ones(2))  # type: ignore[arg-type]


@pytest.fixture
def toyblas(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    # registered here (the fixture plugins are not installed): the test always runs
    for _ in testsite.isolated_config(monkeypatch, tmp_path):
        yield from testsite.toyblas_in_process(tmp_path)


def test_settings_changes_are_seen(toyblas: Any) -> None:
    x = gp.asarray(np.ones(3, np.float32))
    x + x  # fill the cache of the current settings
    before = toyblas.calls["add"]
    with gp.config.use(dispatch={"add": "toyblas"}):
        assert (x + x).to_numpy().tolist() == [2.0, 2.0, 2.0]
        assert (x + 1.0).to_numpy().tolist() == [2.0, 2.0, 2.0]
        assert gp.add(x, x, backend="cpu").to_numpy().tolist() == [2.0, 2.0, 2.0]
    assert toyblas.calls["add"] == before + 2  # the setting's provider, not the cached one
    x + x
    assert toyblas.calls["add"] == before + 2
