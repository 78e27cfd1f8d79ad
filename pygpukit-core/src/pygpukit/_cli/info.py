"""`python -m pygpukit info`: devices, plugins, providers, settings and the dispatch table."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from .. import __version__, config
from .._device import Device
from .._dispatch import resolve
from .._dtypes import as_dtype
from .._plugins import Registry, registry
from .table import heading, table

#: the dtypes the dispatch table shows, most used first
COMMON_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "bool")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("info", help="devices, plugins, providers and which provider runs each op")
    p.add_argument("--json", action="store_true", help="print the same facts as JSON")
    p.add_argument(
        "--provider", metavar="NAME",
        help="list one kernel provider's ops: the dtypes each accepts and its calling convention",
    )  # fmt: skip
    p.set_defaults(run=run)


def provider_ops(reg: Registry, name: str) -> list[dict[str, Any]]:
    """One provider's ops: accepted dtypes ("all" when any) and the calling convention."""
    from .. import ops_catalog

    provider = reg.providers.get(name)
    if provider is None:
        known = ", ".join(sorted(reg.providers)) or "none"
        raise ValueError(f"no kernel provider named {name!r}; known providers: {known}")
    out = []
    for op, kernel in sorted(provider.kernels.items()):
        conv = ops_catalog.conventions().get(op)
        dtypes = sorted(d.name for d in kernel.dtypes) if kernel.dtypes is not None else ["all"]
        out.append({
            "op": op,
            "dtypes": dtypes,
            "convention": f"{op}{conv.signature}" if conv else "(unknown op)",
        })  # fmt: skip
    return out


def _owner(reg: Registry, kind: str, name: str) -> str:
    for info in reg.plugins.values():
        if name in getattr(info, kind):
            return info.name
    return "?"


def devices(reg: Registry) -> list[dict[str, Any]]:
    out = []
    for kind, backend in sorted(reg.devices.items(), key=lambda kv: -kv[1].priority):
        entry: dict[str, Any] = {
            "type": kind,
            "plugin": _owner(reg, "devices", kind),
            "priority": backend.priority,
        }
        try:
            present = backend.devices()
            entry["status"] = backend.status()
            entry["devices"] = [{"device": str(d), **backend.info(d)} for d in present]
        except Exception as exc:  # a driver that fails is reported, not fatal
            entry["status"] = f"error: {type(exc).__name__}: {exc}"
            entry["devices"] = []
        out.append(entry)
    return out


def providers(reg: Registry) -> list[dict[str, Any]]:
    return [
        {
            "name": p.name,
            "device_type": p.device_type,
            "ops": len(p.kernels),
            "priority": p.priority,
            "plugin": _owner(reg, "providers", p.name),
            "description": p.description,
        }
        for p in reg.providers.values()
    ]


def settings() -> dict[str, dict[str, Any]]:
    return {k: {"value": s.value, "source": s.source} for k, s in config.get().items()}


def dispatch_table(
    reg: Registry, dtypes: tuple[str, ...] = COMMON_DTYPES
) -> dict[str, dict[str, dict[str, str | None]]]:
    """device -> op -> dtype -> the provider that would serve it (None: no provider)."""
    table_: dict[str, dict[str, dict[str, str | None]]] = {}
    ops = sorted({op for p in reg.providers.values() for op in p.kernels})
    for backend in reg.devices.values():
        try:
            present = backend.devices()
        except Exception:  # reported in the devices section
            continue
        if not present:
            continue
        device: Device = present[0]
        per_op: dict[str, dict[str, str | None]] = {}
        for op in ops:
            row: dict[str, str | None] = {}
            for name in dtypes:
                _, expl = resolve(op, device, (as_dtype(name),))
                row[name] = expl.chosen
            per_op[op] = row
        table_[str(device)] = per_op
    return table_


