"""Make older Triton interpreters run our programs under NumPy 2.4+ (a loop bound fix)."""

from __future__ import annotations

import inspect
from typing import Any

_done = False


def _index(self: Any) -> int:
    # a runtime scalar is a 1-element array; NumPy 2.4 refuses int() of an array with a
    # dimension, so drop it first (what Triton >= 3.7 does itself)
    return int(self.handle.data.squeeze())


def install() -> None:
    """Once per process: where Triton's interpreter turns a scalar into an index (``range``
    over a runtime bound, as our loops do) with ``int(array)``, let it squeeze first.

    Triton 3.6's interpreter fails every such loop with "only 0-dimensional arrays can be
    converted to Python scalars" under NumPy 2.4; versions that squeeze are left alone."""
    global _done
    if _done:
        return
    _done = True
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None:
        return
    try:
        if "squeeze" in inspect.getsource(original):
            return
    except (OSError, TypeError):
        return  # no source to check: leave the interpreter as it is

    def patch_lang_tensor(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)  # restored with the rest after the call

    interpreter._patch_lang_tensor = patch_lang_tensor
