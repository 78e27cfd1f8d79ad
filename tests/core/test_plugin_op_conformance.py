"""A plugin's own op: registered with a NumPy reference, covered by `gp.explain` and by the
conformance suite, which passes for a right kernel and fails for a wrong one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import ops_catalog
from pygpukit.testing.conformance.catalog import catalog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite


@pytest.fixture
def toyblas(tmp_path: Path) -> Iterator[Any]:
    yield from testsite.toyblas_in_process(tmp_path)


@pytest.fixture
def scratch_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ops a test registers are gone afterwards (the catalog is process-wide)."""
    monkeypatch.setattr(ops_catalog, "_conventions", dict(ops_catalog._conventions))


def _inputs(rng: np.random.Generator, dtype: Any) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((2, 3)).astype(dtype.to_numpy_dtype()),)


@pytest.mark.usefixtures("scratch_ops")
def test_register_op_keeps_the_reference_for_the_suite() -> None:
    ops_catalog.register_op(
        "plugop_negate", "(x, out)", reference=np.negative, inputs=_inputs, dtypes=("float32",)
    )
    check = ops_catalog.convention("plugop_negate").check
    assert check is not None and check.dtypes == (gp.float32,) and check.rtol is None
    spec = next(s for s in catalog() if s.name == "plugop_negate")
    cases = spec.cases(np.random.default_rng(0), gp.float32, gp.Device("cpu"))
    assert {c.label.split()[2] for c in cases} == {"contiguous", "strided", "offset"}
    assert all(c.direct is not None for c in cases)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"reference": np.negative}, ValueError, "go together"),
        ({"inputs": _inputs}, ValueError, "go together"),
        ({"reference": 1, "inputs": _inputs}, TypeError, "reference= must be callable"),
        ({"reference": np.negative, "inputs": _inputs, "dtypes": ("floot32",)}, ValueError,
         "plugop_bad"),
    ],
)  # fmt: skip
@pytest.mark.usefixtures("scratch_ops")
def test_register_op_checks_its_test_arguments(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        ops_catalog.register_op("plugop_bad", "(x, out)", **kwargs)
    assert not ops_catalog.is_known("plugop_bad")


def test_explain_covers_a_plugin_op(toyblas: Any) -> None:
    x = gp.asarray(np.arange(4, dtype=np.float32))
    expl = gp.explain("muladd", x, x, x)
    assert expl.chosen == "toyblas", str(expl)
    assert "muladd" in str(expl)
    want = np.arange(4) ** 2 + np.arange(4)
    np.testing.assert_allclose(toyblas.muladd(x, x, x).to_numpy(), want)
    assert toyblas.calls["muladd"] == 1


@pytest.mark.usefixtures("scratch_ops")
def test_explain_knows_a_registered_op_no_provider_serves() -> None:
    x = gp.asarray(np.arange(4, dtype=np.float32))
    ops_catalog.register_op("plugop_unserved", "(x, out)")
    assert gp.explain("plugop_unserved", x).chosen is None  # known, but no provider has it


def _conformance(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--pygpukit-backend=toyblas",
            "--pyargs", "pygpukit.testing.conformance", "-k", "muladd"]  # fmt: skip
    return testsite.run(args, tmp_path, **env)


def test_conformance_suite_passes_the_plugin_op(tmp_path: Path) -> None:
    done = _conformance(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout, done.stdout[-500:]


def test_conformance_suite_fails_a_wrong_plugin_kernel(tmp_path: Path) -> None:
    done = _conformance(tmp_path, TOYBLAS_BROKEN="1")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "FAILED" in done.stdout
    assert "test_kernel_on_poisoned_outputs[muladd-float32]" in done.stdout
    assert "muladd[float32]" in done.stdout  # the message names the op and dtype


@pytest.mark.usefixtures("scratch_ops")
def test_the_ops_catalog_example_runs_and_passes_its_own_cases(toyblas: Any) -> None:
    """The docstring's example, run as written, against the toyblas kernel for muladd."""
    import textwrap

    import pygpukit.backend
    import pygpukit.testing

    doc = ops_catalog.__doc__ or ""
    example = textwrap.dedent(doc[doc.index("::\n") + 3 : doc.index("``pytest --pygpukit")])
    namespace = {"pygpukit": pygpukit, "register_op": ops_catalog.register_op}
    exec(example, namespace)
    spec = next(s for s in catalog() if s.name == "muladd")
    assert spec.dtypes == (gp.float32, gp.float64)
    for d in spec.dtypes:
        for case in spec.cases(np.random.default_rng(5), d, gp.Device("cpu")):
            result = case.run("toyblas")
            assert case.check is not None
            case.check(result, case.expected, case.label)
