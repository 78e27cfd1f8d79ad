"""Conformance tests, generated from the catalog for the provider named by --pygpukit-backend."""

from __future__ import annotations

import gc
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import pygpukit as gp
from pygpukit._array import GPUArray
from pygpukit._device import Device
from pygpukit._dispatch import DispatchError
from pygpukit._dtypes import EVERY_DTYPE, DataType
from pygpukit._placement import backend_of
from pygpukit._plugins import registry
from pygpukit.testing._assertions import assert_allclose, poison, poison_value
from pygpukit.testing.conformance.catalog import Case, OpSpec, catalog
from pygpukit.testing.plugin import backend_name

pytestmark = pytest.mark.conformance


def _params(name: str) -> list[Any]:
    """One (spec, dtype) per op and declared dtype; skipped params say why."""
    provider = registry().providers[name]
    params = []
    for spec in catalog():
        kernel = provider.kernels.get(spec.name)
        if kernel is None:
            reason = f"backend {name!r} has no kernel for {spec.name!r}"
            params.append(
                pytest.param(spec, None, id=spec.id, marks=pytest.mark.skip(reason=reason))
            )
            continue
        dtypes = [d for d in spec.dtypes if kernel.refusal((d,)) is None]
        if not dtypes:
            reason = f"{spec.name}: backend {name!r} declares none of the dtypes tested"
            params.append(
                pytest.param(spec, None, id=spec.id, marks=pytest.mark.skip(reason=reason))
            )
        for d in dtypes:
            params.append(pytest.param(spec, d, id=f"{spec.id}-{d.name}"))
    return params


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if {"spec", "dtype"} <= set(metafunc.fixturenames):
        metafunc.parametrize("spec,dtype", _params(backend_name(metafunc.config)))


@pytest.fixture(autouse=True)
def pool_unchanged(device: Device, request: pytest.FixtureRequest) -> Iterator[None]:
    """A kernel must not leak device memory: the pool's `used` count returns to where it was.

    A failed test's traceback keeps its arrays alive, so after a failure the next
    baseline is taken after a full collection, and a failed test is not also reported
    as a leak.
    """
    backend = backend_of(device)
    failed = request.session.testsfailed
    if failed:
        gc.collect()
    before = backend.memory_stats(device).get("used")
    yield
    if request.session.testsfailed > failed:
        return
    after = backend.memory_stats(device).get("used")
    if after != before:  # arrays are freed by refcount; a full collection only when needed
        gc.collect()
        after = backend.memory_stats(device).get("used")
    assert before == after, f"device pool used {before} bytes before the test, {after} after"


def _rng(spec: OpSpec, dtype: DataType) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{spec.id}/{dtype.name}".encode()))


def _check(
    case: Case, spec: OpSpec, dtype: DataType, actual: Any, how: str, expected: Any = None
) -> None:
    want = case.expected if expected is None else expected
    msg = f"{spec.id}[{dtype.name}] {case.label} ({how})"
    kind = case.op_kind or spec.op_kind
    if isinstance(want, tuple):  # several outputs (nonzero, unique, in-place pairs)
        assert isinstance(actual, tuple) and len(actual) == len(want), (
            f"{msg}: expected {len(want)} outputs, got {actual!r:.200}"
        )
        parts = case.parts or (case.dtype,) * len(want)
        for i, (got, ref, d) in enumerate(zip(actual, want, parts, strict=True)):
            assert_allclose(got, ref, d, op_kind=kind, err_msg=f"{msg} output {i}")
        return
    if case.check is not None:
        assert isinstance(actual, GPUArray), f"{msg}: got {type(actual).__name__}"
        assert actual.dtype is case.dtype, f"{msg}: dtype {actual.dtype}, expected {case.dtype}"
        case.check(actual, want, msg)
        return
    assert_allclose(actual, want, case.dtype, op_kind=kind, err_msg=msg)


