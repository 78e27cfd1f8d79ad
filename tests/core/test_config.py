"""Settings: every source in its place in the precedence order, and reported by get()."""

from __future__ import annotations

import asyncio
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pygpukit as gp
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    yield from testsite.isolated_config(monkeypatch, tmp_path)


def user_file(tmp: Path, text: str) -> Path:
    path = tmp / "xdg" / "pygpukit" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_are_reported_as_default(project: Path) -> None:
    got = gp.config.get()
    assert got["backend"].value == [] and got["backend"].source == "default"
    assert got["device"].value == "auto" and got["device"].source == "default"
    assert got["allow_tf32"].value is False


def test_precedence_ladder_each_source_reported(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one setting given by every source at once; peel them off from the top
    user = user_file(tmp_path, 'cache_dir = "from-user"\n')
    (project / "pygpukit.toml").write_text('cache_dir = "from-project"\n')
    monkeypatch.setenv("PYGPUKIT_CACHE_DIR", "from-env")
    gp.config.reload()
    gp.config.set(cache_dir="from-set")
    try:
        with gp.config.use(cache_dir="from-use"):
            s = gp.config.get()["cache_dir"]
            assert (s.value, s.source) == ("from-use", "gp.config.use()")
        s = gp.config.get()["cache_dir"]
        assert (s.value, s.source) == ("from-set", "gp.config.set()")
    finally:
        gp.config.unset("cache_dir")
    s = gp.config.get()["cache_dir"]
    assert (s.value, s.source) == ("from-env", "environment PYGPUKIT_CACHE_DIR")
    monkeypatch.delenv("PYGPUKIT_CACHE_DIR")
    gp.config.reload()
    s = gp.config.get()["cache_dir"]
    assert (s.value, s.source) == ("from-project", f"file {project / 'pygpukit.toml'}")
    (project / "pygpukit.toml").unlink()
    gp.config.reload()
    s = gp.config.get()["cache_dir"]
    assert (s.value, s.source) == ("from-user", f"file {user}")
    user.unlink()
    gp.config.reload()
    assert gp.config.get()["cache_dir"].source == "default"


def test_pyproject_tool_table_is_a_project_file(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.pygpukit]\nallow_tf32 = true\n'
    )
    gp.config.reload()
    s = gp.config.get()["allow_tf32"]
    assert s.value is True
    assert s.source == f"file {project / 'pyproject.toml'}"


def test_pyproject_without_table_is_skipped_for_a_parent_file(project: Path) -> None:
    (project / "pygpukit.toml").write_text('device = "cpu"\n')
    sub = project / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    deeper = sub / "src" / "mod"
    deeper.mkdir(parents=True)
    import os

    os.chdir(deeper)  # isolated_config's monkeypatch.chdir restores the folder
    gp.config.reload()
    s = gp.config.get()["device"]
    assert (s.value, s.source) == ("cpu", f"file {project / 'pygpukit.toml'}")


def test_dispatch_entries_from_several_sources_combine(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "pygpukit.toml").write_text('dispatch = { add = "cpu" }\n')
    monkeypatch.setenv("PYGPUKIT_DISPATCH", "multiply:cpu")
    gp.config.reload()
    s = gp.config.get()["dispatch"]
    assert s.value == {"add": "cpu", "multiply": "cpu"}
    assert s.source == "environment PYGPUKIT_DISPATCH"


