"""Bad settings: every wrong file, variable or argument names where it came from and which
key is wrong; a file that is none of PyGPUkit's business is skipped with a warning."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite

NOT_UTF8 = b"[project]\nname = 'caf\xe9'\n"


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    yield from testsite.isolated_config(monkeypatch, tmp_path)


def _settings() -> Any:
    """Read the settings afresh (files and environment are read once, lazily)."""
    gp.config.reload()
    return gp.config.get()


# (id, file name, bytes, exception, regex naming the file and the key or the fault)
FILES: list[tuple[str, str, bytes, type[Exception], str]] = [
    ("own-not-utf8", "pygpukit.toml", b"device = 'caf\xe9'\n", ValueError,
     r"pygpukit\.toml: not UTF-8"),
    ("own-bad-toml", "pygpukit.toml", b"device = \n", ValueError,
     r"cannot read PyGPUkit settings from .*pygpukit\.toml"),
    ("own-bool-text", "pygpukit.toml", b"allow_tf32 = 'maybe'\n", ValueError,
     r"pygpukit\.toml: setting 'allow_tf32' wants a boolean.*'maybe'"),
    ("own-device-int", "pygpukit.toml", b"device = 5\n", TypeError,
     r"pygpukit\.toml: setting 'device' wants a string, got int"),
    ("own-backend-int", "pygpukit.toml", b"backend = 5\n", TypeError,
     r"pygpukit\.toml: setting 'backend' wants a list of names"),
    ("own-dispatch-form", "pygpukit.toml", b"dispatch = 'softmax'\n", ValueError,
     r"pygpukit\.toml: setting 'dispatch': 'softmax' is not of the form op:backend"),
    ("own-cache-dir-list", "pygpukit.toml", b"cache_dir = ['a']\n", TypeError,
     r"pygpukit\.toml: setting 'cache_dir' wants a string, got list"),
    ("pyproject-bad-type", "pyproject.toml", b"[tool.pygpukit]\nbackend = 5\n", TypeError,
     r"pyproject\.toml: setting 'backend' wants a list"),
    ("pyproject-bad-bool", "pyproject.toml", b"[tool.pygpukit]\nallow_tf32 = 'x'\n",
     ValueError, r"pyproject\.toml: setting 'allow_tf32' wants a boolean"),
    ("pyproject-not-table", "pyproject.toml", b"tool.pygpukit = 3\n[tool.pygpukit.x]\n",
     ValueError, r"pyproject\.toml"),
    ("pyproject-bad-toml", "pyproject.toml", b"[tool.pygpukit]\nbackend = [\n", ValueError,
     r"cannot read PyGPUkit settings from .*pyproject\.toml"),
]  # fmt: skip


@pytest.mark.parametrize("name,data,exc,match", [f[1:] for f in FILES], ids=[f[0] for f in FILES])
def test_bad_settings_file_names_file_and_key(
    project: Path, name: str, data: bytes, exc: type[Exception], match: str
) -> None:
    (project / name).write_bytes(data)
    with pytest.raises(exc, match=match):
        _settings()


def test_unrelated_pyproject_that_is_not_utf8_is_skipped_with_a_warning(
    project: Path,
) -> None:
    (project / "pyproject.toml").write_bytes(NOT_UTF8)
    with pytest.warns(UserWarning, match=r"pyproject\.toml skipped .*not UTF-8"):
        settings = _settings()
    assert settings["backend"].source == "default"
    x = np.random.default_rng(1).standard_normal(5).astype(np.float32)
    np.testing.assert_allclose((gp.asarray(x) + 1.0).to_numpy(), x + 1.0)


def test_unreadable_pyproject_above_the_project_is_skipped_too(project: Path) -> None:
    """The search goes upwards: a broken file in a parent is not ours either."""
    (project / "pyproject.toml").write_bytes(NOT_UTF8)
    inner = project / "inner"
    inner.mkdir()
    (inner / "pygpukit.toml").write_text("allow_tf32 = true\n")
    import os

    os.chdir(inner)  # isolated_config's monkeypatch restores the folder
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the nearer file is found first: no warning at all
        assert _settings()["allow_tf32"].value is True


def test_unknown_key_in_file_warns_naming_file_and_key(project: Path) -> None:
    (project / "pygpukit.toml").write_text("allow_tf32 = true\nbakend = ['cpu']\n")
    with pytest.warns(UserWarning, match=r"pygpukit\.toml: unknown PyGPUkit setting 'bakend'"):
        _settings()


ENV: list[tuple[str, str, str, type[Exception], str]] = [
    ("tf32", "PYGPUKIT_ALLOW_TF32", "maybe", ValueError,
     r"PYGPUKIT_ALLOW_TF32: setting 'allow_tf32' wants a boolean.*'maybe'"),
    ("dispatch-form", "PYGPUKIT_DISPATCH", "softmax", ValueError,
     r"PYGPUKIT_DISPATCH: setting 'dispatch': 'softmax' is not of the form op:backend"),
    ("dispatch-empty-backend", "PYGPUKIT_DISPATCH", "softmax:", ValueError,
     r"PYGPUKIT_DISPATCH: .*'softmax:'"),
]  # fmt: skip


@pytest.mark.parametrize("var,value,exc,match", [e[1:] for e in ENV], ids=[e[0] for e in ENV])
def test_bad_environment_value_names_the_variable(
    project: Path, monkeypatch: pytest.MonkeyPatch, var: str, value: str,
    exc: type[Exception], match: str,
) -> None:  # fmt: skip
    monkeypatch.setenv(var, value)
    with pytest.raises(exc, match=match):
        _settings()


def test_unknown_backend_in_environment_names_variable_at_dispatch(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYGPUKIT_BACKEND", "nope,cpu")
    _settings()
    with pytest.raises(ValueError, match=r"environment PYGPUKIT_BACKEND names unknown backend"):
        gp.zeros(3) + 1.0


def test_misspelt_op_in_dispatch_variable_warns_naming_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYGPUKIT_DISPATCH", "sofmax:cpu")
    _settings()
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    with pytest.warns(UserWarning, match=r"PYGPUKIT_DISPATCH: dispatch entry sofmax:cpu is "
                      r"ignored: unknown op 'sofmax'; did you mean softmax"):  # fmt: skip
        out = gp.softmax(gp.asarray(x))
    ref = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(out.to_numpy(), ref / ref.sum(-1, keepdims=True), rtol=1e-5)


CALLS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("set-dispatch-typo", lambda: gp.config.set(dispatch="sofmax:cpu"), ValueError,
     r"gp.config: dispatch setting sofmax:cpu: unknown op 'sofmax'; did you mean softmax"),
    ("use-dispatch-typo", lambda: gp.config.use(dispatch={"matmull": "cpu"}).__enter__(),
     ValueError, r"unknown op 'matmull'; did you mean matmul"),
    ("set-tf32-text", lambda: gp.config.set(allow_tf32="maybe"), ValueError,
     r"gp.config: setting 'allow_tf32' wants a boolean"),
    ("set-unknown-key", lambda: gp.config.set(bakend="cpu"), ValueError,
     r"unknown setting 'bakend'"),
    ("set-backend-int", lambda: gp.config.set(backend=5), TypeError,
     r"gp.config: setting 'backend' wants a list"),
    ("set-backend-unknown", lambda: gp.config.set(backend="nope"), ValueError,
     r"unknown backend 'nope'"),
    ("use-device-index", lambda: gp.config.use(device="cuda:x").__enter__(), ValueError,
     r"bad device index in 'cuda:x'"),
    ("set-device-int", lambda: gp.config.set(device=0), TypeError,
     r"setting 'device' wants a string, got int"),
]  # fmt: skip


@pytest.mark.parametrize("call,exc,match", [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_bad_config_call_names_the_setting(
    project: Path, call: Callable[[], Any], exc: type[Exception], match: str
) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_plugins_allow_list_naming_nothing_installed_says_so(tmp_path: Path) -> None:
    code = (
        "import warnings, pygpukit as gp\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    gp.plugins.list()\n"
        "print('WARN', *[str(w.message) for w in seen])\n"
        "try:\n"
        "    gp.zeros(3)\n"
        "except Exception as exc:\n"
        "    print('ERROR', type(exc).__name__, exc)\n"
    )
    done = testsite.run(["-c", code], tmp_path, PYGPUKIT_PLUGINS="nope")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "allow-list (environment PYGPUKIT_PLUGINS) names 'nope'" in out, out
    assert "which no installed package provides; installed plugins:" in out and "cpu" in out
    # the op's error blames the allow-list, not the installation
    assert "ERROR RuntimeError" in out and "not in the allow-list ['nope']" in out, out
    assert "is pygpukit-core installed" not in out
