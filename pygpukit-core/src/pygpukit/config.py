"""Settings and where each one came from.

Precedence, highest first: an explicit argument to a call; ``with gp.config.use(...)``
(a ContextVar, so each thread and asyncio task sees its own); ``gp.config.set(...)``;
environment variables; the project's ``pygpukit.toml`` or ``[tool.pygpukit]`` in its
``pyproject.toml`` (searched from the working directory upwards); the user's
``~/.config/pygpukit/config.toml``; the built-in defaults.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import tomllib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _names(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = [str(v).strip() for v in value]
    else:
        raise TypeError(f"setting {key!r} wants a list of names or a comma-separated string")
    return [v for v in items if v]


def _optional_names(value: Any, key: str) -> list[str] | None:
    return None if value is None else _names(value, key)


def _op_map(value: Any, key: str) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    out: dict[str, str] = {}
    for item in _names(value, key):
        op, sep, backend = item.partition(":")
        if not sep or not op.strip() or not backend.strip():
            raise ValueError(f"setting {key!r}: {item!r} is not of the form op:backend")
        out[op.strip()] = backend.strip()
    return out


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"setting {key!r} wants a boolean (1/0, true/false), got {value!r}")


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"setting {key!r} wants a string, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class Spec:
    """One setting: its parser, default, environment variable and meaning."""

    parse: Callable[[Any, str], Any]
    default: Any
    env: str
    help: str


SPECS: dict[str, Spec] = {
    "backend": Spec(_names, [], "PYGPUKIT_BACKEND",
                    "kernel providers in priority order, e.g. cuda,triton,cpu"),
    "dispatch": Spec(_op_map, {}, "PYGPUKIT_DISPATCH",
                     "per-op provider choice, e.g. softmax:triton,matmul:cuda"),
    "plugins": Spec(_optional_names, None, "PYGPUKIT_PLUGINS",
                    "allow-list of plugin (entry point) names to load; unset loads all"),
    "disable_plugins": Spec(_names, [], "PYGPUKIT_DISABLE_PLUGINS",
                            "plugin names never to load"),
    "device": Spec(_text, "auto", "PYGPUKIT_DEVICE",
                   "default device for new arrays: auto, cpu, cuda, cuda:1, ..."),
    "allow_tf32": Spec(_bool, False, "PYGPUKIT_ALLOW_TF32",
                       "let float32 matmul use TF32 tensor cores (faster, ~1e-3 error)"),
    "cache_dir": Spec(_text, str(Path.home() / ".cache" / "pygpukit"), "PYGPUKIT_CACHE_DIR",
                      "where compiled kernels are cached on disk"),
}  # fmt: skip

#: settings whose effect is fixed when plugins load; changing them needs plugins.reload()
LOAD_TIME = frozenset({"plugins", "disable_plugins"})


@dataclass(frozen=True)
class Setting:
    """An effective value and the source it came from."""

    value: Any
    source: str


class Snapshot:
    """The effective settings at one moment; also holds the dispatch cache for them."""

    __slots__ = ("__weakref__", "dispatch_cache", "settings")

    def __init__(self, layers: list[tuple[str, dict[str, Any]]]) -> None:
        merged: dict[str, Setting] = {k: Setting(s.default, "default") for k, s in SPECS.items()}
        for source, values in layers:
            for key, value in values.items():
                if key == "dispatch" and merged[key].source != "default":
                    value = {**merged[key].value, **value}  # per-op entries combine
                merged[key] = Setting(value, source)
        self.settings = merged
        #: (op, device type, dtypes, explicit backend) -> Kernel; owned by the dispatcher
        self.dispatch_cache: dict[Any, Any] = {}

    def get(self, key: str) -> Any:
        return self.settings[key].value


def _parse_layer(values: dict[str, Any], where: str) -> dict[str, Any]:
    """Parse each value; an error names where the value came from (file, variable, call)."""
    out = {}
    for key, raw in values.items():
        spec = SPECS.get(key)
        if spec is None:
            raise ValueError(f"{where}: unknown setting {key!r}; known: {', '.join(SPECS)}")
        try:
            out[key] = spec.parse(raw, key)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{where}: {exc}") from None
    return out


def _env_layer() -> list[tuple[str, dict[str, Any]]]:
    layers = []
    for key, spec in SPECS.items():
        raw = os.environ.get(spec.env)
        if raw is not None:
            layers.append((f"environment {spec.env}", _parse_layer({key: raw}, spec.env)))
    return layers


def _file_layer(path: Path, table: str | None) -> tuple[str, dict[str, Any]] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"cannot read PyGPUkit settings from {path}: not UTF-8 text (byte {exc.start})"
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read PyGPUkit settings from {path}: {exc}") from exc
    if table is not None:
        tool = data.get("tool", {})
        section = tool.get(table) if isinstance(tool, dict) else None
        if section is None:
            return None
        if not isinstance(section, dict):
            raise TypeError(
                f"{path}: tool.{table} must be a table of settings, got a {type(section).__name__}"
            )
        data = section
    known = {k: v for k, v in data.items() if k in SPECS}
    for key in data.keys() - known.keys():
        warnings.warn(f"{path}: unknown PyGPUkit setting {key!r} ignored", stacklevel=4)
    return (f"file {path}", _parse_layer(known, str(path)))


def project_file(start: Path | None = None) -> tuple[Path, str | None] | None:
    """The nearest `pygpukit.toml`, or `pyproject.toml` with [tool.pygpukit], upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / "pygpukit.toml"
        if own.is_file():
            return own, None
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "[tool.pygpukit" in _text_or_warn(pyproject):
            return pyproject, "pygpukit"
    return None


