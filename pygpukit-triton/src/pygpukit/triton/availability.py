"""Whether Triton can be used here, and if not, one line saying why and how to fix it."""

from __future__ import annotations

import functools
import os
from typing import Any

#: the oldest Triton whose compiled kernels take the trailing scratch parameters we pass
MIN_VERSION = (3, 3)


@functools.cache
def status() -> tuple[bool, str]:
    """(usable, detail): Triton's version when it imports, else the reason and the fix."""
    try:
        import triton
    except ImportError as exc:
        return False, f"triton not installed ({exc}); pip install 'pygpukit-triton[triton]'"
    except Exception as exc:  # a broken install raises anything at import
        return False, f"triton failed to import: {type(exc).__name__}: {exc}"
    version = getattr(triton, "__version__", "0")
    parts = tuple(int(p) for p in version.split("+")[0].split(".")[:2] if p.isdigit())
    if parts < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        return False, f"triton {version} is too old (pygpukit-triton needs >= {need})"
    return True, f"triton {version}" + (" (TRITON_INTERPRET=1: interpreter)" if interpret() else "")


@functools.cache
def interpret() -> bool:
    """TRITON_INTERPRET=1: kernels run in Triton's NumPy interpreter on host memory, so the
    provider serves the cpu device instead of cuda (the CPU test path). Read once: the
    provider's device type is fixed when the plugins load."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def triton_available() -> bool:
    """True when Triton imports and is recent enough for this backend's kernels."""
    return status()[0]


def require() -> Any:
    """The triton module, or ImportError carrying the reason."""
    ok, why = status()
    if not ok:
        raise ImportError(f"pygpukit.triton: {why}")
    import triton

    return triton
