"""The searching functions (being written; see the package docs for the kernel conventions)."""

from __future__ import annotations

__all__: list[str] = []
