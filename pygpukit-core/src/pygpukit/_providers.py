"""Kernel providers: named sets of kernels for one device type."""

from __future__ import annotations

import functools
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
    #: asked when dispatch considers this kernel: why it cannot run here (a library the
    #: kernel needs is not installed), or None when it can; None: always available
    unavailable: Callable[[], str | None] | None = None

    def refusal(self, dtypes: tuple[DataType, ...]) -> str | None:
        """Why this kernel cannot take inputs of `dtypes`, or None if it can."""
        if self.unavailable is not None:
            why = self.unavailable()
            if why:
                return why
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
    ... def add(x1, x2, out, compute): ...

    Each op's kernel follows the calling convention of that op, documented in
    :mod:`pygpukit.ops_catalog` (``pygpukit.ops_catalog.convention("add")``); it is handed
    arrays already on its device. A kernel whose signature cannot take that call is
    refused at registration with a TypeError naming the op and the expected call.

    `priority` orders providers of one device type when the user's ``backend`` setting does
    not: the highest wins (the built-in CPU provider has 0; a provider meant as a fallback
    takes a negative one). `device_type` must be one a plugin registers (``"cpu"``,
    ``"cuda"``, or the plugin's own); a misspelt one is reported when the plugin loads.
    """

    def __init__(
        self,
        name: str,
        device_type: str,
        *,
        priority: int = 0,
        description: str = "",
        gates_launches: bool = False,
        name_errors: bool = True,
    ) -> None:
        if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"provider name must be alphanumeric (with - or _), got {name!r}")
        if not isinstance(device_type, str) or not device_type:
            raise TypeError(f"provider {name!r}: device_type is a str such as 'cpu' or 'cuda'")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"provider {name!r}: priority must be an int, got {priority!r}")
        self.name = name
        self.device_type = device_type
        self.priority = priority
        self.description = description
        #: True when every kernel's launches go through a native launch gate that asks the
        #: scheduler for the device (pygpukit-cuda's); others are gated by the core
        self.gates_launches = gates_launches
        #: whether an exception raised by a kernel gets a note naming the op, this
        #: provider and its plugin; costs one Python call per launch, so a provider on a
        #: measured hot path may turn it off
        self.name_errors = name_errors
        #: the plugin that registered this provider (set by the registry)
        self.plugin = ""
        self.kernels: dict[str, Kernel] = {}

    def add(self, op: str, fn: Callable[..., Any], dtypes: Iterable[Any] | None = None, *,
            unavailable: Callable[[], str | None] | None = None) -> None:  # fmt: skip
        """Register `fn` as this provider's kernel for `op` (checked against the op's
        calling convention). `dtypes` lists the input dtypes it accepts; None means every
        real dtype. Complex dtypes are served only by kernels that list them.

        `unavailable`, when given, is asked each time dispatch weighs this kernel (once per
        settings snapshot): a reason string passes the kernel over, and ``explain`` shows
        that reason (e.g. "cuSOLVER not found: pip install nvidia-cusolver")."""
        if not isinstance(op, str) or not op:
            raise TypeError(f"provider {self.name!r}: an op name is a non-empty str, got {op!r}")
        from .ops_catalog import check_kernel

        check_kernel(op, fn, self.name)
        accepted = None if dtypes is None else frozenset(as_dtype(d) for d in dtypes)
        call = self._naming(op, fn) if self.name_errors else fn
        self.kernels[op] = Kernel(op, call, self.name, accepted, self.gates_launches, unavailable)

    def _naming(self, op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, with a note naming the op, provider and plugin on what it raises."""
        provider = self

        @functools.wraps(fn)
        def kernel(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                plugin = f" (plugin {provider.plugin!r})" if provider.plugin else ""
                exc.add_note(f"raised by the {op!r} kernel of provider {provider.name!r}{plugin}")
                raise

        return kernel

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
