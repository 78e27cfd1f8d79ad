"""Entry point `broken_hook`: imports fine, but its kernel hook raises while registering."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pygpukit as gp


@gp.hookimpl
def pygpukit_register_kernels(register: Callable[[Any], None]) -> None:
    raise RuntimeError("pygpukit-broken: kernel registration failed on purpose")


@gp.hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    raise RuntimeError("pygpukit-broken: diagnose hook failed on purpose")
