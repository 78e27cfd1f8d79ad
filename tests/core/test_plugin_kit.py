"""The plugin author's kit: calling conventions, signature checks at registration, errors
that name the plugin, load-time warnings, honest partial-load status, plugin-added ops,
and the README's plugin example run as written."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import backend, ops_catalog
from pygpukit.backends.cpu.views import view
from pygpukit.plugins import PluginCheckWarning, PluginLoadWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite

ROOT = Path(__file__).resolve().parents[2]
rng = np.random.default_rng(21)


def _f32(*shape: int) -> gp.GPUArray:
    return gp.asarray(rng.standard_normal(shape).astype(np.float32))


# -- the catalog ------------------------------------------------------------------------
def test_every_shipped_kernel_is_known_and_matches_its_convention() -> None:
    for name, provider in gp.plugins.providers().items():
        for op, kernel in provider.kernels.items():
            assert ops_catalog.is_known(op), f"{name} has a kernel for unknown op {op!r}"
            ops_catalog.check_kernel(op, kernel.fn, name)


def test_every_convention_is_documented_in_its_family_module() -> None:
    for op, conv in ops_catalog.conventions().items():
        if conv.family == "plugin":
            continue
        module = importlib.import_module(f"pygpukit._ops.{conv.family}")
        assert module.__doc__ and "onvention" in module.__doc__, conv.family
        assert conv.details == module.__doc__.strip() or conv.details
        assert conv.positional, op


def test_convention_of_an_unknown_op_suggests_names() -> None:
    assert ops_catalog.convention("add").positional == ("x1", "x2", "out", "compute")
    assert ops_catalog.convention("var").keywords == ("correction",)
    with pytest.raises(ValueError, match=r"unknown op 'sofmax'; did you mean softmax"):
        ops_catalog.convention("sofmax")


def test_the_provider_docstring_points_at_a_module_that_exists() -> None:
    doc = gp.KernelProvider.__doc__ or ""
    for name in re.findall(r"pygpukit\.[a-z_.]+[a-z]", doc):
        module = name if name.count(".") == 1 else name.rsplit(".", 1)[0]
        importlib.import_module(module)
    assert "pygpukit.ops_catalog" in doc


# -- signature checks at registration -------------------------------------------------
WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("add", lambda x1, x2, out: None, r"called as add\(x1, x2, out, compute\)"),
    ("softmax", lambda x, out: None, r"called as softmax\(x, out, axis\)"),
    ("matmul", lambda a, b: None, r"called as matmul\(x1, x2, out, allow_tf32\)"),
    ("var", lambda x, out, axes: None, r"correction"),
    ("sum", lambda x: None, r"called as sum\(x, out, axes\)"),
    ("copy", lambda src, out, extra: None, r"called as copy\(src, out\)"),
    ("exp", lambda: None, r"called as exp\(x, out, \*\*params\)"),
    ("where", lambda c, a, b: None, r"where\(condition, x1, x2, out\)"),
]  # fmt: skip


@pytest.mark.parametrize("op,fn,match", WRONG, ids=[w[0] for w in WRONG])
def test_a_kernel_with_the_wrong_signature_is_refused(
    op: str, fn: Callable[..., Any], match: str
) -> None:
    provider = gp.KernelProvider("wrongsig", device_type="cpu")
    with pytest.raises(TypeError, match=rf"provider 'wrongsig': the kernel for '{op}'.*{match}"):
        provider.add(op, fn)


def test_flexible_signatures_are_accepted() -> None:
    provider = gp.KernelProvider("flexible", device_type="cpu")
    provider.add("add", lambda *args: None)
    provider.add("var", lambda x, out, axes, **kw: None)
    provider.add("exp", lambda x, out, approximate=None: None)
    assert set(provider.kernels) == {"add", "var", "exp"}


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [({"name": "a b"}, ValueError, "'a b'"), ({"device_type": ""}, TypeError, "device_type"),
     ({"priority": "high"}, TypeError, "priority must be an int")],
)  # fmt: skip
def test_provider_arguments_are_checked(
    kwargs: dict[str, Any], exc: type[Exception], match: str
) -> None:
    args = {"name": "ok", "device_type": "cpu", **kwargs}
    with pytest.raises(exc, match=match):
        gp.KernelProvider(args.pop("name"), **args)


# -- plugins at load --------------------------------------------------------------------
class Plugin:
    """An in-process plugin contributing what the test hands it."""

    def __init__(self, provider: gp.KernelProvider | None = None, namespace: str = "") -> None:
        self.provider = provider
        self.namespace = namespace

    @gp.hookimpl
    def pygpukit_register_kernels(self, register: Callable[[Any], None]) -> None:
        if self.provider is not None:
            register(self.provider)

    @gp.hookimpl
    def pygpukit_register_namespaces(self, register: Callable[[str, object], None]) -> None:
        if self.namespace:
            register(self.namespace, {"from": "plugin"})


def test_kernel_errors_name_the_op_provider_and_plugin(register_plugin: Any) -> None:
    provider = gp.KernelProvider("raiser", device_type="cpu", priority=100)

    @provider.kernel("add", dtypes=["float64"])
    def add(x1: Any, x2: Any, out: Any, compute: Any) -> None:
        raise ValueError("raiser: cannot add today")

    register_plugin(Plugin(provider), "raising-plugin")
    x = gp.asarray(rng.standard_normal(3))
    with pytest.raises(ValueError, match="cannot add today") as info:
        x + x
    assert info.value.__notes__ == [
        "raised by the 'add' kernel of provider 'raiser' (plugin 'raising-plugin')"
    ]


def test_unknown_op_and_device_type_warn_at_load(register_plugin: Any) -> None:
    provider = gp.KernelProvider("typos", device_type="cpux")
    provider.add("sofmax", lambda x, out, axis: None)
    with pytest.warns(PluginCheckWarning) as seen:
        register_plugin(Plugin(provider), "typo-plugin")
    messages = " | ".join(str(w.message) for w in seen)
    assert "provider 'typos' serves device type 'cpux', which no plugin registers" in messages
    assert "kernel for unknown op 'sofmax' (did you mean 'softmax'?)" in messages


def test_misspelt_hook_name_warns(register_plugin: Any) -> None:
    class Misspelt:
        @gp.hookimpl
        def pygpukit_register_kernel(self, register: Callable[[Any], None]) -> None:
            raise AssertionError("never called")

    with pytest.warns(PluginCheckWarning, match=r"'pygpukit_register_kernel' is not a PyGPUkit "
                      r"hook.*did you mean 'pygpukit_register_kernels'"):  # fmt: skip
        register_plugin(Misspelt(), "misspelt")


def test_namespace_hidden_by_a_core_name_warns_and_stays_reachable(register_plugin: Any) -> None:
    with pytest.warns(PluginCheckWarning, match=r"namespace 'matmul' is hidden by the core"):
        register_plugin(Plugin(namespace="matmul"), "shadowing")
    assert gp.matmul is not gp.plugins.namespace("matmul")
    assert gp.plugins.namespace("matmul") == {"from": "plugin"}


def test_a_plugin_with_a_failing_hook_is_skipped_whole(register_plugin: Any) -> None:
    provider = gp.KernelProvider("halfway", device_type="cpu")
    provider.add("add", lambda x1, x2, out, compute: None)

    class Halfway(Plugin):
        @gp.hookimpl
        def pygpukit_register_namespaces(self, register: Callable[[str, object], None]) -> None:
            raise RuntimeError("halfway: namespaces failed")

    with pytest.warns(PluginLoadWarning, match="'halfway-plugin' skipped"):
        info = register_plugin(Halfway(provider), "halfway-plugin")
    assert info.status == "failed" and "namespaces failed" in info.error
    # what its other hook registered went too: the status tells the truth
    assert "halfway" not in gp.plugins.providers()
    assert info.providers == []


# -- a plugin's own op -------------------------------------------------------------------
def test_a_plugin_adds_an_op_and_runs_it_through_the_dispatcher(register_plugin: Any) -> None:
    backend.register_op("scale_shift", "(x, out, scale, shift)", summary="x * scale + shift")
    provider = gp.KernelProvider("myops", device_type="cpu")

    @provider.kernel("scale_shift", dtypes=["float32"])
    def scale_shift(x: Any, out: Any, scale: float, shift: float) -> None:
        np.multiply(view(x), scale, out=view(out))
        view(out)[...] += shift

    register_plugin(Plugin(provider), "myops-plugin")
    host = rng.standard_normal(5).astype(np.float32)
    x = gp.asarray(host)
    out = backend.empty(x.shape, x.dtype, x.device)
    backend.kernel("scale_shift", x)(x, out, 2.0, 1.0)
    np.testing.assert_allclose(out.to_numpy(), host * 2.0 + 1.0, rtol=1e-6)
    assert gp.explain("scale_shift", x).chosen == ["provider", "myops"][1]
    with pytest.raises(TypeError, match=r"called as scale_shift\(x, out, scale, shift\)"):
        provider.add("scale_shift", lambda x, out: None)
    with pytest.raises(ValueError, match="already exists"):
        backend.register_op("scale_shift", "(x, out)")
    with pytest.raises(ValueError, match="already exists"):
        backend.register_op("add", "(x, out)")


def test_backend_module_is_all_a_backend_needs() -> None:
    for name in ("DeviceBackend", "KernelProvider", "Kernel", "Device", "Buffer", "GPUArray",
                 "hookimpl", "as_dtype", "ALL_DTYPES", "UNARY", "BINARY", "kernel", "empty",
                 "convention", "register_op", "export_dlpack", "broadcast_shapes"):  # fmt: skip
        assert hasattr(backend, name), name
    with pytest.raises(TypeError, match="needs at least one GPUArray"):
        backend.kernel("add", 1, 2)


# -- the README's plugin example, as written ---------------------------------------------
def _readme_plugin() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Writing a plugin") :]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    plugin = next(b for b in blocks if b.startswith("# fastcpu/plugin.py"))
    return plugin


def _install_readme_plugin(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    package = site / "fastcpu"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text(_readme_plugin())
    dist = site / "fastcpu-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fastcpu\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[pygpukit]\nfastcpu = fastcpu.plugin\n")
    return site


README_USE = """
import json, warnings
warnings.simplefilter("error")  # the example must load without a single warning
import numpy as np, pygpukit as gp
rng = np.random.default_rng(3)
a = rng.standard_normal((3, 4)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
x, y = gp.asarray(a), gp.asarray(b)
results = {
    "chosen": gp.explain("add", x, x).chosen,
    "plus_scalar": bool(np.allclose((x + 1.0).to_numpy(), a + 1.0)),
    "scalar_plus": bool(np.allclose((2 + x).to_numpy(), a + 2)),
    "broadcast": bool(np.allclose((x + y).to_numpy(), a + b)),
    "strided": bool(np.allclose((x.T + x.T).to_numpy(), a.T + a.T)),
}
print(json.dumps(results))
"""


def test_readme_plugin_example_runs_as_written(tmp_path: Path) -> None:
    site = _install_readme_plugin(tmp_path)
    result = testsite.run_json(README_USE, tmp_path, packages=(), PYTHONPATH=str(site))
    assert result == {"chosen": "fastcpu", "plus_scalar": True, "scalar_plus": True,
                      "broadcast": True, "strided": True}  # fmt: skip


@pytest.mark.slow
def test_readme_plugin_example_passes_the_conformance_suite(tmp_path: Path) -> None:
    site = _install_readme_plugin(tmp_path)
    env = testsite.clean_env(tmp_path, ())
    env["PYTHONPATH"] = f"{site}:{env.get('PYTHONPATH', '')}"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pygpukit-backend",
         "fastcpu", "--pyargs", "pygpukit.testing.conformance"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-500:]
