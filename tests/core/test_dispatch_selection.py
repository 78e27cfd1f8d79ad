"""Choosing the toyblas provider from outside the program: environment and config files.

Each case runs a fresh interpreter, because these sources are read once per process.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite

PROBE = """
import json
import numpy as np
import pygpukit as gp
import pygpukit_toyblas as toy
x = gp.asarray(np.array([1, 2], dtype=np.float32))
i = gp.asarray(np.array([1, 2], dtype=np.int32))
out = {"f32": gp.add(x, x).tolist()}
out["after_f32"] = dict(toy.calls)
out["i32"] = gp.add(i, i).tolist()
out["after_i32"] = dict(toy.calls)
out["mul"] = gp.multiply(x, x).tolist()
out["after_mul"] = dict(toy.calls)
out["explain_i32"] = str(gp.explain("add", i, i))
s = gp.config.get()
out["sources"] = {k: s[k].source for k in ("backend", "dispatch")}
print(json.dumps(out))
"""


def probe(tmp: Path, **kwargs: Any) -> Any:
    return testsite.run_json(PROBE, tmp, **kwargs)


def test_backend_from_environment_with_dtype_fallthrough(tmp_path: Path) -> None:
    got = probe(tmp_path, PYGPUKIT_BACKEND="toyblas,cpu")
    assert got["f32"] == [2.0, 4.0] and got["after_f32"] == {"add": 1}
    assert got["i32"] == [2, 4] and got["after_i32"] == {"add": 1}  # int32 went to cpu
    assert got["after_mul"] == {"add": 1, "multiply": 1}
    assert "served by 'cpu'" in got["explain_i32"]
    assert "- toyblas: no kernel for dtype int32" in got["explain_i32"]
    assert got["sources"]["backend"] == "environment PYGPUKIT_BACKEND"


def test_per_op_dispatch_from_environment(tmp_path: Path) -> None:
    got = probe(tmp_path, PYGPUKIT_DISPATCH="add:toyblas")
    assert got["after_f32"] == {"add": 1}
    assert got["after_mul"] == {"add": 1}  # multiply stays on cpu
    assert got["sources"]["dispatch"] == "environment PYGPUKIT_DISPATCH"


def test_backend_from_project_file_in_working_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "pygpukit.toml").write_text('backend = ["toyblas", "cpu"]\n')
    got = probe(tmp_path, cwd=project / "sub")
    assert got["after_f32"] == {"add": 1}
    assert got["sources"]["backend"] == f"file {(project / 'pygpukit.toml').resolve()}"


def test_backend_from_user_file_and_env_beats_it(tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "pygpukit" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('backend = "toyblas,cpu"\n')
    got = probe(tmp_path)
    assert got["after_f32"] == {"add": 1}
    assert got["sources"]["backend"] == f"file {user}"
    got = probe(tmp_path, PYGPUKIT_BACKEND="cpu")
    assert got["after_f32"] == {}
    assert got["sources"]["backend"] == "environment PYGPUKIT_BACKEND"


def test_unknown_name_in_environment_fails_at_first_dispatch(tmp_path: Path) -> None:
    code = "import pygpukit as gp; x = gp.asarray([1.0]); print('imported'); gp.add(x, x)"
    done = testsite.run(["-c", code], tmp_path, PYGPUKIT_BACKEND="toyblaz,cpu")
    assert done.returncode == 1
    assert done.stdout.strip() == "imported"
    assert re.search(
        r"ValueError: environment PYGPUKIT_BACKEND names unknown backend 'toyblaz'; "
        r"known backends: cpu, (.+, )?toyblas",
        done.stderr,
    )
