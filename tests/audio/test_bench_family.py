"""The benchmark's audio family builds, checks its rows against librosa/scipy, and compares
complex results (the STFT) as complex numbers."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.benchmark import cases as C
from pygpukit.benchmark.peers import NumpyPeer
from pygpukit.benchmark.results import PASS
from pygpukit.benchmark.runner import Bench, compare, run_array_case


def test_audio_rows_pass_on_the_cpu() -> None:
    for reference in ("librosa", "scipy"):  # absent on the GPU machine: the family is empty
        pytest.importorskip(reference)
    sizes = C.Sizes.preset("cpu", quick=True)
    sizes.audio = [1]
    rows = C.build(["audio"], sizes)
    assert [c.op for c in rows] == ["stft", "melspectrogram", "resample"]
    bench = Bench(gp.Device("cpu"), [NumpyPeer()], repeats=2, budget_s=0.2)
    for case in rows:
        assert isinstance(case, C.ArrayCase)
        row = run_array_case(case, bench)
        assert row.status == PASS, row.note
        assert row.error is not None and row.error <= 1e-5
        (librosa_row,) = row.peers
        assert librosa_row.stats is not None and librosa_row.error is not None
        assert librosa_row.error <= 1e-5  # librosa / scipy agree with the float64 reference


def test_compare_treats_complex_results_as_complex() -> None:
    want = C.Expected(np.array([1 + 1j, 2 - 1j]))
    assert compare(np.array([1 + 1j, 2 - 1j], np.complex64), want) == (0.0, "")
    error, _ = compare(np.array([1 - 1j, 2 - 1j], np.complex64), want)  # the conjugate
    assert error > 0.5


def test_family_is_empty_without_its_references(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pygpukit.audio import bench

    monkeypatch.setattr(bench, "references_missing", lambda: "librosa not installed")
    assert C.build(["audio"], C.Sizes.preset("cpu", quick=True)) == []
    assert "audio family skipped: librosa not installed" in capsys.readouterr().err