def test_bad_env_value_names_the_variable(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPUKIT_ALLOW_TF32", "maybe")
    gp.config.reload()
    with pytest.raises(ValueError, match=r"allow_tf32.*boolean.*'maybe'"):
        gp.config.get()


def test_bad_dispatch_entry_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPUKIT_DISPATCH", "add:cpu,softmax")
    gp.config.reload()
    with pytest.raises(ValueError, match="'softmax' is not of the form op:backend"):
        gp.config.get()


def test_unreadable_project_file_names_the_file(project: Path) -> None:
    (project / "pygpukit.toml").write_text("backend = [unclosed\n")
    gp.config.reload()
    with pytest.raises(ValueError, match=r"cannot read PyGPUkit settings from .*pygpukit\.toml"):
        gp.config.get()


def test_unknown_key_in_file_warns_and_is_ignored(project: Path) -> None:
    (project / "pygpukit.toml").write_text('device = "cpu"\nbakend = ["cpu"]\n')
    gp.config.reload()
    with pytest.warns(UserWarning, match="unknown PyGPUkit setting 'bakend' ignored"):
        got = gp.config.get()
    assert got["device"].value == "cpu"


def test_unknown_setting_name_is_refused(project: Path) -> None:
    with pytest.raises(ValueError, match="unknown setting 'bakend'; known: backend"):
        gp.config.set(bakend=["cpu"])
    with pytest.raises(ValueError, match="unknown setting 'bakend'"), gp.config.use(bakend="cpu"):
        pass


def test_wrong_value_type_is_refused(project: Path) -> None:
    with pytest.raises(TypeError, match="'device' wants a string"):
        gp.config.set(device=3)
    with pytest.raises(TypeError, match="'backend' wants a list of names"):
        gp.config.set(backend=3)
    with pytest.raises(ValueError, match="bad device index"):
        gp.config.set(device="cpu:x")


def test_unknown_backend_from_set_and_use_raises_at_once(project: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown backend 'nope'; known backends: .*cpu"):
        gp.config.set(backend="nope,cpu")
    assert gp.config.get()["backend"].source == "default"  # nothing was applied
    refused = pytest.raises(ValueError, match=r"unknown backend 'nope'; known backends: .*cpu")
    with refused, gp.config.use(dispatch="add:nope"):
        pass


def test_unknown_backend_from_env_raises_at_first_dispatch(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = gp.asarray([1.0, 2.0])
    monkeypatch.setenv("PYGPUKIT_BACKEND", "nope,cpu")
    gp.config.reload()
    assert gp.config.get()["backend"].value == ["nope", "cpu"]  # reading is fine
    with pytest.raises(
        ValueError,
        match=r"environment PYGPUKIT_BACKEND names unknown backend 'nope'; known backends: .*cpu",
    ):
        gp.add(x, x)


def test_unset_and_reset_drop_set_values(project: Path) -> None:
    gp.config.set(allow_tf32=True, device="cpu")
    gp.config.unset("allow_tf32")
    assert gp.config.get()["allow_tf32"].source == "default"
    assert gp.config.get()["device"].source == "gp.config.set()"
    gp.config.reset()
    assert gp.config.get()["device"].source == "default"


def test_nested_use_blocks_stack_and_unwind(project: Path) -> None:
    with gp.config.use(allow_tf32=True):
        with gp.config.use(device="cpu"):
            got = gp.config.get()
            assert got["allow_tf32"].value is True and got["device"].value == "cpu"
        assert gp.config.get()["device"].source == "default"
        assert gp.config.get()["allow_tf32"].value is True
    assert gp.config.get()["allow_tf32"].source == "default"


def test_set_inside_use_is_seen_beneath_the_block(project: Path) -> None:
    with gp.config.use(allow_tf32=True):
        gp.config.set(device="cpu")  # a process-wide change lands under the open block
        got = gp.config.get()
        assert got["device"].source == "gp.config.set()"
        assert got["allow_tf32"].source == "gp.config.use()"


def test_plugin_list_settings_warn_that_they_need_a_reload(project: Path) -> None:
    with pytest.warns(UserWarning, match=r"plugins.reload\(\)"):
        gp.config.set(disable_plugins="nothing-here")
    gp.config.unset("disable_plugins")


def test_use_is_isolated_between_threads(project: Path) -> None:
    inside = threading.Barrier(2, timeout=10)
    seen: dict[str, object] = {}

    def worker() -> None:
        inside.wait()  # the main thread is inside its use() block now
        seen["worker"] = gp.config.get()["allow_tf32"].value
        inside.wait()

    thread = threading.Thread(target=worker)
    thread.start()
    with gp.config.use(allow_tf32=True):
        inside.wait()
        inside.wait()
        seen["main"] = gp.config.get()["allow_tf32"].value
    thread.join()
    assert seen == {"main": True, "worker": False}


def test_use_is_isolated_between_asyncio_tasks(project: Path) -> None:
    async def task(value: bool, log: list[tuple[bool, object]]) -> None:
        with gp.config.use(allow_tf32=value):
            for _ in range(3):
                await asyncio.sleep(0)  # let the other task run inside its own block
                log.append((value, gp.config.get()["allow_tf32"].value))

    async def main() -> list[tuple[bool, object]]:
        log: list[tuple[bool, object]] = []
        await asyncio.gather(task(True, log), task(False, log))
        return log

    log = asyncio.run(main())
    assert len(log) == 6
    assert all(want == got for want, got in log)
    assert gp.config.get()["allow_tf32"].source == "default"


def test_settings_from_files_apply_to_dispatch_choice(project: Path) -> None:
    (project / "pygpukit.toml").write_text('backend = ["nope"]\n')
    gp.config.reload()
    x = gp.asarray([1.0])
    with pytest.raises(ValueError, match=r"file .*pygpukit.toml names unknown backend 'nope'"):
        gp.add(x, x)


def test_no_warning_from_a_clean_setup(project: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gp.config.get()["dispatch"].value == {}