def collect() -> dict[str, Any]:
    """Everything `info` shows, as JSON-ready data."""
    reg = registry()
    data: dict[str, Any] = {
        "version": __version__,
        "devices": devices(reg),
        "plugins": [asdict(p) for p in reg.plugins.values()],
        "providers": providers(reg),
    }
    try:
        data["settings"] = settings()
        data["dispatch"] = dispatch_table(reg)
        data["dispatch_error"] = None
    except (ValueError, TypeError, KeyError) as exc:  # bad settings: say so, show the rest
        data.setdefault("settings", {})
        data["dispatch"] = {}
        data["dispatch_error"] = str(exc)
    return data


def _grouped(per_op: dict[str, dict[str, str | None]]) -> list[list[str]]:
    """One row per distinct provider pattern, listing the ops that share it."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for op, row in per_op.items():
        key = tuple(row[d] or "-" for d in COMMON_DTYPES)
        groups.setdefault(key, []).append(op)
    rows = [[", ".join(ops), *key] for key, ops in groups.items()]
    return sorted(rows, key=lambda r: -len(r[0]))  # the common case first


def contributions(p: dict[str, Any]) -> str:
    """What a plugin record says it contributed, as one line."""
    parts = [f"device {d}" for d in p["devices"]]
    parts += [f"provider {k}" for k in p["providers"]]
    parts += [f"namespace {n}" for n in p["namespaces"]]
    return ", ".join(parts) or "-"


def render(data: dict[str, Any]) -> str:
    out = [f"PyGPUkit {data['version']}"]
    out.append(heading("Devices"))
    rows: list[list[Any]] = []
    for d in data["devices"]:
        found = ", ".join(f"{x['device']} ({x.get('name', '')})" for x in d["devices"])
        rows.append([d["type"], d["plugin"], d["priority"], d["status"], found or "none"])
    headers = ["device type", "plugin", "priority", "status", "devices"]
    out.append(table(headers, rows, widths={3: 40, 4: 40}))

    out.append(heading("Plugins"))
    rows = [
        [p["name"], p["distribution"] or "(in-process)", p["version"] or "-", p["status"],
         contributions(p), p["error"] or "-"]
        for p in data["plugins"]
    ]  # fmt: skip
    headers = ["plugin", "distribution", "version", "status", "contributes", "error"]
    out.append(table(headers, rows, widths={5: 50}))

    out.append(heading("Kernel providers"))
    rows = [
        [p["name"], p["device_type"], p["ops"], p["priority"], p["plugin"],
         p["description"] or "-"]
        for p in data["providers"]
    ]  # fmt: skip
    headers = ["provider", "device type", "ops", "priority", "plugin", "description"]
    out.append(table(headers, rows, widths={5: 40}))

    changed = {k: v for k, v in data["settings"].items() if v["source"] != "default"}
    out.append(heading("Settings (other than defaults)"))
    if changed:
        out.append(
            table(
                ["setting", "value", "source"],
                [[k, v["value"], v["source"]] for k, v in changed.items()],
                widths={1: 40, 2: 50},
            )
        )
    else:
        out.append("all defaults (see python -m pygpukit doctor for where settings come from)")
    if data["dispatch_error"]:
        out.append(heading("Dispatch"))
        out.append(f"cannot dispatch with these settings: {data['dispatch_error']}")
    for device, per_op in data["dispatch"].items():
        out.append(heading(f"Dispatch on {device}: the provider serving each op, per input dtype"))
        out.append(table(["ops", *COMMON_DTYPES], _grouped(per_op), widths={0: 60}))
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    if args.provider:
        try:
            ops = provider_ops(registry(), args.provider)
        except ValueError as exc:
            print(f"error: {exc}")
            return 2
        if args.json:
            print(json.dumps(ops, indent=2))
        else:
            print(heading(f"Provider {args.provider}: {len(ops)} ops"))
            rows = [[o["op"], ", ".join(o["dtypes"]), o["convention"]] for o in ops]
            print(table(["op", "dtypes", "kernel(...)"], rows, widths={1: 50, 2: 50}))
        return 0
    data = collect()
    print(json.dumps(data, indent=2, default=str) if args.json else render(data))
    return 0