def _text_or_warn(path: Path) -> str:
    """A pyproject.toml's text; one PyGPUkit cannot read is another project's business, so
    it is skipped with a warning rather than breaking every op."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
        warnings.warn(
            f"{path} skipped while looking for [tool.pygpukit] settings: {reason}",
            stacklevel=5,
        )
        return ""


def user_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pygpukit" / "config.toml"


_lock = threading.Lock()
_set_values: dict[str, Any] = {}
_static_layers: list[tuple[str, dict[str, Any]]] | None = None
_base: Snapshot | None = None
_context: contextvars.ContextVar[tuple[Snapshot, Snapshot, list[Any]] | None] = (
    contextvars.ContextVar("pygpukit_config", default=None)
)


def _static() -> list[tuple[str, dict[str, Any]]]:
    global _static_layers
    if _static_layers is None:
        layers: list[tuple[str, dict[str, Any]]] = []
        if user_file().is_file():
            layer = _file_layer(user_file(), None)
            if layer:
                layers.append(layer)
        found = project_file()
        if found:
            layer = _file_layer(*found)
            if layer:
                layers.append(layer)
        layers += _env_layer()
        _static_layers = layers
    return _static_layers


def _base_snapshot() -> Snapshot:
    global _base
    snap = _base
    if snap is None:
        with _lock:
            layers = (
                [*_static(), ("gp.config.set()", dict(_set_values))] if _set_values else _static()
            )
            snap = _base = Snapshot(list(layers))
    return snap


def current() -> Snapshot:
    """The settings in force here and now (hot path: one ContextVar read)."""
    ctx = _context.get()
    if ctx is None:
        return _base if _base is not None else _base_snapshot()
    snap, base, layers = ctx
    if base is _base:
        return snap
    return _rebuild_context(layers)


def _rebuild_context(layers: list[Any]) -> Snapshot:
    base = _base_snapshot()
    base_layers = list(_static())
    if _set_values:
        base_layers.append(("gp.config.set()", dict(_set_values)))
    snap = Snapshot(base_layers + layers)
    _context.set((snap, base, layers))
    return snap


def get() -> dict[str, Setting]:
    """Every effective setting with its source, e.g. ``get()["backend"].source``."""
    return dict(current().settings)


def _check_values(values: dict[str, Any]) -> dict[str, Any]:
    parsed = _parse_layer(values, "gp.config")
    if "backend" in parsed or "dispatch" in parsed:
        from . import _dispatch

        _dispatch.check_backend_names(
            parsed.get("backend", []), parsed.get("dispatch", {}), "gp.config"
        )
    if "device" in parsed and parsed["device"] != "auto":
        from ._device import Device

        Device.parse(parsed["device"])
    return parsed


def set(**values: Any) -> None:  # noqa: A001 - the documented name
    """Change settings for the whole process (below `use()` and explicit arguments)."""
    global _base
    parsed = _check_values(values)
    with _lock:
        _set_values.update(parsed)
        _base = None
    _warn_load_time(parsed)


def unset(*keys: str) -> None:
    """Drop values given to `set()`, so lower sources apply again."""
    global _base
    with _lock:
        for key in keys:
            _set_values.pop(key, None)
        _base = None


@contextlib.contextmanager
def use(**values: Any) -> Iterator[Snapshot]:
    """Apply settings inside a ``with`` block, for this thread or asyncio task only."""
    parsed = _check_values(values)
    _warn_load_time(parsed)
    outer = _context.get()
    layers = [*(outer[2] if outer else []), ("gp.config.use()", parsed)]
    base = _base_snapshot()
    base_layers = list(_static())
    if _set_values:
        base_layers.append(("gp.config.set()", dict(_set_values)))
    snap = Snapshot(base_layers + layers)
    token = _context.set((snap, base, layers))
    try:
        yield snap
    finally:
        _context.reset(token)


def reload() -> None:
    """Read the environment and the config files again (they are read once, lazily)."""
    global _static_layers, _base
    with _lock:
        _static_layers = None
        _base = None


def invalidate() -> None:
    """Drop every cached snapshot (and so every cached dispatch choice)."""
    global _base
    with _lock:
        _base = None


def reset() -> None:
    """Forget everything given to `set()` and re-read environment and files."""
    global _set_values
    with _lock:
        _set_values = {}
    reload()


def _warn_load_time(parsed: dict[str, Any]) -> None:
    late = LOAD_TIME & parsed.keys()
    if late:
        warnings.warn(
            f"{', '.join(sorted(late))} take effect when plugins load: "
            "call pygpukit.plugins.reload() to apply",
            stacklevel=3,
        )
