"""The llm benchmark family's parts on the CPU: its cases, the bandwidth table, the
weight bytes a step streams, the device-made model, and the load case; on the CPU the
decode rows are 'missing' (the GPU run is the device round's)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.benchmark import cases as C
from pygpukit.benchmark import llm_decode as L
from pygpukit.benchmark.cli import main
from pygpukit.benchmark.results import MISSING, PASS, Row
from pygpukit.benchmark.runner import Bench

TINY = dict(layers=2, hidden=32, heads=4, kv=2, head_dim=8, ffn=48, vocab=50)


def test_cases_follow_the_sizes() -> None:
    full = C.Sizes.preset("cuda", quick=False)
    keys = [c.case for c in C.build(["llm"], full)]
    assert (
        "TinyLlama-1.1B shape, bf16, batch 1" in keys and "Llama-3-8B shape, bf16, batch 1" in keys
    )
    assert "TinyLlama-1.1B shape, bf16, batch 32" in keys
    assert "Llama-shaped bf16 checkpoint, 2000 MB" in keys
    quick = [c.case for c in C.build(["llm"], C.Sizes.preset("cuda", quick=True))]
    assert quick == ["TinyLlama-1.1B shape, bf16, batch 1",
                     "TinyLlama-1.1B shape, bf16, batch 1, linear_rows",
                     "Llama-shaped bf16 checkpoint, 200 MB"]  # fmt: skip


def test_bandwidth_table_by_device_name() -> None:
    assert L.hbm_bandwidth("NVIDIA H100 80GB HBM3") == 3.35e12
    assert L.hbm_bandwidth("NVIDIA H100 PCIe") == 2.0e12
    assert L.hbm_bandwidth("NVIDIA H200") == 4.8e12
    assert L.hbm_bandwidth("NVIDIA GH200 480GB") == 4.0e12
    assert L.hbm_bandwidth("a GPU nobody listed") is None


PUBLISHED = [("TinyLlama-1.1B", 1_100_048_384), ("Llama-3-8B", 8_030_261_248)]


@pytest.mark.parametrize(("name", "params"), PUBLISHED)
def test_streamed_bytes_are_the_published_parameter_counts(name: str, params: int) -> None:
    shape = L.SHAPES[name]
    embedding = shape["vocab"] * shape["hidden"]  # read one row a step, not streamed
    assert L.weight_bytes_per_step(shape) // 2 + embedding == params


def test_device_made_model_decodes_like_its_eager_forward() -> None:
    from pygpukit.llm.static_decode import StaticDecoder

    model, weights = L.build_model(TINY, gp.Device.parse("cpu"))
    assert weights["q.0"].shape == (32, 32) and weights["q.0"].dtype == gp.bfloat16
    values = weights["u.1"].astype("float32").to_numpy()
    assert 0.5 < values.std() * np.sqrt(32) < 2 and len(np.unique(values)) > 100
    prompt = np.array([[3, 7, 11]])
    cache = model.new_cache(1, 8)
    first = model(prompt, cache, last_only=True).astype("float32").to_numpy().argmax(-1)
    got = StaticDecoder(model, cache).step(first)[0].astype("float32").to_numpy()
    want = model(np.concatenate([prompt, first[:, None]], 1), last_only=True)
    assert L._rel(got, want.astype("float32").to_numpy()) < 2e-2


def test_load_case_times_a_written_checkpoint() -> None:
    bench = Bench(device=gp.Device.parse("cpu"), peers=[])
    row = Row("llm", "load", "tiny")
    L._load(bench, row, 20)
    assert row.status == PASS and row.stats is not None
    assert 15e6 < row.extra["file_bytes"] < 30e6 and row.extra["ratio"] > 0


def test_cpu_run_marks_decode_rows_missing(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    code = main(["--quick", "--device", "cpu", "--families", "llm", "--sizes", "llm_load_mb=5",
                 "--json", str(path)])  # fmt: skip
    assert code == 0
    rows = json.loads(path.read_text())["rows"]
    assert [r["status"] for r in rows] == [MISSING, MISSING, MISSING]


def test_prefill_row_and_the_transformers_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from pygpukit.benchmark.cases import SpecialCase
    from pygpukit.benchmark.llm_prefill import _hf_state, run_prefill

    monkeypatch.setitem(L.SHAPES, "tiny", TINY)
    case = SpecialCase("llm", "prefill", "tiny", "llm_prefill", {"shape": "tiny", "tokens": 12})
    row = Row("llm", "prefill", "tiny")
    run_prefill(case, Bench(device=gp.Device.parse("cpu"), peers=[]), row)
    assert row.status == PASS and row.rate is not None and row.rate > 0
    _, weights = L.build_model(TINY, gp.Device.parse("cpu"))

    class Same:
        from_dlpack = staticmethod(lambda a: a)

    state = _hf_state(weights, TINY["layers"], Same)
    assert len(state) == len(weights) == 2 + 1 + 9 * TINY["layers"]
    assert state["model.layers.1.mlp.down_proj.weight"] is weights["d.1"]
    assert state["lm_head.weight"] is weights["head"]
