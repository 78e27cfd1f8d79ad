"""`python -m pygpukit doctor`: what works, what does not, and the setting or install that fixes it.

Every check ends as OK, WARN (works, but something is missing or was skipped), FAIL or
INFO. The exit status is 0 when nothing FAILs; only a broken CPU path or unusable
settings fail, because everything else still leaves a working (CPU) PyGPUkit.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config
from .._plugins import PluginInfo, Registry, registry
from .table import heading, table


@dataclass
class Check:
    name: str
    #: "OK", "WARN", "FAIL" or "INFO"
    status: str
    detail: str


def add_parser(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check what works and say how to fix what does not")
    p.set_defaults(run=run)


def check_settings() -> list[Check]:
    try:
        current = config.get()
    except (ValueError, TypeError, KeyError) as exc:
        return [Check("settings", "FAIL", f"{exc}; fix or unset the named source")]
    found = []
    for key, s in current.items():
        if s.source != "default":
            found.append(Check(f"setting {key}", "INFO", f"{s.value!r} from {s.source}"))
    if not found:
        found.append(Check("settings", "INFO", "all defaults; no PYGPUKIT_* variables or files"))
    project = config.project_file()
    user = config.user_file()
    found.append(
        Check(
            "project settings file",
            "INFO",
            str(project[0])
            if project
            else "none (pygpukit.toml or [tool.pygpukit] in pyproject.toml)",
        )
    )
    found.append(
        Check("user settings file", "INFO", f"{user}" + ("" if user.is_file() else " (absent)"))
    )
    return found


def check_backend_names(reg: Registry) -> list[Check]:
    """Names in the backend and dispatch settings that no plugin provides."""
    try:
        current = config.get()
    except (ValueError, TypeError, KeyError):
        return []  # already reported by check_settings
    known = ", ".join(sorted(reg.providers)) or "none"
    out = []
    backend, dispatch = current["backend"], current["dispatch"]
    for name in backend.value:
        if name not in reg.providers:
            out.append(Check(
                "backend setting", "FAIL",
                f"{backend.source} names unknown backend {name!r} (known: {known}); every op "
                "will raise until it is removed or its plugin is installed",
            ))  # fmt: skip
    for op, name in dispatch.value.items():
        if name not in reg.providers:
            out.append(Check(
                "dispatch setting", "FAIL",
                f"{dispatch.source} sends {op} to unknown backend {name!r} (known: {known})",
            ))  # fmt: skip
    return out


def _plugin_check(p: PluginInfo) -> Check:
    where = f"{p.distribution} {p.version}".strip() or "registered in-process"
    if p.status == "loaded":
        gives = ", ".join(
            [*(f"device {d}" for d in p.devices), *(f"provider {k}" for k in p.providers),
             *(f"namespace {n}" for n in p.namespaces)]
        ) or "nothing"  # fmt: skip
        return Check(f"plugin {p.name}", "OK", f"{where}; contributes {gives}")
    if p.status == "failed":
        return Check(
            f"plugin {p.name}", "WARN",
            f"{where}: {p.error}. Skipped; the rest still works. Fix: reinstall or upgrade "
            f"{p.distribution or p.name}, or silence it with PYGPUKIT_DISABLE_PLUGINS={p.name}",
        )  # fmt: skip
    if p.status == "disabled":
        return Check(f"plugin {p.name}", "INFO", f"{where}: disabled by disable_plugins")
    return Check(
        f"plugin {p.name}", "INFO", f"{where}: not in the PYGPUKIT_PLUGINS allow-list, not loaded"
    )


def check_devices(reg: Registry) -> list[Check]:
    out = []
    for kind, backend in reg.devices.items():
        try:
            present = backend.devices()
            status = backend.status()
        except Exception as exc:  # a failing driver probe is a finding, not a crash
            out.append(Check(f"device {kind}", "WARN", f"probe raised {type(exc).__name__}: {exc}"))
            continue
        if present:
            found = ", ".join(str(d) for d in present)
            out.append(Check(f"device {kind}", "OK", f"{found}: {status}"))
        else:
            out.append(Check(f"device {kind}", "WARN", f"no device found: {status}"))
    if "cuda" not in reg.devices:
        fix = "no CUDA plugin: pip install pygpukit-cuda (needs an NVIDIA GPU and driver)"
        out.append(Check("CUDA", "WARN", fix))
    return out


def check_cpu_path() -> Check:
    """A real op on CPU arrays, checked against NumPy."""
    import pygpukit as gp

    try:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        x = gp.asarray(a, device="cpu")
        got = gp.add(x, x).to_numpy()
        served = gp.explain("add", x, x).chosen
    except Exception as exc:
        return Check("CPU path", "FAIL", f"gp.add on CPU arrays raised {type(exc).__name__}: {exc}")
    if not np.array_equal(got, a + a):
        return Check("CPU path", "FAIL", f"gp.add on CPU arrays gave a wrong result ({served})")
    return Check(
        "CPU path", "OK", f"gp.add on CPU float32 arrays matches NumPy (served by {served})"
    )


def check_jit() -> Check:
    import pygpukit as gp

    probe = getattr(gp, "is_nvrtc_available", None)
    if probe is not None and probe():
        return Check("JIT (custom kernels)", "OK", "NVRTC found: gp.jit can compile kernels")
    return Check(
        "JIT (custom kernels)", "WARN",
        "no NVRTC: custom kernels need pip install pygpukit-cuda and the CUDA toolkit's NVRTC",
    )  # fmt: skip


def plugin_diagnoses(reg: Registry) -> list[Check]:
    """Run every loaded plugin's `pygpukit_diagnose` hook."""
    out: list[Check] = []
    for impl in reg.pm.hook.pygpukit_diagnose.get_hookimpls():
        info = reg.plugins.get(impl.plugin_name)
        if info is None or info.status != "loaded":
            continue

        def report(check: str, ok: bool, detail: str, _name: str = impl.plugin_name) -> None:
            out.append(Check(f"{_name}: {check}", "OK" if ok else "WARN", detail))

        try:
            impl.function(report=report)
        except Exception as exc:  # one plugin's broken check must not hide the others
            out.append(Check(
                f"{impl.plugin_name}: diagnose", "WARN",
                f"the plugin's pygpukit_diagnose hook raised {type(exc).__name__}: {exc}",
            ))  # fmt: skip
    return out


def checks() -> list[Check]:
    reg = registry()
    found = check_settings() + check_backend_names(reg)
    found += [_plugin_check(p) for p in reg.plugins.values()]
    found += check_devices(reg)
    found.append(check_cpu_path())
    found.append(check_jit())
    found += plugin_diagnoses(reg)
    return found


def run(args: argparse.Namespace) -> int:
    found = checks()
    print(heading("PyGPUkit doctor"))
    print(table(["status", "check", "detail"], [[c.status, c.name, c.detail] for c in found],
                widths={1: 30, 2: 70}))  # fmt: skip
    failed = [c for c in found if c.status == "FAIL"]
    warned = [c for c in found if c.status == "WARN"]
    print(f"\n{len(found)} checks: {len(failed)} failed, {len(warned)} warnings.")
    if failed:
        print("The CPU path or the settings are broken: fix the FAIL lines above.")
        return 1
    print("The CPU path works." + (" WARN lines say what would add more." if warned else ""))
    return 0
