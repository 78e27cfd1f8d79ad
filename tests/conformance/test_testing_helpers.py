"""pygpukit.testing itself: strategies, tolerances, assertions, poison and the fixtures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import testing as gpt
from pygpukit._plugins import registry
from pygpukit.testing.conformance.catalog import catalog

FAST = settings(max_examples=40, deadline=None)


def test_tolerance_table_orders_dtypes_and_kinds() -> None:
    assert gpt.tolerance("int8") == (0.0, 0.0)
    assert gpt.tolerance(gp.float32, "exact") == (0.0, 0.0)
    f64, f32, f16, bf16 = (
        gpt.tolerance(d)[0] for d in ("float64", "float32", "float16", "bfloat16")
    )
    assert f64 < f32 < f16 < bf16
    assert gpt.tolerance("float32", "elementwise") <= gpt.tolerance("float32", "matmul")
    with pytest.raises(ValueError, match="op_kind"):
        gpt.tolerance("float32", "fuzzy")


def test_assert_allclose_reports_worst_index_and_errors() -> None:
    x = gp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32))
    gpt.assert_allclose(x, np.array([[1.0, 2.0], [3.0, 4.0 + 1e-7]]))
    with pytest.raises(AssertionError, match=r"max abs error 0.5.*worst at index \(1, 0\)"):
        gpt.assert_allclose(x, np.array([[1.0, 2.0], [3.5, 4.0]]))
    with pytest.raises(AssertionError, match="dtype is float32, expected float64"):
        gpt.assert_allclose(x, np.ones((2, 2)), gp.float64)
    with pytest.raises(AssertionError, match="shape"):
        gpt.assert_allclose(x, np.ones(4))
    with pytest.raises(TypeError, match="GPUArray"):
        gpt.assert_allclose(np.ones(2), np.ones(2))  # type: ignore[arg-type]


def test_assert_allclose_nan_inf_and_ints() -> None:
    x = gp.asarray(np.array([np.nan, np.inf, 1.0]))
    gpt.assert_allclose(x, np.array([np.nan, np.inf, 1.0]))
    with pytest.raises(AssertionError):
        gpt.assert_allclose(x, np.array([0.0, np.inf, 1.0]))
    with pytest.raises(AssertionError):
        gpt.assert_allclose(x, np.array([np.nan, -np.inf, 1.0]))
    i = gp.asarray(np.array([2**62 + 1], dtype=np.int64))
    with pytest.raises(AssertionError, match="differ"):
        gpt.assert_allclose(i, np.array([2**62], dtype=np.int64))  # exact beyond 2**53


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "uint8", "bool", "float8_e4m3fn"])
def test_poison_fills_contiguous_and_strided(dtype: str) -> None:
    for alternate in (False, True):
        base = gp.zeros((3, 4), dtype=dtype)
        gpt.poison(base[:, ::2], alternate=alternate)
        got = base.to_numpy().astype(np.float64)
        want = float(gpt.poison_value(dtype, alternate=alternate))
        np.testing.assert_array_equal(got[:, ::2], np.full((3, 2), want))
        assert not got[:, 1::2].any(), "poison wrote outside the view"
        whole = gpt.poison(gp.zeros((2,), dtype=dtype), alternate=alternate)
        np.testing.assert_array_equal(whole.to_numpy().astype(np.float64), [want, want])
    assert gpt.poison_value(dtype) != gpt.poison_value(dtype, alternate=True) or np.isnan(
        float(gpt.poison_value(dtype))
    )


@FAST
@given(gpt.views())
def test_views_strategy_gives_views_of_every_kind(x: gp.GPUArray) -> None:
    host = x.to_numpy()
    assert host.shape == x.shape
    if x.size > 1 and x.ndim:
        assert x.to_numpy().any() or x.dtype.kind == "b"


def test_views_strategy_covers_non_contiguous_and_edge_sizes() -> None:
    seen: dict[str, bool] = {"noncontig": False, "zero": False, "one": False, "zero_stride": False}

    # a broadcast (zero-stride) view is about 1 draw in 25: enough draws, and a fixed seed,
    # so that this checks the strategy rather than luck (150 random draws missed it at times)
    @settings(max_examples=400, deadline=None, derandomize=True, database=None)
    @given(gpt.views(dtype="float32"))
    def probe(x: gp.GPUArray) -> None:
        seen["noncontig"] |= not x.is_contiguous
        seen["zero"] |= x.size == 0
        seen["one"] |= x.size == 1
        seen["zero_stride"] |= 0 in x.strides and x.size > 1

    probe()
    assert all(seen.values()), seen


@FAST
@given(gpt.array_pairs(gpt.dtypes("float")))
def test_array_pairs_broadcast(pair: tuple[gp.GPUArray, gp.GPUArray]) -> None:
    a, b = pair
    assert np.broadcast_shapes(a.shape, b.shape) == (a + b).shape


@FAST
@given(st.data())
def test_shapes_and_dtypes_respect_bounds(data: Any) -> None:
    s = data.draw(gpt.shapes(min_dims=1, max_dims=2, min_side=2, max_side=3))
    assert 1 <= len(s) <= 2 and all(2 <= n <= 3 for n in s)
    d = data.draw(gpt.dtypes(["integer", "bool"]))
    assert d.is_integer or d.kind == "b"
    x = data.draw(gpt.arrays(d, s, elements=(0, 1)))
    assert x.shape == s and x.dtype is d and x.to_numpy().min() >= 0


def test_bad_strategy_arguments_raise() -> None:
    with pytest.raises(ValueError, match="dtype kind"):
        gpt.dtypes("quaternion")
    with pytest.raises(ValueError, match="min_dims"):
        gpt.shapes(min_dims=3, max_dims=1)


@settings(max_examples=10, deadline=None)
@given(d=gpt.dtypes("complex"), x=gpt.arrays("complex128", (3, 4), (-1.0, 1.0)))
def test_complex_strategies(d: gp.DataType, x: gp.GPUArray) -> None:
    assert d in (gp.complex64, gp.complex128)
    host = x.to_numpy()
    assert x.dtype is gp.complex128 and np.all(np.abs(host.real) <= 1)
    assert np.any(host.imag != 0)  # both parts are drawn


def test_fixtures_backend_and_device(backend: str, device: gp.Device) -> None:
    assert backend == "cpu"
    assert device.type == "cpu"


class _BrokenPlugin:
    """A provider whose add writes only the first element and whose exp is off by 1%."""

    def __init__(self) -> None:
        from pygpukit.backends.cpu.views import operand, view

        provider = gp.KernelProvider("brokencpu", device_type="cpu", priority=-10)

        @provider.kernel("add")
        def add(x1: Any, x2: Any, out: gp.GPUArray, compute: Any) -> None:
            view(out).reshape(-1)[:1] = (operand(x1, compute) + operand(x2, compute)).reshape(-1)[
                :1
            ]

        @provider.kernel("exp")
        def exp(x: gp.GPUArray, out: gp.GPUArray) -> None:
            view(out)[...] = np.exp(operand(x, out.dtype)) * 1.01

        self.provider = provider

    @gp.hookimpl
    def pygpukit_register_kernels(self, register: Any) -> None:
        register(self.provider)


@pytest.mark.parametrize("op", ["add", "exp"])
def test_catalog_catches_a_broken_backend(op: str, register_plugin: Any, device: gp.Device) -> None:
    register_plugin(_BrokenPlugin(), "brokencpu")
    assert "brokencpu" in registry().providers
    spec = next(s for s in catalog() if s.name == op)
    failures = 0
    for case in spec.cases(np.random.default_rng(0), gp.float32, device):
        try:
            gpt.assert_allclose(
                case.run("brokencpu"), case.expected, case.dtype, op_kind=spec.op_kind
            )
        except AssertionError:
            failures += 1
    assert failures > 0


def test_register_plugin_unregisters_at_teardown(register_plugin: Any) -> None:
    register_plugin(_BrokenPlugin(), "brokencpu")
    assert "brokencpu" in registry().providers


def test_previous_test_left_no_plugin_behind() -> None:
    assert "brokencpu" not in registry().providers
