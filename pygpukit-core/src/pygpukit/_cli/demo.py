"""`python -m pygpukit demo`: a small real workload on the best device, checked against NumPy.

It runs a matmul, a softmax, a sum and (where the device can compile kernels) a custom
kernel, compares each result with NumPy, and prints the median time of several runs
beside NumPy's and the provider that served each op. The exit status is 1 if any check
fails, so the demo doubles as a smoke test of an installation.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._device import Device
from .._placement import backend_of, default_device
from .progress import Step
from .table import table

SCALE_SRC = r"""
extern "C" __global__ void scale(float* x, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}
"""


@dataclass
class Result:
    op: str
    shape: str
    provider: str = "-"
    ours_ms: float | None = None
    numpy_ms: float | None = None
    error: float | None = None
    #: "PASS", "FAIL" or "SKIP"
    status: str = "SKIP"
    note: str = ""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="run matmul, softmax, sum and a custom kernel vs NumPy")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per op (median shown)")
    p.add_argument("--size", type=int, default=512, help="matrix side for matmul and softmax")
    p.set_defaults(run=run)


def median_ms(fn: Callable[[], Any], repeats: int, sync: Callable[[], None]) -> float:
    """Median wall time of `fn` over `repeats` runs after one warm-up, waiting for the device."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want))) / scale


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def workloads(size: int) -> list[tuple[str, str, list[np.ndarray], Callable[..., Any], float]]:
    """(op, shape text, NumPy inputs, NumPy reference function, relative tolerance)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    logits = rng.standard_normal((size, 4 * size), dtype=np.float32)
    vec = rng.random(16 * size * size // 4, dtype=np.float32)
    return [
        ("matmul", f"{size}x{size} @ {size}x{size}", [a, b], np.matmul, 1e-4),
        ("softmax", f"{size}x{4 * size}, last axis", [logits], _softmax, 1e-5),
        ("sum", f"{vec.size:,} elements", [vec], np.sum, 1e-5),
    ]


def run_op(
    op: str, shape: str, inputs: list[np.ndarray], ref: Callable[..., Any], tol: float,
    device: Device, repeats: int,
) -> Result:  # fmt: skip
    import pygpukit as gp

    result = Result(op, f"{shape}, float32")
    fn = getattr(gp, op, None)
    if fn is None:
        result.status, result.note = "FAIL", f"pygpukit.{op} is missing in this build"
        return result
    backend = backend_of(device)
    xs = [gp.asarray(x, device=device) for x in inputs]
    result.provider = gp.explain(op, *xs).chosen or "-"
    result.ours_ms = median_ms(lambda: fn(*xs), repeats, lambda: backend.synchronize(device))
    result.numpy_ms = median_ms(lambda: ref(*inputs), repeats, lambda: None)
    got = np.asarray(fn(*xs).to_numpy())
    want = np.asarray(ref(*(x.astype(np.float64) for x in inputs)))
    result.error = rel_error(got, want)
    ok = got.shape == want.shape and result.error <= tol
    result.status = "PASS" if ok else "FAIL"
    if not ok:
        result.note = f"differs from NumPy: max relative error {result.error:.2e} > {tol:.0e}"
    return result


def run_custom(device: Device) -> Result:
    """A JIT-compiled kernel where the device can compile them; on the CPU, a skip."""
    import pygpukit as gp

    result = Result("custom kernel", "scale(x, 0.5), float32")
    if device.type == "cpu":
        result.note = "the CPU backend has no JIT compiler; pip install pygpukit-cuda for it"
        return result
    jit = getattr(gp, "jit", None)
    probe = getattr(gp, "is_nvrtc_available", None)
    if jit is None or probe is None or not probe():
        result.note = f"no JIT for {device}: NVRTC or pygpukit.jit is not available"
        return result
    host = np.arange(1024, dtype=np.float32)
    try:
        x = gp.asarray(host, device=device)
        kernel = jit(SCALE_SRC, func="scale")
        kernel(x, factor=0.5, n=x.size)
        got = x.to_numpy()
    except Exception as exc:  # report the failure as a failed check
        result.status, result.note = "FAIL", f"{type(exc).__name__}: {exc}"
        return result
    result.provider = "jit"
    result.error = rel_error(got, host * 0.5)
    result.status = "PASS" if result.error == 0 else "FAIL"
    return result


def gpu_hint() -> str:
    """How to get a GPU device, given what is installed."""
    from .._plugins import registry

    cuda = registry().devices.get("cuda")
    if cuda is None:
        return "For an NVIDIA GPU: pip install pygpukit-cuda, then python -m pygpukit doctor."
    try:
        why = cuda.status()
    except Exception as exc:  # the probe failing is itself the answer
        why = f"{type(exc).__name__}: {exc}"
    return f"pygpukit-cuda is installed but found no GPU ({why}); see python -m pygpukit doctor."


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def run(args: argparse.Namespace) -> int:
    if args.repeats < 1 or args.size < 1:
        raise SystemExit("demo: --repeats and --size must be positive")
    device = default_device()
    name = backend_of(device).info(device).get("name", str(device))
    print(f"PyGPUkit demo on {device} ({name})")
    if device.type == "cpu":
        print("No GPU device found: running on the CPU backend (NumPy kernels).")
        print(gpu_hint())
    jobs = workloads(args.size)
    total = len(jobs) + 1
    results = []
    for index, (op, shape, inputs, ref, tol) in enumerate(jobs, start=1):
        with Step(f"{op} ({args.repeats} runs each)", index, total):
            try:
                results.append(run_op(op, shape, inputs, ref, tol, device, args.repeats))
            except Exception as exc:  # one broken op must not hide the others
                results.append(
                    Result(op, shape, status="FAIL", note=f"{type(exc).__name__}: {exc}")
                )
    with Step("custom kernel", total, total):
        results.append(run_custom(device))
    rows = [
        [r.op, r.shape, r.provider, _ms(r.ours_ms), _ms(r.numpy_ms),
         "-" if r.error is None else f"{r.error:.1e}", r.status, r.note or "-"]
        for r in results
    ]  # fmt: skip
    headers = ["op", "input", "provider", "pygpukit ms", "numpy ms", "max rel err", "check", "note"]
    print(table(headers, rows, widths={1: 28, 7: 40}))
    failed = [r for r in results if r.status == "FAIL"]
    passed = sum(r.status == "PASS" for r in results)
    skipped = sum(r.status == "SKIP" for r in results)
    print(f"{passed} passed, {len(failed)} failed, {skipped} skipped (times: median of "
          f"{args.repeats} runs).")  # fmt: skip
    return 1 if failed else 0
