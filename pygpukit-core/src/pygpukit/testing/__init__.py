"""Test helpers for PyGPUkit and its backends: strategies, tolerances, assertions, fixtures.

- Hypothesis strategies (need ``pip install pygpukit-core[testing]``): `dtypes`, `shapes`,
  `arrays`, `numpy_arrays`, `broadcastable_shapes`, `array_pairs`, `views`.
- `tolerance(dtype, op_kind)` -> (rtol, atol), from one table per dtype and op kind.
- `assert_allclose(actual, expected, dtype)` compares a GPUArray with a NumPy reference and
  reports the largest errors and the worst index.
- `poison(out)` fills an output with NaN (or a sentinel) so tests see unwritten elements.
- The pytest plugin (`pygpukit.testing.plugin`, loaded automatically) adds the option
  ``--pygpukit-backend=NAME`` and the fixtures `backend`, `device` and `register_plugin`.
- The conformance suite: ``pytest --pygpukit-backend=NAME --pyargs
  pygpukit.testing.conformance`` checks every op provider NAME claims against NumPy.

Names are loaded on first use, so importing this package (as pytest does for the plugin)
imports neither hypothesis nor NumPy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._assertions import assert_allclose, poison, poison_value
    from ._strategies import (
        VIEW_KINDS,
        array_pairs,
        arrays,
        broadcastable_shapes,
        default_bounds,
        dtypes,
        numpy_arrays,
        random_numpy,
        shapes,
        views,
    )
    from ._tolerance import OP_KINDS, tolerance

_WHERE = {
    "assert_allclose": "_assertions",
    "poison": "_assertions",
    "poison_value": "_assertions",
    "OP_KINDS": "_tolerance",
    "tolerance": "_tolerance",
    "VIEW_KINDS": "_strategies",
    "array_pairs": "_strategies",
    "arrays": "_strategies",
    "broadcastable_shapes": "_strategies",
    "default_bounds": "_strategies",
    "dtypes": "_strategies",
    "numpy_arrays": "_strategies",
    "random_numpy": "_strategies",
    "shapes": "_strategies",
    "views": "_strategies",
}

__all__ = [
    "OP_KINDS",
    "VIEW_KINDS",
    "array_pairs",
    "arrays",
    "assert_allclose",
    "broadcastable_shapes",
    "default_bounds",
    "dtypes",
    "numpy_arrays",
    "poison",
    "poison_value",
    "random_numpy",
    "shapes",
    "tolerance",
    "views",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'pygpukit.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
