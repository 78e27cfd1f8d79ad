"""The backend's plan caches live in one module (plans.py): each family's module uses its
cache, every cache is bounded and starts over when full, and forget() empties them all."""

from __future__ import annotations

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import cast, cublaslt, matmul, plans, provider, reductions


def test_each_family_uses_its_cache_in_plans() -> None:
    assert provider._plans is plans.ELEMENTWISE
    assert cast._plans is plans.CAST
    assert reductions._plans is plans.REDUCTION
    assert cublaslt._plans is plans.CUBLASLT
    assert matmul._ready is plans.MATMUL
    assert {c.family for c in plans.ALL} == set(plans.stats())


def test_a_full_cache_starts_over_and_tells_its_copies() -> None:
    cache = plans.PlanCache("test", 2)
    cleared: list[int] = []
    cache.on_clear.append(lambda: cleared.append(len(cache)))
    for k in range(5):
        assert cache.put((k,), f"plan {k}") == f"plan {k}"
        assert len(cache) <= 2
    assert cleared == [0, 0]  # cleared before the third and the fifth plan
    assert cache[(4,)] == "plan 4" and (0,) not in cache
    assert "test: 1 of 2" in repr(cache)


def test_forget_empties_every_family() -> None:
    saved = {c.family: dict(c) for c in plans.ALL}
    try:
        for c in plans.ALL:
            dict.__setitem__(c, ("probe",), None)
        plans.forget()
        assert all(n == 0 for n in plans.stats().values())
    finally:
        for c in plans.ALL:
            dict.update(c, saved[c.family])
