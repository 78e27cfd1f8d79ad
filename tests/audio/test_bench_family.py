"""The benchmark's audio family builds (with or without librosa/scipy), checks its rows
against librosa/scipy or our float64 CPU path, and compares complex results as complex."""

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
    assert [c.op for c in rows] == [
        "stft",
        "melspectrogram",
        "resample",
        "whisper_log_mel",
        "whisper_decode",
    ]
    bench = Bench(gp.Device("cpu"), [NumpyPeer()], repeats=2, budget_s=0.2)
    for case in rows[:3]:  # the Whisper rows have no NumPy peer: their own tests below
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


def test_family_builds_without_librosa_and_scipy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The GPU machine has torch but no librosa: the rows stay, checked against our own
    float64 CPU path, and the librosa/scipy peers say they are missing."""
    from pygpukit.audio import bench

    monkeypatch.setattr(bench, "_have", lambda module: False)
    sizes = C.Sizes.preset("cpu", quick=True)
    sizes.audio = [1]
    rows = C.build(["audio"], sizes)
    assert [c.op for c in rows] == [
        "stft",
        "melspectrogram",
        "resample",
        "whisper_log_mel",
        "whisper_decode",
    ]
    assert "librosa and scipy not installed" in capsys.readouterr().err
    whisper_row = rows[3]
    assert isinstance(whisper_row, C.ArrayCase)
    assert whisper_row.inputs == [("normal", (2, 480000))]
    assert whisper_row.peer_call("numpy") is None and whisper_row.peer_call("torch") is not None
    y = np.random.default_rng(0).standard_normal(16000).astype(np.float32)
    for case in rows[:3]:
        assert isinstance(case, C.ArrayCase)
        assert "our float64 CPU path" in case.note
        want = case.reference(y if case.op != "resample" else np.resize(y, 44100))
        got = case.ours(gp.from_numpy(y if case.op != "resample" else np.resize(y, 44100), "cpu"))
        error, problem = compare(got.to_numpy(), want)
        assert not problem and error <= case.tol


def test_full_sizes_take_64_whisper_clips() -> None:
    sizes = C.Sizes.preset("cuda", quick=False)
    rows = C.build(["audio"], sizes)
    (whisper_row,) = [c for c in rows if c.op == "whisper_log_mel"]
    assert isinstance(whisper_row, C.ArrayCase)
    assert whisper_row.inputs == [("normal", (64, 480000))]
    (decode,) = [c for c in rows if c.op == "whisper_decode"]
    assert isinstance(decode, C.SpecialCase)
    assert decode.params == {"size": "small", "dtype": "float16", "steps": 64}


def test_whisper_reference_matches_our_log_mel() -> None:
    """The float64 NumPy form of openai-whisper's formula agrees with our front end."""
    from pygpukit.audio import bench

    clips = (0.1 * np.random.default_rng(1).standard_normal((2, 16000))).astype(np.float32)
    want = bench._whisper_reference(clips)
    got = bench._whisper_ours(gp.from_numpy(clips, "cpu")).to_numpy()
    error, problem = compare(got, want)
    assert not problem and error <= 1e-4


def test_librosa_peer_missing_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from pygpukit.audio import bench

    real_import = builtins.__import__

    def no_librosa(name: str, *args: object, **kwargs: object) -> object:
        if name == "librosa":
            raise ImportError("no librosa")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_librosa)
    with pytest.raises(ImportError, match="librosa not installed"):
        bench._librosa()


def test_whisper_decode_row_is_missing_off_the_gpu() -> None:
    from pygpukit.audio.bench_whisper import KIND
    from pygpukit.benchmark.results import MISSING
    from pygpukit.benchmark.special import run_special

    sizes = C.Sizes.preset("cpu", quick=True)
    (case,) = [c for c in C.build(["audio"], sizes) if c.op == "whisper_decode"]
    assert isinstance(case, C.SpecialCase) and case.kind == KIND
    assert case.params == {"size": "tiny", "dtype": "float32", "steps": 8}
    row = run_special(case, Bench(gp.Device("cpu"), [NumpyPeer()], repeats=1, budget_s=0.1))
    assert row.status == MISSING and "GPU case" in row.note
