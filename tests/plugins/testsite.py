"""Helpers for tests that need the test plugins or a clean settings environment.

The test plugins are made importable without pip: a ``*.dist-info`` folder holding the
entry points read from each package's own pyproject.toml, plus its ``src`` folder, on
PYTHONPATH (subprocesses) or sys.path (in-process). A pip-installed copy works the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
TOYBLAS = "pygpukit-toyblas"
BROKEN = "pygpukit-broken"


def site_paths(tmp: Path, *packages: str) -> list[str]:
    """sys.path entries under which `packages` (folder names here) are found as plugins."""
    site = tmp / "site"
    entries = [str(site)]
    for package in packages:
        project = tomllib.loads((HERE / package / "pyproject.toml").read_text())["project"]
        dist = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
        dist.mkdir(parents=True, exist_ok=True)
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
        )
        points = project["entry-points"]["pygpukit"]
        lines = "".join(f"{name} = {value}\n" for name, value in points.items())
        (dist / "entry_points.txt").write_text(f"[pygpukit]\n{lines}")
        entries.append(str(HERE / package / "src"))
    return entries


def clean_env(tmp: Path, packages: tuple[str, ...] = (TOYBLAS,), **extra: str) -> dict[str, str]:
    """The current environment without PYGPUKIT_* settings, an empty user config folder,
    the given test plugins findable, and `extra` variables set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYGPUKIT_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    paths = site_paths(tmp, *packages)
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def run(
    args: list[str], tmp: Path, *, packages: tuple[str, ...] = (TOYBLAS,), cwd: Path | None = None,
    **extra: str,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`python <args>` in a clean environment (cwd: an empty folder unless given)."""
    if cwd is None:
        cwd = tmp / "cwd"
        cwd.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=clean_env(tmp, packages, **extra),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def run_json(code: str, tmp: Path, **kwargs: Any) -> Any:
    """Run `code` (which prints one JSON document last) and return what it printed."""
    done = run(["-c", code], tmp, **kwargs)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def isolated_config(monkeypatch: pytest.MonkeyPatch, tmp: Path) -> Iterator[Path]:
    """Settings read from nothing but what the test sets up; restored afterwards.

    The plugin lists (load-time settings) are left alone, so the process's plugins stay
    as they are. Yields the working folder (a fresh project root).
    """
    import pygpukit as gp
    from pygpukit.config import LOAD_TIME, SPECS

    for key, spec in SPECS.items():
        if key not in LOAD_TIME:
            monkeypatch.delenv(spec.env, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp / "xdg"))
    project = tmp / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    gp.config.reset()
    try:
        yield project
    finally:
        monkeypatch.undo()  # before re-reading, so the real environment is what gets cached
        gp.config.reset()


def toyblas_in_process(tmp: Path) -> Iterator[Any]:
    """The toyblas module with its provider registered here (loaded or registered now)."""
    import importlib

    import pygpukit as gp

    registered = False
    if "toyblas" not in gp.plugins.providers():
        src = str(HERE / TOYBLAS / "src")
        if src not in sys.path:
            sys.path.insert(0, src)
        module = importlib.import_module("pygpukit_toyblas")
        gp.plugins.register(module, "toyblas-test")
        registered = True
    module = importlib.import_module("pygpukit_toyblas")
    module.calls.clear()
    try:
        yield module
    finally:
        if registered:
            gp.plugins.unregister("toyblas-test")
