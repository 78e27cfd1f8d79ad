"""The benchmark's fft family on the CPU: every row runs and passes its check, complex results
are compared with their imaginary parts, and Hermitian inputs are what the inverse rows get.

Benchmarks are not timed tests: nothing here asserts how fast anything ran.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
from pygpukit.benchmark import cases as C
from pygpukit.benchmark import main
from pygpukit.benchmark.runner import Bench, compare


def test_quick_fft_family_on_the_cpu_passes_every_row(tmp_path: Path) -> None:
    path = tmp_path / "fft.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["--quick", "--device", "cpu", "--families", "fft", "--json", str(path)])
    assert code == 0, out.getvalue()
    rows = json.loads(path.read_text())["rows"]
    ops = {r["op"] for r in rows}
    assert {"fft", "rfft", "irfft", "fft2", "rfft2", "irfft2", "matmul"} <= ops
    assert all(r["status"] == "PASS" for r in rows), [(r["key"], r["status"]) for r in rows]


def test_compare_counts_the_imaginary_part() -> None:
    want = C.Expected(np.array([1 + 1j, 2 - 2j]))
    assert compare(np.array([1 + 1j, 2 - 2j], dtype=np.complex64), want)[0] == 0.0
    err, why = compare(np.array([1 + 0j, 2 - 2j]), want)
    assert not why and err > 0.3  # only the imaginary part is wrong


def test_spectrum_inputs_are_half_spectra_of_real_signals() -> None:
    bench = Bench(device=None, peers=[], seed=3)
    z = bench.host("spectrum1", (4, 9))
    assert z.dtype == np.complex64 and z.shape == (4, 9)
    np.testing.assert_allclose(np.fft.rfft(np.fft.irfft(z, n=16)), z, atol=1e-4)
    w = bench.host("spectrum2", (2, 8, 5))
    assert w.shape == (2, 8, 5)
    back = np.fft.rfftn(np.fft.irfftn(w, s=(8, 8), axes=(-2, -1)), axes=(-2, -1))
    np.testing.assert_allclose(back, w, atol=1e-4)
