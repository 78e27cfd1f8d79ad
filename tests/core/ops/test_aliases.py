"""The seed's short names: the same functions as the Array API names, same results."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit.testing import array_pairs, assert_allclose, dtypes, views

EXAMPLES = settings(max_examples=50, deadline=None)


@pytest.fixture(autouse=True)
def on_cpu() -> Iterator[None]:
    """These tests check the CPU kernels: new arrays stay on the CPU even beside a GPU."""
    with gp.config.use(device="cpu"):
        yield


@pytest.mark.parametrize(
    ("alias", "name"),
    [("sub", "subtract"), ("mul", "multiply"), ("div", "divide"), ("neg", "negative"),
     ("clamp", "clip")],
)  # fmt: skip
def test_alias_is_the_standard_function(alias: str, name: str) -> None:
    assert getattr(gp, alias) is getattr(gp, name)
    assert alias in gp._ops.aliases.__all__


@EXAMPLES
@given(pair=array_pairs(dtypes("float")))
def test_sub_mul_div_match_numpy(pair: tuple[gp.GPUArray, gp.GPUArray]) -> None:
    a, b = pair
    ha, hb = a.to_numpy().astype(np.float64), b.to_numpy().astype(np.float64)
    out_dtype = gp.result_type(a, b)
    assert_allclose(gp.sub(a, b), ha - hb, out_dtype)
    assert_allclose(gp.mul(a, b), ha * hb, out_dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        assert_allclose(gp.div(a, b), ha / hb, out_dtype)


@EXAMPLES
@given(x=views(dtypes(["signed", "float"])))
def test_neg_matches_numpy(x: gp.GPUArray) -> None:
    host = x.to_numpy()
    assert_allclose(gp.neg(x), -host, x.dtype)


@EXAMPLES
@given(
    x=views(dtypes(["signed", "float"])),
    lo=st.one_of(st.none(), st.integers(-5, 0)),
    hi=st.one_of(st.none(), st.integers(1, 6)),
)
def test_clamp_matches_numpy_clip(x: gp.GPUArray, lo: int | None, hi: int | None) -> None:
    host = x.to_numpy()
    out = gp.clamp(x, min=lo, max=hi)
    expected = host if lo is None and hi is None else np.clip(host, lo, hi)
    assert_allclose(out, expected, x.dtype)  # keeps x's dtype


def test_clamp_takes_positional_bounds_and_array_bounds() -> None:
    x = gp.asarray(np.array([-3.0, 0.5, 7.0], dtype=np.float32))
    np.testing.assert_array_equal(gp.clamp(x, 0.0, 1.0).to_numpy(), [0.0, 0.5, 1.0])
    hi = gp.asarray(np.array([10.0, 0.25, 5.0], dtype=np.float32))
    np.testing.assert_array_equal(gp.clamp(x, max=hi).to_numpy(), [-3.0, 0.25, 5.0])


def test_alias_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="cannot be broadcast"):
        gp.sub(gp.ones((2, 3)), gp.ones((4,)))
    with pytest.raises(TypeError, match="host ndarray"):
        gp.mul(gp.ones((2,)), np.ones(2))
    with pytest.raises(TypeError, match="bool"):
        gp.neg(gp.asarray([True, False]))
    with pytest.raises(TypeError, match="clip wants a GPUArray, got list"):
        gp.clamp([1.0, 2.0], min=0.0)  # type: ignore[arg-type]
