"""Dispatch: which provider serves, fallthrough by dtype, the cache, and explain()."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dispatch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    yield from testsite.isolated_config(monkeypatch, tmp_path)


@pytest.fixture
def toyblas(project: Path, tmp_path: Path) -> Iterator[Any]:
    yield from testsite.toyblas_in_process(tmp_path)


def f32(*values: float) -> gp.GPUArray:
    return gp.asarray(np.array(values, dtype=np.float32))


def test_builtin_cpu_wins_by_default(toyblas: Any) -> None:
    x = f32(1, 2)
    assert gp.add(x, x).tolist() == [2.0, 4.0]
    assert toyblas.calls["add"] == 0
    expl = gp.explain("add", x, x)
    assert expl.chosen == "cpu"
    passed = {c.provider: c for c in expl.candidates}
    assert passed["toyblas"].verdict == "passed over"
    assert "lower rank" in passed["toyblas"].reason


def test_explicit_backend_argument(toyblas: Any) -> None:
    x = f32(1, 2)
    assert gp.add(x, x, backend="toyblas").tolist() == [2.0, 4.0]
    assert toyblas.calls["add"] == 1
    assert gp.explain("add", x, x, backend="toyblas").chosen == "toyblas"


def test_explicit_argument_beats_use(toyblas: Any) -> None:
    x = f32(1, 2)
    with gp.config.use(backend="toyblas,cpu"):
        gp.add(x, x)
        assert toyblas.calls["add"] == 1
        gp.add(x, x, backend="cpu")
        assert toyblas.calls["add"] == 1
        assert gp.explain("add", x, x, backend="cpu").chosen == "cpu"
    gp.add(x, x)  # outside the block the default order applies again
    assert toyblas.calls["add"] == 1


def test_set_backend_order_and_per_op_dispatch(toyblas: Any) -> None:
    x = f32(3)
    gp.config.set(dispatch="multiply:toyblas")
    assert gp.multiply(x, x).tolist() == [9.0]
    gp.add(x, x)
    assert toyblas.calls == {"multiply": 1}
    expl = gp.explain("multiply", x, x)
    assert expl.chosen == "toyblas"
    assert "dispatch setting multiply:toyblas (gp.config.set())" in str(expl)


def test_fallthrough_when_provider_lacks_dtype(toyblas: Any) -> None:
    i = gp.asarray(np.array([1, 2], dtype=np.int32))
    with gp.config.use(backend="toyblas,cpu"):
        assert gp.add(i, i).tolist() == [2, 4]
        expl = gp.explain("add", i, i)
    assert toyblas.calls["add"] == 0
    assert expl.chosen == "cpu"
    toy = next(c for c in expl.candidates if c.provider == "toyblas")
    assert (toy.verdict, toy.reason) == ("passed over", "no kernel for dtype int32")
    assert "- toyblas: no kernel for dtype int32" in str(expl)


def test_mixed_dtypes_key_on_every_array_argument(toyblas: Any) -> None:
    x = f32(1, 2)
    i = gp.asarray(np.array([1, 2], dtype=np.int32))
    with gp.config.use(backend="toyblas,cpu"):
        expl = gp.explain("add", x, i)
        assert expl.dtypes == ("float32", "int32")
        assert expl.chosen == "cpu"
        assert gp.add(x, i).tolist() == [2.0, 4.0]
        assert gp.explain("add", x, 2.5).dtypes == ("float32",)  # scalars do not key
        assert gp.explain("add", x, 2.5).chosen == "toyblas"
    assert toyblas.calls["add"] == 0


def test_explicit_backend_that_cannot_serve_raises(toyblas: Any) -> None:
    i = gp.asarray(np.array([1], dtype=np.int32))
    with pytest.raises(
        gp.DispatchError, match="backend 'toyblas' cannot run add: no kernel for dtype int32"
    ):
        gp.add(i, i, backend="toyblas")
    with pytest.raises(gp.DispatchError, match="cannot run softmax: has no kernel for this op"):
        gp.softmax(f32(1, 2), backend="toyblas")
    expl = gp.explain("add", i, i, backend="toyblas")  # explain reports instead of raising
    assert expl.chosen is None
    assert "no kernel for dtype int32" in str(expl)


def test_unknown_explicit_backend_lists_known(project: Path) -> None:
    x = f32(1)
    with pytest.raises(
        ValueError, match=r"argument backend= names unknown backend 'nope'; known backends: .*cpu"
    ):
        gp.add(x, x, backend="nope")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        gp.explain("add", x, x, backend="nope")


def count_resolves(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    real: Callable[..., Any] = _dispatch.resolve

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(_dispatch, "resolve", counting)
    return calls


def test_second_call_does_not_resolve_again(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gp.config.invalidate()  # start from an empty cache
    calls = count_resolves(monkeypatch)
    x = f32(1, 2)
    gp.add(x, x)
    gp.add(x, x)
    gp.add(x, 1.0)  # a different key: one dtype instead of two
    gp.add(x, 2.0)
    assert [c[0] for c in calls] == ["add", "add"]
    with gp.config.use(allow_tf32=True):  # new settings, new cache
        gp.add(x, x)
        gp.add(x, x)
    assert len(calls) == 3


def test_registering_a_plugin_invalidates_the_cache(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = gp.KernelProvider("fastadd", device_type="cpu", priority=100)
    ran: list[str] = []

    @fast.kernel("add", dtypes=["float32"])
    def add(x1: Any, x2: Any, out: gp.GPUArray, compute: Any) -> None:
        ran.append("add")
        out[...] = 0.0  # a wrong answer on purpose: it shows which kernel ran

    class Plugin:
        @gp.hookimpl
        def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
            register(fast)

    x = f32(1, 2)
    calls = count_resolves(monkeypatch)
    gp.add(x, x)
    gp.add(x, x)
    assert [c[0] for c in calls] == ["add"]
    gp.plugins.register(Plugin(), "fastadd-plugin")
    try:
        assert gp.add(x, x).tolist() == [0.0, 0.0]
        assert ran == ["add"]
        assert [c[0] for c in calls if c[0] == "add"] == ["add", "add"]
    finally:
        gp.plugins.unregister("fastadd-plugin")
    assert gp.add(x, x).tolist() == [2.0, 4.0]  # back to cpu after unregistering
    assert ran == ["add"]


def test_explain_str_is_readable(toyblas: Any) -> None:
    x = f32(1)
    text = str(gp.explain("add", x, x))
    lines = text.splitlines()
    assert lines[0] == "add(float32, float32) on cpu: served by 'cpu'"
    assert "  * cpu: built-in priority 0" in lines
    assert any(line.startswith("  - toyblas: lower rank") for line in lines)


def test_explain_follows_use_blocks(toyblas: Any) -> None:
    x = f32(1)
    with gp.config.use(backend=["toyblas", "cpu"]):
        expl = gp.explain("add", x, x)
    assert expl.chosen == "toyblas"
    assert "position 1 in backend list (gp.config.use())" in str(expl)


def test_explain_unknown_op_suggests_close_names(project: Path) -> None:
    x = f32(1)
    with pytest.raises(ValueError, match="unknown op 'sofmax'; did you mean softmax"):
        gp.explain("sofmax", x)
    with pytest.raises(ValueError, match=r"unknown op 'zzzzzz'; see python -m pygpukit info"):
        gp.explain("zzzzzz", x)
    with pytest.raises(TypeError, match="explain wants an op name"):
        gp.explain(3, x)  # type: ignore[arg-type]


def test_explain_known_op_without_kernel(project: Path) -> None:
    expl = gp.explain("from_numpy", f32(1))  # a public function that dispatches nothing
    assert expl.chosen is None
    assert "no provider can serve it" in str(expl)
    ranked = [c for c in expl.candidates if c.verdict != "not ranked"]  # other device types
    assert ranked and all(c.reason == "has no kernel for this op" for c in ranked)


def test_explain_refuses_host_arrays(project: Path) -> None:
    with pytest.raises(TypeError, match="argument 0 is a host ndarray"):
        gp.explain("add", np.ones(2), f32(1, 2))


def test_explain_creation_op_uses_device_and_dtype(project: Path) -> None:
    expl = gp.explain("arange", 5, dtype="int32", device="cpu")
    assert (expl.device, expl.dtypes, expl.chosen) == ("cpu", ("int32",), "cpu")
    assert gp.explain("eye", 3).dtypes == ()
