"""Every triton kernel run on the CPU by Triton's interpreter (TRITON_INTERPRET=1: the
provider then serves the cpu device): the core's conformance suite, the selection
mechanisms, and the seeds' kernel calls against NumPy. Subprocesses, because the
interpreter is chosen when the plugins load."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pygpukit.triton import availability

pytestmark = pytest.mark.skipif(not availability.status()[0], reason=availability.status()[1])


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # the interpreter makes the provider serve cpu; on a machine with a GPU the default
    # device is cuda, so new arrays are pinned to the cpu for the code under test to reach it
    return {**os.environ, "TRITON_INTERPRET": "1", "PYGPUKIT_CACHE_DIR": str(tmp_path),
            "PYGPUKIT_DEVICE": "cpu", **extra}  # fmt: skip


def _python(code: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_conformance_suite_passes_under_the_interpreter(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pytest", "--pygpukit-backend=triton", "--pyargs",
           "pygpukit.testing.conformance", "-q", "-p", "no:cacheprovider",
           "-W", "ignore::RuntimeWarning"]  # fmt: skip
    # the interpreter evaluates masked-off lanes too (exp(-inf), 0/0): NumPy warns, no harm
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=_env(tmp_path))
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, f"conformance suite failed for triton:\n{tail}"
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None and int(passed.group(1)) >= 200, tail


def test_every_selection_mechanism_picks_triton_per_op(tmp_path: Path) -> None:
    code = """
        import numpy as np, pygpukit as gp
        x = gp.asarray(np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32))
        print("A", gp.explain("softmax", x).chosen, "|", gp.explain("exp", x).chosen)
        with gp.config.use(dispatch={"rmsnorm": "triton"}):
            e = gp.explain("rmsnorm", x, gp.ones((5,)))
            print("B", e.chosen, "|", e.candidates[0].reason)
        print("C", gp.explain("layernorm", x, gp.ones((5,)), gp.zeros((5,)),
                              backend="triton").chosen)
        y = gp.softmax(x, backend="triton").to_numpy()
        want = np.exp(x.to_numpy()) / np.exp(x.to_numpy()).sum(-1, keepdims=True)
        print("D", np.allclose(y, want, rtol=1e-5, atol=1e-6))
    """
    out = _python(code, _env(tmp_path, PYGPUKIT_DISPATCH="softmax:triton"))
    assert "A triton | cpu" in out  # PYGPUKIT_DISPATCH names softmax only
    assert "B triton | dispatch setting rmsnorm:triton" in out
    assert "C triton" in out and "D True" in out


def test_seed_kernel_calls_match_numpy(tmp_path: Path) -> None:
    code = """
        import numpy as np, pygpukit as gp
        from pygpukit.triton import from_gpuarray, kernels, triton_available
        assert triton_available()
        rng = np.random.default_rng(1)
        xn = rng.standard_normal((4, 64)).astype(np.float32)
        wn = rng.uniform(0.5, 1.5, 64).astype(np.float32)
        bn = rng.standard_normal(64).astype(np.float32)
        x, w, b = gp.asarray(xn), gp.asarray(wn), gp.asarray(bn)
        out = gp.empty((4, 64), dtype="float32")
        kernels.rmsnorm(from_gpuarray(x), from_gpuarray(w), from_gpuarray(out), eps=1e-5)
        want = xn / np.sqrt((xn.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-5) * wn
        print("rms", np.allclose(out.to_numpy(), want, rtol=1e-5, atol=1e-5))
        kernels.layernorm(x, w, b, out, eps=1e-5)
        mu, var = xn.mean(-1, keepdims=True), xn.var(-1, keepdims=True)
        print("ln", np.allclose(out.to_numpy(), (xn - mu) / np.sqrt(var + 1e-5) * wn + bn,
                                rtol=1e-4, atol=1e-5))
        kernels.softmax(x, out, axis=0)
        e = np.exp(xn - xn.max(0))
        print("sm", np.allclose(out.to_numpy(), e / e.sum(0), rtol=1e-5, atol=1e-7))
        qn = rng.standard_normal((6, 2, 8)).astype(np.float32)
        kn = rng.standard_normal((6, 1, 8)).astype(np.float32)
        ang = rng.uniform(-3, 3, (6, 4)).astype(np.float32)
        q, k = gp.asarray(qn), gp.asarray(kn)
        kernels.rotary(q, k, gp.asarray(np.cos(ang)), gp.asarray(np.sin(ang)))
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = qn[..., :4], qn[..., 4:]
        rq = np.concatenate([a * c - b * s, b * c + a * s], -1)
        print("rope", np.allclose(q.to_numpy(), rq, rtol=1e-5, atol=1e-6))
        sw = gp.triton.swiglu(x, w.reshape((1, 64)) * gp.ones((4, 64)), backend="triton")
        print("swiglu", np.allclose(sw.to_numpy(), xn / (1 + np.exp(-xn)) * wn, rtol=1e-5,
                                    atol=1e-6))
        try:
            kernels.rmsnorm(x, gp.ones((3,)), out)
        except ValueError as exc:
            print("bad", exc)
    """
    out = _python(code, _env(tmp_path))
    for name in ("rms", "ln", "sm", "rope", "swiglu"):
        assert f"{name} True" in out, out
    assert "bad rmsnorm: weight has shape (3,), want (64,)" in out


def test_the_example_runs_and_checks_itself(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "pygpukit-triton" / "examples" / "triton_per_op.py"
    done = subprocess.run(
        [sys.executable, "-W", "ignore::RuntimeWarning", str(example)],
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rmsnorm matches: True" in done.stdout and "step matches: True" in done.stdout
    assert "dispatch setting rmsnorm:triton" in done.stdout
