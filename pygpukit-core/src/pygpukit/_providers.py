"""Kernel providers: named sets of kernels for one device type."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ._dtypes import DataType, as_dtype

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Kernel:
    """One implementation of one op: the callable and the input dtypes it accepts."""

    op: str
    fn: Callable[..., Any]
    provider: str
    #: input dtypes accepted; None accepts every real dtype (complex ones must be listed,
    #: so a provider written without complex in mind is never handed complex data)
    dtypes: frozenset[DataType] | None = None
    #: its launches pass a scheduler gate of their own (a native launch point), so the core
    #: does not wrap it in the Python one inside a task
    gated: bool = False

    def refusal(self, dtypes: tuple[DataType, ...]) -> str | None:
        """Why this kernel cannot take inputs of `dtypes`, or None if it can."""
        if self.dtypes is None:
            complex_ = sorted({d.name for d in dtypes if d.is_complex})
            if complex_:
                return f"no kernel for dtype {', '.join(complex_)} (declares real dtypes only)"
            return None
        missing = sorted({d.name for d in dtypes if d not in self.dtypes})
        return f"no kernel for dtype {', '.join(missing)}" if missing else None


class KernelProvider:
    """A named set of kernels for one device type, registered by a plugin.

    >>> cpu = KernelProvider("mycpu", device_type="cpu")
    >>> @cpu.kernel("add", dtypes=["float32"])
    ... def add(x1, x2, out): ...

    Each op's kernel follows the calling convention of that op, documented in
    ``pygpukit.ops_catalog``; it is handed arrays already on its device.
    """

    def __init__(
        self,
        name: str,
        device_type: str,
        *,
        priority: int = 0,
        description: str = "",
        gates_launches: bool = False,
    ) -> None:
        if not name or not name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"provider name must be alphanumeric (with - or _), got {name!r}")
        self.name = name
        self.device_type = device_type
        self.priority = priority
        self.description = description
        #: True when every kernel's launches go through a native launch gate that asks the
        #: scheduler for the device (pygpukit-cuda's); others are gated by the core
        self.gates_launches = gates_launches
        self.kernels: dict[str, Kernel] = {}

    def add(self, op: str, fn: Callable[..., Any], dtypes: Iterable[Any] | None = None) -> None:
        """Register `fn` as this provider's kernel for `op`.

        `dtypes` lists the input dtypes it accepts; None means every real dtype. Complex
        dtypes are served only by kernels that list them.
        """
        accepted = None if dtypes is None else frozenset(as_dtype(d) for d in dtypes)
        self.kernels[op] = Kernel(op, fn, self.name, accepted, self.gates_launches)

    def kernel(self, op: str, dtypes: Iterable[Any] | None = None) -> Callable[[F], F]:
        """Decorator form of `add`."""

        def wrap(fn: F) -> F:
            self.add(op, fn, dtypes)
            return fn

        return wrap

    def __repr__(self) -> str:
        return (
            f"KernelProvider({self.name!r}, device_type={self.device_type!r}, "
            f"ops={len(self.kernels)})"
        )
