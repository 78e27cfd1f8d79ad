"""python -m pygpukit info|doctor|demo: real subprocess runs, plus in-process edge cases."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._cli import main
from pygpukit._cli.table import ascii_text, table
from pygpukit.plugins import PluginLoadWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite

BOTH = (testsite.TOYBLAS, testsite.BROKEN)


def cli(tmp: Path, *args: str, **kwargs: Any) -> Any:
    return testsite.run(["-m", "pygpukit", *args], tmp, **kwargs)


def assert_ascii(text: str) -> None:
    assert text.isascii(), [c for c in text if not c.isascii()][:5]


def test_info_shows_cpu_plugin_from_its_entry_point(tmp_path: Path) -> None:
    done = cli(tmp_path, "info")
    assert done.returncode == 0, done.stderr
    assert_ascii(done.stdout)
    plugin_rows = [line for line in done.stdout.splitlines() if line.startswith("| cpu ")]
    assert any("pygpukit-core" in row and "loaded" in row for row in plugin_rows)
    assert "| toyblas " in done.stdout
    assert "Dispatch on cpu" in done.stdout


def test_info_json_parses_and_has_dispatch_table(tmp_path: Path) -> None:
    done = cli(tmp_path, "info", "--json", PYGPUKIT_BACKEND="toyblas,cpu")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    plugins = {p["name"]: p for p in data["plugins"]}
    assert plugins["cpu"]["distribution"] == "pygpukit-core"
    assert plugins["cpu"]["status"] == "loaded"
    providers = {p["name"]: p for p in data["providers"]}
    assert providers["toyblas"]["ops"] == 3 and providers["toyblas"]["device_type"] == "cpu"
    table_ = data["dispatch"]["cpu"]
    assert table_["add"]["float32"] == "toyblas"
    assert table_["add"]["int32"] == "cpu"
    assert table_["softmax"]["float32"] == "cpu"
    assert data["settings"]["backend"]["source"] == "environment PYGPUKIT_BACKEND"
    cpu = next(d for d in data["devices"] if d["type"] == "cpu")
    assert cpu["plugin"] == "cpu" and cpu["devices"][0]["device"] == "cpu"


def test_info_and_doctor_report_broken_plugins(tmp_path: Path) -> None:
    done = cli(tmp_path, "info", "--json", packages=BOTH)
    assert done.returncode == 0, done.stderr
    plugins = {p["name"]: p for p in json.loads(done.stdout)["plugins"]}
    assert plugins["broken"]["status"] == "failed"
    assert "ImportError: pygpukit-broken: deliberately broken plugin" in plugins["broken"]["error"]
    assert plugins["broken_hook"]["status"] == "failed"
    assert plugins["cpu"]["status"] == "loaded"
    done = cli(tmp_path, "doctor", packages=BOTH)
    assert done.returncode == 0, done.stdout  # the CPU path still works
    text = " ".join(done.stdout.split())  # undo the table's wrapping
    assert "| WARN | plugin broken |" in text
    assert "PYGPUKIT_DISABLE_PLUGINS=broken" in text
    assert "deliberately broken plugin" in text


def test_doctor_exit_zero_and_install_hints(tmp_path: Path) -> None:
    done = cli(tmp_path, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_ascii(done.stdout)
    text = " ".join(done.stdout.split())
    assert "| OK | CPU path |" in text
    if "cuda" in gp.plugins.devices():  # pygpukit-cuda installed: its device row shows
        assert "device cuda |" in text
    else:
        assert "no CUDA plugin: pip install pygpukit-cuda" in text
    assert "toyblas: toyblas kernels" in text  # the plugin's own diagnose hook ran
    assert "0 failed" in text


def test_doctor_names_bad_settings_and_fails(tmp_path: Path) -> None:
    done = cli(tmp_path, "doctor", PYGPUKIT_BACKEND="toyblaz,cpu")
    assert done.returncode == 1
    text = " ".join(done.stdout.split())
    assert "| FAIL | backend setting |" in text
    assert "environment PYGPUKIT_BACKEND names unknown backend 'toyblaz'" in text
    assert "'toyblaz,cpu' from" not in text  # settings are shown parsed, as a list
    assert "['toyblaz', 'cpu'] from environment PYGPUKIT_BACKEND" in text


def test_demo_runs_on_cpu_and_checks(tmp_path: Path) -> None:
    done = cli(tmp_path, "demo", "--size", "48", "--repeats", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_ascii(done.stdout)
    rows = {line.split("|")[1].strip(): line for line in done.stdout.splitlines() if "|" in line}
    for op in ("matmul", "softmax", "sum"):
        cells = [c.strip() for c in rows[op].split("|")]
        assert "cpu" in cells and "PASS" in cells
    assert "SKIP" in rows["custom kernel"]
    assert "pygpukit-cuda" in done.stdout  # how to get the GPU backend, or why it is idle
    assert "3 passed, 0 failed, 1 skipped" in done.stdout
    assert "[1/4] matmul" in done.stderr  # progress goes to stderr


def test_demo_reports_the_provider_that_served(capsys: pytest.CaptureFixture[str]) -> None:
    cpu_matmul = gp.plugins.providers()["cpu"].kernels["matmul"].fn
    wrapper = gp.KernelProvider("wrapmm", device_type="cpu", priority=50)
    wrapper.add("matmul", lambda *args, **kwargs: cpu_matmul(*args, **kwargs))

    class Plugin:
        @gp.hookimpl
        def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
            register(wrapper)

    gp.plugins.register(Plugin(), "wrapmm")
    try:
        assert main(["demo", "--size", "8", "--repeats", "1"]) == 0
    finally:
        gp.plugins.unregister("wrapmm")
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines() if "|" in line}
    assert rows["matmul"][3].strip() == "wrapmm"
    assert rows["softmax"][3].strip() == "cpu"


def test_demo_fails_when_a_result_is_wrong(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real: Callable[..., Any] = gp.softmax
    monkeypatch.setattr(gp, "softmax", lambda x: real(x * 2.0))
    assert main(["demo", "--size", "8", "--repeats", "1"]) == 1
    out = capsys.readouterr().out
    softmax_row = next(line for line in out.splitlines() if line.startswith("| softmax"))
    assert "FAIL" in softmax_row
    assert "1 failed" in out


def test_demo_says_when_an_op_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delattr(gp, "matmul")
    assert main(["demo", "--size", "8", "--repeats", "1"]) == 1
    assert "pygpukit.matmul is missing in this build" in capsys.readouterr().out


def test_demo_refuses_bad_arguments() -> None:
    with pytest.raises(SystemExit, match="--repeats and --size must be positive"):
        main(["demo", "--repeats", "0"])


def test_no_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "{info,doctor,demo}" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["frobnicate"])


def test_info_in_process_shows_a_failed_registration(capsys: pytest.CaptureFixture[str]) -> None:
    class Raising:
        @gp.hookimpl
        def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
            raise RuntimeError("no libtoy.so")

    with pytest.warns(PluginLoadWarning):
        gp.plugins.register(Raising(), "raising")
    try:
        assert main(["info"]) == 0
    finally:
        gp.plugins.unregister("raising")
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| raising"))
    assert "(in-process)" in row and "failed" in row
    assert "RuntimeError: no libtoy.so" in " ".join(out.split())


def test_table_is_ascii_and_wraps() -> None:
    text = table(["a", "b"], [["x\u00e9", "one two three four"]], widths={1: 9})
    assert_ascii(text)
    lines = text.splitlines()
    assert lines[3:6] == ["| x? | one two |", "|    | three   |", "|    | four    |"]
    assert len({len(line) for line in lines}) == 1  # every line the same width
    assert ascii_text(np.float32(1.5)) == "1.5"


def test_info_lists_one_providers_ops_dtypes_and_conventions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["info", "--provider", "cpu", "--json"]) == 0
    ops = {o["op"]: o for o in json.loads(capsys.readouterr().out)}
    assert set(ops) == set(gp.plugins.providers()["cpu"].kernels)
    assert ops["add"]["convention"] == "add(x1, x2, out, compute)"
    assert ops["var"]["convention"] == "var(x, out, axes, *, correction)"
    assert "float32" in ops["sum"]["dtypes"] or ops["sum"]["dtypes"] == ["all"]
    assert main(["info", "--provider", "cpu"]) == 0
    text = capsys.readouterr().out
    assert "Provider cpu:" in text and "matmul(x1, x2, out, allow_tf32)" in text
    assert main(["info", "--provider", "nope"]) == 2
    assert "no kernel provider named 'nope'; known providers: cpu" in capsys.readouterr().out
