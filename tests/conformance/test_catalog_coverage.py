"""The catalog covers every kernel the cpu backend has, with sound cases for each dtype."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._plugins import registry
from pygpukit.testing.conformance.catalog import OpSpec, catalog, register_family

#: kernels whose outputs are sized by the data or updated in place: no poisoned output
NO_DIRECT = {"nonzero", "unique", "mask_select", "mask_assign", "scatter", "rope_inplace",
             "bias_add_inplace", "rope_at_inplace", "kv_cache_write",
             "kv_cache_write_pair", "rope_kv_cache_write", "decode_advance"}  # fmt: skip
SPECS = catalog()
NEW_FAMILIES = {"reduction", "searching", "sorting", "sets", "manipulation", "indexing", "linalg",
                "nn", "complex", "fft", "decode"}  # fmt: skip


def test_every_cpu_kernel_has_a_spec() -> None:
    missing = sorted(set(registry().providers["cpu"].kernels) - {s.name for s in SPECS})
    assert not missing, f"ops with a cpu kernel but no conformance spec: {missing}"


def test_spec_ids_are_unique() -> None:
    repeated = [i for i, n in Counter(s.id for s in SPECS).items() if n > 1]
    assert not repeated


@pytest.mark.parametrize("spec", [s for s in SPECS if s.family in NEW_FAMILIES], ids=lambda s: s.id)
def test_new_family_cases_are_sound(spec: OpSpec) -> None:
    """Each dtype gives cases; outputs are poisonable where the kernel writes them."""
    device = gp.Device("cpu")
    for d in spec.dtypes:
        cases = spec.cases(np.random.default_rng(0), d, device)
        assert cases, f"{spec.id}[{d.name}] has no cases"
        direct = [c for c in cases if c.direct is not None]
        if spec.name in NO_DIRECT:
            assert not direct
        else:
            assert direct, f"{spec.id}[{d.name}]: no case calls the kernel directly"
            assert any(np.size(c.out_expected) for c in direct), "every output is empty"


def test_families_register_once() -> None:
    before = len(catalog())
    register_family(lambda: [])
    from pygpukit.testing.conformance import catalog as module

    module._FAMILIES.pop()
    assert len(catalog()) == before
