"""Creation functions against NumPy, and their errors."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import testing as gpt


def test_creation_matches_numpy() -> None:
    np.testing.assert_array_equal(gp.arange(9, 1, -2).to_numpy(), np.arange(9, 1, -2))
    gpt.assert_allclose(gp.arange(0.5, 3.0, 0.25), np.arange(0.5, 3.0, 0.25))
    gpt.assert_allclose(
        gp.linspace(-2, 3, 7, endpoint=False), np.linspace(-2, 3, 7, endpoint=False)
    )
    np.testing.assert_array_equal(
        gp.eye(3, 4, k=-1, dtype=bool).to_numpy(), np.eye(3, 4, -1, dtype=bool)
    )
    h = np.random.default_rng(1).random((2, 4, 3)).astype(np.float32)
    x = gp.asarray(h).mT
    np.testing.assert_array_equal(gp.tril(x, k=1).to_numpy(), np.tril(h.swapaxes(1, 2), 1))
    np.testing.assert_array_equal(gp.triu(x).to_numpy(), np.triu(h.swapaxes(1, 2)))
    assert gp.full((2,), 3).dtype is gp.int64 and gp.full((2,), True).dtype is gp.bool_
    assert gp.zeros_like(x, dtype="int8").dtype is gp.int8 and gp.ones((0, 2)).shape == (0, 2)
    assert gp.asarray([1, 2.5]).dtype is gp.float32 and gp.asarray(np.ones(2)).dtype is gp.float64


def test_creation_errors_name_the_problem() -> None:
    with pytest.raises(TypeError, match="fill_value"):
        gp.full((2,), "x")  # type: ignore[arg-type]
    with pytest.raises(OverflowError, match="int8"):
        gp.full((2,), 300, dtype="int8")
    with pytest.raises(OverflowError, match="int8"):
        gp.arange(0, 300, dtype="int8")
    with pytest.raises(ValueError, match="finite"):
        gp.arange(float("nan"))
    with pytest.raises(ValueError, match="step"):
        gp.arange(0, 3, 0)
    with pytest.raises(ValueError, match="negative dimension"):
        gp.zeros((-1, 2))
    with pytest.raises(TypeError, match="GPUArray"):
        gp.tril(np.ones((2, 2)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 dimensions"):
        gp.triu(gp.ones(3))
    with pytest.raises(TypeError, match="truncate"):
        gp.asarray([1.5], dtype="int32")
    with pytest.raises(ValueError, match="num"):
        gp.linspace(0, 1, -1)
