"""Every elementwise op against NumPy (float64 references) on hypothesis-drawn views."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from pygpukit import testing as gpt
from pygpukit.testing.conformance.catalog import BINARY_REF, UNARY_REF

FLOATS = gpt.dtypes("float")


@pytest.mark.parametrize("op", sorted(set(UNARY_REF) - {"bitwise_invert"}))  # ~x: test_array
def test_unary_matches_float64_numpy(op: str) -> None:
    ref, domain, kind, _ = UNARY_REF[op]
    lo, hi = domain(gp.float32)

    @settings(max_examples=8, deadline=None)
    @given(gpt.views(dtype=FLOATS, elements=(lo, hi)))
    def check(x: gp.GPUArray) -> None:
        result = getattr(gp, op)(x)
        with np.errstate(all="ignore"):
            expected = ref(x.to_numpy().astype(np.float64))
        gpt.assert_allclose(result, expected, result.dtype, op_kind=kind)

    check()


@pytest.mark.parametrize("op", sorted(BINARY_REF))
def test_binary_broadcasting_matches_numpy(op: str) -> None:
    ref, _, _, kind, _ = BINARY_REF[op]
    dtypes = gpt.dtypes("integer") if op.startswith("bitwise") else FLOATS
    positive = (0.5, 3.0)

    @settings(max_examples=8, deadline=None)
    @given(gpt.array_pairs(dtypes, elements1=positive, elements2=positive))
    def check(pair: tuple[gp.GPUArray, gp.GPUArray]) -> None:
        a, b = pair
        result = getattr(gp, op)(a, b)
        args = [x.to_numpy() for x in pair]
        if result.dtype.is_floating and kind != "exact":
            args = [v.astype(np.float64) for v in args]
        with np.errstate(all="ignore"):
            expected = np.asarray(ref(*args))
        gpt.assert_allclose(result, expected, result.dtype, op_kind="transcendental")

    check()


def test_bad_inputs_raise_before_any_kernel() -> None:
    x = gp.ones(3)
    with pytest.raises(TypeError, match="GPUArray"):
        gp.exp(np.ones(3))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        gp.add(x, gp.ones(2))
    with pytest.raises(TypeError, match="integer"):
        gp.bitwise_and(x, x)
    with pytest.raises(TypeError, match="bool"):
        gp.negative(gp.ones(2, dtype=bool))
    with pytest.raises(ValueError, match="unknown backend"):
        gp.exp(x, backend="nope")
    with pytest.raises(ValueError, match="approximate"):
        gp.gelu(x, approximate="fast")


def test_weak_scalar_is_rounded_to_the_array_dtype() -> None:
    h = np.array([0.1, 0.3], dtype=np.float16)
    assert (gp.asarray(h) == 0.1).tolist() == (h == 0.1).tolist() == [True, False]


def test_gelu_and_where_on_0d_and_broadcast() -> None:
    gpt.assert_allclose(gp.gelu(gp.asarray(1.0)), np.asarray(0.8413447, dtype=np.float32))
    c = gp.asarray(np.array([[True], [False]]))
    got = gp.where(c, gp.asarray(np.arange(3.0, dtype=np.float32)), 5.0)
    np.testing.assert_array_equal(got.to_numpy(), [[0, 1, 2], [5, 5, 5]])
