"""Complex arrays on a GPU: the bytes travel (upload, download, DLPack, the CUDA array
interface), and the ops the standard leaves undefined for complex numbers are refused with a
TypeError naming the op and dtype, never a crash inside a kernel (the served ones are
checked against NumPy in test_cuda_complex.py and test_complex_inverse_gpu.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


def _complex(dtype: type) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_round_trip(dtype: type) -> None:
    host = _complex(dtype)
    x = gp.asarray(host, device="cuda")
    assert x.device.type == "cuda" and x.dtype.to_numpy_dtype() == dtype
    np.testing.assert_array_equal(x.to_numpy(), host)
    np.testing.assert_array_equal(x.to_device("cpu").to_numpy(), host)
    interface = x.__cuda_array_interface__
    assert interface["typestr"] == np.dtype(dtype).str


@pytest.mark.parametrize(
    "call",
    [lambda z: gp.maximum(z, z), lambda z: gp.sort(z), lambda z: gp.var(z),
     lambda z: gp.floor(z)],
    ids=["maximum", "sort", "var", "floor"],
)  # fmt: skip
def test_ops_undefined_for_complex_are_refused_by_name(
    call: Callable[[gp.GPUArray], object], request: pytest.FixtureRequest
) -> None:
    """Ops the standard leaves undefined for complex numbers raise TypeError naming the op
    and the dtype (every op it defines for them has a cuda kernel now)."""
    name = request.node.callspec.id
    z = gp.asarray(_complex(np.complex64), device="cuda")
    with pytest.raises(TypeError, match=rf"{name}.*complex64"):
        call(z)


def test_dlpack_with_torch_keeps_complex() -> None:
    torch = pytest.importorskip("torch")
    t = torch.randn(4, 3, dtype=torch.complex64, device="cuda")
    g = gp.from_dlpack(t)
    assert g.dtype is gp.complex64 and g.device.type == "cuda"
    np.testing.assert_array_equal(g.to_numpy(), t.cpu().numpy())
    back = torch.from_dlpack(g)
    assert back.dtype == torch.complex64 and back.data_ptr() == t.data_ptr()
