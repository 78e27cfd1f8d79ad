"""StreamCopier from Python: it needs a device table with the async slot (the CPU pool has
none), and its tuning arguments are checked. Copies themselves: cargo tests over a fake
stream, and tests/cuda/gpu/test_cuda_transfers.py on a GPU."""

from __future__ import annotations

import pytest

rust = pytest.importorskip("_pygpukit_rust")


def test_a_pool_without_async_copies_is_refused() -> None:
    with pytest.raises(ValueError, match="no async copy functions"):
        rust.StreamCopier(rust.MemoryPool())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"threads": 0}, "threads must be > 0"), ({"chunk_max": -1}, "chunk_max must be > 0"),
     ({"direct_below": -5}, "direct_below must be >= 0")],
)  # fmt: skip
def test_tuning_arguments_are_checked(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rust.StreamCopier(rust.MemoryPool(), **kwargs)


def test_transfer_error_is_a_runtime_error() -> None:
    assert issubclass(rust.TransferError, RuntimeError)
