"""The conformance families beyond elementwise and creation, one module per op layer module.

Each module has a ``specs()`` returning its `OpSpec`s; `BUILTIN` lists them in the
order the catalog registers them.
"""

from __future__ import annotations

from collections.abc import Callable

from ..catalog import OpSpec
from . import (
    complex_cuts,
    decode,
    factorizations,
    fourier,
    linalg,
    manipulation,
    nn,
    plugin_ops,
    reductions,
    searching,
)

BUILTIN: tuple[Callable[[], list[OpSpec]], ...] = (
    reductions.specs,
    searching.specs,
    manipulation.specs,
    linalg.specs,
    factorizations.specs,
    nn.specs,
    decode.specs,
    fourier.specs,
    plugin_ops.specs,
    complex_cuts.specs,
)
