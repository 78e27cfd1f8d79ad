"""python -m pygpukit.benchmark on the CPU: real quick runs, their JSON, --compare and
--fail-on-regression, FAIL rows for wrong results, and rows for missing ops and peers.

Benchmarks are not timed tests: nothing here asserts how fast anything ran.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._plugins import registry
from pygpukit.benchmark import main
from pygpukit.benchmark.cli import EXIT_FAIL, EXIT_REGRESSION, EXIT_USAGE
from pygpukit.benchmark.results import Run

QUICK = ["--quick", "--device", "cpu"]


def run_main(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def rows_by_key(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in data["rows"]}


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One real quick run of elementwise and reductions, saved as JSON."""
    path = tmp_path_factory.mktemp("bench") / "run.json"
    code, out, err = run_main(*QUICK, "--families", "elementwise,reductions", "--json", str(path))
    assert code == 0, out + err
    return path, out, err


def test_quick_cpu_run_saves_parseable_json_with_ratios_vs_numpy(saved: Any) -> None:
    path, _, _ = saved
    data = json.loads(path.read_text())
    assert data["schema"] == 1
    env = data["environment"]
    assert env["device_str"] == "cpu"
    assert env["versions"]["numpy"] == np.__version__
    assert env["timestamp"] and env["device_name"]
    assert data["settings"]["families"] == ["elementwise", "reductions"]
    rows = rows_by_key(data)
    for key in (
        "elementwise/add/2^12 float32", "elementwise/multiply/2^16 float32",
        "elementwise/exp/2^16 float32", "elementwise/astype/2^16 float32->bfloat16",
        "reductions/sum/2^16 float32", "reductions/argmax/2^16 float32",
        "reductions/softmax/16x4096 float32, last axis", "reductions/rmsnorm/16x4096 float32",
    ):  # fmt: skip
        assert key in rows, sorted(rows)
    for row in data["rows"]:
        assert row["status"] == "PASS", row
        assert row["provider"] == "cpu"
        assert row["error"] is not None and row["error"] <= row["tol"]
        assert row["stats"]["median_ms"] > 0
        assert row["stats"]["p25_ms"] <= row["stats"]["median_ms"] <= row["stats"]["p75_ms"]
        assert row["unit"] == "GB/s" and row["rate"] > 0
        (peer,) = row["peers"]
        assert peer["name"] == "numpy"
        assert peer["ratio"] == pytest.approx(
            peer["stats"]["median_ms"] / row["stats"]["median_ms"]
        )
    # the run reloads as it was written
    assert Run.from_dict(data).to_dict()["rows"] == data["rows"]


def test_report_is_ascii_markdown_with_one_table_per_family(saved: Any) -> None:
    _, out, err = saved
    assert out.isascii()
    assert "## elementwise" in out and "## reductions" in out
    header = next(line for line in out.splitlines() if line.startswith("| op "))
    for column in ("pygpukit", "numpy", "vs numpy", "provider", "check"):
        assert column in header
    rule = out.splitlines()[out.splitlines().index(header) + 1]
    assert set(rule) <= {"|", "-", " "}
    assert "[1/" in err and "done" in err  # progress goes to stderr, not into the table


def test_the_run_records_what_the_host_was_doing_when_it_started(saved: Any) -> None:
    # tiny-op rows time the host as much as the library: the report says how busy it was
    path, out, _ = saved
    host = json.loads(path.read_text())["environment"]["host"]
    assert host["cpus"] == os.cpu_count()
    assert isinstance(host["load_1m"], float) and host["load_1m"] >= 0
    assert isinstance(host["load_5m"], float) and host["load_5m"] >= 0
    line = f"- host at the start: {host['cpus']} CPUs, load average {host['load_1m']} (1 min), "
    assert line in out


def test_compare_reports_the_change_and_fails_on_a_doctored_regression(
    saved: Any, tmp_path: Path
) -> None:
    path, _, _ = saved
    data = json.loads(path.read_text())
    faster = json.loads(path.read_text())
    for row in faster["rows"]:  # a baseline where every case ran 100 times faster
        for key in ("median_ms", "p25_ms", "p75_ms", "min_ms", "max_ms"):
            row["stats"][key] /= 100
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(faster))

    code, out, _ = run_main("--from-json", str(path), "--compare", str(baseline),
                            "--fail-on-regression", "50")  # fmt: skip
    assert code == EXIT_REGRESSION
    assert "change against" in out
    n = len(data["rows"])
    assert out.count("REGRESSION") >= n
    assert f"{n} regression(s) over 50%" in out

    code, out, _ = run_main("--from-json", str(path), "--compare", str(baseline))
    assert code == 0  # no threshold given: report only
    assert "+9900.0%" in out and "slower" in out


