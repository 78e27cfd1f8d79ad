"""CPU kernels of the linalg functions."""

from __future__ import annotations

from ..._providers import KernelProvider


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
