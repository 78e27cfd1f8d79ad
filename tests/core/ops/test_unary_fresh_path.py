"""The unary functions' and operators' first lines: an array goes straight to the kernel's
``fresh`` once the op layer has learned it; what it declines runs the kernel (asking
``fresh`` once), and other settings or an explicit backend take the general path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._dispatch import kernel_for
from pygpukit._ops import elementwise

RNG = np.random.default_rng(22)


class FreshUnary:
    """A gated cpu provider of float64 `exp` and `negative` whose kernels offer a `fresh`."""

    def __init__(self) -> None:
        self.provider = gp.KernelProvider("freshunary", device_type="cpu", priority=100,
                                          gates_launches=True)  # fmt: skip
        self.kernel_calls = 0
        self.fresh_calls = 0
        self.decline = False
        for op in ("exp", "negative"):
            self.provider.add(op, self._kernel(op), ["float64"])

    def _kernel(self, op: str) -> Callable[..., None]:
        def kernel(x: gp.GPUArray, out: gp.GPUArray) -> None:
            self.kernel_calls += 1
            kernel_for(op, x.device, (x.dtype,), "cpu").fn(x, out)

        def fresh(x: gp.GPUArray) -> Any:
            self.fresh_calls += 1
            if self.decline:
                return NotImplemented
            out = gp.empty(x.shape, dtype=x.dtype, device=x.device)
            kernel(x, out)
            return out

        kernel.fresh = fresh  # type: ignore[attr-defined]
        return kernel


@pytest.fixture
def fresh_unary(register_provider: Any) -> FreshUnary:
    made = FreshUnary()
    register_provider(made.provider)
    return made


def _array(n: int = 6) -> tuple[np.ndarray, gp.GPUArray]:
    a = RNG.standard_normal(n)
    return a, gp.asarray(a, device="cpu")


def test_learned_calls_skip_the_dispatch_layers(
    fresh_unary: FreshUnary, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, x = _array()
    gp.exp(x), -x  # learned
    assert fresh_unary.fresh_calls == 2

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(elementwise, "apply_unary", refuse)
    np.testing.assert_allclose(gp.exp(x).to_numpy(), np.exp(a), rtol=1e-12)
    np.testing.assert_array_equal((-x).to_numpy(), -a)
    assert fresh_unary.fresh_calls == 4 and fresh_unary.kernel_calls == 4


def test_a_declined_call_runs_the_kernel_asking_fresh_once(fresh_unary: FreshUnary) -> None:
    a, x = _array()
    gp.exp(x)
    fresh_unary.decline = True
    for call, want in ((gp.exp, np.exp(a)), (lambda y: -y, -a)):
        before = (fresh_unary.fresh_calls, fresh_unary.kernel_calls)
        np.testing.assert_allclose(call(x).to_numpy(), want, rtol=1e-12)
        assert (fresh_unary.fresh_calls, fresh_unary.kernel_calls) == (before[0] + 1, before[1] + 1)


def test_other_settings_and_backend_take_the_general_path(fresh_unary: FreshUnary) -> None:
    a, x = _array()
    gp.exp(x)
    asked = fresh_unary.fresh_calls
    with gp.config.use(dispatch={"exp": "cpu"}):
        np.testing.assert_allclose(gp.exp(x).to_numpy(), np.exp(a), rtol=1e-12)
    np.testing.assert_allclose(gp.exp(x, backend="cpu").to_numpy(), np.exp(a), rtol=1e-12)
    assert fresh_unary.fresh_calls == asked
    with pytest.raises(TypeError, match="wants a GPUArray"):
        gp.exp(a)  # type: ignore[arg-type]
