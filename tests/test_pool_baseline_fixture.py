"""The pool-baseline fixture of tests/conftest.py: a failed test's arrays (kept alive by
pytest's sys.last_* until the next test's call starts) must not read as the next test
freeing memory it did not allocate."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

FAILS_THEN_PASSES = """
import pygpukit as gp


def test_a_fails_holding_memory():
    x = gp.zeros((4096,), device="cpu")
    assert x is None


def test_b_allocates_nothing():
    pass
"""


def test_a_failure_does_not_charge_the_next_test(tmp_path: Path) -> None:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_pair.py").write_text(FAILS_THEN_PASSES)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "-p", "no:randomly", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)  # fmt: skip
    out = run.stdout + run.stderr
    assert "1 failed, 1 passed" in out and "error" not in out.splitlines()[-1], out