def test_compare_against_a_slower_baseline_passes(saved: Any, tmp_path: Path) -> None:
    path, _, _ = saved
    slower = json.loads(path.read_text())
    for row in slower["rows"]:
        for key in ("median_ms", "p25_ms", "p75_ms", "min_ms", "max_ms"):
            # a million times slower: no run on a loaded machine comes near it (at 100x,
            # a tiny op's row regressed now and then under load)
            row["stats"][key] *= 1e6
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(slower))
    # a real new run compared with the saved file
    code, out, _ = run_main(*QUICK, "--families", "elementwise", "--compare", str(baseline),
                            "--fail-on-regression", "50")  # fmt: skip
    assert code == 0, out
    assert "faster" in out and "0 regression(s) over 50%" in out
    assert "not run now" in out  # the reductions rows of the baseline


def test_compare_with_an_unreadable_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    code, _, err = run_main("--from-json", str(bad))
    assert code == EXIT_USAGE and "cannot read benchmark file" in err
    code, _, err = run_main(*QUICK, "--fail-on-regression", "5")
    assert code == EXIT_USAGE and "needs --compare" in err


def test_a_wrong_result_is_a_fail_row_and_not_timed(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:  # fmt: skip
    real_add = gp.add

    def wrong_add(x1: Any, x2: Any, /, **kw: Any) -> Any:
        return real_add(real_add(x1, x2, **kw), 1.0)

    monkeypatch.setattr(gp, "add", wrong_add)
    path = tmp_path / "run.json"
    code, out, _ = run_main(*QUICK, "--families", "elementwise,tiny", "--json", str(path))
    assert code == EXIT_FAIL
    rows = rows_by_key(json.loads(path.read_text()))
    for key in ("elementwise/add/2^12 float32", "elementwise/add (broadcast)/(16,4096) + "
                "(4096,) float32", "tiny/add/1 element float32, 500 calls"):  # fmt: skip
        row = rows[key]
        assert row["status"] == "FAIL", row
        assert row["stats"] is None  # not timed
        assert "wrong result" in row["note"]
        assert row["peers"][0]["stats"] is not None  # the peer still ran
    assert rows["elementwise/multiply/2^12 float32"]["status"] == "PASS"
    assert "FAIL" in out


def test_an_op_with_no_provider_is_a_missing_row(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:  # fmt: skip
    monkeypatch.delitem(registry().providers["cpu"].kernels, "exp")
    path = tmp_path / "run.json"
    code, out, _ = run_main(*QUICK, "--families", "elementwise", "--sizes", "vector=2^10",
                            "--json", str(path))  # fmt: skip
    assert code == 0
    row = rows_by_key(json.loads(path.read_text()))["elementwise/exp/2^10 float32"]
    assert row["status"] == "missing"
    assert row["stats"] is None
    assert "no provider has exp(float32) on cpu" in row["note"]
    assert row["peers"][0]["stats"] is not None  # what the peer does is still shown
    assert "missing [" in out


def test_compile_family_on_the_cpu_is_missing_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    code, out, _ = run_main(*QUICK, "--families", "compile", "--json", str(path))
    assert code == 0
    rows = json.loads(path.read_text())["rows"]
    assert [r["status"] for r in rows] == ["missing", "missing"]
    assert all("cuda device" in r["note"] for r in rows)
    assert all("no run-time compiler" in r["peers"][0]["note"] for r in rows)
    assert out.count("missing [") == 2


def test_sizes_and_families_options(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    code, _, _ = run_main(*QUICK, "--families", "matmul", "--sizes", "matmul=32",
                          "--repeats", "2", "--json", str(path))  # fmt: skip
    assert code == 0
    data = json.loads(path.read_text())
    keys = [r["key"] for r in data["rows"]]
    assert keys == [f"matmul/matmul/32x32x32 {m}" for m in
                    ("float32", "tf32", "float16", "bfloat16")]  # fmt: skip
    assert all(r["unit"] == "TFLOP/s" and r["status"] == "PASS" for r in data["rows"])
    assert all(r["stats"]["samples"] <= 2 for r in data["rows"])
    tf32 = data["rows"][1]
    assert "no TF32" in tf32["peers"][0]["note"]
    for bad in (["--families", "nope"], ["--sizes", "vector=abc"], ["--sizes", "nokey=3"],
                ["--peers", "torch"], ["--repeats", "0"]):  # fmt: skip
        code, _, err = run_main(*QUICK, *bad)
        assert code == EXIT_USAGE, (bad, err)


def test_python_dash_m_runs_the_benchmark(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    md = tmp_path / "run.md"
    proc = subprocess.run(
        [sys.executable, "-m", "pygpukit.benchmark", *QUICK, "--families", "tiny",
         "--json", str(path), "--markdown", str(md)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert md.read_text() == proc.stdout
    (row,) = json.loads(path.read_text())["rows"]
    assert row["key"] == "tiny/add/1 element float32, 500 calls"
    assert row["unit"] == "us/call" and row["status"] == "PASS"
    assert "us +-" in proc.stdout
