"""`pygpukit.explain`: which provider an op call would use, and why the others were not."""

from __future__ import annotations

import difflib
import types
from typing import Any

import numpy as np

from ._array import GPUArray
from ._device import Device
from ._dispatch import Candidate, DispatchError, Explanation, resolve
from ._dtypes import DataType, as_dtype
from ._placement import default_device
from ._plugins import registry

#: public functions of pygpukit that are not ops: nothing dispatches them
_NOT_OPS = frozenset({
    "explain", "hookimpl", "jit", "get_device_info", "get_nvrtc_path", "is_cuda_available",
    "is_nvrtc_available", "promote_types", "result_type", "can_cast", "finfo", "iinfo",
    "isdtype", "warmup", "is_warmup_done", "get_warmup_error", "check_driver_compatibility",
    "get_driver_requirements", "get_nvrtc_version",
})  # fmt: skip


def known_ops() -> set[str]:
    """Op names some provider has a kernel for or the ops catalog knows (plugin ops
    included), plus the public functions of pygpukit (functions only: classes such as
    Scheduler, dtypes and modules are not ops)."""
    import pygpukit

    from .ops_catalog import conventions

    names = {op for p in registry().providers.values() for op in p.kernels}
    names |= set(conventions())
    public = {
        n
        for n in dir(pygpukit)
        if not n.startswith("_") and isinstance(getattr(pygpukit, n), types.FunctionType)
    }
    return names | (public - _NOT_OPS)


def _key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Device, tuple[DataType, ...]]:
    """The (device, input dtypes) the op layer keys dispatch on for these arguments."""
    arrays = []
    for i, a in enumerate(args):
        if isinstance(a, GPUArray):
            arrays.append(a)
        elif isinstance(a, (np.ndarray, list, tuple)):
            raise TypeError(
                f"argument {i} is a host {type(a).__name__}; ops take GPUArrays "
                "(convert with pygpukit.asarray() first)"
            )
    if arrays:
        devices = {a.device for a in arrays}
        if len(devices) > 1:
            found = ", ".join(sorted(str(d) for d in devices))
            raise ValueError(f"arrays are on different devices ({found}); the op would refuse")
        return arrays[0].device, tuple(a.dtype for a in arrays)
    # creation ops have no array inputs: they key on the device and dtype they make
    device = kwargs.get("device")
    dev = default_device() if device is None else Device.parse(device)
    dtype = kwargs.get("dtype")
    return dev, (() if dtype is None else (as_dtype(dtype),))


def explain(op: str, /, *args: Any, backend: str | None = None, **kwargs: Any) -> Explanation:
    """Which kernel provider would run ``op(*args, backend=backend, **kwargs)``, and why.

    The answer is for the same dispatch key the op itself uses: the device of the
    GPUArray positional arguments and their dtypes, in order, with the settings in force
    here (``gp.config.use`` blocks included). Nothing runs and nothing is allocated.
    ``str()`` of the result is a readable report; ``.chosen`` is None when no provider
    can serve the call, and each entry of ``.candidates`` says why it was passed over.

    An op name no provider and no public function knows raises ValueError listing the
    closest names (a typo is the likely cause). A known op that no provider implements
    yet gives an Explanation with no provider. An unknown ``backend`` raises ValueError
    listing the known ones, exactly as the op would.
    """
    if not isinstance(op, str) or not op:
        raise TypeError(f"explain wants an op name such as 'add', got {op!r}")
    ops = known_ops()
    if op not in ops:
        import pygpukit

        if not op.startswith("_") and hasattr(pygpukit, op):
            raise ValueError(
                f"pygpukit.{op} is not an op (it is a {type(getattr(pygpukit, op)).__name__}); "
                "explain answers for ops such as 'add' or 'matmul'"
            )
        close = difflib.get_close_matches(op, sorted(ops), n=5, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see python -m pygpukit info"
        raise ValueError(f"unknown op {op!r}{hint}")
    device, dtypes = _key(args, kwargs)
    try:
        _, expl = resolve(op, device, dtypes, backend)
    except DispatchError as exc:  # an explicit backend= that cannot serve: say so, don't raise
        expl = Explanation(op, str(device), tuple(d.name for d in dtypes), None)
        expl.candidates.append(Candidate(str(backend), "passed over", str(exc)))
    if device.type not in registry().devices:
        expl.candidates.append(
            Candidate("-", "passed over", f"no plugin provides device type {device.type!r}")
        )
    return expl


__all__ = ["explain", "known_ops"]
