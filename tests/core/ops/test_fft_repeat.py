"""gp.fft's repeat path: a kernel's ``fresh_for`` is asked once per decided call and its
answer then runs the whole call; NotImplemented falls back to the kernel, None forgets it,
other settings decide again, and a provider without a native launch gate is never asked."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._dispatch import kernel_for
from pygpukit._ops import fourier

RNG = np.random.default_rng(12)


class Repeats:
    """A cpu provider whose fft_r2c computes through the built-in kernel and offers a repeat
    that answers what `answer` says (None: run the kernel itself)."""

    def __init__(self, gated: bool) -> None:
        self.provider = gp.KernelProvider("fftrepeat", device_type="cpu", priority=100,
                                          gates_launches=gated)  # fmt: skip
        self.kernel_calls = 0
        self.asked: list[tuple[Any, ...]] = []
        self.repeats = 0
        self.answer: Callable[[gp.GPUArray], Any] | None = None

        def r2c(x: gp.GPUArray, out: gp.GPUArray, axes: tuple[int, ...], scale: float) -> None:
            self.kernel_calls += 1
            builtin = kernel_for("fft_r2c", x.device, (x.dtype,), "cpu").fn
            builtin(x, out, axes, scale)

        def fresh_for(x: gp.GPUArray, out: gp.GPUArray, axes: tuple[int, ...],
                      scale: float) -> Callable[[gp.GPUArray], Any]:  # fmt: skip
            self.asked.append((x.shape, x.strides, out.shape, axes, scale))

            def run(y: gp.GPUArray) -> Any:
                self.repeats += 1
                if self.answer is not None:
                    return self.answer(y)
                result = gp.empty(out.shape, dtype=out.dtype, device=y.device)
                r2c(y, result, axes, scale)
                return result

            return run

        r2c.fresh_for = fresh_for  # type: ignore[attr-defined]
        self.provider.add("fft_r2c", r2c, ["float64"])


@pytest.fixture
def repeats() -> Iterator[Repeats]:
    with _registered(Repeats(gated=True)) as made:
        yield made


@contextlib.contextmanager
def _registered(made: Repeats) -> Iterator[Repeats]:
    class Plugin:
        @gp.hookimpl
        def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
            register(made.provider)

    fourier._decided.clear()
    gp.plugins.register(Plugin(), "fftrepeat-plugin")
    try:
        yield made
    finally:
        gp.plugins.unregister("fftrepeat-plugin")
        fourier._decided.clear()


def _cpu(a: np.ndarray) -> gp.GPUArray:
    """On the CPU device, where the test's provider lives (a GPU machine's default is cuda)."""
    return gp.asarray(a, device="cpu")


def _check(got: gp.GPUArray, a: np.ndarray, **kwargs: Any) -> None:
    np.testing.assert_allclose(got.to_numpy(), np.fft.rfft(a, **kwargs), rtol=1e-9, atol=1e-9)


def test_the_repeat_is_asked_once_then_runs_each_later_call(repeats: Repeats) -> None:
    a = RNG.standard_normal((4, 16))
    x = _cpu(a)
    _check(gp.fft.rfft(x, norm="ortho"), a, norm="ortho")
    assert repeats.kernel_calls == 1 and len(repeats.asked) == 1
    assert repeats.asked[0] == ((4, 16), x.strides, (4, 9), (1,), pytest.approx(0.25))
    for _ in range(3):
        _check(gp.fft.rfft(_cpu(a), norm="ortho"), a, norm="ortho")
    assert repeats.repeats == 3 and len(repeats.asked) == 1 and repeats.kernel_calls == 4


def test_a_declined_repeat_falls_back_to_the_kernel(repeats: Repeats) -> None:
    a = RNG.standard_normal((3, 10))
    gp.fft.rfft(_cpu(a))
    repeats.answer = lambda y: NotImplemented
    for _ in range(2):
        _check(gp.fft.rfft(_cpu(a)), a)
    # kept: each call asks the repeat, then runs the kernel; nothing is decided again
    assert repeats.repeats == 2 and repeats.kernel_calls == 3 and len(repeats.asked) == 1


def test_a_retired_repeat_is_forgotten_and_the_call_decided_again(repeats: Repeats) -> None:
    a = RNG.standard_normal((3, 10))
    gp.fft.rfft(_cpu(a))
    repeats.answer = lambda y: None
    _check(gp.fft.rfft(_cpu(a)), a)
    assert len(repeats.asked) == 2  # the full path ran and asked for a new repeat
    repeats.answer = None
    _check(gp.fft.rfft(_cpu(a)), a)
    assert repeats.kernel_calls == 3


def test_strides_are_part_of_the_key(repeats: Repeats) -> None:
    a = RNG.standard_normal((16, 6))
    x = _cpu(a)
    _check(gp.fft.rfft(gp.permute_dims(x, (1, 0))), a.T)
    _check(gp.fft.rfft(_cpu(np.ascontiguousarray(a.T))), a.T)  # same shape, other strides
    assert len(repeats.asked) == 2 and repeats.repeats == 0


def test_other_settings_decide_again(repeats: Repeats) -> None:
    a = RNG.standard_normal((2, 8))
    gp.fft.rfft(_cpu(a))
    with gp.config.use(allow_tf32=True):  # another settings snapshot
        _check(gp.fft.rfft(_cpu(a)), a)
    assert len(repeats.asked) == 2 and repeats.repeats == 0


def test_a_provider_without_its_own_launch_gate_is_never_asked() -> None:
    with _registered(Repeats(gated=False)) as made:
        a = RNG.standard_normal((2, 8))
        for _ in range(3):
            _check(gp.fft.rfft(_cpu(a)), a)
        assert made.asked == [] and made.kernel_calls == 3
