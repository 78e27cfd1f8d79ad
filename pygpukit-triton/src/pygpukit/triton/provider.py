"""The `triton` kernel provider: which ops it serves, for which dtypes, on which device.

On a machine with Triton it serves cuda arrays (priority 5: below the cuda provider, so it
runs where a user picks it per op); under ``TRITON_INTERPRET=1`` it serves the cpu device
through Triton's interpreter (priority -10: never picked unless named), which is how the
conformance suite runs its kernels without a GPU. Without Triton every kernel is still
registered, refusing with the reason, so ``gp.explain`` and a ``backend="triton"`` call
say "triton not installed" rather than "no such backend".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pygpukit.backend import DataType, Kernel, KernelProvider, as_dtype

from . import availability

FLOATS = ("float16", "bfloat16", "float32", "float64")
HALVES = ("float16", "bfloat16")


@dataclass(frozen=True, slots=True)
class UnavailableKernel(Kernel):
    """A kernel that cannot run here (Triton missing or broken): refuses with the reason."""

    why: str = ""

    def refusal(self, dtypes: tuple[DataType, ...]) -> str | None:
        return self.why


def _table() -> list[tuple[str, Callable[..., Any], tuple[str, ...]]]:
    """(op, kernel, dtypes) of every kernel; imports Triton programs (Triton must import)."""
    from .kernels import attention, elementwise, matmul, rope, rows

    table: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
        ("softmax", rows.softmax, FLOATS),
        ("log_softmax", rows.log_softmax, FLOATS),
        ("layernorm", rows.layernorm, FLOATS),
        ("rmsnorm", rows.rmsnorm, FLOATS),
        ("rope_inplace", rope.rope_inplace, FLOATS),
        ("matmul", matmul.matmul, ("float16", "bfloat16", "float32")),
        ("sdpa_causal", attention.sdpa_causal, ("float16", "bfloat16", "float32")),
    ]
    for op, fn in elementwise.kernels().items():
        table.append((op, fn, FLOATS))
    return table


#: the ops served, for listing when Triton is missing (kept equal to _table's by a test)
OPS = ("softmax", "log_softmax", "layernorm", "rmsnorm", "rope_inplace", "matmul",
       "sdpa_causal")  # fmt: skip


def make_provider() -> KernelProvider:
    interpret = availability.interpret()
    provider = KernelProvider(
        "triton",
        device_type="cpu" if interpret else "cuda",
        priority=-10 if interpret else 5,
        description="Triton kernels compiled to CUBIN, launched through pygpukit-cuda's "
        "native launch point" + (" (TRITON_INTERPRET=1: Triton's interpreter on host arrays)"
                                 if interpret else ""),
        gates_launches=not interpret,  # CUBINs launch through the extension's gated plans
        name_errors=False,
    )  # fmt: skip
    from pygpukit.backend import register_op

    from .kernels.elementwise_ops import PLUGIN_OPS
    from .ops import swiglu, swiglu_inputs, swiglu_reference

    for op, signature in PLUGIN_OPS.items():
        # the reference lets `pytest --pygpukit-backend=triton --pyargs
        # pygpukit.testing.conformance` (and any other provider's swiglu) be checked
        register_op(
            op, signature, summary="silu(gate) * up, fused", reference=swiglu_reference,
            inputs=swiglu_inputs, function=swiglu,
        )  # fmt: skip
    ok, why = availability.status()
    if ok:
        for op, fn, dtypes in _table():
            provider.add(op, fn, dtypes)
        return provider
    from .kernels import elementwise_ops

    for op in (*OPS, *elementwise_ops.UNARY_OPS, *elementwise_ops.BINARY_OPS, *PLUGIN_OPS):
        provider.kernels[op] = UnavailableKernel(
            op,
            _unavailable(op, why),
            provider.name,
            frozenset(as_dtype(d) for d in FLOATS),
            why=why,
        )
    return provider


def _unavailable(op: str, why: str) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(f"the triton backend cannot run {op}: {why}")

    return kernel