def _cases(spec: OpSpec, dtype: DataType, backend: str, device: Device) -> list[Case]:
    """The spec's cases, less those needing dtypes the backend's kernel does not declare."""
    kernel = registry().providers[backend].kernels[spec.name]
    cases = spec.cases(_rng(spec, dtype), dtype, device)
    return [c for c in cases if kernel.refusal(c.needs) is None]


def _devices_of(result: Any) -> set[Device]:
    parts = result if isinstance(result, tuple) else (result,)
    return {p.device for p in parts}


def test_public_op_matches_numpy(
    spec: OpSpec, dtype: DataType, backend: str, device: Device
) -> None:
    """The public function, forced onto the backend, matches the NumPy reference."""
    for case in _cases(spec, dtype, backend, device):
        result = case.run(backend)
        where = _devices_of(result)
        assert where <= {device}, f"{spec.id} {case.label}: result on {where}"
        _check(case, spec, dtype, result, "public call")


def _intact(values: GPUArray, dtype: DataType) -> np.ndarray:
    """Which elements of `values` still hold the (first) poison."""
    host = values.to_numpy()
    if dtype.is_complex:
        return np.isnan(host)
    if dtype.is_floating:
        return np.isnan(host.astype(np.float64))
    return host == poison_value(dtype)


def test_kernel_on_poisoned_outputs(
    spec: OpSpec, dtype: DataType, backend: str, device: Device
) -> None:
    """Called directly, the kernel overwrites every element of a poisoned output (two
    different poisons); handed a contiguous output inside a poisoned buffer it leaves
    the guard elements on both sides alone; and where the op's convention allows
    strided outputs, handed every other column of a poisoned parent it leaves the
    columns in between alone."""
    kernel = registry().providers[backend].kernels[spec.name].fn
    for case in _cases(spec, dtype, backend, device):
        if case.direct is None:
            continue
        want = case.out_expected
        shape = want.shape
        for alternate in (False, True):
            out = poison(GPUArray.empty(shape, case.dtype, device), alternate=alternate)
            case.direct(kernel, out)
            how = f"kernel into a poisoned output, alternate={alternate}"
            _check(case, spec, dtype, out, how, want)
        size = int(np.prod(shape))
        guard = 3
        buffer = poison(GPUArray.empty((size + 2 * guard,), case.dtype, device))
        out = buffer[guard : guard + size].reshape(shape)
        case.direct(kernel, out)
        _check(case, spec, dtype, out, "kernel into an output at an offset", want)
        outside = np.concatenate(
            [_intact(buffer[:guard], case.dtype), _intact(buffer[guard + size :], case.dtype)]
        )
        assert np.all(outside), (
            f"{spec.id}[{dtype.name}] {case.label}: wrote outside its output (guard elements "
            f"{np.flatnonzero(~outside).tolist()} of {2 * guard} changed)"
        )
        if not case.strided_out or not shape:
            continue
        parent = poison(GPUArray.empty((*shape[:-1], 2 * shape[-1]), case.dtype, device))
        out = parent[..., ::2]
        case.direct(kernel, out)
        _check(case, spec, dtype, out, "kernel into a strided output", want)
        intact = _intact(parent[..., 1::2], case.dtype)
        assert np.all(intact), f"{spec.id}[{dtype.name}] {case.label}: wrote outside its output"


def test_undeclared_dtypes_are_refused(backend: str, device: Device) -> None:
    """Forcing the backend on a dtype its kernel does not declare raises DispatchError
    (a kernel declaring no dtype list takes the real ones only: complex is refused)."""
    provider = registry().providers[backend]
    kernel = provider.kernels.get("copy")
    if kernel is None:
        pytest.skip(f"backend {backend!r} has no copy kernel")
    missing = [d for d in EVERY_DTYPE if kernel.refusal((d,)) is not None]
    if not missing:
        pytest.skip(f"backend {backend!r}'s copy kernel declares every dtype")
    x = GPUArray.empty((2,), missing[0], device)
    with pytest.raises(DispatchError, match=missing[0].name):
        gp.copy(x, backend=backend)
