"""Every launch-plan cache of the CUDA backend, in one place.

A plan is what a hot call needs decided once per operand layout: an elementwise or cast
LaunchPlan, a reduction's launches and scratch size, a cuBLASLt MatmulPlan, matmul's bound
product, a cuFFT plan. Each family keys its own cache (its key is what its plan depends on);
all of them are bounded the same way — a program with endlessly new shapes starts over
rather than grows — and `forget()` drops them all, the native fast paths' copies of
elementwise plans included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class PlanCache(dict[tuple[Any, ...], Any]):
    """A family's plans by key; `put` starts over once `limit` plans are held."""

    def __init__(self, family: str, limit: int) -> None:
        super().__init__()
        self.family = family
        self.limit = limit
        #: called after each clear (copies of these plans held elsewhere)
        self.on_clear: list[Callable[[], None]] = []

    def put(self, key: tuple[Any, ...], plan: Any) -> Any:
        if len(self) >= self.limit:
            self.clear()
        self[key] = plan
        return plan

    def clear(self) -> None:
        super().clear()
        for hook in self.on_clear:
            hook()

    def __repr__(self) -> str:
        return f"<PlanCache {self.family}: {len(self)} of {self.limit}>"


ELEMENTWISE = PlanCache("elementwise", 4096)
CAST = PlanCache("cast", 1024)
REDUCTION = PlanCache("reduction", 4096)
#: problem key -> cuBLASLt MatmulPlan, or None where cuBLASLt has no algorithm
CUBLASLT = PlanCache("cublaslt", 4096)
#: matmul's hot-path key -> the bound cublaslt.Product that ran there
MATMUL = PlanCache("matmul", 4096)

#: transform layout (device, cufftType, sizes, embeddings, strides, batch) -> cuFFT FftPlan;
#: plans hold device memory (cuFFT's tables), so fewer are kept
CUFFT = PlanCache("cufft", 256)
#: an FFT pass's operand layouts -> cufft.plan's arguments, where no copy is needed
FFT_LAYOUT = PlanCache("fft_layout", 1024)
#: an FFT kernel call's operand layouts -> its single-pass decision (plan arguments, input
#: copied or not), or None where it takes the general path
FFT_FAST = PlanCache("fft_fast", 1024)

ALL = (ELEMENTWISE, CAST, REDUCTION, CUBLASLT, MATMUL, CUFFT, FFT_LAYOUT, FFT_FAST)


def forget() -> None:
    """Drop every plan of every family (they are rebuilt on next use)."""
    for cache in ALL:
        cache.clear()


def stats() -> dict[str, int]:
    """Plans held per family."""
    return {cache.family: len(cache) for cache in ALL}
