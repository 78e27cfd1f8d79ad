"""The conformance suite catches subtly wrong kernels of the new families, and only those.

A provider registered in-process has a sum that drops the last element, a softmax
without the max subtraction, a matmul that ignores batch broadcasting, a max that
leaves one output element unwritten, and a correct prod; the suite is run against it
with ``pytest.main`` and must fail exactly the broken ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._array import GPUArray
from pygpukit._plugins import registry

NAME = "brokenfamilies"


def _broken_provider() -> gp.KernelProvider:
    from pygpukit.backends.cpu.views import view

    cpu = registry().providers["cpu"]
    provider = gp.KernelProvider(NAME, device_type="cpu", priority=-10)

    @provider.kernel("sum", dtypes=["float32", "int32"])
    def sum_without_last(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> None:
        a = view(x).astype(out.dtype.to_numpy_dtype())  # a copy
        if a.size:
            a.reshape(-1)[-1] = 0  # the last element is never added
        view(out)[...] = np.sum(a, axis=axes, keepdims=True)

    @provider.kernel("softmax", dtypes=["float32", "float64"])
    def naive_softmax(x: GPUArray, out: GPUArray, axis: int) -> None:
        with np.errstate(all="ignore"):
            e = np.exp(view(x).astype(np.float64))  # no max subtraction: overflows
            view(out)[...] = e / e.sum(axis=axis, keepdims=True)

    @provider.kernel("matmul", dtypes=["float32"])
    def first_batch_only(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool) -> None:
        b = view(x2)
        rhs = b.reshape(-1, *b.shape[-2:])[0] if b.size else b  # x2's first matrix for all
        view(out)[...] = np.matmul(view(x1), rhs)

    @provider.kernel("max", dtypes=["float32", "int64"])
    def max_but_last(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> None:
        result = np.max(view(x), axis=axes, keepdims=True)
        target = view(out).reshape(-1) if out.is_contiguous else None
        if target is None:
            view(out)[...] = result
            return
        target[:-1] = result.reshape(-1)[:-1]  # the last output element is left as it was

    provider.add("prod", cpu.kernels["prod"].fn, ["float32", "int8"])
    return provider


class _Plugin:
    def __init__(self) -> None:
        self.provider = _broken_provider()

    @gp.hookimpl
    def pygpukit_register_kernels(self, register: Any) -> None:
        register(self.provider)


class _Outcomes:
    """A pytest plugin recording each conformance test's outcome and skip reason."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.reasons: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid.split("::")[-1]
        if report.when == "call" or report.outcome != "passed":
            if self.outcomes.get(name) != "failed":
                self.outcomes[name] = report.outcome
            if report.skipped and isinstance(report.longrepr, tuple):
                self.reasons[name] = str(report.longrepr[2])


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Any]:
    api = registry()
    api.register(_Plugin(), NAME)
    try:
        recorder = _Outcomes()
        args = [f"--pygpukit-backend={NAME}", "--pyargs", "pygpukit.testing.conformance",
                "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=",
                "-W", "ignore::pytest.PytestAssertRewriteWarning"]  # fmt: skip
        code = pytest.main(args, plugins=[recorder])
    finally:
        api.unregister(NAME)
    return {"code": code, "outcomes": recorder.outcomes, "reasons": recorder.reasons}


def _spec(test_name: str) -> str:
    """'test_public_op_matches_numpy[sum-float32]' -> 'sum'."""
    param = test_name.split("[", 1)[1].rstrip("]")
    return param.rsplit("-", 1)[0] if "-" in param else param


def _failed(result: dict[str, Any]) -> set[str]:
    return {n for n, o in result["outcomes"].items() if o == "failed"}


def test_the_suite_fails(outcomes: dict[str, Any]) -> None:
    assert outcomes["code"] == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("op", ["sum", "softmax", "matmul", "max"])
def test_each_broken_kernel_is_caught(op: str, outcomes: dict[str, Any]) -> None:
    failed = [n for n in _failed(outcomes) if _spec(n).split("-")[0] == op]
    assert failed, f"no conformance test failed for the broken {op}"


def test_only_the_broken_kernels_fail(outcomes: dict[str, Any]) -> None:
    ops = {_spec(n).split("-")[0] for n in _failed(outcomes)}
    assert ops == {"sum", "softmax", "matmul", "max"}, sorted(_failed(outcomes))


def test_an_unwritten_output_element_is_caught_by_the_poisoned_output(
    outcomes: dict[str, Any],
) -> None:
    assert outcomes["outcomes"]["test_kernel_on_poisoned_outputs[max-float32]"] == "failed"
    assert outcomes["outcomes"]["test_kernel_on_poisoned_outputs[max-int64]"] == "failed"


def test_overflowing_softmax_fails_on_large_inputs(outcomes: dict[str, Any]) -> None:
    for d in ("float32", "float64"):
        assert outcomes["outcomes"][f"test_public_op_matches_numpy[softmax-{d}]"] == "failed"


def test_matmul_ignoring_batches_fails_both_matmul_specs(outcomes: dict[str, Any]) -> None:
    for spec in ("matmul", "matmul-allow_tf32"):
        assert outcomes["outcomes"][f"test_public_op_matches_numpy[{spec}-float32]"] == "failed"


def test_correct_kernel_passes_on_its_declared_dtypes_only(outcomes: dict[str, Any]) -> None:
    ran = {n: o for n, o in outcomes["outcomes"].items() if "[" in n and _spec(n) == "prod"}
    assert ran == {
        f"{test}[prod-{d}]": "passed"
        for test in ("test_public_op_matches_numpy", "test_kernel_on_poisoned_outputs")
        for d in ("float32", "int8")
    }


def test_declared_dtypes_limit_the_params(outcomes: dict[str, Any]) -> None:
    sums = {n.split("[")[1] for n in outcomes["outcomes"] if "[sum-" in n}
    assert sums == {"sum-float32]", "sum-int32]"}


def test_missing_ops_are_skipped_with_a_reason(outcomes: dict[str, Any]) -> None:
    name = "test_public_op_matches_numpy[argsort]"
    assert outcomes["outcomes"][name] == "skipped"
    assert f"backend {NAME!r} has no kernel for 'argsort'" in outcomes["reasons"][name]
