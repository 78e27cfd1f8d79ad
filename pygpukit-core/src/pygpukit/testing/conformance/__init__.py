"""The backend conformance suite: every op a kernel provider claims, checked against NumPy.

Run it for an installed backend with::

    pytest --pygpukit-backend=NAME --pyargs pygpukit.testing.conformance

Each op of the catalog (`catalog.py`) that provider NAME has a kernel for is called
through the public API with ``backend=NAME`` on NAME's device type, for every dtype the
kernel declares, on contiguous arrays, views (transposed, reversed, stepped, offset,
broadcast), sizes 0 and 1, 0-d arrays and Python scalars; the kernel is also called
directly on poisoned outputs (contiguous and strided) to prove it writes every element
and nothing else. Ops NAME does not have are reported as skipped, with the reason.
Ops a plugin added with ``register_op(..., reference=, inputs=)`` are tested the same way,
from the reference and inputs the plugin gave (see `pygpukit.ops_catalog`).
"""
