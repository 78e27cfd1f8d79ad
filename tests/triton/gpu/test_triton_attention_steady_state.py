"""Causal flash attention on the GPU at the benchmark's shape (16 heads x 2048): once tuned,
a call compiles and tunes nothing (the H100 once measured float16 at head_dim 64 4x slower
than bfloat16, from a noisy autotune choice; the speed itself is the benchmark's job)."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def _qkv(dtype: str, d: int) -> tuple[gp.GPUArray, gp.GPUArray, gp.GPUArray]:
    rng = np.random.default_rng(3)
    q, k, v = (gp.asarray(rng.standard_normal((1, 16, 2048, d)).astype(np.float32)).astype(dtype)
               for _ in range(3))  # fmt: skip
    return q, k, v


def test_a_tuned_call_compiles_and_tunes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from pygpukit.triton import autotune, launch

    q, k, v = _qkv("float16", 64)
    gp.sdpa_causal(q, k, v, backend="triton")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled or tuned in the steady state")

    monkeypatch.setattr(launch, "compile_program", refuse)
    monkeypatch.setattr(autotune, "tune", refuse)
    for _ in range(20):
        out = gp.sdpa_causal(q, k, v, backend="triton")
    assert np.isfinite(out.astype("float32").to_numpy()).all()
    entries = [e for full, e in autotune.table().items() if full.startswith("sdpa_causal|")]
    assert entries and all(e["config"].startswith("(") for e in entries)


def test_a_repeated_layout_runs_its_kept_plan_on_new_data() -> None:
    """The second call of a layout launches the kept plan with the new pointers: results
    follow the new inputs exactly as the full path computes them."""
    from pygpukit.triton.kernels import attention

    rng = np.random.default_rng(11)

    def draw() -> gp.GPUArray:
        return gp.asarray(rng.standard_normal((1, 8, 256, 64)).astype(np.float32)).astype(
            "bfloat16"
        )

    q, k, v = draw(), draw(), draw()
    first = gp.sdpa_causal(q, k, v, backend="triton").to_numpy()
    assert attention._plans  # tuned and settled: the layout's plan is kept
    q2, k2, v2 = draw(), draw(), draw()
    again = gp.sdpa_causal(q2, k2, v2, backend="triton").to_numpy()
    attention._plans.clear()  # the full path on the same new inputs
    full = gp.sdpa_causal(q2, k2, v2, backend="triton").to_numpy()
    assert np.array_equal(again.view(np.uint16), full.view(np.uint16))
    assert not np.array_equal(again.view(np.uint16), first.view(np.uint16))
