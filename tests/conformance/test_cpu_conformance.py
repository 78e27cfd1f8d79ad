"""CI runs the shipped conformance suite against the built-in cpu backend, as a backend would."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


def _run_suite(*extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "--pygpukit-backend=cpu", "--pyargs",
           "pygpukit.testing.conformance", "-q", "-p", "no:cacheprovider", *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_cpu_backend_passes_the_conformance_suite() -> None:
    done = _run_suite()
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, f"conformance suite failed for cpu:\n{tail}"
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None and int(passed.group(1)) > 0, f"no test ran:\n{tail}"
    assert "failed" not in done.stdout.splitlines()[-1]


def test_unknown_backend_is_a_usage_error() -> None:
    cmd = [sys.executable, "-m", "pytest", "--pygpukit-backend=no-such-backend", "--pyargs",
           "pygpukit.testing.conformance", "-q", "-p", "no:cacheprovider"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "no-such-backend" in done.stdout + done.stderr


@pytest.mark.parametrize("op", ["add", "exp", "copy"])
def test_suite_covers_core_ops(op: str) -> None:
    from pygpukit.testing.conformance.catalog import catalog

    assert op in {spec.name for spec in catalog()}
