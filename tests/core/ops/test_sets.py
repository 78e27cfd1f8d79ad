"""unique_all, unique_counts, unique_inverse, unique_values against np.unique(equal_nan=False)."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from test_statistical_strategies import Case, cases, plain_signature, to_float64

FAST = settings(max_examples=50, deadline=None)


def reference(host: np.ndarray) -> tuple[np.ndarray, ...]:
    """np.unique over float64 values (exact for every dtype here), each NaN distinct."""
    values, index, inverse, counts = np.unique(
        to_float64(host).reshape(-1),
        return_index=True, return_inverse=True, return_counts=True, equal_nan=False,
    )  # fmt: skip
    return values, index, inverse.reshape(host.shape), counts


def ints(a: gp.GPUArray) -> np.ndarray:
    assert a.dtype == gp.int64
    return a.to_numpy()


@FAST
@given(cases(styles=("ties", "nan")))
def test_unique_all_matches_numpy(c: Case) -> None:
    got = gp.unique_all(c.x)
    assert got._fields == ("values", "indices", "inverse_indices", "counts")
    values, index, inverse, counts = reference(c.host)
    assert got.values.dtype == c.x.dtype and got.values.ndim == 1
    np.testing.assert_array_equal(to_float64(got.values.to_numpy()), values)
    np.testing.assert_array_equal(ints(got.indices), index)
    np.testing.assert_array_equal(ints(got.inverse_indices), inverse)
    np.testing.assert_array_equal(ints(got.counts), counts)
    # the first occurrence's element itself, so a -0.0 found first stays -0.0
    flat = c.host.reshape(-1)
    np.testing.assert_array_equal(got.values.to_numpy().view(np.uint8), flat[index].view(np.uint8))


@FAST
@given(cases(styles=("ties", "nan")))
def test_the_smaller_functions_agree_with_unique_all(c: Case) -> None:
    values, _, inverse, counts = reference(c.host)
    got_counts = gp.unique_counts(c.x)
    assert got_counts._fields == ("values", "counts")
    np.testing.assert_array_equal(to_float64(got_counts.values.to_numpy()), values)
    np.testing.assert_array_equal(ints(got_counts.counts), counts)
    got_inverse = gp.unique_inverse(c.x)
    assert got_inverse._fields == ("values", "inverse_indices")
    np.testing.assert_array_equal(ints(got_inverse.inverse_indices), inverse)
    got_values = gp.unique_values(c.x)
    assert isinstance(got_values, gp.GPUArray) and got_values.dtype == c.x.dtype
    np.testing.assert_array_equal(to_float64(got_values.to_numpy()), values)


def test_each_nan_is_its_own_value() -> None:
    nan = float("nan")
    x = gp.asarray([[nan, 1.0], [nan, 1.0]])
    values, indices, inverse, counts = gp.unique_all(x)
    assert np.isnan(values.to_numpy()[1:]).all() and values.shape == (3,)
    assert counts.tolist() == [2, 1, 1] and indices.tolist() == [1, 0, 2]
    assert inverse.tolist() == [[1, 0], [2, 0]]
    zeros = gp.unique_counts(gp.asarray([-0.0, 0.0, 2.0]))
    assert zeros.counts.tolist() == [2, 1]
    assert np.signbit(zeros.values.to_numpy()).tolist() == [True, False]


def test_empty_and_zero_d_inputs() -> None:
    e = gp.unique_all(gp.zeros((2, 0), dtype="int16"))
    assert e.values.shape == e.indices.shape == e.counts.shape == (0,)
    assert e.values.dtype == gp.int16 and e.inverse_indices.shape == (2, 0)
    s = gp.unique_inverse(gp.asarray(5, dtype="uint8"))
    assert s.values.tolist() == [5] and s.inverse_indices.shape == ()


@pytest.mark.parametrize(
    "fn", [gp.unique_all, gp.unique_counts, gp.unique_inverse, gp.unique_values]
)
def test_bad_inputs_raise(fn: object) -> None:
    with pytest.raises(TypeError, match="float8_e5m2"):
        fn(gp.ones(3).astype("float8_e5m2"))  # type: ignore[operator]
    with pytest.raises(TypeError, match="GPUArray"):
        fn([1, 2, 2])  # type: ignore[operator]


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse", "unique_values"])
def test_array_api_signature(name: str) -> None:
    fn = getattr(gp, name)
    assert plain_signature(fn) == "(x, /, *, backend=None)"
    assert gp.unique_values(gp.asarray([2, 1, 2]), backend="cpu").tolist() == [1, 2]
