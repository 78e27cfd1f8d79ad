"""Op dispatch: pick the kernel for (op, dtypes, device, settings), once, then cache it.

The hot path is `kernel_for`: one ContextVar read and one dict lookup per call. The slow
path ranks every provider for the device type (explicit argument, per-op `dispatch`
setting, `backend` priority list, then each provider's own priority) and takes the first
that has the op for the dtypes. A provider that cannot serve is passed over, and
`explain` says why; nothing ever moves data to another device to find a kernel.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import config
from ._device import Device
from ._dtypes import DataType
from ._plugins import registry
from ._providers import Kernel, KernelProvider


class DispatchError(TypeError):
    """No provider can run this op on these inputs; the message lists each one's reason."""


@dataclass
class Candidate:
    provider: str
    #: "chosen", "passed over" or "not ranked"
    verdict: str
    reason: str


@dataclass
class Explanation:
    """Which provider runs an op on given inputs, and what happened to the others."""

    op: str
    device: str
    dtypes: tuple[str, ...]
    chosen: str | None
    candidates: list[Candidate] = field(default_factory=list)

    def __str__(self) -> str:
        head = f"{self.op}({', '.join(self.dtypes)}) on {self.device}: "
        head += f"served by {self.chosen!r}" if self.chosen else "no provider can serve it"
        lines = [head]
        for c in self.candidates:
            lines.append(f"  {'*' if c.verdict == 'chosen' else '-'} {c.provider}: {c.reason}")
        return "\n".join(lines)


def check_backend_names(backend: Iterable[str], dispatch: dict[str, str], where: str) -> None:
    """Raise ValueError if a setting names a provider no plugin registered, or an op no
    provider or public function knows (a misspelt op would otherwise be ignored)."""
    known = registry().providers
    for name in [*backend, *dispatch.values()]:
        if name not in known:
            raise ValueError(
                f"{where}: unknown backend {name!r}; known backends: {', '.join(sorted(known))}"
            )
    for op in dispatch:
        problem = unknown_op_message(op)
        if problem:
            raise ValueError(f"{where}: dispatch setting {op}:{dispatch[op]}: {problem}")


def unknown_op_message(op: str) -> str | None:
    """None for a known op name, else 'unknown op ...' with the closest known names."""
    import difflib

    from ._explain import known_ops

    ops = known_ops()
    if op in ops:
        return None
    close = difflib.get_close_matches(op, sorted(ops), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see python -m pygpukit info"
    return f"unknown op {op!r}{hint}"


def _warn_unknown_dispatch_ops(snap: config.Snapshot) -> None:
    """Once per settings snapshot: warn about op names in the `dispatch` setting (from
    the environment or a file) that nothing knows; they would never take effect."""
    if snap.dispatch_cache.get("__dispatch_ops_checked__"):
        return
    snap.dispatch_cache["__dispatch_ops_checked__"] = True
    setting = snap.settings["dispatch"]
    for op, backend in setting.value.items():
        problem = unknown_op_message(op)
        if problem:
            warnings.warn(
                f"{setting.source}: dispatch entry {op}:{backend} is ignored: {problem}",
                UserWarning,
                stacklevel=5,
            )


def _ranked(
    op: str, device_type: str, snap: config.Snapshot, explicit: str | None
) -> list[tuple[KernelProvider, str]]:
    """Providers for the device type, best first, each with the reason for its rank."""
    reg = registry()
    settings = snap.settings
    order = settings["backend"].value
    per_op = settings["dispatch"].value.get(op)
    for name, source in ((explicit, "argument backend="), (per_op, settings["dispatch"].source)):
        if name is not None and name not in reg.providers:
            raise ValueError(
                f"{source} names unknown backend {name!r}; "
                f"known backends: {', '.join(sorted(reg.providers))}"
            )
    for name in order:
        if name not in reg.providers:
            raise ValueError(
                f"{settings['backend'].source} names unknown backend {name!r}; "
                f"known backends: {', '.join(sorted(reg.providers))}"
            )

    def rank(p: KernelProvider) -> tuple[int, int, int]:
        if p.name == explicit:
            return (0, 0, 0)
        if p.name == per_op:
            return (1, 0, 0)
        if p.name in order:
            return (2, order.index(p.name), 0)
        return (3, 0, -p.priority)

    ranked = []
    for p in sorted(reg.providers.values(), key=rank):
        if p.name == explicit:
            why = "named by the explicit backend= argument"
        elif p.name == per_op:
            why = f"dispatch setting {op}:{p.name} ({settings['dispatch'].source})"
        elif p.name in order:
            why = (
                f"position {order.index(p.name) + 1} in backend list ({settings['backend'].source})"
            )
        else:
            why = f"built-in priority {p.priority}"
        ranked.append((p, why))
    return ranked


def resolve(
    op: str, device: Device, dtypes: tuple[DataType, ...], explicit: str | None = None
) -> tuple[Kernel | None, Explanation]:
    """The slow path: rank the providers, take the first that serves, say why."""
    expl = Explanation(op, str(device), tuple(d.name for d in dtypes), None)
    found: Kernel | None = None
    snap = config.current()
    if snap.settings["dispatch"].value:
        _warn_unknown_dispatch_ops(snap)
    for provider, why in _ranked(op, device.type, snap, explicit):
        if provider.device_type != device.type:
            if provider.name == explicit:
                raise DispatchError(
                    f"backend {explicit!r} runs on {provider.device_type} arrays but the "
                    f"inputs of {op} are on {device}; move them with .to_device() first"
                )
            expl.candidates.append(
                Candidate(
                    provider.name, "not ranked", f"serves {provider.device_type}, not {device}"
                )
            )
            continue
        kernel = provider.kernels.get(op)
        refusal = "has no kernel for this op" if kernel is None else kernel.refusal(dtypes)
        if kernel is None or refusal:
            if provider.name == explicit:
                raise DispatchError(f"backend {explicit!r} cannot run {op}: {refusal}")
            expl.candidates.append(Candidate(provider.name, "passed over", str(refusal)))
        elif found is not None:
            expl.candidates.append(Candidate(provider.name, "passed over", f"lower rank ({why})"))
        else:
            found = kernel
            expl.chosen = provider.name
            expl.candidates.append(Candidate(provider.name, "chosen", why))
    return found, expl


def kernel_for(
    op: str, device: Device, dtypes: tuple[DataType, ...], explicit: str | None = None
) -> Kernel:
    """The kernel that runs `op` here; cached per settings snapshot (the hot path)."""
    cache = config.current().dispatch_cache
    key = (op, device.type, dtypes, explicit)
    kernel = cache.get(key)
    if kernel is None:
        found, expl = resolve(op, device, dtypes, explicit)
        if found is None:
            if device.type not in registry().devices:
                note = registry().not_loaded_note()
                raise DispatchError(
                    f"no plugin provides device type {device.type!r}"
                    + (f" ({note})" if note else "")
                )
            raise DispatchError(f"cannot run {expl}")
        kernel = cache[key] = found
    return kernel


__all__ = ["Candidate", "DispatchError", "Explanation", "kernel_for", "resolve"]
