"""The binary functions' and operators' first lines: two arrays of one dtype on one device go
straight to the kernel's ``fresh`` once the op layer has learned it; what it declines runs
the kernel (asking ``fresh`` once, not twice), and other settings, an explicit backend or a
plugin change take the general path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._dispatch import kernel_for
from pygpukit._ops import elementwise

RNG = np.random.default_rng(21)


class FreshAdd:
    """A gated cpu provider of float64 `add` whose kernel offers a counting `fresh`."""

    def __init__(self) -> None:
        self.provider = gp.KernelProvider("freshadd", device_type="cpu", priority=100,
                                          gates_launches=True)  # fmt: skip
        self.kernel_calls = 0
        self.fresh_calls = 0
        self.decline = False

        def add(x1: Any, x2: Any, out: gp.GPUArray, compute: Any) -> None:
            self.kernel_calls += 1
            kernel_for("add", out.device, (out.dtype, out.dtype), "cpu").fn(x1, x2, out, compute)

        def fresh(x1: gp.GPUArray, x2: gp.GPUArray) -> Any:
            self.fresh_calls += 1
            if self.decline or x1.shape != x2.shape:
                return NotImplemented
            out = gp.empty(x1.shape, dtype=x1.dtype, device=x1.device)
            add(x1, x2, out, x1.dtype)
            return out

        add.fresh = fresh  # type: ignore[attr-defined]
        self.provider.add("add", add, ["float64"])


@pytest.fixture
def fresh_add(register_provider: Any) -> FreshAdd:
    made = FreshAdd()
    register_provider(made.provider)
    return made


def _pair(n: int = 5) -> tuple[np.ndarray, np.ndarray, gp.GPUArray, gp.GPUArray]:
    a, b = RNG.standard_normal(n), RNG.standard_normal(n)
    return a, b, gp.asarray(a, device="cpu"), gp.asarray(b, device="cpu")


def test_function_and_operator_go_to_fresh_once_learned(fresh_add: FreshAdd) -> None:
    a, b, x, y = _pair()
    for i, call in enumerate([gp.add, gp.add, lambda p, q: p + q, lambda p, q: q + p]):
        got = call(x, y)
        assert fresh_add.fresh_calls == i + 1 and fresh_add.kernel_calls == i + 1
        np.testing.assert_array_equal(got.to_numpy(), a + b)


def test_learned_calls_skip_the_dispatch_layers(
    fresh_add: FreshAdd, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, x, y = _pair()
    gp.add(x, y)  # learned

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(elementwise, "apply_binary", refuse)
    monkeypatch.setattr(elementwise, "_fast_binary", refuse)
    np.testing.assert_array_equal(gp.add(x, y).to_numpy(), a + b)
    np.testing.assert_array_equal((x + y).to_numpy(), a + b)
    assert fresh_add.fresh_calls == 3


def test_a_declined_call_runs_the_kernel_asking_fresh_once(fresh_add: FreshAdd) -> None:
    a, b, x, y = _pair()
    gp.add(x, y)  # learned
    fresh_add.decline = True
    for call in (gp.add, lambda p, q: p + q):
        before = (fresh_add.fresh_calls, fresh_add.kernel_calls)
        np.testing.assert_array_equal(call(x, y).to_numpy(), a + b)
        assert (fresh_add.fresh_calls, fresh_add.kernel_calls) == (before[0] + 1, before[1] + 1)
    row = gp.asarray(b[:1], device="cpu")  # broadcasting: fresh declines, the kernel runs
    np.testing.assert_array_equal((x + row).to_numpy(), a + b[:1])


def test_other_settings_backend_and_plugins_take_the_general_path(fresh_add: FreshAdd) -> None:
    a, b, x, y = _pair()
    gp.add(x, y)
    asked = fresh_add.fresh_calls
    with gp.config.use(dispatch={"add": "cpu"}):
        np.testing.assert_array_equal((x + y).to_numpy(), a + b)
        np.testing.assert_array_equal(gp.add(x, y).to_numpy(), a + b)
    np.testing.assert_array_equal(gp.add(x, y, backend="cpu").to_numpy(), a + b)
    assert fresh_add.fresh_calls == asked  # neither asked the provider's fresh
    gp.add(x, y)
    assert fresh_add.fresh_calls == asked + 1  # the default settings again: its fresh


def test_checks_still_apply_on_the_fast_path(fresh_add: FreshAdd) -> None:
    a, b, x, y = _pair(4)
    gp.add(x, y)
    with pytest.raises(ValueError, match="broadcast"):
        gp.add(x, gp.asarray(np.ones(3), device="cpu"))
    with pytest.raises(TypeError):
        gp.add(x, "text")  # type: ignore[arg-type]
    mixed = gp.add(x, gp.asarray(b.astype(np.float32), device="cpu"))
    assert mixed.dtype == gp.float64
    np.testing.assert_allclose(mixed.to_numpy(), a + b.astype(np.float32))


def test_unregistering_the_plugin_forgets_its_fresh() -> None:
    made = FreshAdd()

    class Plugin:
        @gp.hookimpl
        def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
            register(made.provider)

    a, b, x, y = _pair()
    gp.plugins.register(Plugin(), "freshadd-gone")
    try:
        gp.add(x, y)
        gp.add(x, y)
    finally:
        gp.plugins.unregister("freshadd-gone")
    asked = made.fresh_calls
    np.testing.assert_array_equal((x + y).to_numpy(), a + b)
    assert made.fresh_calls == asked
