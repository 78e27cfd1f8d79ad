"""The seed READMEs' Python snippets that need neither a GPU nor the Rust module run as written.

Each snippet is executed from source text, statement for statement as a user would type
it (the READMEs' comments are left out), then its results are checked against NumPy.
Left out on purpose: the LLM loader (needs model files), the Triton example (needs
Triton), and the Rust scheduler snippet (``_pygpukit_rust``, tested under tests/rust).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.testing import assert_allclose

BASIC_OPERATIONS = """
import pygpukit as gp

x = gp.zeros((1024, 1024), dtype="float32")
y = gp.ones((1024, 1024), dtype="float32")

z = gp.add(x, y)
w = gp.matmul(x, y)

arr = z.to_numpy()
garr = gp.from_numpy(arr)
"""

CUSTOM_JIT_KERNEL = """
src = '''
extern "C" __global__
void scale(float* x, float factor, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) x[idx] *= factor;
}
'''

if gp.is_nvrtc_available():
    kernel = gp.jit(src, func="scale")
    kernel(x, factor=0.5, n=x.size)
else:
    print("JIT not available. Using pre-compiled ops.")
"""

FP16_BF16 = """
import pygpukit as gpk
import numpy as np

a = gpk.from_numpy(np.random.randn(1024, 1024).astype(np.float16))
b = gpk.from_numpy(np.random.randn(1024, 1024).astype(np.float16))
c = a @ b

arr = np.random.randn(1024, 1024).astype(np.float32)
a_bf16 = gpk.from_numpy(arr).astype(gpk.bfloat16)
b_bf16 = gpk.from_numpy(arr).astype(gpk.bfloat16)
c_bf16 = a_bf16 @ b_bf16
result = c_bf16.astype(gpk.float32)
"""

OPERATOR_OVERLOADS = """
c = a + b
c = a - b
c = a * b
c = a / b
c = a @ b
"""

DRIVER_ONLY = """
import pygpukit as gp

print(f"CUDA: {gp.is_cuda_available()}")
print(f"NVRTC: {gp.is_nvrtc_available()}")
print(f"NVRTC Path: {gp.get_nvrtc_path()}")
"""


@pytest.fixture(autouse=True)
def on_cpu() -> Iterator[None]:
    """The READMEs' CPU mode: the snippets' arrays live on the CPU even beside a GPU."""
    with gp.config.use(device="cpu"):
        yield


@pytest.fixture
def cpu_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Load only the built-in CPU plugin, as on a machine without pygpukit-cuda."""
    monkeypatch.setenv("PYGPUKIT_PLUGINS", "cpu")
    gp.config.reload()
    gp.plugins.reload()
    yield
    monkeypatch.undo()
    gp.config.reload()
    gp.plugins.reload()  # back to the plugins the rest of the suite sees


def run(snippet: str, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    ns: dict[str, Any] = {} if namespace is None else namespace
    exec(compile(snippet, "<seed snippet>", "exec"), ns)
    return ns


def test_basic_operations() -> None:
    ns = run(BASIC_OPERATIONS)
    assert ns["x"].shape == ns["y"].shape == (1024, 1024)
    np.testing.assert_array_equal(ns["arr"], np.ones((1024, 1024), dtype=np.float32))
    np.testing.assert_array_equal(ns["w"].to_numpy(), np.zeros((1024, 1024), dtype=np.float32))
    assert ns["garr"].dtype == ns["z"].dtype == ns["x"].dtype
    np.testing.assert_array_equal(ns["garr"].to_numpy(), ns["arr"])


def test_custom_jit_kernel_falls_back_on_the_cpu(
    cpu_only: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = run(BASIC_OPERATIONS)
    run(CUSTOM_JIT_KERNEL, ns)
    assert capsys.readouterr().out == "JIT not available. Using pre-compiled ops.\n"
    assert "kernel" not in ns
    np.testing.assert_array_equal(ns["x"].to_numpy(), 0.0)  # untouched


def test_fp16_and_bf16_matmul() -> None:
    ns = run(FP16_BF16)
    a, b, c = ns["a"], ns["b"], ns["c"]
    assert c.dtype == ns["gpk"].float16
    assert_allclose(c, a.to_numpy().astype(np.float64) @ b.to_numpy(), op_kind="matmul")
    result = ns["result"]
    assert result.dtype == ns["gpk"].float32
    arr_bf16 = ns["a_bf16"].to_numpy().astype(np.float64)
    expected = (arr_bf16 @ arr_bf16).astype(ns["c_bf16"].dtype.to_numpy_dtype())
    assert_allclose(ns["c_bf16"], expected, op_kind="matmul")
    np.testing.assert_array_equal(result.to_numpy(), ns["c_bf16"].to_numpy().astype(np.float32))


def test_operator_overloads_on_the_fp16_arrays() -> None:
    ns = run(FP16_BF16)
    host_a = ns["a"].to_numpy().astype(np.float64)
    host_b = ns["b"].to_numpy().astype(np.float64)
    run(OPERATOR_OVERLOADS, ns)
    assert_allclose(ns["c"], host_a @ host_b, op_kind="matmul")  # the last line wins
    a, b = ns["a"], ns["b"]
    for got, want in ((a + b, host_a + host_b), (a - b, host_a - host_b),
                      (a * b, host_a * host_b)):  # fmt: skip
        assert_allclose(got, want)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # float16 quotients of a tiny b overflow to inf in both
        assert_allclose(a / b, (host_a / host_b).astype(np.float16))


def test_reductions_named_in_the_readme() -> None:
    ns = run(FP16_BF16)
    gpk, a = ns["gpk"], ns["a"]
    host = a.to_numpy().astype(np.float64)
    assert_allclose(gpk.sum(a), np.asarray(host.sum()), a.dtype, op_kind="reduction", atol=2.0)
    assert_allclose(gpk.mean(a), np.asarray(host.mean()), a.dtype, op_kind="reduction")
    assert_allclose(gpk.max(a), np.asarray(host.max()), a.dtype)


def test_driver_only_availability_report(
    cpu_only: None, capsys: pytest.CaptureFixture[str]
) -> None:
    run(DRIVER_ONLY)
    assert capsys.readouterr().out.splitlines() == [
        "CUDA: False",
        "NVRTC: False",
        "NVRTC Path: None",
    ]
